// Package sim is a deterministic simulator of a whole cluster: the real pure
// masters and voters of pkg/roles, virtual time, one seeded random source,
// a network and disks that fail on purpose, and invariant checks after every
// event (docs/sim.md).
//
// One seed gives one run; the same seed gives the same trace hash.
package sim

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"math/bits"
	"math/rand"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// Options bound one run.
type Options struct {
	Seed      int64
	ChaosTime time.Duration // virtual time during which faults are injected
	// FullTrace keeps every delivered message in the trace (replays).
	FullTrace bool
	TraceTail int
	// Sabotage, for the tests that prove the checks can fail: when set,
	// masters count each vote this much longer than the lease arithmetic
	// allows (a negative margin that Validate would refuse).
	Sabotage time.Duration
	// SabotageCleanStop, for the test that proves the checks see the
	// clean-stop path: an orderly stop writes the clean-stop mark at once,
	// with the promise still standing, and the process ends.
	SabotageCleanStop bool
	// SabotageForget, for the test that proves the checks see a voter
	// that forgot: a chunkserver restarted from a damaged or lost record
	// keeps quiet as it should, but is not uncertain (as before the
	// uncertain voter: security review N1, N3).
	SabotageForget bool
	// SabotageWitness, for the test that proves W1 can fail: every
	// two-location seed gets a witness on a store that is not atomic, and
	// the self-test that would refuse it is skipped.
	SabotageWitness bool
	// Witness: every seed runs on two locations with a witness (make chaos
	// WITNESS=1); the rest of the profile is drawn as always.
	Witness bool
}

// DefaultOptions are what `make test` and `make chaos` run.
func DefaultOptions(seed int64) Options {
	return Options{Seed: seed, ChaosTime: 20 * time.Second, TraceTail: 40}
}

// Result is what one run found.
type Result struct {
	Seed       int64
	Profile    string
	Violations []string
	Liveness   string // empty when the liveness phase passed
	// StuckUncertain: no LEADER after the heal because too few voters are
	// certain for a quorum (documented; not a failure). DiskFaults: how
	// many chunkserver records the run damaged, tore or lost.
	StuckUncertain string
	DiskFaults     int
	TraceHash      uint64
	Trace          []string // the last lines
	Events         int
	Failovers      map[string][]time.Duration // fault kind -> time to the next LEADER
	HealToLead     time.Duration
	Bound          time.Duration
	Leaders        int
	Acked          int
	Snapshots      Snapshots
	// TempRemovals: temporary removals (mfscli -CTR) a master took.
	TempRemovals int
	// Forged: messages the adversary fault sent (impostor acks, a clone's
	// echoes, epoch bombs).
	Forged int
	// Keep: how many masters had KEEP_LEADERSHIP, and AllKeep whether that
	// was every master.
	Keep    int
	AllKeep bool
	// CleanStarts: chunkservers started from a record with the clean-stop
	// mark (an orderly stop before), which vote at once.
	CleanStarts int
	// Refusals: what the voters ignored, by reason: refused heartbeats
	// (stale-epoch, epoch-owned, ...: the epoch guards' paths were taken)
	// and stale releases and sessions.
	Refusals map[string]int
	// Restores: masters started again from an older copy of their store
	// (the restore-master fault).
	Restores int
	// Witness: what the witness did on a seed that drew one (nil: none).
	Witness *WitnessRun
	// Lossy: how long a master's links were lossy (the lossy-link fault),
	// and LossyChanges: the LEADER changes in that time.
	Lossy        time.Duration
	LossyChanges int
	// LossyAlone: those of LossyChanges with no other fault acting.
	LossyAlone int
	// Datagram: the seed drew the datagram side path for heartbeats and
	// their acks (profile.dgram); DatagramFirst: heartbeats, acks and
	// releases the cores took from it, ahead of their TCP copies, of
	// which DatagramRelease were releases.
	Datagram        bool
	DatagramFirst   int
	DatagramRelease int
}

// WitnessRun is what the witness did in one run.
type WitnessRun struct {
	Refused    bool // the self-test refused the store (a non-atomic one)
	Calls      int  // calls the masters made on the store
	Writes     int  // writes the store took
	HeldEvents int  // events after which some master counted the lease
	// The store log: objects and heads written, objects read back by a
	// catch-up, and heads refused to a superseded LEADER.
	LogObjects, LogSnapshots, LogHeads, LogReads, StaleRefused int
}

// Failed reports whether the run broke an invariant or liveness.
func (r Result) Failed() bool { return len(r.Violations) > 0 || r.Liveness != "" }

// Report is the text printed for a failed run.
func (r Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sim: seed %d FAILED\nprofile: %s\n", r.Seed, r.Profile)
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "violation: %s\n", v)
	}
	if r.Liveness != "" {
		fmt.Fprintf(&b, "liveness: %s\n", r.Liveness)
	}
	fmt.Fprintf(&b, "last trace lines:\n")
	for _, l := range r.Trace {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "replay: go test ./internal/sim -run 'TestReplay$' -seed=%d -v\n", r.Seed)
	return b.String()
}

// ---- clocks -------------------------------------------------------------------

// clock maps true time to one node's monotonic reading: piecewise linear,
// rate within [1-rho, 1+rho].
type clock struct {
	anchorTrue, anchorLocal int64
	rate                    float64
}

func (c *clock) local(t int64) int64 {
	return c.anchorLocal + int64(float64(t-c.anchorTrue)*c.rate)
}

// trueAt is the first true time at which the clock reads at least l, if the
// rate stays as it is.
func (c *clock) trueAt(l int64) int64 {
	t := c.anchorTrue + int64(float64(l-c.anchorLocal)/c.rate)
	for c.local(t) < l {
		t++
	}
	return t
}

func (c *clock) setRate(t int64, r float64) {
	c.anchorLocal, c.anchorTrue, c.rate = c.local(t), t, r
}

// ---- nodes --------------------------------------------------------------------

type kind uint8

const (
	kMaster kind = 1 + iota
	kCS
	kClient
)

// ref names a node: kind and 0-based index.
type ref struct {
	k kind
	i int
}

func (r ref) String() string {
	switch r.k {
	case kMaster:
		return fmt.Sprintf("M%d", r.i+1)
	case kCS:
		return fmt.Sprintf("CS%d", r.i+1)
	}
	return fmt.Sprintf("C%d", r.i+1)
}

