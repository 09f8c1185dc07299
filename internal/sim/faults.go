package sim

import (
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// faultKind is one entry of the fault menu.
type faultKind uint8

const (
	fKillMaster faultKind = iota
	fKillCS
	fPauseMaster
	fPauseCS
	fPartMaster
	fPartLocation
	fCutCS
	fDrift
	fWallJump
	fRegister
	fRemove
	fRemap
	fDefault
	fOnOff
	fUsurper
	fStepDown
	fMaintenance
	fTempRemove
	fAdversary
	fRestore
	fMasterSet
	fRotCS
	fTornCS
	fLoseCS
	fLossyLink
	numFaults
)

// The disk faults come after the others: their draws (drawProfile) come
// last, so that adding them left every earlier fault's draw as it was.
const firstDiskFault = fRotCS

// profile is everything drawn from the seed before the run starts: sizes,
// network quality, config within its documented ranges, and which faults
// are on the menu.
type profile struct {
	masters, css, spares, locs, clients int
	delayBase, delayJitter              time.Duration
	loss, dup                           float64
	diskMax                             time.Duration
	masterCfg                           master.Config
	maxPromise                          time.Duration
	probeVoters                         int    // the voters' PROBE_VOTERS
	keep                                uint32 // masters with KEEP_LEADERSHIP: bit i is master i
	faults                              []faultKind
	meanGap                             time.Duration
	extremeClocks                       bool // every clock starts at +rho or -rho
	reject                              bool // cuts refuse dials (REJECT rules) instead of dropping them
	cpu                                 cpuModel
	// dgram: heartbeats and their acks also go as datagrams, beside the
	// TCP stream, through each receiver's sequence filter (sim.go:
	// datagram, passSeq), as the daemons do by default.
	dgram bool
}

// cpuModel: processors that take time. Each message a node takes costs
// event, each it sends costs send, in order on its processor; with
// sharedCS every chunkserver runs on one (a swarm, or one overloaded
// host). Off (event 0): nodes are infinitely fast.
type cpuModel struct {
	event, send time.Duration
	sharedCS    bool
}

func (c cpuModel) String() string {
	if c.event == 0 {
		return "free"
	}
	return fmt.Sprintf("%v/msg+%v/send shared=%v", c.event, c.send, c.sharedCS)
}

// initialRate is a node's clock rate at start: 1, or on extreme-clock seeds
// the bound itself in either direction (the worst case the lease
// arithmetic must survive).
func (p profile) initialRate(r *rand.Rand) float64 {
	if !p.extremeClocks {
		return 1
	}
	if r.Intn(2) == 0 {
		return 1 - p.masterCfg.MaxClockDrift
	}
	return 1 + p.masterCfg.MaxClockDrift
}

func drawProfile(r *rand.Rand) profile {
	p := profile{
		masters: 2 + r.Intn(3), // 2..4
		css:     3 + r.Intn(8), // 3..10
		spares:  r.Intn(3),
		locs:    1 + r.Intn(3),
		clients: 1 + r.Intn(3),
	}
	p.delayBase = time.Duration(100+r.Intn(900)) * time.Microsecond
	p.delayJitter = time.Duration(r.Intn(5000)) * time.Microsecond
	p.loss = []float64{0, 0, 0.01, 0.05}[r.Intn(4)]
	p.dup = []float64{0, 0.01, 0.05}[r.Intn(3)]
	p.diskMax = time.Duration(100+r.Intn(5000)) * time.Microsecond
	c := master.DefaultConfig(1, []wire.MasterID{1})
	c.CheckCaches = 1 // every cached count checked against a full tally
	c.VoteLease = []time.Duration{400 * time.Millisecond, 800 * time.Millisecond, 1500 * time.Millisecond}[r.Intn(3)]
	c.HeartbeatInterval = c.VoteLease / 8
	c.MaxClockDrift = []float64{0.01, 0.05}[r.Intn(2)]
	c.ElectTimeout = max(c.ElectTimeout, 3*c.VoteLease)
	if r.Intn(10) < 3 {
		c.DeputyElectionTime = time.Duration(1500+r.Intn(3000)) * time.Millisecond
	}
	c.AckReplicas = []int{0, 1, 1, 2}[r.Intn(4)]
	// Snapshots small and often, so that trimming, snapshot transfer and
	// catching up from a snapshot happen in most runs.
	c.SnapshotEvery = []uint64{0, 3, 10, 40}[r.Intn(4)]
	c.LogRetain = []uint64{0, 5, 50}[r.Intn(3)]
	// A crowd now and then: a registry of hundreds of voters, where the
	// gated recounts skip acknowledgements (roles/scale.go). And the
	// heartbeat interval that grows with the count (Config.Scaled) on most
	// seeds: at the shipped HEARTBEAT_VOTERS it never grows here, at a
	// handful of voters per interval it does, on crowds and small
	// clusters alike.
	if r.Intn(24) == 0 {
		p.css = 100 + r.Intn(100)
		c.CheckCaches = 32 // a full tally per step is O(voters²) a round
		// Processors that take time, the voters' often one for all (a
		// swarm): a crowd's bursts queue up, as on a real host.
		if r.Intn(2) == 0 {
			p.cpu = cpuModel{event: time.Duration(5+r.Intn(20)) * time.Microsecond, send: time.Duration(2+r.Intn(10)) * time.Microsecond, sharedCS: r.Intn(2) == 0}
		}
	}
	c.HeartbeatVoters = []int{0, 500, 2, 4, max(2, p.css/3)}[r.Intn(5)]
	// And voters that probe less in a crowd (PROBE_VOTERS), leaning on
	// the announcements of a new ELECT or LEADER.
	p.probeVoters = []int{0, 50, 2, 4, max(2, p.css/8)}[r.Intn(5)]
	p.masterCfg = c
	p.maxPromise = 2 * c.VoteLease
	// KEEP_LEADERSHIP on no master, one, two (a config copied to two
	// hosts) or every master (copied everywhere): each must settle on one
	// LEADER (docs/roles.md §3.12; L2).
	switch k := r.Intn(8); {
	case k == 4 || k == 5:
		p.keep = 1 << r.Intn(p.masters)
	case k == 6:
		a := r.Intn(p.masters)
		p.keep = 1<<a | 1<<((a+1+r.Intn(p.masters-1))%p.masters)
	case k == 7:
		p.keep = 1<<p.masters - 1
	}
	for f := faultKind(0); f < firstDiskFault; f++ {
		if r.Intn(10) < 6 {
			p.faults = append(p.faults, f)
		}
	}
	if len(p.faults) == 0 {
		p.faults = []faultKind{fKillMaster}
	}
	p.meanGap = time.Duration(700+r.Intn(2000)) * time.Millisecond
	p.extremeClocks = r.Intn(2) == 0
	p.reject = r.Intn(3) == 0
	for f := firstDiskFault; f < numFaults; f++ {
		if r.Intn(10) < 6 {
			p.faults = append(p.faults, f)
		}
	}
	return p
}

func (p profile) String() string {
	var fs []string
	for _, f := range p.faults {
		fs = append(fs, faultMenu[f].name)
	}
	return fmt.Sprintf("masters=%d cs=%d+%d spare locations=%d clients=%d delay=%v+%v loss=%.2f dup=%.2f disk<=%v lease=%v hb=%v drift<=%.2f deputy=%v ack_replicas=%d ack_alone=%v snapshot_every=%d log_retain=%d keep=%s gap~%v extreme_clocks=%v reject=%v cpu=%v dgram=%v faults=[%s]",
		p.masters, p.css, p.spares, p.locs, p.clients, p.delayBase, p.delayJitter, p.loss, p.dup, p.diskMax,
		p.masterCfg.VoteLease, p.masterCfg.HeartbeatInterval, p.masterCfg.MaxClockDrift, p.masterCfg.DeputyElectionTime,
		p.masterCfg.AckReplicas, p.masterCfg.AckAlone, p.masterCfg.SnapshotEvery, p.masterCfg.LogRetain, p.keepString(), p.meanGap, p.extremeClocks, p.reject, p.cpu, p.dgram, strings.Join(fs, ","))
}

func (p profile) keepString() string {
	var ms []string
	for i := range p.masters {
		if p.keep&(1<<i) != 0 {
			ms = append(ms, fmt.Sprintf("M%d", i+1))
		}
	}
	if len(ms) == 0 {
		return "none"
	}
	return strings.Join(ms, "+")
}

var locNames = []string{"default", "b", "c"}

func locPrefix(loc int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(loc + 1), 0}), 24)
}

