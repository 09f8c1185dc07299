package drivers

import (
	"flag"
	"io"
	"os"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"go.uber.org/goleak"
)

var seeds = flag.Int("drivers.seeds", 3, "seeds to play (1 with -short)")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDrivers plays seeds of the drivers' simulation: the real drivers of
// three masters and their voters on memnet, under faults, with clients.
// Each must keep one LEADER at a time and a linearizable history, and
// recover after the heal.
func TestDrivers(t *testing.T) {
	n := *seeds
	if testing.Short() {
		n = 1
	}
	for seed := int64(1); seed <= int64(n); seed++ {
		res, err := Run(Spec{Seed: seed, Dir: t.TempDir(), Log: logTo(t)})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		t.Logf("seed %d: %d masters, %d voters, %d clients, datagrams %v: faults %v; %d LEADER terms, %d operations (%d acknowledged), first LEADER after %v, LEADER %v after the heal, %d watcher passes, %v",
			seed, res.Masters, res.Voters, res.Clients, res.Datagrams, res.Faults, res.LeaderTerms, res.Operations, res.Acked,
			res.FirstLeader, res.HealToLeader, res.Passes, res.Elapsed)
		for _, v := range res.Violations {
			t.Errorf("seed %d: VIOLATION: %s", seed, v)
		}
		if res.Liveness != "" {
			t.Errorf("seed %d: LIVENESS: %s", seed, res.Liveness)
		}
	}
}

// logTo keeps the drivers' logs of a run in a file beside the test's
// data when MFS_DRIVERS_LOG names a directory; none otherwise.
func logTo(t *testing.T) io.Writer {
	dir := os.Getenv("MFS_DRIVERS_LOG")
	if dir == "" {
		return nil
	}
	f, err := os.CreateTemp(dir, "drivers-*.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	t.Logf("driver logs: %s", f.Name())
	return f
}

// TestWatcherJudges: the watcher's rule on made-up passes. A master that
// says LEADER in two passes excludes every other LEADER read between them;
// a LEADER seen in one pass only proves nothing; one epoch led by two
// masters is reported.
func TestWatcherJudges(t *testing.T) {
	lead := func(e uint64) master.RoleReport { return master.RoleReport{Role: roles.Leader, Epoch: e} }
	fol := master.RoleReport{Role: roles.Follower}
	for _, c := range []struct {
		name string
		a, b []master.RoleReport
		bad  bool
	}{
		{"one leader", []master.RoleReport{lead(2), fol, fol}, []master.RoleReport{lead(2), fol, fol}, false},
		{"handover between passes", []master.RoleReport{lead(2), fol, fol}, []master.RoleReport{fol, lead(3), fol}, false},
		{"later master read inside", []master.RoleReport{lead(2), lead(3), fol}, []master.RoleReport{lead(2), fol, fol}, true},
		{"earlier master read inside", []master.RoleReport{fol, fol, lead(2)}, []master.RoleReport{lead(3), fol, lead(2)}, true},
		{"one epoch, two masters", []master.RoleReport{lead(2), fol, fol}, []master.RoleReport{fol, lead(2), fol}, true},
	} {
		w := &world{masters: make([]*masterProc, 3)}
		x := &watcher{w: w, terms: map[uint64]int{}}
		x.judge(c.a, c.b)
		if bad := len(x.overlaps)+len(x.sameEpoch) > 0; bad != c.bad {
			t.Errorf("%s: reported %v %v, want a report: %v", c.name, x.overlaps, x.sameEpoch, c.bad)
		}
	}
}
