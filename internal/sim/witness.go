package sim

import (
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/witness"
	"github.com/mfs-election/mfs-election/pkg/witness/logobj"
)

// The object-store witness in the simulator (docs/sim.md, "The witness"):
// on two-location seeds that draw it, the registry names a witness and
// every master (but those drawn without one) reaches a store. The store
// is one linearizable object whose ETag is the MD5 of its content, with a
// latency, outages, masters cut off from it, and answers lost before or
// after the write landed (the ambiguous case). A non-atomic store (a
// conditional write checked on arrival, written a little later) must be
// caught by the self-test before any master uses it.
//
// Everything the witness draws comes from its own random stream, so a
// seed that does not draw it runs exactly as it did before the witness.

// witnessID is the id the simulated operator configures.
const witnessID = "w-sim"

// witnessProfile is what a seed draws for the witness.
type witnessProfile struct {
	on        bool
	noStore   uint32 // masters without a store: bit i is master i
	lease     master.WitnessConfig
	latency   time.Duration // the most one trip to the store takes
	loss      float64       // an answer lost (before or after the write)
	nonAtomic bool
	// loseSite: at the heal, every chunkserver of one site is lost for good
	// (the liveness phase must elect on the other half with the lease).
	loseSite  bool
	lostSite  int
	faults    []string
	meanGap   time.Duration
	refused   bool // the self-test refused the store: no master uses it
	selfTestN int  // how many of the self-test's racing creates won
	sabotage  bool // Options.SabotageWitness: the self-test is skipped
	ignoreIf  bool // the store ignores If-Match/If-None-Match (sabotage only)
}

func (p witnessProfile) String() string {
	if !p.on {
		return "none"
	}
	return fmt.Sprintf("lease=%v renew=%v call<=%v delay=%v latency<=%v loss=%.2f non_atomic=%v no_store=%b lose_site=%v log<=%d/%dB faults=%v",
		p.lease.Lease.Lease, p.lease.Lease.RenewEvery, p.lease.Lease.CallTimeout, p.lease.Delay, p.latency, p.loss, p.nonAtomic, p.noStore, p.loseSite,
		p.lease.LogObjects, p.lease.LogBytes, p.faults)
}

var witnessFaults = []string{"store-down", "store-cut", "split-sites", "kill-site", "store-slow"}

// drawWitness: two-location seeds draw a witness half the time.
func drawWitness(seed int64, p profile, force bool, sabotage bool) (wp witnessProfile) {
	r := rand.New(rand.NewSource(seed*7919 + 104729))
	if p.locs != 2 || (r.Intn(2) == 0 && !force) {
		return wp
	}
	defer func() {
		if sabotage {
			// Short leases and long splits: takeovers of a live holder.
			wp.ignoreIf, wp.noStore, wp.sabotage = true, 0, true
			wp.lease.Lease.Lease, wp.lease.Lease.RenewEvery, wp.lease.Lease.CallTimeout = time.Second, 250*time.Millisecond, 125*time.Millisecond
			wp.latency, wp.loss, wp.faults = time.Millisecond, 0, []string{"split-sites"}
		}
	}()
	wp.on = true
	l := master.DefaultWitnessConfig()
	l.Lease.Lease = time.Duration(1+r.Intn(4)) * time.Second
	l.Lease.RenewEvery = l.Lease.Lease / 4
	l.Lease.CallTimeout = l.Lease.Lease / 8
	l.Lease.Backoff = l.Lease.CallTimeout
	l.Delay = time.Duration(r.Intn(4)) * p.masterCfg.HeartbeatInterval
	wp.lease = l
	// A trip takes up to a fifth of the call timeout, as WITNESS_CALL_TIMEOUT
	// is set against the store's round trip (docs/operations.md); the
	// store-slow fault makes it ten times that.
	wp.latency = max(time.Millisecond, time.Duration(r.Int63n(int64(l.Lease.CallTimeout/5))))
	wp.loss = []float64{0, 0, 0.02, 0.1}[r.Intn(4)]
	wp.nonAtomic = r.Intn(10) == 0
	if r.Intn(4) == 0 {
		wp.noStore = 1 << r.Intn(p.masters)
	}
	wp.loseSite = r.Intn(2) == 0
	wp.lostSite = r.Intn(2)
	for _, f := range witnessFaults {
		if r.Intn(10) < 6 {
			wp.faults = append(wp.faults, f)
		}
	}
	wp.meanGap = time.Duration(1500+r.Intn(3000)) * time.Millisecond
	if r.Intn(3) == 0 {
		// Small store log bounds: the chain restarts at snapshots often.
		// (The bytes bound must hold a snapshot, registry included,
		// with room to spare: docs/operations.md, WITNESS_LOG_BYTES.)
		wp.lease.LogObjects, wp.lease.LogBytes = 4+r.Intn(8), uint64(64+r.Intn(192))<<10
	}
	if r.Intn(2) == 0 {
		wp.faults = append(wp.faults, "store-lag")
	}
	return wp
}