// leaderIdx is the master that is LEADER now (an operator's mfscli would
// find it the same way), or -1.
func (w *world) leaderIdx() int {
	for i, m := range w.masters {
		if m.up && m.m.Role() == roles.Leader {
			return i
		}
	}
	return -1
}

// How a simulated operator retries an admin command that no LEADER took
// (none was reachable, or another change was in flight).
const (
	adminRetryGap = 300 * time.Millisecond
	// mapRetries: the location map at the start is retried for 18 s, most
	// of the chaos phase: until it lands every chunkserver counts in the
	// default location, an undivided cluster whatever the profile drew.
	mapRetries = 60
	// faultRetries: the change that starts a fault is given up after about
	// a second, as an operator who finds no LEADER would; the fault then
	// does not happen.
	faultRetries = 3
	// undoRetries: the change that ends a fault (a range mapped again,
	// maintenance cleared, a location ON again) is retried for 6 s: the
	// heal does not undo registry changes, so a lost undo would carry the
	// fault into the liveness phase.
	undoRetries = 20
	// tempRemoveTries: mfscli -CTR is sent every adminRetryGap for 3 s,
	// as an operator would while the masters are stuck in ELECT.
	tempRemoveTries = 10
)

// admin delivers an operator command to a master; changes go to the
// LEADER and are retried while another change is in flight.
func (w *world) admin(target int, a roles.Admin, retries int) {
	i := target
	if a.Kind == roles.AdminChange || a.Kind == roles.AdminStepDown {
		i = w.leaderIdx()
	}
	if i < 0 || !w.masters[i].up || w.masters[i].paused || w.masters[i].busy {
		if retries > 0 {
			w.at(w.now+int64(adminRetryGap), func() { w.admin(target, a, retries-1) })
		}
		return
	}
	m := w.masters[i]
	acts := m.m.Step(roles.Instant(m.clk.local(w.now)), a)
	ok := false
	for _, r := range acts.AdminReplies {
		ok = r.OK
	}
	w.tracef("admin %v at M%d ok=%v", adminText(a), i+1, ok)
	if ok && a.Kind == roles.AdminTempRemove {
		w.chk.tempRemovals++
	}
	w.handle(m.ref, ofMaster(acts))
	w.drain(m.ref)
	if !ok && a.Kind == roles.AdminChange && retries > 0 {
		w.at(w.now+int64(adminRetryGap), func() { w.admin(target, a, retries-1) })
	}
}