// proc is what masters and voters share in the simulator: a process with a
// clock, an inbox and crash semantics.
type proc struct {
	ref    ref
	clk    clock
	up     bool
	paused bool
	inc    uint64 // bumps on kill: events for an older incarnation are dropped
	busy   bool   // a batch is waiting for its persist
	inbox  []roles.Event
	tickAt int64
	// wallJump is how far this machine's wall clock has been set off true
	// time. The driver stamps it on status messages for display, as the
	// daemons do; the core never reads it.
	wallJump int64
	// seqSeen is the driver's sequence filter on seeds with the datagram
	// path (passSeq): the highest Seq of a Heartbeat or HeartbeatAck it
	// passed on, per sender and session. Driver memory: gone with the
	// process.
	seqSeen map[seqKey]uint64
	// released: the sessions (per master) a VoteRelease was passed on
	// for; their datagram path is closed (passSeq).
	released map[seqKey]bool
}

// seqKey: the sender (its source address, to the driver) and the session.
type seqKey struct {
	from    ref
	session uint64
}

// setUp starts (up) or kills (!up) the process: whatever was queued or
// waiting for the disk is gone, and a kill makes events addressed to the
// old incarnation stale.
func (p *proc) setUp(up bool) {
	p.up, p.paused, p.busy, p.inbox, p.tickAt, p.seqSeen, p.released = up, false, false, nil, 0, nil, nil
	if !up {
		p.inc++
	}
}

// wallMs is the node's wall clock in Unix milliseconds (2027-01-01 at the
// start of a run).
func (p *proc) wallMs(now int64) int64 { return 1798761600000 + (now+p.wallJump)/1e6 }

type masterNode struct {
	proc
	cfg   master.Config
	m     *master.Master
	store *roles.MemStore // its disk: what completed batches made durable
}

type csNode struct {
	proc
	cfg      voter.Config
	v        *voter.Voter
	hard     roles.VoterHardState
	spare    bool // starts later: a registration
	started  bool
	stopping bool // an orderly stop was asked and has not ended
	// The disk faults (faults.go): prev is what the record file's other
	// copy holds (the record before hard); tear arms a torn write of the
	// next persist (tearEarly, tearLate); damaged and lost are what the
	// next start finds (voter.Config.RecordDamaged, RecordLost).
	prev          roles.VoterHardState
	tear          int
	damaged, lost bool
	// gone: lost for good at the heal (witness.go): never started again.
	gone bool
}

// ---- events -------------------------------------------------------------------

type evKind uint8

const (
	evDeliver evKind = 1 + iota
	evTick
	evBatch
	evFault
	evClient
)