// simStore is the witness's store: the lease object and the store log
// (logobj.Bucket), with its faults.
type simStore struct {
	rng    *rand.Rand
	bucket logobj.Bucket
	down   bool
	slow   bool
	cut    []bool // master i cannot reach it
	// lagUntil, lagBy: until lagUntil[i], master i's requests reach the
	// store lagBy[i] late (still in flight when its answer timed out).
	lagUntil, lagBy []int64
	nonAtomic       bool
	ignoreIf        bool // every conditional write succeeds (an emulator that ignores the headers)
	calls           int
	writes          int
	// The store log (the store as a stand-in replica): objects and head
	// writes that landed, reads of objects (an ELECT's catch-up), and
	// head writes refused because a later LEADER's head was there (a
	// superseded LEADER fenced).
	logObjects, logSnapshots, logHeads, logReads, staleRefused int
	headEpoch                                                  uint64 // the head's epoch, as last written
}

// check says what a conditional write would get on the object as it is.
func (s *simStore) check(r witness.Request) witness.Class {
	if s.ignoreIf || r.Op == witness.Delete {
		return witness.OK
	}
	return s.bucket.Check(r)
}

// headEpoch is the epoch of the head a write would put (0: none).
func headEpochOf(body []byte) uint64 {
	h, err := witness.DecodeHead(body)
	if err != nil {
		return 0
	}
	return h.Epoch
}

// write lands a write (or a delete), and answers as the store would.
func (s *simStore) write(r witness.Request) witness.Result {
	body, d := logobj.Encoded(r)
	s.writes++
	return s.bucket.Write(r, body, d)
}

// selfTest is the daemon's start-up check (s3store.SelfTest) on the
// model: 16 create-only writes of a probe key race; more than one winner
// refuses the store.
func (s *simStore) selfTest() (winners int) {
	probe := &simStore{nonAtomic: s.nonAtomic, ignoreIf: s.ignoreIf}
	probe.write(witness.Request{Op: witness.Delete, Key: "probe"})
	var passed []witness.Request
	for k := 0; k < 16; k++ {
		r := witness.Request{Op: witness.Create, Key: "probe", Body: []byte(fmt.Sprintf("probe %d", k))}
		if probe.nonAtomic {
			// Checked as each arrives, all before the first is written.
			if probe.check(r) == witness.OK {
				passed = append(passed, r)
			}
			continue
		}
		if probe.check(r) == witness.OK {
			probe.write(r)
			winners++
		}
	}
	for _, r := range passed {
		probe.write(r)
		winners++
	}
	return winners
}

// setupWitness makes the store and the lease object, and runs the
// self-test (the daemon's, at start): a refused store is used by nobody.
func (w *world) setupWitness(masters int) {
	wp := &w.wprof
	if !wp.on {
		return
	}
	w.store = &simStore{rng: rand.New(rand.NewSource(w.opt.Seed*31 + 7)), nonAtomic: wp.nonAtomic, ignoreIf: wp.ignoreIf, cut: make([]bool, masters),
		lagUntil: make([]int64, masters), lagBy: make([]int64, masters)}
	wp.selfTestN = w.store.selfTest()
	wp.refused = wp.selfTestN != 1 && !wp.sabotage
	w.store.write(witness.Request{Op: witness.Create, Body: witness.Record{Format: witness.Format, WitnessID: witnessID, Cluster: "sim", State: witness.Free,
		Holder: 1, Incarnation: 0}.Encode()})
	w.store.writes = 0
}