// change sends a registry or location change to the LEADER under the next
// admin id.
func (w *world) change(ids *adminIDs, c registry.Change, retries int) {
	w.admin(-1, roles.Admin{ID: ids.next(), Kind: roles.AdminChange, Change: c}, retries)
}

// adminIDs numbers the admin commands of one run, in the order they are
// sent.
type adminIDs uint64

func (n *adminIDs) next() uint64 { *n++; return uint64(*n) }

func adminText(a roles.Admin) string {
	switch a.Kind {
	case roles.AdminSetUsurper:
		return "set-usurper"
	case roles.AdminCancelUsurper:
		return "cancel-usurper"
	case roles.AdminStepDown:
		return "step-down"
	case roles.AdminShutdown:
		return "shutdown"
	}
	return a.Change.String()
}

// scheduleFaults draws the whole fault schedule up front from the seed.
func (w *world) scheduleFaults() {
	var ids adminIDs
	// The location map: every location but the default gets its range once
	// the cluster has a LEADER.
	for l := 1; l < w.prof.locs; l++ {
		w.at(int64(3*time.Second)+int64(l)*int64(200*time.Millisecond), func() {
			w.change(&ids, registry.Change{Kind: registry.ChangeMapRange, Prefix: locPrefix(l), Name: locNames[l]}, mapRetries)
		})
	}
	w.scheduleWitness(&ids)
	t := int64(5 * time.Second)
	end := int64(w.opt.ChaosTime) - int64(time.Second)
	for {
		t += int64(w.rng.ExpFloat64() * float64(w.prof.meanGap))
		if t >= end {
			break
		}
		f := w.prof.faults[w.rng.Intn(len(w.prof.faults))]
		// Durations and targets are drawn now, so that the schedule does not
		// depend on what happens (only the "leader" target is resolved late).
		var d draw
		d.dur = int64(300*time.Millisecond) + w.rng.Int63n(int64(3500*time.Millisecond))
		d.pick = w.rng.Intn(1 << 20)
		d.leaderFirst = w.rng.Intn(10) < 7
		d.mode = w.rng.Intn(3)
		d.rate = 1 + (w.rng.Float64()*2-1)*w.prof.masterCfg.MaxClockDrift
		w.at(t, func() { w.fault(f, d, &ids) })
	}
}

// draw is what the schedule draws for one fault, whatever its kind; each
// entry of faultMenu reads from it the parameters its fault needs.
type draw struct {
	dur         int64   // how long the fault lasts: 0.3-3.8 s
	pick        int     // 0..2^20-1, from which the fault derives its targets
	leaderFirst bool    // aim at the LEADER when there is one (7 in 10)
	mode        int     // 0..2: which variant of the fault
	rate        float64 // a clock rate within the drift bound
}

// aimedMaster is the master a fault that hits one aims at: the LEADER,
// when the draw says so and there is one, else one by the pick.
func (w *world) aimedMaster(d draw) int {
	if l := w.leaderIdx(); d.leaderFirst && l >= 0 {
		return l
	}
	return d.pick % len(w.masters)
}

// fault is one fault of the menu with its targets chosen.
type fault interface {
	fire(w *world, ids *adminIDs)
}

