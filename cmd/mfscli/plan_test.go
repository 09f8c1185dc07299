package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// tieBreak: two sites, dc1 the default (-CDEF/dc1), so dc1 breaks the
// tie of an even split; dc1 has a third chunkserver, 127.0.1.3, which is
// down: one more lost there and dc1 is lost, and with it the quorum.
func tieBreak() []clusterview.Answer {
	as := twoSites()
	down := protocol.CSStatus{ID: 7, Addr: addr("127.0.1.3"), Port: 9422, Location: "dc1", VoterOnly: true}
	for i := range as {
		st := &as[i].St
		st.Locations[0].Default, st.Locations[1].Default = false, true
		st.ConfigVersion, st.InForce = 4, 4 // -CDEF/dc1 wrote config 4
		st.Chunkservers, st.Registered = slices.Concat(st.Chunkservers, []protocol.CSStatus{down}), 5
		if st.Tallies != nil {
			dc1 := loc("dc1", 3, 2, 2)
			dc1.Default = true
			t := tally(4, "WON", dc1, loc("dc2", 2, 2, 2))
			t.Needed = 1 // half, with the default carried
			st.Tallies = []protocol.TallyStatus{t}
		}
	}
	return as
}

// lonely: the healthy cluster, but 127.0.0.12 lost its LEADER 9 s ago
// (FOLLOWER (DESYNC)) and 127.0.0.13 is down: no master could take over
// from the LEADER.
func lonely() []clusterview.Answer {
	as := healthy()
	for i := range as {
		switch as[i].Addr.Addr() {
		case addr("127.0.0.12"):
			as[i].St.Sync, as[i].St.Delay = roles.Desync, 9*time.Second
		case addr("127.0.0.13"):
			as[i] = clusterview.Answer{Addr: as[i].Addr, Err: fmt.Errorf("%w: dial tcp 127.0.0.13:9421: connect: connection refused", client.ErrUnreachable)}
		}
	}
	return as
}

var sqp = map[listing]bool{listPlan: true}

// TestGoldenPlan prints -SQP for the clusters where the plan has
// something to say: healthy (every single failure keeps a LEADER), dc3
// cut off (losing dc1 or dc2 would not), an even split with no
// tie-break, two sites with dc1 breaking ties and one chunkserver from
// losing it, a LEADER with no master to take over; and, table only, an
// election (no LEADER to plan for) and a registry change in flight.
func TestGoldenPlan(t *testing.T) {
	for _, sc := range []struct {
		name    string
		answers func() []clusterview.Answer
		modes   int
	}{
		{"healthy", healthy, 3}, {"cutoff", cutOff, 3}, {"twosites", twoSites, 3}, {"tiebreak", tieBreak, 3}, {"lonely", lonely, 3},
		{"election", election, 1}, {"inflight", inFlight, 1},
	} {
		for _, m := range goldenModes[:sc.modes] {
			t.Run(sc.name+"."+m.name, func(t *testing.T) {
				o := m.o
				o.show = sqp
				golden(t, sc.name+".sqp."+m.name, render(t, sc.answers(), o))
			})
		}
	}
}

// TestPlanVerdicts: what each plan must say, whatever the wording around
// it (the goldens hold the wording).
func TestPlanVerdicts(t *testing.T) {
	plan := func(as []clusterview.Answer) clusterview.Plan { return clusterview.PlanOf(as) }
	keeps := func(p clusterview.Plan) map[string]bool {
		out := map[string]bool{}
		for _, f := range p.Failures {
			out[f.Label()] = f.Keeps
		}
		return out
	}
	for _, c := range []struct {
		name     string
		plan     clusterview.Plan
		lose     []string
		closest  string
		fix      string
		safeLoss map[string]int
	}{
		{"healthy", plan(healthy()), nil, "location dc1 lost: a LEADER stays, with a margin of 0", "", map[string]int{"dc1": 2, "dc2": 2, "dc3": 2}},
		{"cutoff", plan(cutOff()), []string{"location dc1", "location dc2"}, "location dc1 lost: no LEADER",
			"bring back the 2 chunkserver(s) of dc3", map[string]int{"dc1": 0, "dc2": 0, "dc3": 2}},
		{"twosites", plan(twoSites()), []string{"location dc1", "location dc2"}, "location dc1 lost: no LEADER",
			"add a voter-only chunkserver in location default", map[string]int{"dc1": 0, "dc2": 0}},
		{"tiebreak", plan(tieBreak()), []string{"location dc1 (the default)"}, "location dc1 (the default) lost: no LEADER",
			"add a location with a voter-only chunkserver in it", map[string]int{"dc1": 0, "dc2": 2}},
		{"lonely", plan(lonely()), []string{"master 127.0.0.11 (LEADER)"}, "master 127.0.0.11 (LEADER) lost: no LEADER",
			"let master 127.0.0.12 catch up", map[string]int{"dc1": 2, "dc2": 2, "dc3": 2}},
	} {
		got := keeps(c.plan)
		for label, kept := range got {
			if kept == slices.Contains(c.lose, label) {
				t.Errorf("%s: %s keeps a LEADER: %v, want %v", c.name, label, kept, !kept)
			}
		}
		if c.plan.Closest != c.closest {
			t.Errorf("%s: closest %q, want %q", c.name, c.plan.Closest, c.closest)
		}
		if !strings.HasPrefix(c.plan.Fix, c.fix) || (c.fix == "") != (c.plan.Fix == "") {
			t.Errorf("%s: fix %q, want %q...", c.name, c.plan.Fix, c.fix)
		}
		for _, l := range c.plan.Locations {
			if want, ok := c.safeLoss[l.Name]; ok && l.SafeLoss != want {
				t.Errorf("%s: %s may lose %d, want %d", c.name, l.Name, l.SafeLoss, want)
			}
		}
	}
	if p := plan(election()); p.Leader.IP.IsValid() || len(p.Failures) != 0 || !strings.Contains(p.Verdict, "no LEADER") {
		t.Errorf("election: a plan without a LEADER: %+v", p)
	}
	if p := plan(inFlight()); len(p.Notes) == 0 || !strings.Contains(p.Notes[0], "config 4 is being put in force") {
		t.Errorf("inflight: no note of the change in flight: %v", p.Notes)
	}
}

