package cluster_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Storage faults on real processes (issue 32; docs/architecture.md §7
// "Voters that forgot", docs/roles.md §6.6). Three masters and five
// voter-only chunkservers in one location, a client writing new keys all
// along and keeping every acknowledged one, and a poll of every master
// every 100 ms that fails the test if two masters say LEADER in one round.
// In turn:
//
//  1. one copy of a chunkserver's chunkserver.mfs rots (the copy holding
//     its newest record, while it is down after kill -9): it starts from
//     the older copy, says so at error level naming the file, shows as
//     uncertain with the damage in every master's status (the voter_record
//     alarm), and is restored by the LEADER's heartbeat once its quiet time
//     (MAX_PROMISE) is over;
//  2. another chunkserver's chunkserver.mfs is removed while it is down:
//     it registers again, gets its old id back, is uncertain, is restored;
//  3. a FOLLOWER master's DATA_PATH is copied (stopped in order), the
//     cluster runs on through more changes and a kill -9 of the LEADER,
//     and the copy's incarnation is set as if it had been taken on a host
//     whose clock was an hour ahead. Run A is that master as it went on
//     on that host (its start 10 s later by that clock): made LEADER, so
//     that its incarnation takes an epoch, then killed. Runs B and C are
//     the copy restored on this host, twice, stopped in order in between:
//     on this host's correct clock the copy's incarnation is above the
//     clock's (roles.IncarnationBase's "clock behind"), so both runs sit
//     below run A's incarnation and only the random bits keep them from
//     repeating each other's. Every incarnation must differ, and each run
//     must catch up without a change being lost.
//
// Each part ends with every acknowledged change read back from the
// LEADER.

// dfMaxPromise: the chunkservers' MAX_PROMISE here, the quiet time of a
// chunkserver started after kill -9 (or with its record damaged or
// lost). Above the default 2 s so that the uncertain state, which lasts
// that long, is seen by mfscli too, not only by the 100 ms poll.
const dfMaxPromise = 4 * time.Second

// alarmVoterRecord is the kind of the alarm that lists damaged and
// uncertain voter records (clusterview, issue 32). Checked only while
// clusterview.AlarmKinds has it, so that this test could land before the
// alarm did.
const alarmVoterRecord = "voter_record"

func TestDiskFaults(t *testing.T) {
	d := startDiskFaultRun(t)
	d.rotNewestCopy(t)
	d.removeRecord(t)
	r := d.copyFollower(t)
	r.failover(t)
	r.copyAhead(t)
	r.runA(t)
	r.runsBAndC(t)
	r.staleSettles(t)
	r.finish(t)
}

// diskFaults is TestDiskFaults' fixture: the cluster, on 127.B.0.0/16,
// the poll of every master, the writer of new keys, and the client that
// reads them back.
type diskFaults struct {
	began     time.Time
	c         *cluster.Cluster
	haveAlarm bool // clusterview.AlarmKinds has alarmVoterRecord
	obs       *dfObserver
	w         *dfWriter
	reader    *client.Client
}

// startDiskFaultRun starts three masters and five voter-only
// chunkservers, the poll (which, when the test ends, fails it for a round
// in which two masters said LEADER) and the writer.
func startDiskFaultRun(t *testing.T) *diskFaults {
	t.Helper()
	d := &diskFaults{began: time.Now()}
	c, b := startDiskFaults(t, 3, 5)
	d.c = c
	d.haveAlarm = slices.Contains(clusterview.AlarmKinds, alarmVoterRecord)
	if !d.haveAlarm {
		t.Logf("NOTE: clusterview.AlarmKinds has no %q: the alarm is not checked in this run", alarmVoterRecord)
	}
	d.obs = watchDiskFaults(c)
	t.Cleanup(func() {
		r := d.obs.stop()
		t.Logf("status polls: %d rounds", r.rounds)
		if len(r.doubles) > 0 {
			t.Errorf("two masters said LEADER in one poll (%d polls), first: %s", len(r.doubles), r.doubles[0])
		}
	})
	d.w = startDFWriter(t, c)
	t.Cleanup(d.w.halt)
	d.reader = newClient(t, c, 0)
	t.Logf("cluster up in %v (127.%d.0.0/16)", time.Since(d.began).Round(time.Millisecond), b)
	return d
}

// rotNewestCopy is part 1: the copy of chunkserver.mfs holding the newest
// record rots while the chunkserver is down; it starts from the older
// copy, says so at error level naming the file, is seen uncertain and is
// restored, and no acknowledged change is lost.
func (d *diskFaults) rotNewestCopy(t *testing.T) {
	t.Helper()
	c, w, obs := d.c, d.w, d.obs
	t1 := time.Now()
	w.await(t, 50)
	v := voterOf(t, c, 1, d.haveAlarm)
	v.uncertainText = "is unreadable"
	v.restoredText = "its record is whole again" // damage stays listed while the process runs
	obs.track(v)
	v.p.Kill()
	slotNo, seqs := rotNewestSlot(t, v.path)
	t.Logf("part 1: %s (id %d) killed; copy %d of %s (record %d; the other holds %d) damaged", v.p.Name, v.id, slotNo+1, v.path, seqs[slotNo], seqs[1-slotNo])
	v.restart(t)
	want := fmt.Sprintf("voter record damaged: %s: copy %d of 2", v.path, slotNo+1)
	eventually(t, 10*time.Second, 50*time.Millisecond, "an error line naming the damaged file in "+v.p.Name+"'s log", func() error {
		for _, l := range linesFrom(v.p.Log, v.mark) {
			if strings.Contains(l, `"level":"error"`) && strings.Contains(l, want) && strings.Contains(l, "is unreadable") {
				return nil
			}
		}
		return fmt.Errorf("no error line with %q since the restart; tail:\n%s", want, logTail(v.p.Log, 10))
	})
	v.seenUncertain(t, c, obs)
	v.restored(t, c, obs)
	if n, err := cluster.Metric(cluster.CSHTTP(v.p.Addr), "mfs_chunkserver_record_damage_total", 2*time.Second); err != nil || n != 1 {
		t.Errorf("%s: mfs_chunkserver_record_damage_total = %v (%v), want 1", v.p.Name, n, err)
	}
	w.check(t, d.reader, "after part 1 (a damaged copy)")
	t.Logf("part 1 done in %v", time.Since(t1).Round(time.Millisecond))
}

// removeRecord is part 2: another chunkserver's chunkserver.mfs is
// removed while it is down; it registers again with its old id, says so
// at error level naming the file, is seen uncertain and is restored, and
// no acknowledged change is lost.
func (d *diskFaults) removeRecord(t *testing.T) {
	t.Helper()
	c, w, obs := d.c, d.w, d.obs
	t2 := time.Now()
	v := voterOf(t, c, 3, d.haveAlarm)
	v.uncertainText = "lost (an empty record for an id that was already a member"
	v.restoredText = "its record is whole again" // the loss stays listed while the process runs
	obs.track(v)
	v.p.Kill()
	if err := os.Remove(v.path); err != nil {
		t.Fatal(err)
	}
	t.Logf("part 2: %s (id %d) killed, %s removed", v.p.Name, v.id, v.path)
	v.restart(t)
	v.registeredAgainLost(t)
	eventually(t, 10*time.Second, 50*time.Millisecond, "an error line naming the lost file in "+v.p.Name+"'s log", func() error {
		for _, l := range linesFrom(v.p.Log, v.mark) {
			if strings.Contains(l, `"level":"error"`) && strings.Contains(l, "voter record lost: "+v.path) {
				return nil
			}
		}
		return fmt.Errorf("no error line naming %s since the restart; tail:\n%s", v.path, logTail(v.p.Log, 10))
	})
	v.seenUncertain(t, c, obs)
	v.restored(t, c, obs)
	if n, err := cluster.Metric(cluster.CSHTTP(v.p.Addr), "mfs_chunkserver_record_damage_total", 2*time.Second); err != nil || n != 1 {
		t.Errorf("%s: mfs_chunkserver_record_damage_total = %v (%v), want 1", v.p.Name, n, err)
	}
	if now := csOf(t, c, v.p.Addr); now.ID != v.id || now.Port != v.port {
		t.Fatalf("%s is id %d port %d in the LEADER's answer, it was id %d port %d", v.p.Name, now.ID, now.Port, v.id, v.port)
	}
	w.check(t, d.reader, "after part 2 (a removed record)")
	t.Logf("part 2 done in %v", time.Since(t2).Round(time.Millisecond))
}

// registeredAgainLost waits for the chunkserver, restarted without its
// record, to register again with its old id, its voter started as one
// whose record was lost.
func (v *dfVoter) registeredAgainLost(t *testing.T) {
	t.Helper()
	const lostStart = "voter started: an empty record for an id already registered (data directory wiped?): quiet as after a crash, then uncertain until a LEADER restores the record"
	eventually(t, 15*time.Second, 50*time.Millisecond, v.p.Name+" registered again with its old id", func() error {
		var reg string
		for _, l := range linesFrom(v.p.Log, v.mark) {
			if strings.Contains(l, `"message":"registered"`) {
				reg = l
			}
		}
		if reg == "" {
			return fmt.Errorf("not registered yet; tail:\n%s", logTail(v.p.Log, 10))
		}
		if !strings.Contains(reg, fmt.Sprintf(`"id":%d,`, v.id)) {
			return fmt.Errorf("it registered with another id than %d: %s", v.id, reg)
		}
		for _, l := range linesFrom(v.p.Log, v.mark) {
			if strings.Contains(l, lostStart) {
				return nil
			}
		}
		return fmt.Errorf("its voter did not start as one whose record was lost; tail:\n%s", logTail(v.p.Log, 10))
	})
}

// dfRestore is part 3 of TestDiskFaults: a master restored from an old
// copy of its DATA_PATH, the clock behind the copy's incarnation.
type dfRestore struct {
	*diskFaults
	partBegan time.Time     // when part 3 began
	lead      int           // the LEADER when the copy was taken
	next      int           // the LEADER after it was killed
	f         int           // the master copied
	m         *cluster.Proc // c.Masters[f]
	backup    string        // the copy of its DATA_PATH
	ahead     uint64        // the copy's incarnation, as if taken an hour ahead
	incA      uint64        // run A's incarnation
}

// copyFollower stops a FOLLOWER in order, copies its DATA_PATH, and
// starts it again, synced, with 50 more writes acknowledged.
func (d *diskFaults) copyFollower(t *testing.T) *dfRestore {
	t.Helper()
	c, w := d.c, d.w
	r := &dfRestore{diskFaults: d, partBegan: time.Now()}
	r.lead = leaderOf(t, c)
	r.f = (r.lead + 1) % len(c.Masters)
	r.m = c.Masters[r.f]
	m := r.m
	dataDir := filepath.Dir(m.Cfg)
	r.backup = filepath.Join(c.Spec.Dir, "backup-"+m.Name)
	m.Term(10 * time.Second)
	if m.Running() {
		t.Fatalf("%s did not stop in order", m.Name)
	}
	copyDir(t, dataDir, r.backup)
	backedUp := w.count()
	t.Logf("part 3: %s (a FOLLOWER) stopped in order, %s copied to %s at %d acknowledged writes", m.Name, dataDir, r.backup, backedUp)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	waitSyncedDF(t, c, r.f, 20*time.Second)
	w.await(t, backedUp+50)
	return r
}

// failover: the LEADER killed, a new epoch taken; the killed master
// started again and synced, and no acknowledged change lost.
func (r *dfRestore) failover(t *testing.T) {
	t.Helper()
	c, w, lead := r.c, r.w, r.lead
	st0 := statusOf(t, c, lead)
	c.Masters[lead].Kill()
	next, st, err := c.WaitLeader(15*time.Second, 20*time.Millisecond, lead)
	if err != nil {
		t.Fatalf("after kill -9 of the LEADER %s: %v\n%s", c.Masters[lead].Name, err, logTail(c.Masters[lead].Log, 10))
	}
	if st.Epoch <= st0.Epoch {
		t.Fatalf("the new LEADER %s is at epoch %d, the killed one was at %d", st.Addr, st.Epoch, st0.Epoch)
	}
	t.Logf("part 3: kill -9 of the LEADER %s (epoch %d): LEADER %s at epoch %d", c.Masters[lead].Addr, st0.Epoch, st.Addr, st.Epoch)
	if err := c.Masters[lead].Start(); err != nil {
		t.Fatal(err)
	}
	waitSyncedDF(t, c, lead, 20*time.Second)
	w.await(t, w.count()+50)
	w.check(t, r.reader, "after the failover of part 3")
	r.next = next
}

// copyAhead stops the copied master in order and sets the copy's
// incarnation as taken on a host whose clock was an hour ahead: its
// incarnation's high 32 bits are that clock's seconds.
func (r *dfRestore) copyAhead(t *testing.T) {
	t.Helper()
	c, m, f := r.c, r.m, r.f
	m.Term(10 * time.Second)
	if m.Running() {
		t.Fatalf("%s did not stop in order", m.Name)
	}
	r.ahead = uint64(time.Now().Add(time.Hour).Unix())<<32 | 0x5eed
	before := setIncarnation(t, r.backup, r.ahead)
	t.Logf("part 3: %s stopped; the copy's incarnation %#x set to %#x (taken on a clock an hour ahead of this host's)", m.Name, before, r.ahead)
	if r.next == f {
		// It was the LEADER: wait for another before going on.
		if _, _, err := c.WaitLeader(15*time.Second, 20*time.Millisecond, f); err != nil {
			t.Fatalf("after %s stopped: %v", m.Name, err)
		}
	}
}

// runA: the master as it went on on that host after the copy was taken,
// 10 s later by its clock (the incarnation its start took there): made
// LEADER, so that this incarnation takes an epoch and the voters record
// it, then killed.
func (r *dfRestore) runA(t *testing.T) {
	t.Helper()
	c, w, m, f, ahead := r.c, r.w, r.m, r.f, r.ahead
	later := r.backup + "-later"
	copyDir(t, r.backup, later)
	setIncarnation(t, later, ahead+10<<32)
	incA := startFromCopy(t, c, f, later)
	if incA <= ahead+10<<32 {
		t.Fatalf("run A of %s: incarnation %#x, not above its store's %#x", m.Name, incA, ahead+10<<32)
	}
	waitSyncedDF(t, c, f, 20*time.Second)
	if err := usurp(t, c, f, leaderOf(t, c), 15*time.Second); err != nil {
		t.Fatalf("making run A of %s LEADER: %v\n%s", m.Name, err, logTail(m.Log, 10))
	}
	stA := statusOf(t, c, f)
	if stA.Role != roles.Leader {
		t.Fatalf("run A of %s is %v after -CLU, want LEADER", m.Name, stA.Role)
	}
	t.Logf("part 3: run A of %s (incarnation %#x) LEADER at epoch %d", m.Name, incA, stA.Epoch)
	w.await(t, w.count()+50)
	m.Kill()
	if _, _, err := c.WaitLeader(15*time.Second, 20*time.Millisecond, f); err != nil {
		t.Fatalf("after kill -9 of run A: %v", err)
	}
	r.incA = incA
}

// runsBAndC: the copy restored on this host, whose clock is behind the
// copy's incarnation, twice, stopped in order in between. Only the random
// bits tell the runs apart (roles.IncarnationBase); both are below run
// A's, which the voters saw last. Every incarnation differs, and each run
// catches up without a change being lost.
func (r *dfRestore) runsBAndC(t *testing.T) {
	t.Helper()
	c, w, m, f, ahead, incA := r.c, r.w, r.m, r.f, r.ahead, r.incA
	var incs []uint64
	for _, run := range []string{"B", "C"} {
		if run == "C" {
			m.Term(10 * time.Second)
			if m.Running() {
				t.Fatalf("run B of %s did not stop in order", m.Name)
			}
		}
		inc := startFromCopy(t, c, f, r.backup)
		t.Logf("part 3: run %s of %s from the copy: incarnation %#x (run A's %#x)", run, m.Name, inc, incA)
		if inc <= ahead || inc > ahead+1<<31 {
			t.Fatalf("run %s of %s: incarnation %#x, want the copy's %#x plus at most 2^31 random", run, m.Name, inc, ahead)
		}
		if inc == incA || slices.Contains(incs, inc) {
			t.Fatalf("run %s of %s repeats an incarnation: %#x (runs before: A %#x, %#x)", run, m.Name, inc, incA, incs)
		}
		incs = append(incs, inc)
		waitSyncedDF(t, c, f, 20*time.Second)
		w.await(t, w.count()+50)
		w.check(t, r.reader, fmt.Sprintf("with run %s of %s up", run, m.Name))
	}
}

// staleSettles: the other masters take run C's status although its
// incarnation is below run A's (a view not heard within PEER_TIMEOUT
// takes a lower incarnation, roles.onPeerStatus): their count of statuses
// ignored as stale stops growing. Before that fix it grew ~10/s for good.
func (r *dfRestore) staleSettles(t *testing.T) {
	t.Helper()
	c, f := r.c, r.f
	var stale []string
	eventually(t, 10*time.Second, time.Second, "the other masters no longer ignore "+r.m.Name+"'s status as stale", func() error {
		now := staleIgnored(c, f)
		if stale != nil && slices.Equal(now, stale) {
			return nil
		}
		prev := stale
		stale = now
		return fmt.Errorf("mfs_master_ignored_total{reason=\"stale-incarnation\"}: %v, a second before %v", now, prev)
	})
	t.Logf("part 3: the other masters' mfs_master_ignored_total{reason=\"stale-incarnation\"} settled at %v", stale)
}

// finish halts the writer and reads every acknowledged change back from
// the LEADER.
func (r *dfRestore) finish(t *testing.T) {
	t.Helper()
	c, w := r.c, r.w
	w.halt()
	final := leaderOf(t, c)
	w.check(t, r.reader, fmt.Sprintf("at the end, from the LEADER %s", c.Masters[final].Addr))
	t.Logf("part 3 done in %v; %d writes acknowledged, %d failed or unknown; whole test %v",
		time.Since(r.partBegan).Round(time.Millisecond), w.count(), w.failed(), time.Since(r.began).Round(time.Millisecond))
}

// startDiskFaults starts masters masters and css voter-only chunkservers
// in one location (127.B.1.x) and waits for a LEADER counting them all.
func startDiskFaults(t *testing.T, masters, css int) (*cluster.Cluster, uint8) {
	t.Helper()
	dir := t.TempDir()
	if keep := os.Getenv("MFS_TEST_DIR"); keep != "" {
		dir = filepath.Join(keep, t.Name())
		os.RemoveAll(dir)
	}
	b := base()
	s := cluster.Spec{Dir: dir, Bin: bin, MasterCfg: map[string]string{},
		CSCfg: map[string]string{"MAX_PROMISE": dfMaxPromise.String()}}
	for k, v := range fastStart {
		s.MasterCfg[k] = v
	}
	if os.Getenv("MFS_TEST_DIR") != "" {
		s.CSCfg["LOG_LEVEL"] = "debug"
		s.MasterCfg["LOG_LEVEL"] = "debug"
	}
	for i := range masters {
		s.Masters = append(s.Masters, netip.AddrFrom4([4]byte{127, b, 0, byte(11 + i)}))
	}
	for i := range css {
		s.CS = append(s.CS, cluster.CS{Addr: netip.AddrFrom4([4]byte{127, b, 1, byte(1 + i)}), VoterOnly: true})
	}
	c, err := cluster.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		raceReports(t, s.Dir)
		if t.Failed() {
			dumpLogs(t, s.Dir)
		}
	})
	eventually(t, 40*time.Second, 100*time.Millisecond, fmt.Sprintf("a LEADER counting all %d chunkservers", css), func() error {
		_, st, err := c.WaitLeader(time.Second, 100*time.Millisecond)
		if err != nil {
			return err
		}
		if st.Voters != css || st.Registered != css {
			return fmt.Errorf("LEADER %s with %d/%d votes", st.Addr, st.Voters, st.Registered)
		}
		return nil
	})
	return c, b
}