// faultMenu names each fault and says how it reads its draw. An entry
// runs when the fault fires, so that "the LEADER" is whoever leads then;
// nil means the fault has nothing to hit in this cluster.
var faultMenu = [numFaults]struct {
	name string
	read func(w *world, d draw) fault
}{
	fKillMaster: {"kill-master", func(w *world, d draw) fault {
		return masterKill{i: w.aimedMaster(d), restart: d.mode != 0, downFor: d.dur}
	}},
	fKillCS: {"kill-cs", func(w *world, d draw) fault {
		return csDown{i: d.pick % len(w.css), orderly: d.mode == 0, downFor: d.dur} // orderly one in three
	}},
	fPauseMaster: {"pause-master", func(w *world, d draw) fault {
		return freeze{r: w.masters[w.aimedMaster(d)].ref, dur: d.dur}
	}},
	fPauseCS: {"pause-cs", func(w *world, d draw) fault {
		return freeze{r: w.css[d.pick%len(w.css)].ref, dur: d.dur}
	}},
	fPartMaster: {"partition-master", func(w *world, d draw) fault {
		return masterPartition{i: w.aimedMaster(d), dir: cutDir(d.mode), dur: d.dur}
	}},
	fPartLocation: {"partition-location", func(w *world, d draw) fault {
		return locationPartition{loc: d.pick % w.prof.locs, dur: d.dur}
	}},
	fCutCS: {"cut-cs", func(w *world, d draw) fault {
		return csCut{bits: d.pick, always: w.aimedMaster(d), oneWay: d.mode == 2, mode: d.mode, dur: d.dur}
	}},
	fDrift: {"drift", func(w *world, d draw) fault {
		if d.pick%2 == 0 {
			return clockDrift{r: w.masters[d.pick/2%len(w.masters)].ref, rate: d.rate}
		}
		return clockDrift{r: w.css[d.pick/2%len(w.css)].ref, rate: d.rate}
	}},
	fWallJump: {"wall-jump", func(w *world, d draw) fault {
		return wallJump{i: d.pick % len(w.masters), jump: int64(d.pick%120-60) * int64(time.Second)}
	}},
	fRegister: {"register", func(*world, draw) fault { return registration{} }},
	fRemove: {"remove", func(w *world, d draw) fault {
		return removal{from: d.pick % len(w.css)}
	}},
	fRemap: {"remap", func(w *world, d draw) fault {
		if w.prof.locs < 2 {
			return nil // the default location has no range to unmap
		}
		return remap{loc: 1 + d.pick%(w.prof.locs-1), dur: d.dur}
	}},
	fDefault: {"default", func(w *world, d draw) fault {
		return moveDefault{loc: d.pick % w.prof.locs}
	}},
	fOnOff: {"on-off", func(w *world, d draw) fault {
		return locationOff{loc: d.pick % w.prof.locs, dur: d.dur}
	}},
	fUsurper: {"usurper", func(w *world, d draw) fault {
		return usurper{i: d.pick % len(w.masters), cancel: d.mode == 0, after: d.dur}
	}},
	fStepDown: {"step-down", func(*world, draw) fault { return stepDown{} }},
	fMaintenance: {"maintenance", func(w *world, d draw) fault {
		return maintenance{i: d.pick % len(w.css), dur: d.dur}
	}},
	fTempRemove: {"temp-remove", func(w *world, d draw) fault {
		return tempRemoval{from: d.pick, anyCS: d.mode == 0}
	}},
	fAdversary: {"adversary", func(w *world, d draw) fault {
		return hostile{kind: hostileKind(d.mode), master: d.pick % len(w.masters), cs: d.pick % len(w.css), bomb: d.pick, dur: d.dur}
	}},
	fRestore: {"restore-master", func(w *world, d draw) fault {
		return masterRestore{i: w.aimedMaster(d), after: d.dur, behind: d.mode != 0}
	}},
	fMasterSet: {"master-set", func(w *world, d draw) fault {
		return masterSetChange{i: w.aimedMaster(d), pick: d.pick, dur: d.dur}
	}},
	fRotCS: {"rot-cs", func(w *world, d draw) fault {
		return csRot{i: d.pick % len(w.css), newest: d.mode != 0, downFor: d.dur}
	}},
	fTornCS: {"torn-cs", func(w *world, d draw) fault {
		return csTear{i: d.pick % len(w.css), how: 1 + d.mode%2, downFor: d.dur}
	}},
	fLoseCS: {"lose-cs", func(w *world, d draw) fault {
		return csLose{i: d.pick % len(w.css), downFor: d.dur}
	}},
	fLossyLink: {"lossy-link", func(w *world, d draw) fault {
		// 1.3-8.6 s: as long as the real-process bench's 8 s, and longer
		// than most leases, so that a stall chain can outlast one.
		return lossyLink{i: w.aimedMaster(d), dur: int64(time.Second) + 2*d.dur}
	}},
}

// fault fires one fault of the menu.
func (w *world) fault(f faultKind, d draw, ids *adminIDs) {
	if x := faultMenu[f].read(w, d); x != nil {
		if f != fLossyLink {
			// Until then another fault may be what deposes a LEADER on a
			// lossy link: its duration, and a lease for its effects.
			w.othersUntil = max(w.othersUntil, w.now+d.dur+int64(w.prof.masterCfg.VoteLease))
		}
		x.fire(w, ids)
	}
}

// masterKill: kill -9 of master i, started again after downFor if restart
// (else at the heal).
type masterKill struct {
	i       int
	restart bool
	downFor int64
}

func (f masterKill) fire(w *world, _ *adminIDs) {
	if f.i == w.leaderIdx() {
		w.chk.startFailover(w, "kill")
	}
	w.killMaster(f.i)
	if f.restart {
		w.at(w.now+f.downFor, func() {
			if !w.masters[f.i].up {
				w.startMaster(f.i)
			}
		})
	}
}

// csDown: chunkserver i goes down (kill -9, or an orderly stop) and
// starts again after downFor.
type csDown struct {
	i       int
	orderly bool
	downFor int64
}

func (f csDown) fire(w *world, _ *adminIDs) {
	if !w.css[f.i].started {
		return
	}
	w.downCS(f.i, f.orderly)
	w.at(w.now+f.downFor, func() { w.upCS(f.i) })
}

