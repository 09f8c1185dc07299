package sim

import (
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
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
	numFaults
)

var faultNames = [numFaults]string{"kill-master", "kill-cs", "pause-master", "pause-cs", "partition-master",
	"partition-location", "cut-cs", "drift", "wall-jump", "register", "remove", "remap", "default", "on-off",
	"usurper", "step-down", "maintenance", "temp-remove", "adversary", "restore-master"}

// profile is everything drawn from the seed before the run starts: sizes,
// network quality, config within its documented ranges, and which faults
// are on the menu.
type profile struct {
	masters, css, spares, locs, clients int
	delayBase, delayJitter              time.Duration
	loss, dup                           float64
	diskMax                             time.Duration
	masterCfg                           roles.Config
	maxPromise                          time.Duration
	keep                                uint32 // masters with KEEP_LEADERSHIP: bit i is master i
	faults                              []faultKind
	meanGap                             time.Duration
	extremeClocks                       bool // every clock starts at +rho or -rho
	reject                              bool // cuts refuse dials (REJECT rules) instead of dropping them
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
	c := roles.DefaultConfig(1, []wire.MasterID{1})
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
	for f := faultKind(0); f < numFaults; f++ {
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
	return p
}

func (p profile) String() string {
	var fs []string
	for _, f := range p.faults {
		fs = append(fs, faultNames[f])
	}
	return fmt.Sprintf("masters=%d cs=%d+%d spare locations=%d clients=%d delay=%v+%v loss=%.2f dup=%.2f disk<=%v lease=%v hb=%v drift<=%.2f deputy=%v ack_replicas=%d snapshot_every=%d log_retain=%d keep=%s gap~%v extreme_clocks=%v reject=%v faults=[%s]",
		p.masters, p.css, p.spares, p.locs, p.clients, p.delayBase, p.delayJitter, p.loss, p.dup, p.diskMax,
		p.masterCfg.VoteLease, p.masterCfg.HeartbeatInterval, p.masterCfg.MaxClockDrift, p.masterCfg.DeputyElectionTime,
		p.masterCfg.AckReplicas, p.masterCfg.SnapshotEvery, p.masterCfg.LogRetain, p.keepString(), p.meanGap, p.extremeClocks, p.reject, strings.Join(fs, ","))
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

// admin delivers an operator command to a master; changes go to the
// LEADER and are retried while another change is in flight.
func (w *world) admin(target int, a roles.Admin, retries int) {
	i := target
	if a.Kind == roles.AdminChange || a.Kind == roles.AdminStepDown {
		i = w.leaderIdx()
	}
	if i < 0 || !w.masters[i].up || w.masters[i].paused || w.masters[i].busy {
		if retries > 0 {
			w.at(w.now+int64(300*time.Millisecond), func() { w.admin(target, a, retries-1) })
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
	w.handle(m.ref, acts)
	w.drain(m.ref)
	if !ok && a.Kind == roles.AdminChange && retries > 0 {
		w.at(w.now+int64(300*time.Millisecond), func() { w.admin(target, a, retries-1) })
	}
}

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
	adminID := uint64(0)
	next := func() uint64 { adminID++; return adminID }
	// The location map: every location but the default gets its range once
	// the cluster has a LEADER.
	for l := 1; l < w.prof.locs; l++ {
		l := l
		w.at(int64(3*time.Second)+int64(l)*int64(200*time.Millisecond), func() {
			w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminChange, Change: roles.Change{Kind: roles.ChangeMapRange, Prefix: locPrefix(l), Name: locNames[l]}}, 60)
		})
	}
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
		dur := int64(300*time.Millisecond) + w.rng.Int63n(int64(3500*time.Millisecond))
		pick := w.rng.Intn(1 << 20)
		leaderFirst := w.rng.Intn(10) < 7
		mode := w.rng.Intn(3)
		rate := 1 + (w.rng.Float64()*2-1)*w.prof.masterCfg.MaxClockDrift
		w.at(t, func() { w.fault(f, dur, pick, leaderFirst, mode, rate, next) })
	}
}

