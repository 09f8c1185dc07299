package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/cluster/witnessrig"
	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/internal/linearize"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestStoreReplica: the witness's store as a stand-in replica
// (docs/architecture.md §7.5). One master a site. Every process of site b,
// the only follower master among them, is killed: the LEADER on site a
// goes on acknowledging changes, each resting on the store in place of
// the missing follower. Then the LEADER's site is killed too and its
// master's DATA_PATH wiped: the one disk that held the changes is gone.
// Site b started again elects its master, which must first take every
// acknowledged change from the store (the witness's record, like the
// voters of site a, knows they were committed): every acknowledged change
// is there (porcupine, with a read of every key at the end), nothing
// invented.
func TestStoreReplica(t *testing.T) {
	r, lost := loseBothSites(t, nil)
	r.readBack(t, lost)
}

// TestStoreReplicaOff: the same run with WITNESS_LOG = 0 and ACK_ALONE = 1
// (the witness only breaks ties; changes rest on the LEADER's disk alone
// while site b is down). Site b's master then stops at "waiting for the
// changes that only the lost master held": it has the votes and the
// witness's lease, and may not lead. `mfsmaster repair --accept-loss` is
// the way out, and its cost is measured: every change acknowledged while
// site b was down is gone, every one before is there.
func TestStoreReplicaOff(t *testing.T) {
	r, lost := loseBothSites(t, map[string]string{"WITNESS_LOG": "0", "ACK_ALONE": "1"})
	next := lost.next
	eventually(t, 30*time.Second, 100*time.Millisecond, "-SLQ to say that site "+lost.far+"'s master waits for the lost changes", func() error {
		out, err := r.mfscli("-SLQ")
		if err != nil || !strings.Contains(out, clusterview.LostChangesText) {
			return fmt.Errorf("%v:\n%s", err, out)
		}
		return nil
	})
	holdsNoLeader(t, r, 3*time.Second)
	out, _ := r.mfscli("-SLQ")
	t.Logf("site %s back, no LEADER; -SLQ says:\n%s", lost.far, out)

	p := r.c.Masters[next]
	p.Term(10 * time.Second)
	if out, err := acceptLossRepair(p); err != nil {
		t.Fatalf("mfsmaster repair --accept-loss: %v\n%s", err, out)
	} else {
		t.Logf("mfsmaster repair --accept-loss: %s", strings.TrimSpace(out))
	}
	began := time.Now()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, 100*time.Millisecond, p.Addr.String()+" to lead", func() error {
		st, err := r.status(next, time.Second)
		if err != nil || st.Role != roles.Leader {
			return fmt.Errorf("%v %v", st.Role, err)
		}
		return nil
	})
	cl := newClient(t, r.c, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	es, _, err := cl.List(ctx, "df/")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range es {
		got[e.Key] = e.Value
	}
	missing := 0
	for k, v := range lost.acked {
		if got[k] != v {
			missing++
		}
	}
	if missing == 0 {
		// (A few may read back: a change written as site b was killed
		// can have reached its master's disk first.)
		t.Errorf("all %d changes acknowledged with site %s down read back after the repair: they were meant to be on the lost disk only", len(lost.acked), lost.far)
	}
	for k, v := range lost.before {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (acknowledged before site %s went down, on both masters)", k, got[k], v, lost.far)
		}
	}
	t.Logf("--accept-loss: %s LEADER %v after its start; the cost: %d of the %d changes acknowledged with site %s down lost, the %d made before kept",
		p.Addr, time.Since(began).Round(time.Millisecond), missing, len(lost.acked), lost.far, len(lost.before))
}

// lostSites is what loseBothSites did.
type lostSites struct {
	far    string            // the site lost first, started again
	next   int               // its master
	before map[string]string // acknowledged before it was lost
	acked  map[string]string // acknowledged while it was down
	w      *dfWriter
	ld     *load
}

// siteDown is what siteBDown did.
type siteDown struct {
	r          *witnessRig
	lead       int    // the LEADER, on site here
	here, far  string // far: the site killed
	farMasters []int
	farProcs   []*cluster.Proc
	ld         *load
	w          *dfWriter
	before     map[string]string // acknowledged before far was killed
}