// witnessCfg is master i's side of the witness.
func (w *world) witnessCfg(i int, c master.WitnessConfig) master.WitnessConfig {
	wp := w.wprof
	if !wp.on {
		return c
	}
	c = wp.lease
	c.Cluster = "sim"
	c.Store = wp.noStore&(1<<i) == 0 && !wp.refused
	return c
}

// call carries out one request of master r on the store: it arrives after
// a trip, is applied there (a non-atomic store checks on arrival and
// writes a trip later), and its answer comes back after another trip,
// unless it is lost. The daemon's driver answers every call by its
// deadline: a call with no answer by then gets Ambiguous, "timeout".
func (w *world) call(r ref, req witness.Request) {
	s := w.store
	s.calls++
	n := w.masters[r.i]
	if w.opt.FullTrace {
		w.tracef("%v -> store %v if-match=%q %s", r, req.Op, req.ETag, strings.TrimSpace(string(req.Body)))
	}
	inc := n.inc
	timeout := int64(w.wprof.lease.Lease.CallTimeout)
	trip := func() int64 {
		d := 1 + s.rng.Int63n(int64(w.wprof.latency))
		if s.slow {
			d *= 10
		}
		return d
	}
	sent := w.now
	// A log object's descriptor comes back with every answer to its
	// Create (the driver made it before sending).
	_, desc := logobj.Encoded(req)
	fail := func(err string) witness.Result {
		return witness.Result{Seq: req.Seq, Key: req.Key, Class: witness.Ambiguous, Err: err, Object: desc}
	}
	answer := func(at int64, res witness.Result) {
		if at-sent > timeout {
			at, res = sent+timeout, fail("timeout")
		}
		w.at(max(at, w.now), func() {
			if n.inc != inc || !n.up {
				return // the process that asked is gone
			}
			w.enqueue(r, roles.WitnessResult{Result: res})
		})
	}
	lost := s.rng.Float64() < w.wprof.loss
	if s.down || s.cut[r.i] || (lost && s.rng.Intn(2) == 0) {
		answer(sent+timeout, fail("timeout"))
		return
	}
	arrive := sent + trip()
	if s.lagUntil[r.i] > w.now {
		arrive += s.lagBy[r.i]
	}
	w.at(arrive, func() {
		if s.down {
			answer(sent+timeout, fail("timeout"))
			return
		}
		var res witness.Result
		switch {
		case req.Op == witness.Get:
			res = s.bucket.Read(req)
			if req.Want != nil {
				s.logReads++
			}
		case s.check(req) != witness.OK:
			res = witness.Result{Seq: req.Seq, Key: req.Key, Class: witness.Conflict, Object: desc}
			if req.Key == witness.LogKey && headEpochOf(req.Body) < s.headEpoch {
				s.staleRefused++
			}
		case s.nonAtomic:
			// Checked now, written a moment later: a rival checked in
			// between wins too.
			back := trip()
			w.at(w.now+back/2, func() {
				w.checkHead(r, req)
				answer(w.now+back, s.write(req))
			})
			return
		default:
			w.checkHead(r, req)
			res = s.write(req)
		}
		if lost {
			res = fail("connection reset")
		}
		answer(w.now+trip(), res)
	})
}

// scheduleWitness draws the witness's faults (from the store's stream)
// and has the operator configure the witness once the locations are
// mapped.
func (w *world) scheduleWitness(ids *adminIDs) {
	wp := w.wprof
	if !wp.on {
		return
	}
	w.at(int64(4*time.Second), func() {
		w.change(ids, registry.Change{Kind: registry.ChangeWitness, Name: witnessID}, mapRetries)
	})
	if len(wp.faults) == 0 {
		return
	}
	r := rand.New(rand.NewSource(w.opt.Seed*131 + 3))
	t := int64(6 * time.Second)
	end := int64(w.opt.ChaosTime) - int64(time.Second)
	for {
		t += int64(r.ExpFloat64() * float64(wp.meanGap))
		if t >= end {
			break
		}
		f := wp.faults[r.Intn(len(wp.faults))]
		dur := int64(300*time.Millisecond) + r.Int63n(int64(6*time.Second))
		pick := r.Intn(1 << 20)
		w.at(t, func() { w.witnessFault(f, dur, pick) })
	}
}

// site is the location a node belongs to: a chunkserver's by its address,
// a master's by its index (masters alternate between the sites).
func (w *world) site(r ref) int {
	switch r.k {
	case kCS:
		return r.i % w.prof.locs
	case kMaster:
		return r.i % 2
	}
	return -1
}