// fault fires one fault of the menu.
func (w *world) fault(f faultKind, dur int64, pick int, leaderFirst bool, mode int, rate float64, next func() uint64) {
	pickMaster := func() int {
		if l := w.leaderIdx(); leaderFirst && l >= 0 {
			return l
		}
		return pick % len(w.masters)
	}
	switch f {
	case fKillMaster:
		i := pickMaster()
		if i == w.leaderIdx() {
			w.chk.startFailover(w, "kill")
		}
		w.killMaster(i)
		if mode != 0 {
			w.at(w.now+dur, func() {
				if !w.masters[i].up {
					w.startMaster(i)
				}
			})
		}
	case fKillCS:
		i := pick % len(w.css)
		if !w.css[i].started {
			return
		}
		w.downCS(i, mode == 0) // one in three an orderly stop
		w.at(w.now+dur, func() { w.upCS(i) })
	case fPauseMaster:
		i := pickMaster()
		if i == w.leaderIdx() && !w.masters[i].paused && time.Duration(dur) > w.prof.masterCfg.VoteLease {
			w.chk.startFailover(w, "pause")
		}
		r := w.masters[i].ref
		w.pause(r)
		w.at(w.now+dur, func() { w.resume(r) })
	case fPauseCS:
		r := w.css[pick%len(w.css)].ref
		w.pause(r)
		w.at(w.now+dur, func() { w.resume(r) })
	case fPartMaster:
		i := pickMaster()
		if i == w.leaderIdx() && mode != 1 {
			w.chk.startFailover(w, "partition")
		}
		target := ref{kMaster, i}
		is := func(r ref) bool { return r == target }
		all := func(ref) bool { return true }
		var cs []cut
		switch mode {
		case 0: // symmetric
			cs = []cut{{from: is, to: all}, {from: all, to: is}}
		case 1: // it can send, cannot hear
			cs = []cut{{from: all, to: is}}
		default: // it can hear, cannot send
			cs = []cut{{from: is, to: all}}
		}
		w.addCuts(fmt.Sprintf("partition M%d mode %d", i+1, mode), dur, cs)
	case fPartLocation:
		loc := pick % w.prof.locs
		inLoc := func(r ref) bool { return r.k == kCS && r.i%w.prof.locs == loc }
		isMaster := func(r ref) bool { return r.k == kMaster }
		w.addCuts(fmt.Sprintf("partition location %s", locNames[loc]), dur, []cut{{from: inLoc, to: isMaster}, {from: isMaster, to: inLoc}})
	case fCutCS:
		set := map[int]bool{}
		n := 1 + pick%max(1, len(w.css)/2+1)
		for k := 0; k < n; k++ {
			set[(pick/7+k*3)%len(w.css)] = true
		}
		masters := map[int]bool{}
		for k := 0; k < len(w.masters); k++ {
			if (pick>>k)&1 == 1 || k == pickMaster() {
				masters[k] = true
			}
		}
		inSet := func(r ref) bool { return r.k == kCS && set[r.i] }
		inM := func(r ref) bool { return r.k == kMaster && masters[r.i] }
		cs := []cut{{from: inSet, to: inM}}
		if mode != 2 {
			cs = append(cs, cut{from: inM, to: inSet})
		}
		w.addCuts(fmt.Sprintf("cut %d chunkservers from %d masters mode %d", len(set), len(masters), mode), dur, cs)
	case fDrift:
		var p *proc
		if pick%2 == 0 {
			p = &w.masters[pick/2%len(w.masters)].proc
		} else {
			p = &w.css[pick/2%len(w.css)].proc
		}
		p.clk.setRate(w.now, rate)
		w.tracef("%v clock rate %.4f", p.ref, rate)
		if p.up && !p.paused && !p.busy {
			p.tickAt = 0
			w.scheduleTick(p.ref)
		}
	case fWallJump:
		// The wall clock only reaches the core as a display stamp on status
		// messages; safety must not move when it jumps.
		i := pick % len(w.masters)
		jump := int64(pick%120-60) * int64(time.Second)
		w.masters[i].wallJump += jump
		w.tracef("M%d wall clock jumps %+v", i+1, time.Duration(jump))
	case fRegister:
		for i, c := range w.css {
			if c.spare && !c.started {
				w.startCS(i)
				break
			}
		}
	case fRemove:
		for k := range w.css {
			i := (pick + k) % len(w.css)
			if c := w.css[i]; c.started && !c.up {
				w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminChange, Change: roles.Change{Kind: roles.ChangeRemove, ID: uint32(c.cfg.ID)}}, 3)
				break
			}
		}
	case fRemap:
		if w.prof.locs < 2 {
			return
		}
		loc := 1 + pick%(w.prof.locs-1)
		w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminChange, Change: roles.Change{Kind: roles.ChangeUnmapRange, Prefix: locPrefix(loc)}}, 3)
		w.at(w.now+dur, func() {
			w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminChange, Change: roles.Change{Kind: roles.ChangeMapRange, Prefix: locPrefix(loc), Name: locNames[loc]}}, 20)
		})
	case fDefault:
		loc := pick % w.prof.locs
		w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminChange, Change: roles.Change{Kind: roles.ChangeSetDefault, Name: locNames[loc]}}, 3)
	case fTempRemove:
		// An operator tries while the masters are stuck in ELECT: again
		// every 300 ms for a while.
		for k := 0; k < 10; k++ {
			w.at(w.now+int64(k)*int64(300*time.Millisecond), func() { w.tempRemove(pick+k, mode) })
		}
	case fMaintenance:
		id := uint32(w.css[pick%len(w.css)].cfg.ID)
		w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminChange, Change: roles.Change{Kind: roles.ChangeMaintenance, ID: id, On: true}}, 3)
		w.at(w.now+dur, func() {
			w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminChange, Change: roles.Change{Kind: roles.ChangeMaintenance, ID: id, On: false}}, 20)
		})
	case fOnOff:
		loc := pick % w.prof.locs
		w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminChange, Change: roles.Change{Kind: roles.ChangeSetOn, Name: locNames[loc], On: false}}, 3)
		w.at(w.now+dur, func() {
			w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminChange, Change: roles.Change{Kind: roles.ChangeSetOn, Name: locNames[loc], On: true}}, 20)
		})
	case fUsurper:
		i := pick % len(w.masters)
		if w.masters[i].up && w.masters[i].m.Role() == roles.Follower {
			if w.leaderIdx() >= 0 {
				w.chk.startFailover(w, "usurper")
			}
			w.admin(i, roles.Admin{ID: next(), Kind: roles.AdminSetUsurper}, 0)
			if mode == 0 {
				w.at(w.now+dur, func() {
					if w.masters[i].up && w.masters[i].m.Role() == roles.Usurper {
						w.admin(i, roles.Admin{ID: next(), Kind: roles.AdminCancelUsurper}, 0)
					}
				})
			}
		}
	case fAdversary:
		w.adversaryFault(dur, pick, mode)
	case fRestore:
		// An operator copies a master's DATA_PATH (a VM snapshot, a
		// backup) and later brings the master back from that copy.
		i := pickMaster()
		backup := w.masters[i].store.Copy()
		w.tracef("M%d data directory copied (log %v, epoch %d)", i+1, backup.Last(), backup.Hard().Epoch)
		w.at(w.now+dur, func() { w.restoreMaster(i, backup) })
	case fStepDown:
		if w.leaderIdx() >= 0 {
			w.chk.startFailover(w, "step-down")
			w.admin(-1, roles.Admin{ID: next(), Kind: roles.AdminStepDown}, 0)
		}
	}
}