// freeze: SIGSTOP of a master or chunkserver, SIGCONT after dur.
type freeze struct {
	r   ref
	dur int64
}

func (f freeze) fire(w *world, _ *adminIDs) {
	// A LEADER frozen past its lease is replaced: a failover to time.
	if f.r.k == kMaster && f.r.i == w.leaderIdx() && !w.masters[f.r.i].paused && time.Duration(f.dur) > w.prof.masterCfg.VoteLease {
		w.chk.startFailover(w, "pause")
	}
	w.pause(f.r)
	w.at(w.now+f.dur, func() { w.resume(f.r) })
}

// lossyLink: every link of a master (the LEADER 7 in 10) lossy as a bad
// link is under TCP, both ways, for dur (net.lossy): a master alive and
// reachable whose messages come in bursts after stalls of 200 ms and
// more. Safety must hold as ever; the LEADER changes it causes are counted
// (Result.LossyChanges), the figure issue "Seen as fast as it happens"
// asks to bring to 0.
type lossyLink struct {
	i   int
	dur int64
}

func (f lossyLink) fire(w *world, _ *adminIDs) {
	end := w.now + f.dur
	w.tracef("LOSSY M%d: %.0f%% of its packets lost both ways (TCP resends) for %v", f.i+1, lossyRate*100, time.Duration(f.dur))
	w.net.lossy[f.i] = max(w.net.lossy[f.i], end)
	if end > w.lossyUntil {
		w.lossyTime += end - max(w.now, w.lossyUntil)
		w.lossyUntil = end
	}
}

// cutDir is which way a partition of one master drops messages.
type cutDir int

const (
	cutBoth   cutDir = iota // it neither hears nor is heard
	cutInput                // it can send, cannot hear
	cutOutput               // it can hear, cannot send
)

// masterPartition cuts master i off from every node for dur.
type masterPartition struct {
	i   int
	dir cutDir
	dur int64
}

func (f masterPartition) fire(w *world, _ *adminIDs) {
	if f.i == w.leaderIdx() && f.dir != cutInput {
		w.chk.startFailover(w, "partition")
	}
	target := ref{kMaster, f.i}
	is := func(r ref) bool { return r == target }
	all := func(ref) bool { return true }
	var cs []cut
	switch f.dir {
	case cutBoth:
		cs = []cut{{from: is, to: all}, {from: all, to: is}}
	case cutInput:
		cs = []cut{{from: all, to: is}}
	default:
		cs = []cut{{from: is, to: all}}
	}
	w.addCuts(fmt.Sprintf("partition M%d mode %d", f.i+1, f.dir), f.dur, cs)
}

// locationPartition cuts every chunkserver of location loc from every
// master, both ways, for dur.
type locationPartition struct {
	loc int
	dur int64
}

func (f locationPartition) fire(w *world, _ *adminIDs) {
	inLoc := func(r ref) bool { return r.k == kCS && r.i%w.prof.locs == f.loc }
	isMaster := func(r ref) bool { return r.k == kMaster }
	w.addCuts(fmt.Sprintf("partition location %s", locNames[f.loc]), f.dur, []cut{{from: inLoc, to: isMaster}, {from: isMaster, to: inLoc}})
}

// csCut cuts some chunkservers from some masters for dur: bits chooses
// both sets (how many chunkservers and which, and a master per bit), and
// master always is among the masters.
type csCut struct {
	bits   int
	always int
	oneWay bool // only what the chunkservers send is dropped
	mode   int  // the draw behind oneWay (2) or not (0, 1), as the trace shows it
	dur    int64
}

func (f csCut) fire(w *world, _ *adminIDs) {
	set := map[int]bool{}
	n := 1 + f.bits%max(1, len(w.css)/2+1)
	for k := 0; k < n; k++ {
		set[(f.bits/7+k*3)%len(w.css)] = true
	}
	masters := map[int]bool{}
	for k := 0; k < len(w.masters); k++ {
		if (f.bits>>k)&1 == 1 || k == f.always {
			masters[k] = true
		}
	}
	inSet := func(r ref) bool { return r.k == kCS && set[r.i] }
	inM := func(r ref) bool { return r.k == kMaster && masters[r.i] }
	cs := []cut{{from: inSet, to: inM}}
	if !f.oneWay {
		cs = append(cs, cut{from: inM, to: inSet})
	}
	w.addCuts(fmt.Sprintf("cut %d chunkservers from %d masters mode %d", len(set), len(masters), f.mode), f.dur, cs)
}

// clockDrift sets node r's clock rate.
type clockDrift struct {
	r    ref
	rate float64
}

func (f clockDrift) fire(w *world, _ *adminIDs) {
	p := w.proc(f.r)
	p.clk.setRate(w.now, f.rate)
	w.tracef("%v clock rate %.4f", p.ref, f.rate)
	if p.up && !p.paused && !p.busy {
		p.tickAt = 0
		w.scheduleTick(p.ref)
	}
}

// wallJump sets master i's wall clock off by jump more. The wall clock
// only reaches the core as a display stamp on status messages; safety
// must not move when it jumps.
type wallJump struct {
	i    int
	jump int64
}

