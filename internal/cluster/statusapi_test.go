package cluster_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/clusterview"
)

// getStatusAPI is a master's GET /api/v1/status asked with origin as the
// Origin header ("" none), decoded as mfscli -j's document, and its CORS
// header.
func getStatusAPI(c *cluster.Cluster, i int, origin string) (listing, string, error) {
	var l listing
	hc := http.Client{Timeout: 3 * time.Second}
	req, err := http.NewRequest(http.MethodGet, "http://"+cluster.MasterHTTP(c.Masters[i].Addr).String()+"/api/v1/status", nil)
	if err != nil {
		return l, "", err
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	r, err := hc.Do(req)
	if err != nil {
		return l, "", err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return l, "", err
	}
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		return l, "", fmt.Errorf("%s %q: %s", r.Status, r.Header.Get("Content-Type"), b)
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, "", fmt.Errorf("not mfscli -j's JSON: %v: %s", err, b)
	}
	return l, r.Header.Get("Access-Control-Allow-Origin"), nil
}

// states is "ip=STATE" of every master, sorted.
func states(l listing) string {
	var out []string
	for _, m := range l.Dataset.Masters {
		out = append(out, m.IP+"="+m.State)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestStatusAPI: every master's /api/v1/status is the document mfscli -j
// prints with every listing (the same masters in the same states, the
// chunkservers, the locations, the verdict), readable from the page of
// another master of the set and not from another web site (review N4);
// after kill -9 of the LEADER another master's shows it UNREACHABLE and
// the new LEADER.
func TestStatusAPI(t *testing.T) {
	c, lead := start(t, nil)
	var cli listing
	eventually(t, 10*time.Second, 200*time.Millisecond, "mfscli -j and every master's /api/v1/status agreeing", func() error {
		out, err := mfscli(t, c, "-SIM", "-SCS", "-SLQ", "-SIG", "-j")
		if err != nil {
			return fmt.Errorf("mfscli: %v: %s", err, out)
		}
		if err := json.Unmarshal([]byte(out), &cli); err != nil {
			return err
		}
		for i := range c.Masters {
			page := "http://" + cluster.MasterHTTP(c.Masters[(i+1)%len(c.Masters)].Addr).String()
			api, cors, err := getStatusAPI(c, i, page)
			if err != nil {
				return fmt.Errorf("master %d: %v", i+1, err)
			}
			if cors != page {
				return fmt.Errorf("master %d asked from %s's page: Access-Control-Allow-Origin %q", i+1, page, cors)
			}
			if _, cors, err := getStatusAPI(c, i, "http://evil.example"); err != nil || cors != "" {
				return fmt.Errorf("master %d asked from another web site: Access-Control-Allow-Origin %q (%v)", i+1, cors, err)
			}
			if states(api) != states(cli) || len(api.Dataset.Chunkservers) != len(cli.Dataset.Chunkservers) ||
				len(api.Dataset.Locations) != len(cli.Dataset.Locations) || api.Dataset.Quorum != cli.Dataset.Quorum {
				return fmt.Errorf("master %d's document %+v\nmfscli's %+v", i+1, api.Dataset, cli.Dataset)
			}
		}
		return nil
	})
	if !strings.Contains(states(cli), c.Masters[lead].Addr.String()+"=LEADER") || len(cli.Dataset.Chunkservers) != len(c.CS) || !cli.Dataset.Quorum.Held {
		t.Fatalf("the document does not show the cluster: %+v", cli.Dataset)
	}

	// The shipped alert rules and dashboard query only what the daemons
	// export, and every alarm is exported (0 in a healthy cluster).
	// (A change first: a histogram is exported from its first value.)
	if out, err := mfscli(t, c, "set", "monitoring", "1"); err != nil {
		t.Fatalf("mfscli set: %v: %s", err, out)
	}
	var metrics string
	eventually(t, 10*time.Second, 200*time.Millisecond, "every alarm exported as 0 once every vote is counted", func() error {
		metrics = scrape(t, "http://"+cluster.MasterHTTP(c.Masters[lead].Addr).String()+"/metrics")
		for _, k := range clusterview.AlarmKinds {
			if !strings.Contains(metrics, `mfs_cluster_alarm{alarm="`+k+`"} 0`) {
				return fmt.Errorf("alarm %s not exported as 0", k)
			}
		}
		return nil
	})
	metrics += scrape(t, "http://"+cluster.CSHTTP(c.CS[0].Addr).String()+"/metrics")
	for _, name := range shippedMetricNames(t) {
		if !strings.Contains(metrics, "\n"+name) && !strings.Contains(metrics, "\n"+name+"_") {
			t.Errorf("%s, queried by the shipped rules or dashboard, is not exported", name)
		}
	}

	c.Masters[lead].Kill()
	other := (lead + 1) % len(c.Masters)
	dead := c.Masters[lead].Addr.String() + "=UNREACHABLE"
	eventually(t, 10*time.Second, 200*time.Millisecond, "another master's document showing the dead LEADER and a new one", func() error {
		l, _, err := getStatusAPI(c, other, "")
		if err != nil {
			return err
		}
		if s := states(l); !strings.Contains(s, dead) || !strings.Contains(s, "=LEADER") {
			return fmt.Errorf("states %s", s)
		}
		return nil
	})

	// dc1 cut off: losing one more location would cost the quorum, and
	// the alarm says so on a live master's /metrics.
	for _, p := range c.CS {
		if c.Spec.Locations["dc1"].Contains(p.Addr) {
			p.Kill()
		}
	}
	eventually(t, 15*time.Second, 200*time.Millisecond, "the location_loss alarm raised", func() error {
		if m := scrape(t, "http://"+cluster.MasterHTTP(c.Masters[other].Addr).String()+"/metrics"); !strings.Contains(m, `mfs_cluster_alarm{alarm="location_loss"} 1`) {
			return fmt.Errorf("not raised")
		}
		return nil
	})
}

// shippedMetricNames lists the metric names the shipped alert rules and
// dashboard query (a histogram's without its _bucket, _sum, _count).
func shippedMetricNames(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`\bmfs_[a-z_]+`)
	seen := map[string]bool{}
	var out []string
	for _, f := range []string{"etc/prometheus/mfs-election.rules.yml", "etc/grafana/mfs-election.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllString(string(b), -1) {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				m = strings.TrimSuffix(m, suf)
			}
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// TestFailoverSeenAtOnce: with the LEADER frozen (SIGSTOP), pollers of the
// other masters' /metrics and /healthz, each in a tight loop, see the new
// LEADER within a small bound of its own log's transition, and no answer
// waits for the frozen master. Before, every master's /metrics asked every
// other master inline for the cluster alarms, so a frozen one held each
// scrape for its 1 s timeout and a poller saw the failover about 0.9 s
// after the log did (issue "Seen as fast as it happens"). The bound
// asserted, 500 ms, leaves room for a loaded machine; make bench measures
// the figure (docs/benchmarks.md, "Seen by a poller").
func TestFailoverSeenAtOnce(t *testing.T) {
	c, lead := start(t, nil)
	old := c.Masters[lead]
	w := cluster.StartRoleWatch(c, lead, 5*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // the pollers under way, the rounds of status answers started
	t0 := time.Now()
	if err := old.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Signal(syscall.SIGCONT) })
	seen := w.Wait(15 * time.Second)
	if seen.Metrics.IsZero() || seen.Healthz.IsZero() {
		t.Fatalf("no new LEADER seen within 15 s of the freeze: %+v", seen)
	}
	at := cluster.BecameLeader(c.Masters[seen.MetricsMaster].Log, t0)
	if at.IsZero() {
		t.Fatalf("%s's /metrics said LEADER, its log has no role change since the freeze", c.Masters[seen.MetricsMaster].Addr)
	}
	lagM, lagH := seen.Metrics.Sub(at), seen.Healthz.Sub(at)
	t.Logf("freeze -> LEADER in the log %v; seen on /metrics %v later, on /healthz %v later; %d polls, the slowest /metrics %v, /healthz %v",
		at.Sub(t0).Round(time.Millisecond), lagM.Round(time.Millisecond), lagH.Round(time.Millisecond), seen.Polls,
		seen.SlowestMetrics.Round(time.Millisecond), seen.SlowestHealthz.Round(time.Millisecond))
	const bound = 500 * time.Millisecond
	if lagM > bound || lagH > bound {
		t.Errorf("the new LEADER was seen %v (/metrics) and %v (/healthz) after its log's transition, bound %v", lagM, lagH, bound)
	}
	if seen.SlowestMetrics > bound || seen.SlowestHealthz > bound {
		t.Errorf("with a master frozen, a scrape of another took up to %v (/metrics) and %v (/healthz), bound %v", seen.SlowestMetrics, seen.SlowestHealthz, bound)
	}
}