// restoreMaster stops master i and starts it again from an older copy of
// its store: it forgets epochs it took, its incarnation (wall-clock ms at
// every start, as the daemon takes it), and its newest entries. That is
// what M7 guards against: voters refuse it the epochs it forgot
// (epoch-reused), so it cannot write a second log at one of them.
//
// What a restore cannot be made safe against is losing changes that no
// other master holds (with ACK_REPLICAS = 0, or while every follower is
// down, the LEADER acknowledges changes only it stores): docs/operations.md
// says so. Such a restore is not done here, since S2 would rightly fail; a
// master's store is restored only while its newest durable entry is also
// durable on another master (or under another master's snapshot).
func (w *world) restoreMaster(i int, backup *roles.MemStore) {
	n := w.masters[i]
	if !w.heldElsewhere(i, n.store.Last()) {
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

// heldElsewhere: some master other than i durably stores the entry at pos,
// or has trimmed past it under a snapshot (committed, so unique at its
// version: an entry of i's at that version that differs was never
// committed, so never acknowledged).
func (w *world) heldElsewhere(i int, pos roles.Pos) bool {
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
// down, or on one run in three any, as an operator's mistake would) and
// sends the removal to every master it reaches but a LEADER, unless one of
// them already leaves out another of that location.
func (w *world) tempRemove(pick, mode int) {
	var c *csNode
	for k := range w.css {
		if cand := w.css[(pick+k)%len(w.css)]; cand.started && (!cand.up || mode == 0) {
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
		cfg := m.m.Config()
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
			w.admin(i, roles.Admin{ID: uint64(1000000 + pick), Kind: roles.AdminTempRemove, Change: roles.Change{ID: uint32(c.cfg.ID)}}, 0)
		}
	}
}