func (w *world) witnessFault(f string, dur int64, pick int) {
	s := w.store
	// Another fault that may depose a LEADER on a lossy link (as in
	// world.fault): split-sites and kill-site did, counted as the lossy
	// link's alone (chaos seeds 185, 397, 1059).
	w.othersUntil = max(w.othersUntil, w.now+dur+int64(w.prof.masterCfg.VoteLease))
	switch f {
	case "store-down":
		w.tracef("STORE DOWN for %v", time.Duration(dur))
		s.down = true
		w.at(w.now+dur, func() { s.down = false; w.tracef("STORE UP") })
	case "store-slow":
		w.tracef("STORE SLOW for %v", time.Duration(dur))
		s.slow = true
		w.at(w.now+dur, func() { s.slow = false })
	case "store-cut":
		i := pick % len(w.masters)
		w.tracef("STORE CUT from M%d for %v", i+1, time.Duration(dur))
		s.cut[i] = true
		w.at(w.now+dur, func() { s.cut[i] = false })
	case "store-lag":
		// The stale writer: the LEADER is cut off from every node, and
		// its calls on the store land long after they timed out, when
		// another LEADER may have swapped the head (fence 1 refuses them).
		i := w.leaderIdx()
		if i < 0 {
			i = pick % len(w.masters)
		}
		lag := dur + int64(w.wprof.lease.Lease.Lease)
		w.tracef("STORE LAG for M%d: cut off for %v, its store calls landing %v late", i+1, time.Duration(dur), time.Duration(lag))
		s.lagUntil[i], s.lagBy[i] = w.now+dur, lag
		me := func(r ref) bool { return r.k == kMaster && r.i == i }
		other := func(r ref) bool { return !me(r) }
		w.addCuts(fmt.Sprintf("M%d from all", i+1), dur, []cut{{from: me, to: other}, {from: other, to: me}})
	case "split-sites":
		in := func(site int) func(ref) bool {
			return func(r ref) bool { return (r.k == kMaster || r.k == kCS) && w.site(r) == site }
		}
		w.addCuts("site a | site b", dur, []cut{{from: in(0), to: in(1)}, {from: in(1), to: in(0)}})
	case "kill-site":
		site := pick % 2
		w.tracef("SITE %d LOST for %v", site, time.Duration(dur))
		for i := range w.masters {
			if w.site(ref{kMaster, i}) == site {
				if i == w.leaderIdx() {
					w.chk.startFailover(w, "kill-site")
				}
				w.killMaster(i)
				w.at(w.now+dur, func() {
					if !w.masters[i].up {
						w.startMaster(i)
					}
				})
			}
		}
		for i, c := range w.css {
			if c.started && w.site(ref{kCS, i}) == site {
				w.killCS(i)
				w.at(w.now+dur, func() { w.upCS(i) })
			}
		}
	}
}

// healWitness ends the store's faults at the heal, and on seeds that
// draw it loses one site's chunkservers for good: the other half must
// elect with the lease.
func (w *world) healWitness() {
	if !w.wprof.on {
		return
	}
	s := w.store
	s.down, s.slow = false, false
	clear(s.cut)
	w.wprof.loss = 0
	if w.wprof.loseSite && !w.wprof.refused {
		// Only where the registry splits evenly in two sites and names the
		// witness: a site switched OFF, or a change still in flight, leaves
		// the other alone with no tie to break (an operator's doing).
		if why := w.evenSplit(); why != "" {
			w.tracef("SITE %d kept: %s", w.wprof.lostSite, why)
			return
		}
		w.tracef("SITE %d's chunkservers LOST for good", w.wprof.lostSite)
		for i := range w.css {
			if w.site(ref{kCS, i}) == w.wprof.lostSite {
				w.killCS(i)
				w.css[i].gone = true
			}
		}
	}
}