func (f wallJump) fire(w *world, _ *adminIDs) {
	w.masters[f.i].wallJump += f.jump
	w.tracef("M%d wall clock jumps %+v", f.i+1, time.Duration(f.jump))
}

// masterSetChange: MASTER_HOST stops naming master i on some of the nodes
// (a DNS change reaching them one by one; the master itself among them
// or not), and names it again everywhere after dur (docs/architecture.md
// §5.3). The set decides no quorum: safety must not move.
type masterSetChange struct {
	i, pick int
	dur     int64
}

func (f masterSetChange) fire(w *world, _ *adminIDs) {
	var without []wire.MasterID
	for j := range w.masters {
		if j != f.i {
			without = append(without, wire.MasterID(j+1))
		}
	}
	refs := w.nodeRefs()
	var told []string
	for k, r := range refs {
		if f.pick>>(k%20)&1 == 0 || !w.proc(r).up {
			continue
		}
		w.enqueue(r, roles.MasterSet{Masters: without, Member: true})
		told = append(told, r.String())
	}
	w.tracef("MASTER_HOST without M%d on %s", f.i+1, strings.Join(told, " "))
	w.at(w.now+f.dur, w.fullMasterSet)
}

// fullMasterSet names every master again on every node that is up (the
// end of a masterSetChange, and the heal).
func (w *world) fullMasterSet() {
	var all []wire.MasterID
	for j := range w.masters {
		all = append(all, wire.MasterID(j+1))
	}
	for _, r := range w.nodeRefs() {
		if w.proc(r).up {
			w.enqueue(r, roles.MasterSet{Masters: all, Member: true})
		}
	}
}

// nodeRefs is every master, then every chunkserver.
func (w *world) nodeRefs() []ref {
	var out []ref
	for _, m := range w.masters {
		out = append(out, m.ref)
	}
	for _, c := range w.css {
		out = append(out, c.ref)
	}
	return out
}

// registration starts the first spare chunkserver not started yet.
type registration struct{}

func (registration) fire(w *world, _ *adminIDs) {
	for i, c := range w.css {
		if c.spare && !c.started {
			w.startCS(i)
			break
		}
	}
}

// removal: an admin removes the first chunkserver from index from on that
// is registered and down.
type removal struct{ from int }

func (f removal) fire(w *world, ids *adminIDs) {
	for k := range w.css {
		i := (f.from + k) % len(w.css)
		if c := w.css[i]; c.started && !c.up {
			w.change(ids, registry.Change{Kind: registry.ChangeRemove, ID: uint32(c.cfg.ID)}, faultRetries)
			break
		}
	}
}

// remap unmaps location loc's range (its chunkservers move to the default
// location) and maps it again after dur.
type remap struct {
	loc int
	dur int64
}

func (f remap) fire(w *world, ids *adminIDs) {
	w.change(ids, registry.Change{Kind: registry.ChangeUnmapRange, Prefix: locPrefix(f.loc)}, faultRetries)
	w.at(w.now+f.dur, func() {
		w.change(ids, registry.Change{Kind: registry.ChangeMapRange, Prefix: locPrefix(f.loc), Name: locNames[f.loc]}, undoRetries)
	})
}

// moveDefault moves the default mark to location loc.
type moveDefault struct{ loc int }

func (f moveDefault) fire(w *world, ids *adminIDs) {
	w.change(ids, registry.Change{Kind: registry.ChangeSetDefault, Name: locNames[f.loc]}, faultRetries)
}

// locationOff switches location loc OFF, and ON again after dur.
type locationOff struct {
	loc int
	dur int64
}

func (f locationOff) fire(w *world, ids *adminIDs) {
	w.change(ids, registry.Change{Kind: registry.ChangeSetOn, Name: locNames[f.loc], On: false}, faultRetries)
	w.at(w.now+f.dur, func() {
		w.change(ids, registry.Change{Kind: registry.ChangeSetOn, Name: locNames[f.loc], On: true}, undoRetries)
	})
}

// usurper: an admin makes master i USURPER if it is a FOLLOWER, and if
// cancel, cancels it after a while if it is USURPER still.
type usurper struct {
	i      int
	cancel bool
	after  int64
}

func (f usurper) fire(w *world, ids *adminIDs) {
	if !w.masters[f.i].up || w.masters[f.i].m.Role() != roles.Follower {
		return
	}
	if w.leaderIdx() >= 0 {
		w.chk.startFailover(w, "usurper")
	}
	w.admin(f.i, roles.Admin{ID: ids.next(), Kind: roles.AdminSetUsurper}, 0)
	if f.cancel {
		w.at(w.now+f.after, func() {
			if w.masters[f.i].up && w.masters[f.i].m.Role() == roles.Usurper {
				w.admin(f.i, roles.Admin{ID: ids.next(), Kind: roles.AdminCancelUsurper}, 0)
			}
		})
	}
}

// stepDown: an admin steps the LEADER down, if there is one.
type stepDown struct{}