type event struct {
	at      int64
	seq     uint64
	kind    evKind
	to      ref
	from    ref
	inc     uint64
	msg     any   // what a link delivers: a wire message, or a refused dial
	sentLoc int64 // sender's clock at send (for Refused)
	queued  bool  // a delivery that waited for its node's CPU already
	dgram   bool  // a delivery on the datagram path (datagram), not TCP
	batch   stepBatch
	fn      func()
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// ---- the world ----------------------------------------------------------------

type net struct {
	delayBase, delayJitter int64
	loss, dup              float64
	cuts                   []cut
	// lossy: until when each master's links (both ways, to every node)
	// lose packets as a bad link does under TCP (the lossy-link fault):
	// nothing is dropped, a lost segment is resent after TCP's
	// retransmission timeout, and everything after it on the same
	// connection waits behind it (hol: until when each link is held).
	lossy map[int]int64
	hol   map[[2]ref]int64
}

// The lossy-link model: each message is lost with lossyRate, and resent
// after tcpRTO, doubling with each loss in a row (Linux's minimum timeout
// on a fresh connection; on loopback the measured round trip adds nothing).
//
// lossyChain bounds the resends of one message: three in a row (1.4 s)
// at most. Linux backs off further (a sixth loss in a row waits 12.8 s),
// but a stall that long outlives the heal by seconds, and the liveness
// phase would then judge a fault still acting (chaos seed 81 of make
// test); four losses in a row are 0.16% of messages at this rate.
const (
	lossyRate  = 0.2
	tcpRTO     = int64(200 * time.Millisecond)
	lossyChain = 3
)

// cut drops every message from a node matching from to a node matching to.
type cut struct {
	id       int
	from, to func(ref) bool
}

type world struct {
	opt     Options
	rng     *rand.Rand
	runaway string // why the run was cut short (maxEvents, maxQueued)
	now     int64
	seq     uint64
	q       eventHeap
	masters []*masterNode
	css     []*csNode
	clients []*client
	net     net
	prof    profile
	diskMin int64
	diskMax int64

	trace     []string
	traceHead int
	hash      uint64
	events    int
	viol      []string
	stopped   bool

	chk checker
	adv adversary

	msgCount map[string]int // deliveries by kind and type (experiments: TestCrowdWatch)
	// The CPU model (profile.cpu): when each master's processor, and the
	// chunkservers' (one shared, as in a swarm, or one each), is free.
	mcpu  []int64
	cscpu []int64

	cleanStarts int // chunkserver starts from a clean-stop mark
	restores    int // masters started again from an older copy of their store
	// dgramFirst: heartbeats, acks and releases the sequence filter
	// passed from the datagram path (their TCP copies came later, or
	// never); dgramRelease: the releases among them.
	dgramFirst, dgramRelease int
	// lossyUntil, lossyTime, lossyChanges: the end of the lossy-link
	// windows so far, their length (overlaps counted once), and the
	// LEADERs deposed in them: quorum-lost while their own links were
	// lossy (other faults' changes in the same windows are not counted).
	lossyUntil, lossyTime int64
	lossyChanges          int
	// lossyAlone: those of lossyChanges with no other fault acting
	// (othersUntil: the end of the other faults' effects so far).
	lossyAlone  int
	othersUntil int64

	wprof witnessProfile // the witness (witness.go)
	store *simStore
}

func (w *world) push(e *event) {
	w.seq++
	e.seq = w.seq
	heap.Push(&w.q, e)
}

func (w *world) at(t int64, fn func()) { w.push(&event{at: t, kind: evFault, fn: fn}) }

// tracef records a line for the failure report and the determinism hash.
func (w *world) tracef(format string, a ...any) {
	line := fmt.Sprintf("%9.3fs ", float64(w.now)/1e9) + fmt.Sprintf(format, a...)
	h := fnv.New64a()
	h.Write([]byte(line))
	w.hash = w.hash*1099511628211 ^ h.Sum64()
	n := w.opt.TraceTail
	if w.opt.FullTrace {
		fmt.Println(line)
	}
	if n <= 0 {
		return
	}
	if len(w.trace) < n {
		w.trace = append(w.trace, line)
		return
	}
	w.trace[w.traceHead] = line
	w.traceHead = (w.traceHead + 1) % n
}

func (w *world) tail() []string {
	if len(w.trace) < w.opt.TraceTail {
		return slices.Clone(w.trace)
	}
	return append(slices.Clone(w.trace[w.traceHead:]), w.trace[:w.traceHead]...)
}

func (w *world) violate(format string, a ...any) {
	msg := fmt.Sprintf("%.3fs: ", float64(w.now)/1e9) + fmt.Sprintf(format, a...)
	w.viol = append(w.viol, msg)
	w.tracef("VIOLATION %s", msg)
	w.stopped = true
}

func (w *world) proc(r ref) *proc {
	switch r.k {
	case kMaster:
		return &w.masters[r.i].proc
	case kCS:
		return &w.css[r.i].proc
	}
	return nil
}

// cutBetween reports whether the network drops from -> to now.
func (w *world) cutBetween(from, to ref) bool {
	if from.k == kAdversary {
		return false // it sits beside its target, on the same side of every cut
	}
	for _, c := range w.net.cuts {
		if c.from(from) && c.to(to) {
			return true
		}
	}
	return false
}

// send puts a message on the wire from one node to another.
func (w *world) send(from, to ref, msg any, sentLoc int64) {
	w.sendAfter(from, to, msg, sentLoc, 0)
}

// lossyBetween: a lossy-link window holds for a master at either end.
func (w *world) lossyBetween(from, to ref) bool {
	for _, r := range []ref{from, to} {
		if r.k == kMaster && w.net.lossy[r.i] > w.now {
			return true
		}
	}
	return false
}

// cpuOf is the processor node r runs on under the CPU model (nil: none).
func (w *world) cpuOf(r ref) *int64 {
	switch {
	case w.prof.cpu.event == 0:
	case r.k == kMaster:
		return &w.mcpu[r.i]
	case r.k == kCS && w.prof.cpu.sharedCS:
		return &w.cscpu[0]
	case r.k == kCS:
		return &w.cscpu[r.i]
	}
	return nil
}

// sendAfter is send for a message that leaves after extra (the sender's
// processor writing what it queued before).
func (w *world) sendAfter(from, to ref, msg any, sentLoc, extra int64) {
	if to.k == kCS && to.i >= len(w.css) {
		return // an id only an adversary used: the answer goes back to it
	}
	w.datagram(from, to, msg, sentLoc, extra)
	if w.cutBetween(from, to) {
		w.reject(from, to, msg, sentLoc)
		return
	}
	if w.lossyBetween(from, to) {
		d := extra + w.net.delayBase + w.rng.Int63n(w.net.delayJitter+1)
		rto := tcpRTO
		for n := 0; n < lossyChain && w.rng.Float64() < lossyRate; n++ {
			d, rto = d+rto, 2*rto
		}
		link := [2]ref{from, to}
		at := max(w.now+d, w.net.hol[link])
		w.net.hol[link] = at
		w.push(&event{at: at, kind: evDeliver, to: to, from: from, msg: msg, sentLoc: sentLoc})
		return
	}
	if w.rng.Float64() < w.net.loss {
		return
	}
	copies := 1
	if w.rng.Float64() < w.net.dup {
		copies = 2
	}
	for i := 0; i < copies; i++ {
		d := extra + w.net.delayBase + w.rng.Int63n(w.net.delayJitter+1)
		// Behind a stall a lossy window left on this link (TCP keeps a
		// connection's order): overtaking it, a heartbeat from before
		// the stall reached its voter after newer ones, and the voter
		// ended a sound session (chaos seed 5363, a LEADER deposed 3.3 s
		// after the heal).
		at := max(w.now+d, w.net.hol[[2]ref{from, to}])
		w.push(&event{at: at, kind: evDeliver, to: to, from: from, msg: msg, sentLoc: sentLoc})
	}
}

// datagram: on seeds with the side path (profile.dgram), a heartbeat or
// a VoteRelease from a master to a chunkserver, and an ack back, also
// leaves as a UDP datagram, as the daemons send them. A release datagram
// may overtake the heartbeats its session sent before it. A datagram is never resent and
// waits behind nothing: a cut drops it (UDP has no dial to refuse), a
// lossy-link window loses it with lossyRate and the TCP stall that
// follows does not hold it (net.hol is neither read nor moved), otherwise
// the profile's loss does. No duplicates: the receiver's sequence filter
// (passSeq) would drop the second copy as it drops the TCP one. Only
// honest nodes send them: an adversary's messages are what its target's
// core sees (adversary.go), one copy each.
func (w *world) datagram(from, to ref, msg any, sentLoc, extra int64) {
	if !w.prof.dgram {
		return
	}
	switch msg.(type) {
	case roles.Heartbeat:
		if from.k != kMaster || to.k != kCS {
			return
		}
	case roles.HeartbeatAck:
		if from.k != kCS || to.k != kMaster {
			return
		}
	case roles.VoteRelease:
		if from.k != kMaster || to.k != kCS {
			return
		}
	default:
		return
	}
	if w.cutBetween(from, to) {
		return
	}
	loss := w.net.loss
	if w.lossyBetween(from, to) {
		loss = lossyRate
	}
	if w.rng.Float64() < loss {
		return
	}
	d := extra + w.net.delayBase + w.rng.Int63n(w.net.delayJitter+1)
	w.push(&event{at: w.now + d, kind: evDeliver, to: to, from: from, msg: msg, sentLoc: sentLoc, dgram: true})
}

// passSeq is the drivers' sequence filter on seeds with the datagram
// path, over both paths: per sender and session, a voter passes on only a
// Heartbeat, and a master only a HeartbeatAck, whose Seq is above the
// highest it passed on before; the copy that comes second (or any older
// one) is dropped. The core sees a strictly rising subsequence of what
// was sent, whichever path brought each. A VoteRelease closes its
// session's datagram path, as the voter's driver forgets the session's
// key (admitRelease): a release or heartbeat datagram of a released
// session is dropped; a release's TCP copy is always passed on, as the
// daemon steps it. The state is the process's (proc.seqSeen and
// proc.released, cleared by setUp); the daemon's driver also forgets a
// session when its connection ends or on a redirect, which is not
// modelled: late datagrams of such sessions reach the core, the harder
// case.
func (w *world) passSeq(e *event) bool {
	var session, seq uint64
	switch m := e.msg.(type) {
	case roles.Heartbeat:
		if e.to.k != kCS {
			return true
		}
		session, seq = m.Session, m.Seq
	case roles.HeartbeatAck:
		if e.to.k != kMaster {
			return true
		}
		session, seq = m.Session, m.Seq
	case roles.VoteRelease:
		if e.to.k != kCS {
			return true
		}
		return w.passRelease(e, seqKey{e.from, m.Session})
	default:
		return true
	}
	p := w.proc(e.to)
	k := seqKey{e.from, session}
	if seq <= p.seqSeen[k] || (e.dgram && p.released[k]) {
		return false
	}
	if p.seqSeen == nil {
		p.seqSeen = map[seqKey]uint64{}
	}
	p.seqSeen[k] = seq
	if e.dgram {
		w.dgramFirst++
	}
	return true
}

// passRelease is passSeq for a VoteRelease of session k.
func (w *world) passRelease(e *event, k seqKey) bool {
	p := w.proc(e.to)
	if e.dgram && p.released[k] {
		return false
	}
	if p.released == nil {
		p.released = map[seqKey]bool{}
	}
	if e.dgram {
		w.dgramFirst++
		w.dgramRelease++
	}
	p.released[k] = true
	return true
}

// reject: on seeds whose network has REJECT rules (iptables' default, an
// ICMP port-unreachable), a chunkserver's dial across a cut is refused
// while the master lives: what the fast path must not mistake for a dead
// master (docs/architecture.md §3).
func (w *world) reject(from, to ref, msg any, sentLoc int64) {
	if !w.prof.reject || from.k != kCS || to.k != kMaster {
		return
	}
	switch msg.(type) {
	case roles.Probe, roles.VoteHello:
		d := w.net.delayBase + w.rng.Int63n(w.net.delayJitter+1)
		w.push(&event{at: w.now + d, kind: evDeliver, to: from, from: to,
			msg: roles.Refused{Master: wire.MasterID(to.i + 1), SentAt: roles.Instant(sentLoc)}})
	}
}

// deliver hands a message to a node, or models what its absence means.
func (w *world) deliver(e *event) {
	if e.to.k == kClient {
		w.clients[e.to.i].onReply(w, e.msg)
		return
	}
	p := w.proc(e.to)
	if !p.up {
		// A dial to a master with no process behind its port is refused;
		// the chunkserver learns it (connection refused) one trip later.
		if e.to.k == kMaster && e.from.k == kCS {
			switch e.msg.(type) {
			case roles.Probe, roles.VoteHello:
				w.send(e.to, e.from, roles.Refused{Master: wire.MasterID(e.to.i + 1), SentAt: roles.Instant(e.sentLoc)}, 0)
			}
		}
		return
	}
	if w.msgCount != nil && !e.queued {
		udp := map[bool]string{true: "/udp"}[e.dgram]
		w.msgCount[fmt.Sprintf("%v>%T%s", e.from.k, e.msg, udp)]++
	}
	if c := w.cpuOf(e.to); c != nil && !e.queued {
		// The node's processor takes messages in arrival order, each for
		// its cost: it is stepped once its turn is done.
		*c = max(*c, w.now) + int64(w.prof.cpu.event)
		q := *e
		q.at, q.queued = *c, true
		w.push(&q)
		return
	}
	// The filter sits in the driver, after the processor took the
	// message: a copy it drops still cost its turn.
	if w.prof.dgram && !w.passSeq(e) {
		return
	}
	ev, ok := w.stamp(e.from, e.to, e.msg).(roles.Event)
	if !ok {
		w.violate("%v was sent %T, which is no input of the core", e.to, e.msg)
		return
	}
	w.enqueue(e.to, ev)
}

// stamp fills in what the receiver's driver adds to a message, as the
// daemons do (roles.FromVoter, FromPeerMaster, FromMaster): the sender's
// id and, at a master, the source address of a chunkserver's connection.
// An adversary's messages get only its address: what else they claim is
// what its target's core sees (adversary.go).
func (w *world) stamp(from, to ref, msg any) any {
	m, isMsg := msg.(wire.Message)
	var ev roles.Event
	ok := false
	switch {
	case !isMsg:
	case to.k == kMaster && from.k == kCS:
		ev, ok = roles.FromVoter(m, w.css[from.i].cfg.ID, w.css[from.i].cfg.Addr)
	case to.k == kMaster && from.k == kMaster:
		ev, ok = roles.FromPeerMaster(m, wire.MasterID(from.i+1))
	case to.k == kCS && from.k == kMaster:
		ev, ok = roles.FromMaster(m, wire.MasterID(from.i+1))
	case to.k == kMaster && from.k == kAdversary:
		return withSource(msg, advAddr(from.i))
	}
	if !ok {
		return msg
	}
	return ev
}

// withSource is msg as a master's driver hands it to the core: stamped
// with the source address of the connection it came on, whatever it
// claims.
func withSource(msg any, addr netip.Addr) any {
	switch m := msg.(type) {
	case roles.HeartbeatAck:
		m.Addr = addr
		return m
	case roles.VoteBye:
		m.Addr = addr
		return m
	case roles.VoteHello:
		m.Addr = addr
		return m
	}
	return msg
}

func (w *world) enqueue(r ref, ev roles.Event) {
	p := w.proc(r)
	p.inbox = append(p.inbox, ev)
	w.drain(r)
}

// drain runs queued events through the node until it waits on a disk.
func (w *world) drain(r ref) {
	p := w.proc(r)
	for p.up && !p.paused && !p.busy && len(p.inbox) > 0 && !w.stopped {
		ev := p.inbox[0]
		p.inbox = p.inbox[1:]
		w.step(r, ev)
	}
	if p.up && !p.paused && !p.busy {
		w.scheduleTick(r)
	}
}

func (w *world) step(r ref, ev roles.Event) {
	p := w.proc(r)
	now := roles.Instant(p.clk.local(w.now))
	var b stepBatch
	func() {
		defer func() {
			if x := recover(); x != nil {
				w.violate("%v panicked on %T: %v", r, ev, x)
			}
		}()
		if r.k == kMaster {
			b = ofMaster(w.masters[r.i].m.Step(now, ev))
		} else {
			b = ofVoter(w.css[r.i].v.Step(now, ev))
		}
	}()
	if w.opt.FullTrace {
		w.tracef("%v <- %T %+v", r, ev, ev)
	}
	w.handle(r, b)
}

// handle carries out one batch as the daemons do (roles.Carry): a batch
// with a Persist waits for the node's disk, whose delay is drawn here;
// one without is carried out at once.
func (w *world) handle(r ref, b stepBatch) {
	p := w.proc(r)
	w.chk.batch(w, r, b)
	if len(b.common().Persist) == 0 {
		w.carry(r, b)
		return
	}
	if r.k == kCS && w.css[r.i].tear != 0 {
		w.tearWrite(r.i, b.v)
		return
	}
	p.busy = true
	// A LEADER's appends leave as the write begins (roles.Send.Early): a
	// kill during the write leaves followers holding entries this master
	// never made durable.
	roles.SendEarly(b.common(), w.fx(r))
	d := w.diskMin + w.rng.Int63n(w.diskMax-w.diskMin+1)
	w.push(&event{at: w.now + d, kind: evBatch, to: r, inc: p.inc, batch: b})
}

// batchDone: the disk has the batch; its sends leave now.
func (w *world) batchDone(e *event) {
	p := w.proc(e.to)
	if e.inc != p.inc || !p.up {
		return // killed before the persist completed: it never happened
	}
	p.busy = false
	w.carryRest(e.to, e.batch)
	w.drain(e.to)
}

// carry is roles.Carry over the node's disk and the simulated world. A
// store that refuses a batch is a violation: the bbolt store would refuse
// it too, and end the daemon.
func (w *world) carry(r ref, b stepBatch) {
	err := master.Carry(w.disk(r), w.fx(r), b.m)
	if b.isVoter {
		err = voter.Carry(w.disk(r), w.fx(r), b.v)
	}
	if err != nil {
		w.violate("%v: its store refused a batch: %v", r, err)
	}
}

// carryRest is carry for a batch whose Early sends left when its write
// began (handle).
func (w *world) carryRest(r ref, b stepBatch) {
	err := master.CarryRest(w.disk(r), w.fx(r), b.m)
	if b.isVoter {
		err = voter.CarryRest(w.disk(r), w.fx(r), b.v)
	}
	if err != nil {
		w.violate("%v: its store refused a batch: %v", r, err)
	}
}

// stepBatch is a batch of the machine at a ref: a master's (m), or a
// chunkserver's voter's (v, isVoter).
type stepBatch struct {
	m       master.Batch
	v       voter.Batch
	isVoter bool
}

func ofMaster(b master.Batch) stepBatch { return stepBatch{m: b} }

func ofVoter(b voter.Batch) stepBatch { return stepBatch{v: b, isVoter: true} }

// common is the part of the batch both machines have.
func (b stepBatch) common() roles.Batch {
	if b.isVoter {
		return b.v.Batch
	}
	return b.m.Batch
}

func (w *world) disk(r ref) roles.Persister {
	if r.k == kMaster {
		return w.masters[r.i].store
	}
	return voterDisk{w.css[r.i]}
}

func (w *world) fx(r ref) *simFx {
	return &simFx{w: w, r: r, loc: w.proc(r).clk.local(w.now)}
}

// voterDisk is a chunkserver's disk, its record file: the newest record,
// written over the copy before the one it replaces (one write a batch).
type voterDisk struct{ n *csNode }

func (d voterDisk) Apply(ps ...roles.Persist) error {
	if h := roles.NewestVoter(ps); h != nil {
		d.n.prev, d.n.hard = d.n.hard, *h
	}
	return nil
}

// simFx carries a batch's effects into the simulated world
// (master.Effects and voter.Effects): the network, the clients, the trace.
type simFx struct {
	w   *world
	r   ref
	loc int64 // the node's clock when the batch is carried out
}

// Durable: the checks on what the disk now holds.
func (fx *simFx) Durable() { fx.w.chk.persisted(fx.w, fx.r) }

func (fx *simFx) WallUnixMs() int64 { return fx.w.proc(fx.r).wallMs(fx.w.now) }

func (fx *simFx) Send(to roles.Peer, msg wire.Message) {
	w, r := fx.w, fx.r
	if to.Kind == roles.PeerAllCS {
		// Every chunkserver connected to it: the network decides which
		// are (a cut or a lost packet drops it like any message).
		for i := range w.css {
			w.sendAfter(r, ref{kCS, i}, msg, fx.loc, fx.cost())
		}
		return
	}
	if hb, ok := msg.(roles.Heartbeat); ok {
		w.snoop(r, int(to.ID)-1, hb)
	}
	if _, hello := msg.(roles.VoteHello); r.k == kCS && !hello {
		w.echo(r.i, w.peerRef(to), msg)
	}
	w.sendAfter(r, w.peerRef(to), msg, fx.loc, fx.cost())
}

// cost charges one send to the sender's processor (the CPU model): how
// long after now the message leaves.
func (fx *simFx) cost() int64 {
	w := fx.w
	c := w.cpuOf(fx.r)
	if c == nil {
		return 0
	}
	*c = max(*c, w.now) + int64(w.prof.cpu.send)
	return *c - w.now
}

func (fx *simFx) Close(class roles.ConnClass) {
	if class == roles.ConnClients {
		for _, c := range fx.w.clients {
			c.disconnected(fx.w, wire.MasterID(fx.r.i+1))
		}
	}
}

func (fx *simFx) Transitioned(t roles.Transition) {
	fx.w.tracef("%v %v -> %v epoch %d (%s %s)", fx.r, t.From, t.To, t.Epoch, t.Reason, t.Section)
}

func (fx *simFx) AdminReplied(a roles.AdminReply) {
	fx.w.tracef("%v admin #%d ok=%v: %s", fx.r, a.ID, a.OK, a.Text)
}

// SaveSnapshot: written in the background, durable after a disk delay
// (longer than a batch's), unless the process dies first.
func (fx *simFx) SaveSnapshot(s *namespace.Snapshot) {
	w, r := fx.w, fx.r
	p := w.proc(r)
	inc := p.inc
	d := 2*w.diskMax + w.rng.Int63n(4*w.diskMax+1)
	w.at(w.now+d, func() {
		if p.inc != inc || !p.up {
			return
		}
		w.masters[r.i].store.SaveSnapshot(s)
		w.tracef("%v snapshot %v durable", r, s.Pos)
		w.enqueue(r, roles.SnapshotSaved{Pos: s.Pos})
	})
}

// IDTaken: only an impostor's registration takes a simulated
// chunkserver's id; the chunkserver keeps it (re-registering is the
// daemon's, tested on real processes).
func (fx *simFx) IDTaken(t roles.IDTaken) error {
	fx.w.tracef("%v told its id is taken by M%d", fx.r, t.Master)
	return nil
}

// Stopped: the batch with the clean-stop mark is durable: the process
// ends (its connections close, with nothing to release).
func (fx *simFx) Stopped() {
	fx.w.tracef("%v STOPPED (clean)", fx.r)
	fx.w.css[fx.r.i].stopping = false
	fx.w.proc(fx.r).setUp(false)
}

// Ignored inputs are counted by the checker when the batch is made.
func (fx *simFx) Ignored(string) {}

// Witness: the call goes to the simulated store (witness.go).
func (fx *simFx) Witness(r witness.Request) { fx.w.call(fx.r, r) }

func (w *world) peerRef(p roles.Peer) ref {
	switch p.Kind {
	case roles.PeerMaster:
		return ref{kMaster, int(p.ID) - 1}
	case roles.PeerCS:
		return ref{kCS, int(p.ID) - 1}
	}
	return ref{kClient, int(p.ID) - 1}
}

func (w *world) scheduleTick(r ref) {
	p := w.proc(r)
	var d roles.Instant
	if r.k == kMaster {
		d = w.masters[r.i].m.NextDeadline()
	} else {
		d = w.css[r.i].v.NextDeadline()
	}
	if d == roles.Never {
		return
	}
	t := max(p.clk.trueAt(int64(d)), w.now)
	if p.tickAt != 0 && p.tickAt <= t && p.tickAt >= w.now {
		return
	}
	p.tickAt = t
	w.push(&event{at: t, kind: evTick, to: r, inc: p.inc})
}

func (w *world) tick(e *event) {
	p := w.proc(e.to)
	if e.inc != p.inc || !p.up || p.paused || e.at != p.tickAt {
		return
	}
	p.tickAt = 0
	w.enqueue(e.to, roles.Tick{WallUnixMs: p.wallMs(w.now)})
}

// ---- process control ------------------------------------------------------------

func (w *world) startMaster(i int) {
	n := w.masters[i]
	n.setUp(true)
	st, _ := n.store.Load()
	// As the daemon does: a store restored from an older copy has
	// forgotten its last incarnation; the wall clock keeps the new one
	// above it, and random bits keep it from repeating an earlier one on
	// a clock that is behind (roles.IncarnationBase).
	st.Hard.Incarnation = roles.IncarnationBase(st.Hard.Incarnation, n.wallMs(w.now), w.rng.Uint32())
	var b master.Batch
	func() {
		defer func() {
			if x := recover(); x != nil {
				w.violate("M%d panicked at start: %v", i+1, x)
			}
		}()
		n.m, b = master.New(n.cfg, st, roles.Instant(n.clk.local(w.now)))
	}()
	w.tracef("M%d start (log %v)", i+1, n.m.Log().Last())
	w.handle(n.ref, ofMaster(b))
	w.drain(n.ref)
	// Every chunkserver's link to it comes up (where the network lets
	// the connection through).
	for _, c := range w.css {
		if c.up && c.v != nil {
			w.send(n.ref, c.ref, roles.LinkUp{Master: wire.MasterID(i + 1)}, 0)
		}
	}
}

func (w *world) killMaster(i int) {
	n := w.masters[i]
	if !n.up {
		return
	}
	w.tracef("M%d KILL (was %v)", i+1, n.m.Role())
	n.setUp(false)
	// Its kernel closes its connections: every chunkserver (each keeps one
	// to every master) sees the close, where the network lets it through.
	for _, c := range w.css {
		if c.up && c.v != nil {
			w.send(n.ref, c.ref, roles.VoteConnLost{Master: wire.MasterID(i + 1), Closed: true}, 0)
		}
	}
}

func (w *world) startCS(i int) {
	n := w.css[i]
	if n.gone {
		return
	}
	n.setUp(true)
	n.started, n.stopping = true, false
	if n.hard.CleanStop {
		w.cleanStarts++
	}
	cfg := n.cfg
	cfg.RecordDamaged, cfg.RecordLost = n.damaged, n.lost
	n.damaged, n.lost = false, false
	var acts voter.Batch
	n.v, acts = voter.New(cfg, n.hard, roles.Instant(n.clk.local(w.now)))
	if w.opt.SabotageForget && n.v.Uncertain() {
		n.v.Step(roles.Instant(n.clk.local(w.now)), roles.TrustRecord{}) // its Persist is folded into the start's below
		h := n.v.Hard()
		acts.Persist = append(acts.Persist, roles.Persist{Voter: &h})
	}
	w.tracef("CS%d start (clean=%v damaged=%v lost=%v uncertain=%v)", i+1, n.hard.CleanStop, cfg.RecordDamaged, cfg.RecordLost, n.v.Uncertain())
	w.handle(n.ref, ofVoter(acts))
	w.drain(n.ref)
}

func (w *world) killCS(i int) {
	n := w.css[i]
	if !n.up {
		return
	}
	w.tracef("CS%d KILL", i+1)
	voted := n.v.VoteFor()
	n.setUp(false)
	n.stopping = false
	if voted != wire.NoMaster {
		w.send(n.ref, ref{kMaster, int(voted) - 1}, roles.ConnLost{CS: n.cfg.ID, ByPeer: true}, 0)
	}
}

// downCS takes chunkserver i down for a kill-cs fault: kill -9, or an
// orderly stop (SIGTERM), which ends once no promise stands and leaves the
// clean-stop mark, so that its restart votes at once.
func (w *world) downCS(i int, clean bool) {
	n := w.css[i]
	if !clean {
		w.killCS(i)
		return
	}
	if !n.up || n.stopping {
		return
	}
	w.tracef("CS%d STOP", i+1)
	if w.opt.SabotageCleanStop {
		// The mark a crash must never leave: promise or not.
		voted := n.v.VoteFor()
		n.hard.CleanStop = true
		n.setUp(false)
		if voted != wire.NoMaster {
			w.send(n.ref, ref{kMaster, int(voted) - 1}, roles.ConnLost{CS: n.cfg.ID, ByPeer: true}, 0)
		}
		return
	}
	n.stopping = true
	w.enqueue(n.ref, roles.StopRequested{})
}

// upCS restarts chunkserver i after a kill-cs fault. A stop still waiting
// for its promise to end is cut short first, as the daemon's bound does:
// the process ends without the mark.
func (w *world) upCS(i int) {
	if w.css[i].stopping {
		w.killCS(i)
	}
	if !w.css[i].up {
		w.startCS(i)
	}
}

func (w *world) pause(r ref) {
	p := w.proc(r)
	if !p.up || p.paused {
		return
	}
	w.tracef("%v PAUSE", r)
	p.paused = true
}

func (w *world) resume(r ref) {
	p := w.proc(r)
	if !p.up || !p.paused {
		return
	}
	w.tracef("%v RESUME", r)
	p.paused = false
	p.inbox = append([]roles.Event{roles.Tick{}}, p.inbox...)
	p.tickAt = 0
	w.drain(r)
}

// ---- the run -------------------------------------------------------------------

// RunSeeds plays seeds first..first+n-1 on every core and hands each result
// to each, from the calling goroutine, in no particular order.
func RunSeeds(first int64, n int, each func(Result)) {
	RunSeedsWith(first, n, DefaultOptions, each)
}

// RunSeedsWith is RunSeeds with the options of each seed from opts.
func RunSeedsWith(first int64, n int, opts func(int64) Options, each func(Result)) {
	jobs := make(chan int64)
	results := make(chan Result, 64)
	var wg sync.WaitGroup
	for k := 0; k < runtime.GOMAXPROCS(0); k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				results <- Run(opts(s))
			}
		}()
	}
	go func() {
		for s := first; s < first+int64(n); s++ {
			jobs <- s
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	for r := range results {
		each(r)
	}
}

// Run plays one seed to the end and reports what it found.
func Run(opt Options) Result {
	w := newWorld(opt)
	res := w.run()
	return res
}

func newWorld(opt Options) *world {
	w := &world{opt: opt, rng: rand.New(rand.NewSource(opt.Seed))}
	w.prof = drawProfile(w.rng)
	// ACK_ALONE on a third of the seeds, and the datagram path for
	// heartbeats (datagram) on three in four, from a stream of their own
	// (every other draw stays as it was: a seed without the datagram path
	// runs exactly as before it was modelled).
	own := rand.New(rand.NewSource(w.opt.Seed*8191 + 17))
	w.prof.masterCfg.AckAlone = own.Intn(3) == 0
	w.prof.dgram = own.Intn(4) != 0
	if opt.Witness {
		w.prof.locs = 2
	}
	w.wprof = drawWitness(opt.Seed, w.prof, opt.SabotageWitness || opt.Witness, opt.SabotageWitness)
	w.build()
	return w
}

// build makes the world's nodes from its profile.
func (w *world) build() {
	opt := w.opt
	w.net = net{delayBase: int64(w.prof.delayBase), delayJitter: int64(w.prof.delayJitter), loss: w.prof.loss, dup: w.prof.dup,
		lossy: map[int]int64{}, hol: map[[2]ref]int64{}}
	w.diskMin, w.diskMax = int64(50*time.Microsecond), int64(w.prof.diskMax)
	ids := make([]wire.MasterID, w.prof.masters)
	for i := range ids {
		ids[i] = wire.MasterID(i + 1)
	}
	w.setupWitness(w.prof.masters)
	for i := 0; i < w.prof.masters; i++ {
		cfg := w.prof.masterCfg
		cfg.Witness = w.witnessCfg(i, cfg.Witness)
		if err := cfg.Validate(); err != nil {
			panic(fmt.Sprintf("sim: seed %d drew a config outside the documented ranges: %v", opt.Seed, err))
		}
		if opt.Sabotage > 0 {
			cfg.LeaseMargin = -opt.Sabotage
		}
		cfg.ID, cfg.Masters = ids[i], ids
		cfg.KeepLeadership = w.prof.keep&(1<<i) != 0
		n := &masterNode{cfg: cfg, store: roles.NewMemStore(roles.Stored{})}
		n.ref = ref{kMaster, i}
		n.clk = clock{anchorLocal: w.rng.Int63n(int64(time.Hour)), rate: w.prof.initialRate(w.rng)}
		if i == 0 {
			n.store = roles.NewMemStore(roles.Stored{Entries: changelog.Genesis(1)}) // `mfsmaster init` on the first master only
		}
		w.masters = append(w.masters, n)
	}
	for i := 0; i < w.prof.css+w.prof.spares; i++ {
		loc := i % w.prof.locs
		addr := netip.AddrFrom4([4]byte{10, 0, byte(loc + 1), byte(10 + i)})
		cfg := voter.DefaultConfig(wire.CSID(i+1), addr, ids)
		cfg.Seed = uint64(w.rng.Int63())
		cfg.MaxPromise = w.prof.maxPromise
		cfg.ProbeVoters = w.prof.probeVoters
		if err := cfg.Validate(); err != nil {
			panic(fmt.Sprintf("sim: seed %d drew a chunkserver config outside the documented ranges: %v", opt.Seed, err))
		}
		n := &csNode{cfg: cfg, spare: i >= w.prof.css}
		n.ref = ref{kCS, i}
		n.clk = clock{anchorLocal: w.rng.Int63n(int64(time.Hour)), rate: w.prof.initialRate(w.rng)}
		w.css = append(w.css, n)
	}
	for i := 0; i < w.prof.clients; i++ {
		w.clients = append(w.clients, newClient(i, len(w.masters)))
	}
	w.mcpu = make([]int64, len(w.masters))
	w.cscpu = make([]int64, len(w.css))
	w.chk.init(w)
}

var debugSim = os.Getenv("SIMDEBUG") != ""

// The bounds of one seed: a seed plays about 110,000 events (docs/sim.md);
// 100 times that, or a queue of a million, is a storm, not a schedule.
const (
	maxEvents = 11_000_000
	maxQueued = 1_000_000
)

func (w *world) run() Result {
	for i := range w.masters {
		w.startMaster(i)
	}
	for i, c := range w.css {
		if !c.spare {
			w.startCS(i)
		}
	}
	for _, c := range w.clients {
		c.schedule(w, int64(3*time.Second))
	}
	w.scheduleFaults()
	healAt := int64(w.opt.ChaosTime)
	bound := w.livenessBound()
	w.at(healAt, func() { w.heal() })
	end := healAt + int64(bound)
	for w.q.Len() > 0 && !w.stopped {
		e := heap.Pop(&w.q).(*event)
		if e.at > end {
			break
		}
		w.dispatch(e)
		if w.events > maxEvents || w.q.Len() > maxQueued {
			// A storm of messages that feeds itself: stop before it takes
			// the machine's memory (a chaos run was once killed for it).
			w.runaway = fmt.Sprintf("runaway: %d events, %d queued at %v (%s)", w.events, w.q.Len(), time.Duration(w.now), rolesLine(w))
			break
		}
	}
	res := Result{Seed: w.opt.Seed, Profile: w.prof.String() + " witness=" + w.wprof.String(), Bound: bound, Events: w.events}
	if w.wprof.on {
		res.Witness = &WitnessRun{Refused: w.wprof.refused, Calls: w.store.calls, Writes: w.store.writes, HeldEvents: w.chk.witnessHeld,
			LogObjects: w.store.logObjects, LogSnapshots: w.store.logSnapshots, LogHeads: w.store.logHeads, LogReads: w.store.logReads, StaleRefused: w.store.staleRefused}
	}
	if !w.stopped && w.runaway == "" {
		w.now = end
		w.chk.final(w, healAt, end)
	}
	res.Violations = w.viol
	res.Liveness = w.chk.liveness
	if w.runaway != "" {
		res.Liveness = w.runaway
	}
	res.StuckUncertain, res.DiskFaults = w.chk.stuckUncertain, w.chk.diskFaults
	res.Failovers = w.chk.failovers
	res.HealToLead = w.chk.healToLead
	res.Leaders = w.chk.leaderTerms
	res.Acked = len(w.chk.acked)
	res.Snapshots = w.chk.snaps
	res.TempRemovals = w.chk.tempRemovals
	res.Forged = w.adv.sent
	res.Keep = bits.OnesCount32(w.prof.keep)
	res.AllKeep = res.Keep == len(w.masters)
	res.CleanStarts = w.cleanStarts
	res.Restores = w.restores
	res.Lossy, res.LossyChanges, res.LossyAlone = time.Duration(w.lossyTime), w.lossyChanges, w.lossyAlone
	res.Datagram, res.DatagramFirst, res.DatagramRelease = w.prof.dgram, w.dgramFirst, w.dgramRelease
	res.Refusals = w.chk.refusals
	res.TraceHash = w.hash
	res.Trace = w.tail()
	return res
}

// dispatch plays one event popped from the queue.
func (w *world) dispatch(e *event) {
	w.now = e.at
	w.events++
	if debugSim && w.events%1000000 == 0 {
		fmt.Fprintf(os.Stderr, "events %d now %v heap %d\n", w.events, time.Duration(w.now), w.q.Len())
	}
	switch e.kind {
	case evDeliver:
		w.deliver(e)
	case evTick:
		w.tick(e)
	case evBatch:
		w.batchDone(e)
	case evFault, evClient:
		e.fn()
	}
	w.chk.after(w)
}

// livenessBound is the documented time from a full heal to a LEADER
// (docs/sim.md): a restarted voter's silence, a lapsed lease, a lost ELECT
// giving up, a full nomination rotation, and slack for catching up.
func (w *world) livenessBound() time.Duration {
	c := w.prof.masterCfg
	slot := voter.DefaultConfig(1, netip.Addr{}, nil).NominateSlot
	_, lease := c.Scaled(len(w.css)) // the lease a crowd is asked for
	return w.prof.maxPromise + 2*max(c.VoteLease, min(lease, w.prof.maxPromise)) + c.ElectTimeout + time.Duration(len(w.css)+16)*slot + 2*time.Second + w.witnessBound()
}

// heal ends every fault: the liveness phase starts.
func (w *world) heal() {
	w.tracef("HEAL")
	w.net.cuts = nil
	w.net.loss, w.net.dup = 0, 0
	clear(w.net.lossy)
	if w.lossyUntil > w.now {
		w.lossyTime -= w.lossyUntil - w.now
		w.lossyUntil = w.now
	}
	w.chk.healed, w.chk.healAt = true, w.now
	w.chk.healVoters = slices.Clone(w.chk.lastVoter)
	w.fullMasterSet()
	for i, m := range w.masters {
		if !m.up {
			w.startMaster(i)
		} else if m.paused {
			w.resume(m.ref)
		}
	}
	for i, c := range w.css {
		if !c.up || c.stopping {
			w.upCS(i)
		} else if c.paused {
			w.resume(c.ref)
		}
	}
	w.healWitness()
	w.at(w.now+int64(w.prof.maxPromise)+int64(time.Second), w.operatorTrust)
}

// operatorTrust is the runbook's last step (docs/operations.md, "Lost or
// damaged chunkserver disk"): with no LEADER, and uncertain voters the
// reason, the operator vouches for them with mfscli -CTRUST. The
// simulated operator does it only where it cannot lose anything (the
// record lost nothing it had acted on: an older copy rotted, a torn write
// that never completed); where it could, the seed stays without a LEADER,
// as the docs say it must, and the run reports why.
func (w *world) operatorTrust() {
	if w.leaderIdx() >= 0 || !w.uncertainBlock() {
		return
	}
	for i, c := range w.css {
		if c.up && c.v != nil && c.v.Uncertain() && !w.chk.forgot[i] {
			w.chk.trusts++
			w.tracef("operator: mfscli -CTRUST CS%d", i+1)
			w.enqueue(c.ref, roles.TrustRecord{})
		}
	}
}