// evenSplit says why the newest registry an up master holds is not two
// sites in force with the witness named ("" when it is).
func (w *world) evenSplit() string {
	var best *masterNode
	for _, m := range w.masters {
		if m.up && m.m.HasMetadata() && (best == nil || m.m.Registry().Version > best.m.Registry().Version) {
			best = m
		}
	}
	if best == nil {
		return "no master has metadata"
	}
	cfg := best.m.Registry()
	e := cfg.Electorate()
	switch {
	case cfg.Witness != witnessID:
		return "the registry names no witness"
	case best.m.InForce() < cfg.Version:
		return "a registry change is in flight"
	case !e.Divided() || !e.Witness():
		return "one location participates"
	}
	seen := map[int]bool{}
	for _, mb := range e.Members() {
		seen[int(mb.Loc)] = true
	}
	if len(seen) != 2 {
		return fmt.Sprintf("%d locations participate", len(seen))
	}
	return ""
}

// witnessBound is what the liveness bound gains with a witness: a record
// held by a master that died is taken only after a whole lease watched
// unchanged, and the delay, a read and a swap come first.
func (w *world) witnessBound() time.Duration {
	if !w.wprof.on {
		return 0
	}
	l := w.wprof.lease
	return l.Delay + 2*l.Lease.Lease + 6*l.Lease.CallTimeout
}

// checkWitness is W1: at most one master counts the witness's lease at any
// true instant (the lease's own promise; S1 rests on it for an even
// split).
func (c *checker) checkWitness(w *world) {
	if !w.wprof.on {
		return
	}
	holder := -1
	for i, m := range w.masters {
		if !m.up || m.m == nil {
			continue
		}
		if m.m.WitnessCounted(roles.Instant(m.clk.local(w.now))) {
			if holder >= 0 {
				w.violate("W1: M%d and M%d both count the witness's lease", holder+1, i+1)
				return
			}
			holder = i
		}
	}
	if holder >= 0 {
		c.witnessHeld++
	}
}

// storeHolds: the witness's store log holds the entry at pos (an object
// its head names has it), so a master that loses it can take it back.
//
// Only where every master has a store: a master without one cannot take
// anything back from it, and an ELECT without one that holds the votes
// waits for ever (a known limit: the witness alarm names such a master).
func (w *world) storeHolds(pos changelog.Pos) bool {
	if w.store == nil || w.wprof.noStore != 0 || w.wprof.refused {
		return false
	}
	r := w.store.bucket.Read(witness.Request{Op: witness.Get, Key: witness.LogKey})
	if r.Class != witness.OK {
		return false
	}
	h, err := witness.DecodeHead(r.Body)
	if err != nil {
		return false
	}
	if h.Snapshot != nil && pos.Version <= h.Snapshot.Last.Version {
		// The snapshot holds what the committed entries up to it made
		// (an entry of that version that differs was never committed).
		return true
	}
	for _, o := range h.Objects {
		if o.Prev.Version >= pos.Version || o.Last.Version < pos.Version {
			continue
		}
		got := w.store.bucket.Read(witness.Request{Op: witness.Get, Key: o.Key, Want: &o})
		if got.Batch == nil {
			return false
		}
		e := got.Batch.Entries[pos.Version-o.Prev.Version-1]
		return e.Pos == pos
	}
	return false
}

// checkHead is W2, as a write of the store log lands: the head's epoch
// never goes down (a LEADER writes it only at an epoch at least the
// head's, each write conditional on the ETag it read: a superseded
// LEADER's write never lands over a later one's), and every head names
// objects that exist. Counts the store log's traffic.
func (w *world) checkHead(r ref, req witness.Request) {
	s := w.store
	switch {
	case req.Batch != nil && req.Batch.Snapshot != nil:
		s.logSnapshots++
	case req.Batch != nil:
		s.logObjects++
	case req.Key == witness.LogKey:
		s.logHeads++
		h, err := witness.DecodeHead(req.Body)
		if err != nil {
			w.violate("W2: M%d wrote a store log head that does not decode: %v", r.i+1, err)
			return
		}
		if h.Epoch < s.headEpoch && !s.ignoreIf && !s.nonAtomic {
			w.violate("W2: M%d's store log head of epoch %d landed over one of epoch %d", r.i+1, h.Epoch, s.headEpoch)
		}
		named := h.Objects
		if h.Snapshot != nil {
			named = append([]witness.LogObject{*h.Snapshot}, named...)
		}
		for _, o := range named {
			if !s.bucket.Exists(o.Key) {
				w.violate("W2: M%d's store log head names %s, which the store does not hold", r.i+1, o.Key)
			}
		}
		s.headEpoch = max(s.headEpoch, h.Epoch)
	}
}
