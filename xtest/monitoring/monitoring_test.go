package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/mfs-election/mfs-election/internal/clusterview"
)

// monitoringFiles are the shipped alert rules and dashboard, under the
// main module's root two levels up (a real-process test, internal/cluster
// TestStatusAPI, checks that every metric they name is exported).
var monitoringFiles = []string{"etc/prometheus/mfs-election.rules.yml", "etc/grafana/mfs-election.json"}

// TestAlertRules: the shipped rules parse with Prometheus's own rule
// parser (every expression, label and template), and there is a rule for
// every alarm the masters raise.
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", monitoringFiles[0]))
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(b, false, model.UTF8Validation, parser.NewParser(parser.Options{}), nil)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", monitoringFiles[0], errs)
	}
	exprs := ""
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %q: an alert needs a name, a severity and a summary", r.Alert)
			}
			exprs += r.Expr + "\n"
			n++
		}
	}
	for _, k := range clusterview.AlarmKinds {
		if !strings.Contains(exprs, `alarm="`+k+`"`) {
			t.Errorf("no rule for the alarm %s", k)
		}
	}
	t.Logf("%d rules", n)
}

// TestDashboard: the shipped Grafana dashboard is JSON, and every query in
// it parses as PromQL.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", monitoringFiles[1]))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", monitoringFiles[1], err)
	}
	p := parser.NewParser(parser.Options{})
	q := 0
	for _, panel := range d.Panels {
		if len(panel.Targets) == 0 {
			t.Errorf("panel %q has no query", panel.Title)
		}
		for _, tg := range panel.Targets {
			if _, err := p.ParseExpr(tg.Expr); err != nil {
				t.Errorf("panel %q: %q: %v", panel.Title, tg.Expr, err)
			}
			q++
		}
	}
	if d.Title == "" || q == 0 {
		t.Fatalf("an empty dashboard")
	}
}