// dryRuns are the dry-run goldens: scenario, command, modes.
var dryRuns = []struct {
	file    string
	answers func() []clusterview.Answer
	cmd     string
	modes   []mode
}{
	{"healthy.coff-dc3", healthy, "OFF/dc3", []mode{modeTable, modePlain, modeJSON}},
	{"healthy.crc-connected", healthy, "RC/127.0.1.1/9422", []mode{modePlain}},
	{"healthy.cmap-dc4", healthy, "MAP/127.0.4.0/24/dc4", []mode{modeTable}},
	{"cutoff.crc-dc3", cutOff, "RC/127.0.3.1/9422", []mode{modeTable}},
	{"cutoff.coff-dc1", cutOff, "OFF/dc1", []mode{modeTable, modeJSON}},
	{"twosites.cdef-dc1", twoSites, "DEF/dc1", []mode{modeTable}},
	{"election.ctr", election, "TR/127.0.2.2/9422", []mode{modeTable, modePlain}},
	{"election.ctr-lower", election, "TR/127.0.2.1/9422", []mode{modePlain}},
	{"election.coff-dc3", election, "OFF/dc3", []mode{modeTable}},
}

var modeName = map[mode]string{modeTable: "table", modePlain: "plain", modeJSON: "json"}

// TestGoldenDryRun prints dry runs: accepted, refused by the LEADER (a
// connected chunkserver, a quorum lost), a new location, the tie-break
// gained, -CTR (the count under the leave-out rule, and a chunkserver
// the rule keeps) and no LEADER.
func TestGoldenDryRun(t *testing.T) {
	cliVersion = "0.3.0"
	for _, c := range dryRuns {
		for _, m := range c.modes {
			t.Run(c.file+"."+modeName[m], func(t *testing.T) {
				as := c.answers()
				d, err := dryRunOf(as, c.cmd)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := writeDryRun(&b, d, clusterview.AnswerErrors(as), options{mode: m, colour: m == modeTable}, t0); err != nil {
					t.Fatal(err)
				}
				golden(t, c.file+".dryrun."+modeName[m], b.String())
			})
		}
	}
}

// TestDryRunSendsNothing: a dry run is computed from the answers alone,
// so it never dials; commands it does not take are refused with why.
func TestDryRunSendsNothing(t *testing.T) {
	for _, c := range dryRuns {
		d, err := dryRunOf(c.answers(), c.cmd)
		if err != nil || d.Sent {
			t.Errorf("%s: %v, sent %v", c.cmd, err, d.Sent)
		}
	}
	for cmd, want := range map[string]string{
		"LS":                   "changes neither the registry nor the location map",
		"XX/1":                 "unknown admin command",
		"MAP/10.0.0.0/99/x":    "is not an address range",
		"RC/127.0.9.9/9422":    "no registered chunkserver",
		"TR/127.0.2.2":         "give the chunkserver's address and port",
		"OFF":                  "want -COFF/name",
		"MAP/127.0.1.0/24/dc9": "",
	} {
		as := healthy()
		if strings.HasPrefix(cmd, "TR") {
			as = election() // with a LEADER, -CTR is refused before it is read
		}
		_, err := dryRunOf(as, cmd)
		if (err == nil) != (want == "") || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("-C%s --dry-run: %v, want %q", cmd, err, want)
		}
	}
	// The overlapping range is the LEADER's refusal, shown, not an error.
	d, _ := dryRunOf(healthy(), "MAP/127.0.1.0/24/dc9")
	if !strings.Contains(d.Refused, "overlaps") || d.After != nil {
		t.Errorf("an overlapping range: %+v", d)
	}
	var v struct {
		Dataset struct {
			DryRun map[string]json.RawMessage `json:"dry_run"`
		} `json:"dataset"`
	}
	var b bytes.Buffer
	d, _ = dryRunOf(healthy(), "OFF/dc3")
	if err := writeDryRun(&b, d, nil, options{mode: modeJSON}, t0); err != nil || json.Unmarshal(b.Bytes(), &v) != nil ||
		string(v.Dataset.DryRun["sent"]) != "false" || string(v.Dataset.DryRun["quorum_kept"]) != "true" {
		t.Errorf("json: %v\n%s", err, b.String())
	}
}

// TestDocsShowPlanGoldens: the examples of -SQP and --dry-run in
// docs/mfscli.md are the goldens as they are (colours removed); after
// -update, paste the new ones there.
func TestDocsShowPlanGoldens(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "mfscli.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cutoff.sqp.table", "healthy.coff-dc3.dryrun.table"} {
		g, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```\n"+escape.ReplaceAllString(string(g), "")+"```") {
			t.Errorf("docs/mfscli.md does not show %s.golden as it is", name)
		}
	}
}