func (stepDown) fire(w *world, ids *adminIDs) {
	if w.leaderIdx() >= 0 {
		w.chk.startFailover(w, "step-down")
		w.admin(-1, roles.Admin{ID: ids.next(), Kind: roles.AdminStepDown}, 0)
	}
}

// maintenance marks chunkserver i in maintenance, and clears it after
// dur.
type maintenance struct {
	i   int
	dur int64
}

func (f maintenance) fire(w *world, ids *adminIDs) {
	id := uint32(w.css[f.i].cfg.ID)
	w.change(ids, registry.Change{Kind: registry.ChangeMaintenance, ID: id, On: true}, faultRetries)
	w.at(w.now+f.dur, func() {
		w.change(ids, registry.Change{Kind: registry.ChangeMaintenance, ID: id, On: false}, undoRetries)
	})
}

// tempRemoval: an operator runs mfscli -CTR, again and again, on a
// chunkserver found from index from on: one that is down, or if anyCS any.
type tempRemoval struct {
	from  int
	anyCS bool
}

func (f tempRemoval) fire(w *world, _ *adminIDs) {
	for k := 0; k < tempRemoveTries; k++ {
		w.at(w.now+int64(k)*int64(adminRetryGap), func() { w.tempRemove(f.from+k, f.anyCS) })
	}
}

// masterRestore copies master i's store now and, after a while, restarts the
// master from that copy (restoreMaster).
type masterRestore struct {
	i      int
	after  int64
	behind bool
}

func (f masterRestore) fire(w *world, _ *adminIDs) {
	// An operator copies a master's DATA_PATH (a VM snapshot, a backup)
	// and later brings the master back from that copy, half the time on
	// a host whose wall clock is behind the start of the run the copy was
	// taken in (a rebuilt VM before NTP stepped it): its incarnation must
	// not repeat that run's (security review N5).
	backup := w.masters[f.i].store.Copy()
	w.tracef("M%d data directory copied (log %v, epoch %d)", f.i+1, backup.Last(), backup.Hard().Epoch)
	w.at(w.now+f.after, func() {
		if f.behind {
			n := w.masters[f.i]
			started := int64(backup.Hard().Incarnation>>32) * 1000 // that run's start, in wall ms
			n.wallJump += (started - 5000 - n.wallMs(w.now)) * 1e6
			w.tracef("M%d wall clock set behind the copy's run: %d ms", f.i+1, n.wallMs(w.now))
		}
		w.restoreMaster(f.i, backup)
	})
}

// restoreMaster stops master i and starts it again from an older copy of
// its store: it forgets epochs it took, its incarnation (wall-clock ms at
// every start, as the daemon takes it), and its newest entries. That is
// what M7 guards against: voters refuse it the epochs it forgot
// (epoch-reused), so it cannot write a second log at one of them.
//
// What a restore cannot be made safe against is losing changes that no
// other master holds (with ACK_REPLICAS = 0, or with ACK_ALONE while every
// follower is down, the LEADER acknowledges changes only it stores):
// docs/operations.md says so. Such a restore is not done here, since S2
// would rightly fail; a master's store is restored only while its newest
// durable entry is also durable on another master (or under another
// master's snapshot), or in the witness's store log: then every later
// LEADER must take it from there (the store as a stand-in replica).
func (w *world) restoreMaster(i int, backup *roles.MemStore) {
	n := w.masters[i]
	if !w.restorable(i, backup.Last()) {
		w.tracef("M%d restore skipped: its log holds entries no other master stores", i+1)
		return
	}
	w.killMaster(i)
	n.store = backup
	w.chk.restored(i, backup.Hard())
	w.restores++
	w.tracef("M%d RESTORED from its copy (log %v, epoch %d)", i+1, backup.Last(), backup.Hard().Epoch)
	w.at(w.now+int64(100*time.Millisecond), func() {
		if !n.up {
			w.startMaster(i)
		}
	})
}

// restorable: every entry master i stores above from (what a restore
// from a copy that ends at from would take away) is held by another
// master or by the store log. Walks down from the newest: an entry held
// elsewhere covers those below it (log matching). Trimmed entries,
// whose positions this store no longer knows, must be held elsewhere.
func (w *world) restorable(i int, from changelog.Pos) bool {
	st := w.masters[i].store
	loaded, _ := st.Load()
	base := st.Base().Pos
	for k := len(loaded.Entries) - 1; k >= 0; k-- {
		pos := loaded.Entries[k].Pos
		if pos.Version <= from.Version || w.heldElsewhere(i, pos) {
			return true
		}
		if !w.storeHolds(pos) {
			return false
		}
	}
	return base.Version <= from.Version || w.heldElsewhere(i, base)
}

// heldElsewhere: some master other than i durably stores the entry at pos,
// or has trimmed past it under a snapshot (committed, so unique at its
// version: an entry of i's at that version that differs was never
// committed, so never acknowledged).
func (w *world) heldElsewhere(i int, pos changelog.Pos) bool {
	for k, o := range w.masters {
		if k == i {
			continue
		}
		if o.store.Base().Pos.Version >= pos.Version || o.store.Holds(pos) {
			return true
		}
	}
	return false
}

