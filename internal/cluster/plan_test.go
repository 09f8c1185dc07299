package cluster_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestPlanAFailure follows docs/operations.md, "Plan a failure", step by
// step against real processes, and holds the plan to what happens when
// the failure is applied: for each location the plan says may be lost
// (all three of the make run topology), its chunkservers are killed and
// the LEADER must keep its quorum; then one chunkserver of dc3 is killed
// first, which makes dc1 a location the plan says may not be lost, and
// killing dc1's chunkservers must leave no LEADER. The dry run of -COFF
// is compared with what the LEADER counts once the real -COFF is in
// force, and the dry run of a -COFF the LEADER refuses with its refusal.
func TestPlanAFailure(t *testing.T) {
	c, lead := start(t, nil)
	cs := map[string][]*cluster.Proc{} // the make run topology: two a location, the second voter-only
	for i, p := range c.CS {
		name := fmt.Sprintf("dc%d", i/2+1)
		cs[name] = append(cs[name], p)
	}

	for _, loc := range []string{"dc1", "dc2", "dc3"} {
		// Step 1: read the plan.
		p := plan(t, c)
		// Step 2: the failure's row.
		row := failure(t, p, clusterview.FailLocation, loc)
		if !row.Keeps {
			t.Fatalf("the plan says losing %s leaves no LEADER: %+v\n%s", loc, row, p.Verdict)
		}
		// Step 3 (a long absence): dry-run -COFF, then switch it OFF.
		off := loc == "dc3"
		if off {
			dry := dryRunJSON(t, c, "-COFF/"+loc)
			if !dry.Accepted || !dry.Keeps || dry.After == nil {
				t.Fatalf("the dry run of -COFF/%s: %+v", loc, dry)
			}
			if out, err := mfscli(t, c, "-COFF/"+loc); err != nil {
				t.Fatalf("-COFF/%s: %v\n%s", loc, err, out)
			}
			compareDryRun(t, c, dry)
		}
		// Step 4: the location's chunkservers go (kill -9).
		for _, p := range cs[loc] {
			p.Kill()
		}
		// Step 5: the LEADER keeps its quorum, as the plan said.
		holdsLeader(t, c, lead, 2*time.Second, "the chunkservers of "+loc+" killed")
		summaryHeld(t, c, true)
		// Step 6: bring them back; every vote counted again.
		for _, p := range cs[loc] {
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
		}
		if off {
			if out, err := mfscli(t, c, "-CON/"+loc); err != nil {
				t.Fatalf("-CON/%s: %v\n%s", loc, err, out)
			}
		}
		lead = allVotes(t, c)
	}

	// A location the plan says may not be lost: one of dc3's two
	// chunkservers down leaves dc3 not carried, and the LEADER then
	// needs both dc1 and dc2.
	cs["dc3"][1].Kill()
	eventually(t, 10*time.Second, 100*time.Millisecond, "the LEADER without dc3", func() error {
		_, st, err := c.WaitLeader(time.Second, 100*time.Millisecond)
		if err != nil {
			return err
		}
		if st.Voters != 5 {
			return fmt.Errorf("%d votes", st.Voters)
		}
		return nil
	})
	p := plan(t, c)
	if row := failure(t, p, clusterview.FailLocation, "dc1"); row.Keeps {
		t.Fatalf("with dc3 not carried, the plan says losing dc1 keeps a LEADER: %+v", row)
	}
	if row := failure(t, p, clusterview.FailLocation, "dc3"); !row.Keeps {
		t.Fatalf("losing dc3, already not carried, loses the quorum in the plan: %+v", row)
	}
	if !strings.HasPrefix(p.Fix, "bring back the 1 chunkserver(s) of dc3") {
		t.Errorf("the fix: %q", p.Fix)
	}
	// Its dry run and the real command agree: the LEADER refuses -COFF/dc1.
	dry := dryRunJSON(t, c, "-COFF/dc1")
	if dry.Accepted || !strings.Contains(dry.Refused, "would not make a quorum") {
		t.Fatalf("the dry run of -COFF/dc1 with dc3 not carried: %+v", dry)
	}
	if out, err := mfscli(t, c, "-COFF/dc1"); err == nil || !strings.Contains(out, "would not make a quorum") {
		t.Fatalf("the LEADER took -COFF/dc1, which its dry run said it would refuse: %v\n%s", err, out)
	}
	// Apply the failure anyway: no LEADER may hold a quorum.
	for _, p := range cs["dc1"] {
		p.Kill()
	}
	eventually(t, 5*time.Second, 100*time.Millisecond, "the LEADER to lose its quorum", func() error {
		if ls := c.Leaders(); len(ls) > 0 {
			return fmt.Errorf("LEADER %v", ls)
		}
		return nil
	})
	if i, st, err := c.WaitLeader(3*time.Second, 100*time.Millisecond); err == nil {
		t.Fatalf("%s is LEADER holding quorum with dc1 gone and dc3 not carried: %+v", c.Masters[i].Addr, st)
	}
	summaryHeld(t, c, false)
	// Bring everything back.
	for _, p := range append(cs["dc1"], cs["dc3"][1]) {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	allVotes(t, c)
}

// plan is step 1: mfscli -SQP -j, read again while it has a note (a
// registry change in flight: the LEADER counts under two configs and the
// plan under the newest; the registrations of a new cluster are one).
func plan(t *testing.T, c *cluster.Cluster) clusterview.Plan {
	t.Helper()
	var p clusterview.Plan
	eventually(t, 10*time.Second, 200*time.Millisecond, "a plan without a note", func() error {
		var doc clusterview.Document
		out, err := mfscli(t, c, "-SQP", "-j")
		if err != nil {
			return fmt.Errorf("mfscli -SQP -j: %v\n%s", err, out)
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Dataset.Plan == nil {
			return fmt.Errorf("mfscli -SQP -j: %v\n%s", err, out)
		}
		if p = *doc.Dataset.Plan; len(p.Notes) > 0 {
			return fmt.Errorf("notes: %v", p.Notes)
		}
		return nil
	})
	t.Logf("plan: %s; closest: %s; fix: %s %s", p.Verdict, p.Closest, p.Fix, p.FixNote)
	return p
}

// failure is the plan's row of one failure.
func failure(t *testing.T, p clusterview.Plan, kind, name string) clusterview.FailureRow {
	t.Helper()
	for _, f := range p.Failures {
		if f.Kind == kind && f.Name == name {
			return f
		}
	}
	t.Fatalf("the plan has no row for %s %s: %+v", kind, name, p.Failures)
	return clusterview.FailureRow{}
}

// dryRunJSON is step 3's dry run, -j.
func dryRunJSON(t *testing.T, c *cluster.Cluster, cmd string) clusterview.DryRun {
	t.Helper()
	out, err := mfscli(t, c, cmd, "--dry-run", "-j")
	if err != nil {
		t.Fatalf("%s --dry-run: %v\n%s", cmd, err, out)
	}
	var doc clusterview.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Dataset.DryRun == nil || doc.Dataset.DryRun.Sent {
		t.Fatalf("%s --dry-run -j: %v\n%s", cmd, err, out)
	}
	t.Logf("%s --dry-run: %s", cmd, doc.Dataset.DryRun.Verdict)
	return *doc.Dataset.DryRun
}

// compareDryRun waits until the change is in force and checks that the
// LEADER counts what the dry run said it would: its config, outcome,
// locations taking part and carried, and per location the registered
// chunkservers and the votes.
func compareDryRun(t *testing.T, c *cluster.Cluster, dry clusterview.DryRun) {
	t.Helper()
	var st protocol.StatusResp
	eventually(t, 10*time.Second, 100*time.Millisecond, "config "+fmt.Sprint(dry.After.Config)+" in force", func() error {
		var err error
		if _, st, err = c.WaitLeader(time.Second, 100*time.Millisecond); err != nil {
			return err
		}
		if st.InForce != dry.After.Config || len(st.Tallies) != 1 {
			return fmt.Errorf("config %d, in force %d, %d counts", st.ConfigVersion, st.InForce, len(st.Tallies))
		}
		return nil
	})
	got := st.Tallies[0]
	if got.Config != dry.After.Config || got.Outcome != dry.After.Outcome || got.Participating != dry.After.Participating ||
		got.Carried != dry.After.Carried {
		t.Fatalf("the LEADER counts %+v, the dry run said %+v", got, *dry.After)
	}
	want := map[string]clusterview.DryLoc{}
	for _, r := range dry.Locations {
		if r.After != nil && r.After.Participating {
			want[r.Name] = *r.After
		}
	}
	if len(got.Locations) != len(want) {
		t.Fatalf("the LEADER counts %d locations, the dry run %d: %+v", len(got.Locations), len(want), got.Locations)
	}
	for _, l := range got.Locations {
		if w := want[l.Name]; w.Registered != l.Registered || w.Votes != l.Votes || w.Carried != l.Carried {
			t.Errorf("location %s: the LEADER counts %+v, the dry run said %+v", l.Name, l, w)
		}
	}
}

// summaryHeld is step 5: mfscli -SIG -j says whether the quorum is held.
func summaryHeld(t *testing.T, c *cluster.Cluster, held bool) {
	t.Helper()
	var doc struct {
		Dataset struct {
			Summary clusterview.Summary `json:"summary"`
		} `json:"dataset"`
	}
	out, err := mfscli(t, c, "-SIG", "-j")
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("mfscli -SIG -j: %v\n%s", err, out)
	}
	if doc.Dataset.Summary.QuorumHeld != held {
		t.Fatalf("-SIG says quorum held %v, want %v\n%s", doc.Dataset.Summary.QuorumHeld, held, out)
	}
}

// allVotes is step 6's end: mfscli -SLQ -j shows every location carried
// (here, with two chunkservers a location, every vote counted); it
// returns the LEADER.
func allVotes(t *testing.T, c *cluster.Cluster) int {
	t.Helper()
	eventually(t, 30*time.Second, 200*time.Millisecond, "-SLQ to show every location carried again", func() error {
		var doc clusterview.Document
		out, err := mfscli(t, c, "-SLQ", "-j")
		if err != nil || json.Unmarshal([]byte(out), &doc) != nil || doc.Dataset.Locations == nil || doc.Dataset.Quorum == nil {
			return fmt.Errorf("mfscli -SLQ -j: %v\n%s", err, out)
		}
		if !doc.Dataset.Quorum.Held {
			return fmt.Errorf("%s", doc.Dataset.Quorum.Verdict)
		}
		for _, l := range *doc.Dataset.Locations {
			if l.Participating && (l.LocCount == nil || !l.Carried || l.Votes != l.Registered) {
				return fmt.Errorf("location %s: %+v", l.Name, l.LocCount)
			}
		}
		return nil
	})
	i, st, err := c.WaitLeader(5*time.Second, 100*time.Millisecond)
	if err != nil || st.Voters != 6 || st.Role != roles.Leader {
		t.Fatalf("after -SLQ showed every location carried: LEADER %d %+v %v", i, st.Tallies, err)
	}
	return i
}
