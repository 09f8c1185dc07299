package sim

import (
	"container/heap"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// crowd is a calm world of n voters in 3 locations and 3 masters, with the
// shipped defaults, no faults, and processors that take time (cpuModel:
// every voter on one, as in mfsswarm). It is stepped by hand.
type crowd struct {
	*world
	n int
}

func newCrowd(seed int64, n int, cpu cpuModel) crowd {
	w := &world{opt: Options{Seed: seed, ChaosTime: time.Hour, TraceTail: 200}, rng: rand.New(rand.NewSource(seed))}
	p := drawProfile(w.rng)
	p.masters, p.css, p.spares, p.locs, p.clients = 3, n, 0, 3, 0
	p.delayBase, p.delayJitter, p.loss, p.dup = 200*time.Microsecond, time.Millisecond, 0, 0
	p.masterCfg = master.DefaultConfig(1, []wire.MasterID{1})
	p.maxPromise = voter.DefaultConfig(1, netip.Addr{}, nil).MaxPromise
	p.probeVoters = voter.DefaultConfig(1, netip.Addr{}, nil).ProbeVoters
	p.keep, p.faults, p.extremeClocks, p.reject = 0, nil, false, false
	p.cpu = cpu
	w.prof = p
	w.build()
	for i := range w.masters {
		w.startMaster(i)
	}
	for i := range w.css {
		w.startCS(i)
	}
	return crowd{w, n}
}

// until plays events for at most d, and stops early once done holds.
func (c crowd) until(d time.Duration, done func() bool) bool {
	end := c.now + int64(d)
	for c.q.Len() > 0 && !c.stopped {
		e := heap.Pop(&c.q).(*event)
		if e.at > end {
			c.push(e)
			break
		}
		c.dispatch(e)
		if done != nil && done() {
			return true
		}
	}
	c.now = max(c.now, end)
	return false
}

// leader is the master that is LEADER and counts every vote (-1: none).
func (c crowd) leader() int {
	for i, m := range c.masters {
		if m.up && m.m.Role() == roles.Leader && len(m.m.CountedVoters()) == c.n {
			return i
		}
	}
	return -1
}

// storm: every voter's links drop at once (its own close, as after a
// network blip on its side) and come back 10..100 ms later.
func (c crowd) storm() {
	for _, cs := range c.css {
		voted := cs.v.VoteFor()
		for mi, m := range c.masters {
			id := wire.MasterID(mi + 1)
			c.send(m.ref, cs.ref, roles.VoteConnLost{Master: id}, 0)
			if voted == id {
				c.send(cs.ref, m.ref, roles.ConnLost{CS: cs.cfg.ID, ByPeer: true}, 0)
			}
			from, to := m.ref, cs.ref
			c.at(c.now+int64(10*time.Millisecond)+c.rng.Int63n(int64(90*time.Millisecond)), func() {
				c.send(from, to, roles.LinkUp{Master: id}, 0)
			})
		}
	}
}

func (c crowd) epochs() []uint64 {
	var e []uint64
	for _, m := range c.masters {
		e = append(e, m.m.Epoch())
	}
	return e
}

// TestCrowdStorm: 300 voters on one busy processor, every one of them
// reconnecting at once: the LEADER keeps its role and epoch, and counts
// them all again within seconds. A master that answered every vote hello
// with a broadcast round (N rounds of N heartbeats) sent this crowd into
// an election every half second, epochs climbing for as long as it ran;
// one that dropped a vote with its connection lost its quorum in every
// storm.
func TestCrowdStorm(t *testing.T) {
	c := newCrowd(1, 300, cpuModel{event: 20 * time.Microsecond, send: 10 * time.Microsecond, sharedCS: true})
	if !c.until(10*time.Second, func() bool { return c.leader() >= 0 }) {
		t.Fatalf("no LEADER counting all 300 within 10s of the start; epochs %v\n%s", c.epochs(), c.tailText())
	}
	c.until(2*time.Second, nil)
	before, terms := slicesMax(c.epochs()), c.chk.leaderTerms
	c.storm()
	start := c.now
	c.until(500*time.Millisecond, nil) // the storm's own effects
	if !c.until(5*time.Second, func() bool { return c.leader() >= 0 }) {
		t.Fatalf("no LEADER counting all 300 within 5.5s of the storm; epochs %v (before %d)\n%s", c.epochs(), before, c.tailText())
	}
	settled := time.Duration(c.now - start)
	// And it stays: no election in the next 5 s.
	after := slicesMax(c.epochs())
	c.until(5*time.Second, nil)
	if got := slicesMax(c.epochs()); got != after || c.leader() < 0 {
		t.Fatalf("the LEADER after the storm did not last: epochs %d -> %d\n%s", after, got, c.tailText())
	}
	if after != before || c.chk.leaderTerms != terms {
		// The votes the voters granted bind them through the storm: a
		// LEADER keeps counting them (roles.ConnLost.ByPeer).
		t.Errorf("the storm cost the LEADER its role: epochs %d -> %d, %d LEADER terms -> %d", before, after, terms, c.chk.leaderTerms)
	}
	if len(c.viol) > 0 {
		t.Fatalf("violations: %v", c.viol)
	}
	t.Logf("settled %v after the storm, epochs %d -> %d", settled, before, after)
}

func slicesMax(s []uint64) uint64 {
	var m uint64
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

func (c crowd) tailText() string {
	var s string
	for _, l := range c.tail() {
		s += l + "\n"
	}
	return s
}

// TestCrowdWatch watches a crowd through a storm and through kill -9 of
// its LEADER: every 50 ms for 3 s after the fault, what each master counts
// and what the voters hold, with the processors' backlogs and the messages
// delivered (logged: go test -v shows them). By the end of those 3 s a
// LEADER counts every voter again: after the storm the same one at the
// same epoch, after the kill another one at a higher epoch; and no
// invariant broke. By default 100 voters, both faults, in well under a
// second. To explore: CROWD=n voters; CROWD_EVENT and CROWD_SEND, the
// processors' costs in µs (20 and 10); CROWD_FAULT=storm or kill, one of
// the two faults alone. For example
//
//	CROWD=1000 CROWD_FAULT=kill go test ./internal/sim -run 'TestCrowdWatch$' -v
func TestCrowdWatch(t *testing.T) {
	n := 100
	if v := os.Getenv("CROWD"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("CROWD=%q: want a number of voters", v)
		}
	}
	env := func(k string, def int) time.Duration {
		v := os.Getenv(k)
		if v == "" {
			return time.Duration(def) * time.Microsecond
		}
		us, err := strconv.Atoi(v)
		if err != nil || us < 0 {
			t.Fatalf("%s=%q: want a cost in µs", k, v)
		}
		return time.Duration(us) * time.Microsecond
	}
	cpu := cpuModel{event: env("CROWD_EVENT", 20), send: env("CROWD_SEND", 10), sharedCS: true}
	faults := []string{"storm", "kill"}
	switch f := os.Getenv("CROWD_FAULT"); f {
	case "":
	case "storm", "kill":
		faults = []string{f}
	default:
		t.Fatalf("CROWD_FAULT=%q: want storm or kill", f)
	}
	for _, fault := range faults {
		t.Run(fault, func(t *testing.T) { watchCrowd(t, n, cpu, fault) })
	}
}

// watchCrowd is one run of TestCrowdWatch: n voters, the fault, the 3 s
// watched, then the checks.
func watchCrowd(t *testing.T, n int, cpu cpuModel, fault string) {
	c := newCrowd(1, n, cpu)
	defer func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("the trace's tail:\n%s", c.tailText())
		}
	}()
	if !c.until(30*time.Second, func() bool { return c.leader() >= 0 }) {
		t.Fatalf("no LEADER counting all %d within 30 s of the start; epochs %v", n, c.epochs())
	}
	t.Logf("cold: LEADER M%d at %v", c.leader()+1, time.Duration(c.now))
	c.until(2*time.Second, nil)
	old := c.leader()
	if old < 0 {
		t.Fatalf("the LEADER lost a voter in a calm 2 s; epochs %v", c.epochs())
	}
	epoch, terms := c.masters[old].m.Epoch(), c.chk.leaderTerms
	if fault == "kill" {
		c.killMaster(old)
	} else {
		c.storm()
	}
	start := c.now
	c.msgCount = map[string]int{}
	for range 60 {
		c.until(50*time.Millisecond, nil)
		line := fmt.Sprintf("%6.3fs", float64(c.now-start)/1e9)
		for mi, m := range c.masters {
			if !m.up {
				line += fmt.Sprintf(" | M%d down", mi+1)
				continue
			}
			sess, prom := 0, 0
			for _, cs := range c.css {
				if cs.v.VoteFor() == wire.MasterID(mi+1) {
					sess++
				}
				if to, _ := cs.v.Promise(); to == wire.MasterID(mi+1) {
					prom++
				}
			}
			line += fmt.Sprintf(" | M%d %v e%d counted %d sess %d prom %d busy %.1fms", mi+1, m.m.Role(), m.m.Epoch(),
				len(m.m.CountedVoters()), sess, prom, float64(max(0, c.mcpu[mi]-c.now))/1e6)
		}
		line += fmt.Sprintf(" | voters busy %.1fms", float64(max(0, c.cscpu[0]-c.now))/1e6)
		t.Log(line)
		t.Log("   ", c.msgCount)
		c.msgCount = map[string]int{}
	}
	c.msgCount = nil

	if len(c.viol) > 0 {
		t.Fatalf("violations: %v", c.viol)
	}
	lead := c.leader()
	if lead < 0 {
		t.Fatalf("%s: no LEADER counting all %d voters 3 s after it; epochs %v (M%d led at epoch %d)", fault, n, c.epochs(), old+1, epoch)
	}
	now := c.masters[lead].m.Epoch()
	switch {
	case fault == "kill" && (lead == old || now <= epoch):
		t.Errorf("kill of the LEADER M%d at epoch %d: LEADER M%d at epoch %d, want another master at a higher epoch", old+1, epoch, lead+1, now)
	case fault == "storm" && (lead != old || now != epoch || c.chk.leaderTerms != terms):
		// The votes the voters granted bind them through the storm
		// (roles.ConnLost.ByPeer), as in TestCrowdStorm.
		t.Errorf("the storm cost the LEADER its role: M%d at epoch %d before, M%d at epoch %d after, %d LEADER terms -> %d", old+1, epoch, lead+1, now, terms, c.chk.leaderTerms)
	}
	t.Logf("%s: LEADER M%d at epoch %d counting all %d voters (M%d at epoch %d before)", fault, lead+1, now, n, old+1, epoch)
}