// siteBDown: two sites, one master each, started with o, a load and a df
// writer; every process of the site without the LEADER killed (its
// master the only follower), and n more changes acknowledged, resting on
// the store (or, with WITNESS_LOG = 0, on the LEADER's disk alone: it
// says AckShort).
func siteBDown(t *testing.T, o rigOptions, n int) siteDown {
	t.Helper()
	o.perSite = 1
	masterCfg := o.masterCfg
	r := startWitnessRig(t, o)
	lead, _, err := r.c.WaitLeader(5*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	s := siteDown{r: r, lead: lead, ld: startLoad(t, r.c, 3), w: startDFWriter(t, r.c)}
	s.w.await(t, 20)
	s.before = s.w.snapshot()
	s.here = r.site[lead]
	s.far = witnessrig.Other(s.here)
	s.farMasters, s.farProcs = r.procs(s.far)
	witnessrig.KillAll(s.farProcs)
	t.Logf("site %s killed (its master %s was the only follower) after %d changes; LEADER %s on site %s", s.far, r.c.Masters[s.farMasters[0]].Addr, len(s.before), r.c.Masters[lead].Addr, s.here)

	// Changes acknowledged with no follower master.
	s.w.await(t, len(s.before)+n)
	eventually(t, 10*time.Second, 100*time.Millisecond, "the LEADER to say what its acknowledgements rest on", func() error {
		st, err := r.status(lead, time.Second)
		switch {
		case err != nil || st.Role != roles.Leader:
			return fmt.Errorf("%v %v", st.Role, err)
		case masterCfg["WITNESS_LOG"] == "0" && !st.AckShort:
			return fmt.Errorf("not short: %+v", st.StoreLog)
		case masterCfg["WITNESS_LOG"] != "0" && (st.StoreLog == nil || !st.StoreLog.OnStore || st.StoreLog.Objects == 0):
			return fmt.Errorf("store log %+v", st.StoreLog)
		}
		return nil
	})
	return s
}

// farLeadsOnStore starts the killed site again and waits until its master
// leads with the store standing in for the other site (the head written
// at its epoch); it returns that epoch.
func (s siteDown) farLeadsOnStore(t *testing.T) uint64 {
	t.Helper()
	for _, p := range s.farProcs {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var epoch uint64
	eventually(t, 60*time.Second, 100*time.Millisecond, "site "+s.far+"'s master to lead with the store standing in", func() error {
		st, err := s.r.status(s.farMasters[0], time.Second)
		switch {
		case err != nil || st.Role != roles.Leader:
			return fmt.Errorf("%v %v", st.Role, err)
		case st.StoreLog == nil || !st.StoreLog.OnStore || st.StoreLog.Epoch != st.Epoch:
			return fmt.Errorf("store log %+v at epoch %d", st.StoreLog, st.Epoch)
		}
		epoch = st.Epoch
		return nil
	})
	return epoch
}

// loseBothSites: two sites, one master each, with masterCfg; site b (the
// one without the LEADER) killed, changes acknowledged, the LEADER's site
// killed and its master's DATA_PATH wiped, site b started again.
func loseBothSites(t *testing.T, masterCfg map[string]string) (*witnessRig, lostSites) {
	t.Helper()
	s := siteBDown(t, rigOptions{masterCfg: masterCfg}, 60)
	r, lead, here, far, farMasters, farProcs, ld, w, before := s.r, s.lead, s.here, s.far, s.farMasters, s.farProcs, s.ld, s.w, s.before
	out, _ := r.mfscli("-SIM")
	t.Logf("LEADER %s with site %s down; -SIM:\n%s", r.c.Masters[lead].Addr, far, out)
	w.halt()
	ld.Stop()
	all := w.snapshot()
	acked := map[string]string{}
	for k, v := range all {
		if _, ok := before[k]; !ok {
			acked[k] = v
		}
	}

	// The LEADER's site killed, its master's disk lost.
	_, hereProcs := r.procs(here)
	witnessrig.KillAll(hereProcs)
	dir := filepath.Dir(r.c.Masters[lead].Cfg)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("site %s killed and %s wiped: %d changes were acknowledged with site %s down", here, dir, len(acked), far)

	for _, p := range farProcs {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	return r, lostSites{far: far, next: farMasters[0], before: before, acked: acked, w: w, ld: ld}
}

// readBack: site b's master leads, and every acknowledged change reads
// back from it.
func (r *witnessRig) readBack(t *testing.T, lost lostSites) {
	t.Helper()
	began := time.Now()
	next := lost.next
	eventually(t, 60*time.Second, 100*time.Millisecond, "site "+lost.far+"'s master to lead", func() error {
		st, err := r.status(next, time.Second)
		if err != nil || st.Role != roles.Leader {
			return fmt.Errorf("%s: %v %v", r.c.Masters[next].Addr, st.Role, err)
		}
		return nil
	})
	t.Logf("site %s back: %s LEADER %v after its start", lost.far, r.c.Masters[next].Addr, time.Since(began).Round(time.Millisecond))

	cl := newClient(t, r.c, time.Second)
	lost.w.check(t, cl, "after the other site was lost with its master's disk")
	// A read of every key the load wrote, recorded after everything
	// else: porcupine then checks that each returns the last change
	// acknowledged (or one of unknown outcome), never an older one.
	for _, key := range []string{"a", "b", "c"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		call := time.Now().UnixNano()
		v, found, err := cl.Get(ctx, key)
		cancel()
		if err != nil {
			t.Fatalf("read %s from the new LEADER: %v", key, err)
		}
		lost.ld.Record(porcupine.Operation{ClientId: 99, Input: linearize.Input{Key: key},
			Call: call, Output: linearize.Output{Val: v, Found: found}, Return: time.Now().UnixNano()})
	}
	lost.ld.finish(t, nil)
	if st, err := r.status(next, time.Second); err == nil && st.StoreLog != nil {
		t.Logf("new LEADER's store log: %+v", *st.StoreLog)
	}
}

// holdsNoLeader fails t if any master reports LEADER within d.
func holdsNoLeader(t *testing.T, r *witnessRig, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for i := range r.c.Masters {
			if st, err := r.status(i, 300*time.Millisecond); err == nil && st.Role == roles.Leader {
				t.Fatalf("%s leads without the changes only the lost master held", st.Addr)
			}
		}
	}
}

// acceptLossRepair runs `mfsmaster -c CFG --accept-loss repair` within 20 s.
func acceptLossRepair(p *cluster.Proc) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "mfsmaster"), "-c", p.Cfg, "--accept-loss", "repair").CombinedOutput()
	return string(out), err
}