func (w *world) addCuts(what string, dur int64, cs []cut) {
	id := int(w.seq)
	for k := range cs {
		cs[k].id = id
	}
	w.tracef("CUT %s for %v", what, time.Duration(dur))
	w.net.cuts = append(w.net.cuts, cs...)
	w.at(w.now+dur, func() {
		kept := w.net.cuts[:0]
		for _, c := range w.net.cuts {
			if c.id != id {
				kept = append(kept, c)
			}
		}
		w.net.cuts = kept
		w.tracef("HEAL %s", what)
	})
}

// tempRemove is what mfscli -CTR does: it names a chunkserver (one that is
// down, or if anyCS any, as an operator's mistake would) and
// sends the removal to every master it reaches but a LEADER, unless one of
// them already leaves out another of that location.
func (w *world) tempRemove(pick int, anyCS bool) {
	var c *csNode
	for k := range w.css {
		if cand := w.css[(pick+k)%len(w.css)]; cand.started && (!cand.up || anyCS) {
			c = cand
			break
		}
	}
	if c == nil {
		return
	}
	for _, m := range w.masters {
		if !m.up || m.paused {
			continue
		}
		cfg := m.m.Registry()
		mem, ok := cfg.Member(c.cfg.ID)
		if !ok {
			continue
		}
		loc := cfg.Locations.Locate(mem.Addr)
		for _, id := range m.m.TempRemoved() {
			if o, ok := cfg.Member(id); ok && id != c.cfg.ID && cfg.Locations.Locate(o.Addr) == loc {
				return // mfscli refuses: another of that location is left out already
			}
		}
	}
	for i, m := range w.masters {
		if m.up && !m.paused && !m.busy && m.m.Role() != roles.Leader {
			w.admin(i, roles.Admin{ID: uint64(1000000 + pick), Kind: roles.AdminTempRemove, Change: registry.Change{ID: uint32(c.cfg.ID)}}, 0)
		}
	}
}

// ---- disk faults (security review N1-N3) --------------------------------------

// tearEarly and tearLate: a torn write of a chunkserver's record. Early:
// the power went before the write reached the disk whole; the slot it
// wrote is unreadable, the other holds the record before it, and the next
// start finds the damage. Late: the write was whole but the process died
// before anything of its batch left.
const (
	tearEarly = 1
	tearLate  = 2
)

// csRot: chunkserver i crashes, and its next start finds one copy of its
// record unreadable: the newest (newest: it starts from the record before,
// which may be behind what it acted on) or the older one (it starts from
// the newest). Either way it must start uncertain.
type csRot struct {
	i       int
	newest  bool
	downFor int64
}

func (f csRot) fire(w *world, _ *adminIDs) {
	n := w.css[f.i]
	if !n.started || !n.up || n.stopping {
		return
	}
	w.killCS(f.i)
	if f.newest {
		n.hard = n.prev
	}
	n.damaged = true
	w.chk.diskFault(f.i, n.hard)
	w.tracef("CS%d ROT of its %s copy (starts from epoch %d commit %v)", f.i+1, map[bool]string{true: "newest", false: "older"}[f.newest], n.hard.MaxEpoch, n.hard.Commit)
	w.at(w.now+f.downFor, func() { w.upCS(f.i) })
}

// csTear arms a torn write of chunkserver i's next record (how: tearEarly
// or tearLate); unfired after downFor, it is disarmed.
type csTear struct {
	i, how  int
	downFor int64
}

func (f csTear) fire(w *world, _ *adminIDs) {
	n := w.css[f.i]
	if !n.started || !n.up || n.stopping {
		return
	}
	n.tear = f.how
	w.at(w.now+f.downFor, func() { n.tear = 0 })
}

// tearWrite is the power cut during chunkserver i's write of b's record:
// nothing of the batch leaves, the process is gone, and it starts again
// after a while.
func (w *world) tearWrite(i int, b voter.Batch) {
	n := w.css[i]
	how := n.tear
	n.tear = 0
	if how == tearLate {
		_ = voterDisk{n}.Apply(b.Persist...)
	}
	w.killCS(i)
	n.damaged = how == tearEarly
	w.chk.diskFault(i, n.hard)
	w.tracef("CS%d TORN write (%s)", i+1, map[bool]string{true: "early: that copy unreadable", false: "late: whole, nothing sent"}[how == tearEarly])
	w.at(w.now+int64(200*time.Millisecond), func() { w.upCS(i) })
}

// csLose: chunkserver i crashes and its record file is lost (removed as an
// operator might, a wiped DATA_PATH); it registers again and gets its id
// back as a known member's (voter.Config.RecordLost).
type csLose struct {
	i       int
	downFor int64
}

func (f csLose) fire(w *world, _ *adminIDs) {
	n := w.css[f.i]
	if !n.started || !n.up || n.stopping {
		return
	}
	w.killCS(f.i)
	n.hard, n.prev, n.lost = roles.VoterHardState{}, roles.VoterHardState{}, true
	w.chk.diskFault(f.i, n.hard)
	w.tracef("CS%d record LOST", f.i+1)
	w.at(w.now+f.downFor, func() { w.upCS(f.i) })
}