// dfObserver polls every master's status every 100 ms: it records every
// round in which two masters say LEADER, and what the answers and the
// alarms built from them (clusterview.Build, as mfscli and the status API
// build them) show of the chunkserver being watched.
type dfObserver struct {
	c    *cluster.Cluster
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	rounds  int
	doubles []string
	v       *dfVoter // the chunkserver watched (track)
	seen    dfSeen
}

// dfSeen is what the polls showed of the watched chunkserver since track.
type dfSeen struct {
	uncertain  bool   // some master's answer said it is uncertain
	record     string // the Record text such an answer carried
	alarm      string // its part of the voter_record alarm, in a round where it was uncertain
	uncertainN int    // rounds in which some answer said it is uncertain
}

type dfReport struct {
	rounds  int
	doubles []string
}

func watchDiskFaults(c *cluster.Cluster) *dfObserver {
	o := &dfObserver{c: c, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		// Bounded: the test ends long before this many rounds.
		for range 20000 {
			o.poll()
			select {
			case <-o.quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return o
}

func (o *dfObserver) poll() {
	st, errs := o.c.Statuses(500 * time.Millisecond)
	now := time.Now()
	var leaders []string
	answers := make([]clusterview.Answer, len(st))
	o.mu.Lock()
	v := o.v
	o.mu.Unlock()
	uncertain, record := false, ""
	for i := range st {
		answers[i] = clusterview.Answer{Addr: cluster.ClientAddr(o.c.Masters[i].Addr), St: st[i], Err: errs[i]}
		if errs[i] != nil {
			continue
		}
		if st[i].Role == roles.Leader {
			leaders = append(leaders, fmt.Sprintf("%s@%d(quorum %v)", st[i].Addr, st[i].Epoch, st[i].HoldsQuorum))
		}
		for _, cs := range st[i].Chunkservers {
			if v != nil && cs.Addr == v.p.Addr && cs.Uncertain {
				uncertain = true
				if cs.Record != "" {
					record = cs.Record
				}
			}
		}
	}
	alarm := ""
	if uncertain {
		for _, w := range clusterview.Build(answers, o.c.Spec.MasterHost(), now).Warnings {
			if w.Kind == alarmVoterRecord {
				alarm = v.alarmPart(w.Text)
			}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rounds++
	if len(leaders) > 1 {
		o.doubles = append(o.doubles, now.Format("15:04:05.000")+" "+strings.Join(leaders, " "))
	}
	if v != o.v {
		return // track moved on during the poll
	}
	if uncertain {
		o.seen.uncertain = true
		o.seen.uncertainN++
		if record != "" {
			o.seen.record = record
		}
		if strings.Contains(alarm, "UNCERTAIN") {
			o.seen.alarm = alarm
		}
	}
}

// track starts watching the chunkserver at a, forgetting what was seen of
// the one before.
func (o *dfObserver) track(v *dfVoter) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.v, o.seen = v, dfSeen{}
}

func (o *dfObserver) seenNow() dfSeen {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen
}

func (o *dfObserver) stop() dfReport {
	select {
	case <-o.quit:
	default:
		close(o.quit)
	}
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return dfReport{rounds: o.rounds, doubles: slices.Clone(o.doubles)}
}

// dfVoter is the chunkserver a part damages, and what it should show.
type dfVoter struct {
	p         *cluster.Proc
	path      string // its chunkserver.mfs
	id        wire.CSID
	port      uint16
	haveAlarm bool
	// uncertainText: what its Record (when it has one) and its part of the
	// voter_record alarm say while it is uncertain; restoredText: what
	// its part of the alarm says once it is restored ("": it has none).
	uncertainText, restoredText string
	mark                        int64     // its log's size before the restart
	restarted                   time.Time // when it was started again
}

// voterOf describes chunkserver i as the LEADER lists it now.
func voterOf(t *testing.T, c *cluster.Cluster, i int, haveAlarm bool) *dfVoter {
	t.Helper()
	p := c.CS[i]
	cs := csOf(t, c, p.Addr)
	return &dfVoter{p: p, path: filepath.Join(filepath.Dir(p.Cfg), metadata.ChunkserverFile), id: cs.ID, port: cs.Port, haveAlarm: haveAlarm}
}

// restart starts it again (it was killed), noting where its log was.
func (v *dfVoter) restart(t *testing.T) {
	t.Helper()
	v.mark, v.restarted = logSize(v.p.Log), time.Now()
	if err := v.p.Start(); err != nil {
		t.Fatal(err)
	}
}

// alarmPart is what the voter_record alarm's text says of this
// chunkserver ("" when it does not name it).
func (v *dfVoter) alarmPart(text string) string {
	name := fmt.Sprintf("chunkserver %s:%d (id %d)", v.p.Addr, v.port, v.id)
	i := strings.Index(text, name)
	if i < 0 {
		return ""
	}
	rest := text[i:]
	if j := strings.Index(rest[len(name):], "; chunkserver "); j >= 0 {
		rest = rest[:len(name)+j]
	}
	return rest
}

// simAlarm is mfscli -SIM -j's voter_record alarm ("" when none).
func simAlarm(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	out, err := mfscli(t, c, "-SIM", "-j")
	if err != nil {
		t.Fatalf("mfscli -SIM -j: %v\n%s", err, out)
	}
	// Only the warnings: the whole Document does not decode (its Level
	// fields marshal as text and have no UnmarshalText).
	var doc struct {
		Dataset struct {
			Warnings []clusterview.LayoutWarning `json:"warnings"`
		} `json:"dataset"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("mfscli -SIM -j: %v\n%s", err, out)
	}
	for _, w := range doc.Dataset.Warnings {
		if w.Kind == alarmVoterRecord {
			return w.Text
		}
	}
	return ""
}

// seenUncertain: the status answers show the chunkserver uncertain (with
// a Record naming its file when it has one), the voter_record alarm built
// from them names it as UNCERTAIN, and so does mfscli -SIM -j when the
// chunkserver was uncertain before and after it ran.
func (v *dfVoter) seenUncertain(t *testing.T, c *cluster.Cluster, o *dfObserver) {
	t.Helper()
	eventually(t, 10*time.Second, 50*time.Millisecond, v.p.Name+" shown uncertain in the status answers", func() error {
		s := o.seenNow()
		if !s.uncertain {
			return fmt.Errorf("no answer says it is uncertain yet; tail:\n%s", logTail(v.p.Log, 8))
		}
		if s.record != "" && (!strings.Contains(s.record, v.path) || !strings.Contains(s.record, v.uncertainText)) {
			return fmt.Errorf("uncertain, but its Record %q does not name %s with %q", s.record, v.path, v.uncertainText)
		}
		return nil
	})
	s := o.seenNow()
	t.Logf("%s uncertain in the status answers; Record %q", v.p.Name, s.record)
	if n, err := cluster.Metric(cluster.CSHTTP(v.p.Addr), "mfs_chunkserver_voter_uncertain", 2*time.Second); (err != nil || n != 1) && stillUncertain(c, v.p.Addr) {
		t.Errorf("%s uncertain, but mfs_chunkserver_voter_uncertain = %v (%v)", v.p.Name, n, err)
	}
	if !v.haveAlarm {
		return
	}
	before := stillUncertain(c, v.p.Addr)
	text := simAlarm(t, c)
	after := stillUncertain(c, v.p.Addr)
	part := v.alarmPart(text)
	t.Logf("mfscli -SIM -j (uncertain before %v, after %v), of %s: %q", before, after, v.p.Name, part)
	if before && after && (!strings.Contains(part, "UNCERTAIN") || !strings.Contains(part, v.uncertainText)) {
		t.Errorf("%s uncertain before and after mfscli -SIM -j ran, but the %s alarm does not name it as UNCERTAIN with %q: %q", v.p.Name, alarmVoterRecord, v.uncertainText, text)
	}
	eventually(t, 5*time.Second, 50*time.Millisecond, "the "+alarmVoterRecord+" alarm built from the status answers to name "+v.p.Name, func() error {
		s := o.seenNow()
		if s.alarm == "" {
			return fmt.Errorf("%d rounds showed %s uncertain, none with an alarm naming it as UNCERTAIN", s.uncertainN, v.p.Name)
		}
		if s.record != "" && !strings.Contains(s.alarm, v.path) {
			return fmt.Errorf("the alarm does not name %s: %q", v.path, s.alarm)
		}
		return nil
	})
}

// stillUncertain: the LEADER's answer says the chunkserver at a is
// uncertain now.
func stillUncertain(c *cluster.Cluster, a netip.Addr) bool {
	st, errs := c.Statuses(time.Second)
	for i := range st {
		if errs[i] != nil || st[i].Role != roles.Leader {
			continue
		}
		for _, cs := range st[i].Chunkservers {
			if cs.Addr == a {
				return cs.Uncertain
			}
		}
	}
	return false
}

// restored: the chunkserver, uncertain since its restart, is restored by
// the LEADER within its quiet time (MAX_PROMISE) and a few seconds: its
// log says so, naming the file and a master, the LEADER counts its vote
// under its id, no answer calls it uncertain, its gauge is back to 0, and
// the alarm says what restoredText says of it.
func (v *dfVoter) restored(t *testing.T, c *cluster.Cluster, o *dfObserver) {
	t.Helper()
	masters := map[string]bool{}
	for _, m := range c.Masters {
		masters[m.Addr.String()] = true
	}
	bound := dfMaxPromise + 8*time.Second
	eventually(t, time.Until(v.restarted.Add(bound)), 50*time.Millisecond, fmt.Sprintf("%s restored within MAX_PROMISE (%v) + 8 s of its restart", v.p.Name, dfMaxPromise), func() error {
		var line string
		for _, l := range linesFrom(v.p.Log, v.mark) {
			var r struct {
				Msg    string `json:"message"`
				File   string `json:"file"`
				Master string `json:"master"`
				Epoch  uint64 `json:"epoch"`
			}
			if json.Unmarshal([]byte(l), &r) != nil || r.Msg != "voter record restored from the LEADER's heartbeat: voting again" {
				continue
			}
			if r.File != v.path || !masters[r.Master] || r.Epoch == 0 {
				return fmt.Errorf("its restore line names file %q, master %q, epoch %d (want %s, a master, an epoch): %s", r.File, r.Master, r.Epoch, v.path, l)
			}
			line = l
		}
		if line == "" {
			return fmt.Errorf("its log does not say it was restored; tail:\n%s", logTail(v.p.Log, 8))
		}
		st, errs := c.Statuses(time.Second)
		for i := range st {
			if errs[i] != nil {
				continue
			}
			for _, cs := range st[i].Chunkservers {
				if cs.Addr == v.p.Addr && cs.Uncertain {
					return fmt.Errorf("%s still says it is uncertain", c.Masters[i].Addr)
				}
			}
			if st[i].Role != roles.Leader {
				continue
			}
			for _, cs := range st[i].Chunkservers {
				if cs.Addr == v.p.Addr {
					if cs.ID != v.id || !cs.Connected || !cs.Voting {
						return fmt.Errorf("the LEADER %s shows it as id %d, connected %v, voting %v (want id %d voting)", st[i].Addr, cs.ID, cs.Connected, cs.Voting, v.id)
					}
					return nil
				}
			}
			return fmt.Errorf("the LEADER %s does not list it", st[i].Addr)
		}
		return errors.New("no LEADER answers")
	})
	t.Logf("%s restored and voting %v after its restart (MAX_PROMISE %v)", v.p.Name, time.Since(v.restarted).Round(time.Millisecond), dfMaxPromise)
	if n, err := cluster.Metric(cluster.CSHTTP(v.p.Addr), "mfs_chunkserver_voter_uncertain", 2*time.Second); err != nil || n != 0 {
		t.Errorf("%s restored, but mfs_chunkserver_voter_uncertain = %v (%v)", v.p.Name, n, err)
	}
	if s := o.seenNow(); !s.uncertain {
		t.Errorf("%s was restored, but no poll ever showed it uncertain", v.p.Name)
	}
	if !v.haveAlarm {
		return
	}
	part := v.alarmPart(simAlarm(t, c))
	t.Logf("mfscli -SIM -j once restored, of %s: %q", v.p.Name, part)
	switch {
	case strings.Contains(part, "UNCERTAIN"):
		t.Errorf("%s restored, but the %s alarm still calls it UNCERTAIN: %q", v.p.Name, alarmVoterRecord, part)
	case v.restoredText == "" && part != "":
		t.Errorf("%s restored, but the %s alarm still names it: %q", v.p.Name, alarmVoterRecord, part)
	case v.restoredText != "" && !strings.Contains(part, v.restoredText):
		t.Errorf("%s restored: the %s alarm should say %q of it: %q", v.p.Name, alarmVoterRecord, v.restoredText, part)
	}
}

// rotNewestSlot flips bytes inside the record of the slot of the record
// file at path holding the newest record (the higher sequence number), as
// rot or a bad sector would; it returns that slot and both sequence
// numbers.
func rotNewestSlot(t *testing.T, path string) (int, [2]uint64) {
	t.Helper()
	const slot, header = 4096, 20 // two slots; magic, sequence, length
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(img) != 2*slot {
		t.Fatalf("%s holds %d bytes, a record file %d", path, len(img), 2*slot)
	}
	var seqs [2]uint64
	for i := range 2 {
		s := img[i*slot:]
		if !bytes.Equal(s[:8], []byte("MFSCSREC")) {
			t.Fatalf("copy %d of %s does not start with the record magic: %q", i+1, path, s[:8])
		}
		seqs[i] = binary.BigEndian.Uint64(s[8:16])
		if n := binary.BigEndian.Uint32(s[16:20]); n < 8 || header+int(n)+4 > slot {
			t.Fatalf("copy %d of %s: a body of %d bytes", i+1, path, n)
		}
	}
	newest := 0
	if seqs[1] > seqs[0] {
		newest = 1
	}
	for i := header; i < header+8; i++ {
		img[newest*slot+i] ^= 0xa5
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(img[newest*slot:(newest+1)*slot], int64(newest*slot)); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return newest, seqs
}

// dfWriter writes new keys (df/NNNNNN) through one client, one at a
// time, and keeps those acknowledged.
type dfWriter struct {
	quit  atomic.Bool
	done  chan struct{}
	mu    sync.Mutex
	acked map[string]string
	n     int // acknowledged
	bad   int // failed, or of unknown outcome
	last  error
}

func startDFWriter(t *testing.T, c *cluster.Cluster) *dfWriter {
	cl := newClient(t, c, 300*time.Millisecond)
	w := &dfWriter{done: make(chan struct{}), acked: map[string]string{}}
	go func() {
		defer close(w.done)
		for i := 0; i < 200000 && !w.quit.Load(); i++ {
			k, v := fmt.Sprintf("df/%06d", i), fmt.Sprintf("v%d.%d", i, time.Now().UnixNano())
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			_, err := cl.Put(ctx, k, v)
			cancel()
			w.mu.Lock()
			if err == nil {
				w.acked[k] = v
				w.n++
			} else {
				w.bad++
				w.last = err
			}
			w.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return w
}

// snapshot is the changes acknowledged so far.
func (w *dfWriter) snapshot() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.acked))
	for k, v := range w.acked {
		out[k] = v
	}
	return out
}

func (w *dfWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *dfWriter) failed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bad
}

// await waits (bounded) until n writes are acknowledged.
func (w *dfWriter) await(t *testing.T, n int) {
	t.Helper()
	eventually(t, 20*time.Second, 50*time.Millisecond, fmt.Sprintf("%d acknowledged writes", n), func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.n < n {
			return fmt.Errorf("%d acknowledged, %d failed (last: %v)", w.n, w.bad, w.last)
		}
		return nil
	})
}

func (w *dfWriter) halt() {
	w.quit.Store(true)
	select {
	case <-w.done:
	case <-time.After(15 * time.Second):
	}
}

// check reads df/ back through cl (at the LEADER) and fails t for every
// change acknowledged so far that is missing or holds another value.
func (w *dfWriter) check(t *testing.T, cl *client.Client, when string) {
	t.Helper()
	w.mu.Lock()
	want := make(map[string]string, len(w.acked))
	for k, v := range w.acked {
		want[k] = v
	}
	w.mu.Unlock()
	got := map[string]string{}
	eventually(t, 20*time.Second, 200*time.Millisecond, "df/ listed from the LEADER "+when, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		es, _, err := cl.List(ctx, "df/")
		if err != nil {
			return err
		}
		clear(got)
		for _, e := range es {
			got[e.Key] = e.Value
		}
		return nil
	})
	var lost []string
	for k, v := range want {
		if got[k] != v {
			lost = append(lost, fmt.Sprintf("%s=%q (read %q)", k, v, got[k]))
		}
	}
	if len(lost) > 0 {
		sort.Strings(lost)
		t.Fatalf("%s: %d of %d acknowledged writes do not read back from %s, first: %v", when, len(lost), len(want), cl.Leader(), lost[:min(5, len(lost))])
	}
	t.Logf("%s: all %d acknowledged writes read back from %s (%d keys listed)", when, len(want), cl.Leader(), len(got))
}

// csOf is the LEADER's row of the chunkserver at a.
func csOf(t *testing.T, c *cluster.Cluster, a netip.Addr) protocol.CSStatus {
	t.Helper()
	var row protocol.CSStatus
	eventually(t, 10*time.Second, 100*time.Millisecond, "the LEADER's row of "+a.String(), func() error {
		_, st, err := c.WaitLeader(2*time.Second, 100*time.Millisecond)
		if err != nil {
			return err
		}
		for _, cs := range st.Chunkservers {
			if cs.Addr == a && cs.ID != wire.NoCS {
				row = cs
				return nil
			}
		}
		return fmt.Errorf("the LEADER %s does not list %s", st.Addr, a)
	})
	return row
}

func leaderOf(t *testing.T, c *cluster.Cluster) int {
	t.Helper()
	i, _, err := c.WaitLeader(15*time.Second, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func statusOf(t *testing.T, c *cluster.Cluster, i int) protocol.StatusResp {
	t.Helper()
	st, err := client.Status(cluster.ClientAddr(c.Masters[i].Addr), 2*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", c.Masters[i].Name, err)
	}
	return st
}

// waitSyncedDF waits for master i to be a synced FOLLOWER (or LEADER) at
// the LEADER's version or past what it was when the wait began.
func waitSyncedDF(t *testing.T, c *cluster.Cluster, i int, within time.Duration) {
	t.Helper()
	var target uint64
	eventually(t, within, 100*time.Millisecond, c.Masters[i].Name+" synced", func() error {
		sts, errs := c.Statuses(time.Second)
		lead := -1
		for j := range sts {
			if errs[j] == nil && sts[j].Role == roles.Leader && sts[j].HoldsQuorum {
				lead = j
			}
		}
		if lead < 0 {
			return errors.New("no LEADER")
		}
		if target == 0 {
			target = sts[lead].MetaVersion
		}
		if errs[i] != nil {
			return fmt.Errorf("%v; tail:\n%s", errs[i], logTail(c.Masters[i].Log, 8))
		}
		if s := sts[i]; s.Sync != roles.Synced || s.MetaVersion < target {
			return fmt.Errorf("%s is %v (%v) at version %d, want %d; tail:\n%s", s.Addr, s.Role, s.Sync, s.MetaVersion, target, logTail(c.Masters[i].Log, 8))
		}
		return nil
	})
}

// startFromCopy replaces master i's DATA_PATH with the copy at backup and
// starts it; it returns the incarnation the master says it started with.
func startFromCopy(t *testing.T, c *cluster.Cluster, i int, backup string) uint64 {
	t.Helper()
	m := c.Masters[i]
	dataDir := filepath.Dir(m.Cfg)
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	copyDir(t, backup, dataDir)
	mark := logSize(m.Log)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	var inc uint64
	eventually(t, 10*time.Second, 50*time.Millisecond, m.Name+"'s start line with its incarnation", func() error {
		for _, l := range linesFrom(m.Log, mark) {
			var line struct {
				Msg         string `json:"message"`
				Incarnation uint64 `json:"incarnation"`
			}
			if json.Unmarshal([]byte(l), &line) == nil && strings.HasPrefix(line.Msg, "master started") && line.Incarnation != 0 {
				inc = line.Incarnation
				return nil
			}
		}
		if !m.Running() {
			return fmt.Errorf("%s exited; tail:\n%s", m.Name, logTail(m.Log, 10))
		}
		return fmt.Errorf("no start line yet; tail:\n%s", logTail(m.Log, 5))
	})
	return inc
}

// setIncarnation opens the master store in dir (not running) and sets the
// incarnation of its hard state; it returns the one it held.
func setIncarnation(t *testing.T, dir string, inc uint64) uint64 {
	t.Helper()
	s, err := metadata.OpenMaster(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	was := st.Hard.Incarnation
	h := st.Hard
	h.Incarnation = inc
	if err := s.Apply(roles.Persist{Hard: &h}); err != nil {
		t.Fatal(err)
	}
	return was
}

// copyDir copies the regular files under src to dst (made anew).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		info, err := in.Stat()
		if err != nil {
			return err
		}
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return errors.Join(out.Sync(), out.Close())
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
}

func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// linesFrom is the lines of a log from byte offset off on.
func linesFrom(path string, off int64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(f, 64<<20))
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// logTail is the last n lines of a log, for failure messages.
func logTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// staleIgnored reads mfs_master_ignored_total{reason="stale-incarnation"}
// of every master but skip.
func staleIgnored(c *cluster.Cluster, skip int) []string {
	var out []string
	for i, m := range c.Masters {
		if i == skip {
			continue
		}
		n := "0"
		cl := http.Client{Timeout: 2 * time.Second}
		if r, err := cl.Get("http://" + cluster.MasterHTTP(m.Addr).String() + "/metrics"); err == nil {
			b, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
			r.Body.Close()
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, `mfs_master_ignored_total{reason="stale-incarnation"} `); ok {
					n = v
				}
			}
		} else {
			n = err.Error()
		}
		out = append(out, m.Name+"="+n)
	}
	return out
}