// TestStoreStaleLeader: fence 1 on live daemons. The LEADER of site a
// writes to the store in place of site b's master (its site killed) and
// is frozen (SIGSTOP) in the middle of that. Site b is started again: its
// master takes the frozen one's changes from the store and leads, the
// store now standing in for the frozen master. Then the old LEADER is
// resumed (SIGCONT) with whatever calls it had under way. All along the
// head's epoch is polled: it never falls (no write of the superseded
// LEADER lands over the new one's), every change acknowledged reads back
// (the df writer, and porcupine over the load's history), and the old
// LEADER's refused head writes are counted.
func TestStoreStaleLeader(t *testing.T) {
	s := siteBDown(t, rigOptions{}, 30)
	r, lead, here, far, farMasters, ld, w := s.r, s.lead, s.here, s.far, s.farMasters, s.ld, s.w

	hw := watchHead(r)
	old := r.c.Masters[lead]
	if err := old.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Signal(syscall.SIGCONT) })
	frozenAt := w.count()
	t.Logf("LEADER %s (site %s) frozen with the store standing in for site %s, after %d changes", old.Addr, here, far, frozenAt)
	next := farMasters[0]
	nextEpoch := s.farLeadsOnStore(t)
	w.await(t, w.count()+20)
	t.Logf("%s LEADER at epoch %d, its acknowledgements on the store; %d changes acknowledged so far", r.c.Masters[next].Addr, nextEpoch, w.count())

	if err := old.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, 100*time.Millisecond, old.Addr.String()+" to step down once resumed", func() error {
		st, err := r.status(lead, time.Second)
		if err != nil || st.Role == roles.Leader {
			return fmt.Errorf("%v %v", st.Role, err)
		}
		return nil
	})
	w.await(t, w.count()+20)
	seen, polls, fell := hw.stop()
	if fell != "" {
		t.Error(fell)
	}
	if polls < 10 || seen[nextEpoch] == 0 {
		t.Errorf("the head was read %d times and seen at epochs %v: the watch saw too little (want the new LEADER's %d)", polls, seen, nextEpoch)
	}
	st, err := r.status(lead, time.Second)
	if err != nil || st.StoreLog == nil {
		t.Fatalf("the resumed master's status: %v %+v", err, st.StoreLog)
	}
	t.Logf("head read %d times, epochs seen %v, never falling; the resumed master %s: %v at epoch %d, %d of its head writes refused by the store, last store error %q",
		polls, seen, old.Addr, st.Role, st.Epoch, st.StoreLog.Refused, st.StoreLog.Error)

	w.halt()
	cl := newClient(t, r.c, time.Second)
	w.check(t, cl, "after the superseded LEADER was resumed")
	ld.finish(t, nil)
}

// headWatch polls the store log's head until stopped (at most 3 minutes).
type headWatch struct {
	quit  atomic.Bool
	done  chan struct{}
	seen  map[uint64]int
	polls int
	fell  string
}

func watchHead(r *witnessRig) *headWatch {
	hw := &headWatch{done: make(chan struct{}), seen: map[uint64]int{}}
	go func() {
		defer close(hw.done)
		var top uint64
		for end := time.Now().Add(3 * time.Minute); !hw.quit.Load() && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			h, ok, err := r.store.LogHead()
			if err != nil || !ok {
				continue
			}
			hw.polls++
			hw.seen[h.Epoch]++
			if h.Epoch < top && hw.fell == "" {
				hw.fell = fmt.Sprintf("the store log's head fell from epoch %d to %d (written by %v): a superseded LEADER's write landed", top, h.Epoch, h.Holder)
			}
			top = max(top, h.Epoch)
		}
	}()
	return hw
}

// stop ends the watch: the epochs seen (with how often), the polls, and
// the first fall of the epoch ("" for none).
func (hw *headWatch) stop() (map[uint64]int, int, string) {
	hw.quit.Store(true)
	<-hw.done
	return hw.seen, hw.polls, hw.fell
}
