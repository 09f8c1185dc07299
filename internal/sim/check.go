package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/linearize"

	"github.com/anishathalye/porcupine"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

type ackedWrite struct {
	client  int
	seq     uint64
	version uint64
}

type failover struct {
	kind string
	at   int64
}

// checker holds the invariants docs/sim.md lists (the safety and liveness
// promises of docs/architecture.md) and checks them after every event.
type checker struct {
	lastHard       []roles.HardState
	lastVoter      []roles.VoterHardState
	diskFaults     int    // chunkserver records set back, torn or lost
	stuckUncertain string // no LEADER after the heal, and uncertain voters are why
	// forgot: chunkserver i's record lost knowledge it had acted on (a
	// disk fault set it back), and no LEADER has restored it since: an
	// operator's -CTRUST of it could lose an acknowledged change. trusts:
	// -CTRUSTs the simulated operator sent (only where forgot is false).
	forgot         []bool
	trusts         int
	refusals       map[string]int // what voters ignored (refused heartbeats among it), by reason
	leaderSince    []int64        // per master: when it last became LEADER
	handoversAfter int            // LEADER -> FOLLOWER by handover after the heal
	maxLeaderEpoch uint64
	leaderTerms    int
	acked          []ackedWrite
	history        []porcupine.Operation
	failovers      map[string][]time.Duration
	pending        []failover
	healed         bool
	healAt         int64
	// healVoters: every voter's durable record at the heal;
	// conflictExcused: preHealConflict has excused its one step-down.
	healVoters      []roles.VoterHardState
	conflictExcused bool
	healToLead      time.Duration
	ledAfterHeal    bool
	opsAfterLead    int
	liveness        string
	snaps           Snapshots
	tempRemovals    int // temporary removals (-CTR) a master took
	// happened: every role change made (historyKey), for H1.
	happened map[string]bool
	// witnessHeld: events after which some master counted the witness.
	witnessHeld int
}

// historyKey names a role change by what a history record says of it.
func historyKey(m wire.MasterID, from, to string, epoch uint64, reason string) string {
	return fmt.Sprintf("M%d %s->%s epoch %d %s", m, from, to, epoch, reason)
}

// Snapshots counts what snapshots did in a run, to show the paths were
// taken.
type Snapshots struct {
	Saved        int // snapshots a master made of its own state
	Trims        int
	Installed    int // snapshots received from another master
	ElectInstall int // ... of them, by an ELECT catching up
}

func (c *checker) init(w *world) {
	c.lastHard = make([]roles.HardState, len(w.masters))
	c.lastVoter = make([]roles.VoterHardState, len(w.css))
	c.forgot = make([]bool, len(w.css))
	c.refusals = map[string]int{}
	c.leaderSince = make([]int64, len(w.masters))
	c.failovers = map[string][]time.Duration{}
	c.happened = map[string]bool{}
}

// batch checks one batch as the node made it.
func (c *checker) batch(w *world, r ref, sb stepBatch) {
	b := sb.common()
	if sb.m.SaveSnapshot != nil {
		c.snaps.Saved++
	}
	for _, p := range b.Persist {
		if p.Trim != nil {
			c.snaps.Trims++
		}
		if p.Snapshot != nil {
			c.snaps.Installed++
			if w.masters[r.i].m.Role() == roles.Elect {
				c.snaps.ElectInstall++
			}
		}
	}
	for _, s := range b.Sends {
		if ack, ok := s.Msg.(roles.HeartbeatAck); ok && r.k == kCS && !ack.OK {
			c.refusal(w, r, s.To, ack)
		}
	}
	for _, t := range sb.m.Transitions {
		c.transition(w, r, t)
	}
	for _, reason := range b.Ignored {
		if r.k == kCS {
			c.refusals[reason]++
		}
		if reason == "conflict-below-commit" {
			w.violate("%v was asked to overwrite a committed entry", r)
		}
	}
}

// transition checks one role change: it is in the table, its disconnect
// rule was followed, and no settled LEADER flaps after the heal (L2).
func (c *checker) transition(w *world, r ref, a roles.Transition) {
	if a.From == roles.Leader && a.Reason == roles.ReasonQuorumLost && r.k == kMaster && w.net.lossy[r.i] > w.now {
		w.lossyChanges++ // its lossy link deposed it: the lease lapsed while it lived
		if w.now >= w.othersUntil {
			w.lossyAlone++
		}
	}
	c.happened[historyKey(wire.MasterID(r.i+1), a.From.String(), a.To.String(), a.Epoch, a.Reason)] = true
	if _, ok := roles.FindRule(a.From, a.To, a.Reason); !ok {
		w.violate("%v: transition %v -> %v (%s) is not in docs/roles.md", r, a.From, a.To, a.Reason)
	}
	disc := map[roles.ConnClass]bool{}
	for _, d := range a.Disconnects {
		disc[d.Class] = true
	}
	want := roles.MustDisconnect(a.From, a.To)
	got := disc[roles.ConnChunkservers] && disc[roles.ConnClients] && disc[roles.ConnSessions]
	if want && !got {
		w.violate("%v: %v -> %v took effect before disconnecting %v", r, a.From, a.To, disc)
	}
	if !want && len(disc) > 0 {
		w.violate("%v: %v -> %v disconnected %v but must take effect at once", r, a.From, a.To, disc)
	}
	// L2: a LEADER elected after the heal that has led for a whole
	// lease is settled; nothing but a planned handover may unseat it
	// (no flapping). Candidates racing in the first moments after
	// the heal may still replace each other.
	if a.From == roles.Leader && (a.Reason == roles.ReasonQuorumLost || a.Reason == roles.ReasonHigherEpoch) &&
		c.healed && c.leaderSince[r.i] >= c.healAt && w.now-c.leaderSince[r.i] >= int64(w.prof.masterCfg.VoteLease) && c.liveness == "" &&
		!c.preHealConflict(r, a) {
		c.liveness = fmt.Sprintf("%v lost the lead %v after the heal (%s): flapping", r, time.Duration(w.now-c.healAt), a.Reason)
	}
	// L2 for preferred leaders: a handover yields, and a master
	// that yielded reclaims only after an election or an admin
	// order (none come after the heal), so after the heal each
	// master hands over at most once. More is KEEP_LEADERSHIP
	// masters taking the role from each other in turn.
	if a.From == roles.Leader && a.Reason == roles.ReasonHandover && c.healed {
		c.handoversAfter++
		if c.handoversAfter > len(w.masters) && c.liveness == "" {
			c.liveness = fmt.Sprintf("%d handovers after the heal (keep=%s): flapping", c.handoversAfter, w.prof.keepString())
		}
	}
	if a.To == roles.Leader {
		c.leaderSince[r.i] = w.now
		c.newLeader(w, r, a.Epoch)
	}
}

// newLeader: epochs rise with every term (S1) and the new LEADER holds
// every acknowledged change (S2).
func (c *checker) newLeader(w *world, r ref, epoch uint64) {
	c.leaderTerms++
	if epoch <= c.maxLeaderEpoch {
		w.violate("%v became LEADER at epoch %d, not above the previous LEADER epoch %d", r, epoch, c.maxLeaderEpoch)
	}
	c.maxLeaderEpoch = max(c.maxLeaderEpoch, epoch)
	log := w.masters[r.i].m.Log()
	base := log.Base().Pos.Version
	for _, a := range c.acked {
		if a.version <= base {
			// Trimmed into the snapshot: committed history by the
			// snapshot invariant; the linearizability check sees it lost
			// if it were.
			continue
		}
		e, ok := log.At(a.version)
		if !ok || e.Client != changelog.ClientID(a.client+1) || e.Seq != a.seq {
			w.violate("%v became LEADER without acknowledged change C%d#%d at version %d", r, a.client+1, a.seq, a.version)
			return
		}
	}
	for _, f := range c.pending {
		c.failovers[f.kind] = append(c.failovers[f.kind], time.Duration(w.now-f.at))
	}
	c.pending = nil
}

// refusal: a voter's refusal names its true reason (V2), for the master
// acts on it and logs it. An epoch another master owns is "epoch-owned";
// "epoch-reused" is only ever said to the owner itself, in another
// incarnation. With incarnations taken from the wall clock, two masters'
// incarnations differ, so a voter that lost its epoch-owned check would
// still refuse, under the wrong name: this is what sees that check.
func (c *checker) refusal(w *world, r ref, to roles.Peer, ack roles.HeartbeatAck) {
	owner := uint64(ack.EpochOwner)
	switch ack.Reason {
	case "epoch-owned":
		if owner == to.ID {
			w.violate("V2: %v refused M%d epoch %d as owned by another master, but owned by M%d", r, to.ID, ack.MaxEpoch, owner)
		}
	case "epoch-reused":
		if owner != to.ID {
			w.violate("V2: %v refused M%d epoch %d as its own from another incarnation, but owned by M%d", r, to.ID, ack.MaxEpoch, owner)
		}
	}
}

// diskFault: chunkserver i's record was set back or lost by a disk fault
// (the fault itself, not a bug of the voter's: V1 judges what follows).
func (c *checker) diskFault(i int, h roles.VoterHardState) {
	if l := c.lastVoter[i]; h.MaxEpoch != l.MaxEpoch || h.EpochOwner != l.EpochOwner || h.EpochInc != l.EpochInc || h.Commit != l.Commit || h.CommitTag != l.CommitTag {
		c.forgot[i] = true // until a LEADER restores it (persisted)
	}
	c.lastVoter[i] = h
	c.diskFaults++
}

// restored: master i's store was replaced by an older copy; its epochs on
// disk went down by the operator's hand, and are judged from there on.
func (c *checker) restored(i int, h roles.HardState) { c.lastHard[i] = h }

// persisted: epochs on disk never go down. A voter's record (V1): its
// epoch never goes down, and at one epoch its owner (master and
// incarnation) never changes once recorded. Two owners at one epoch in one
// voter's record is a vote given to both; quorum intersection (S1) rests
// on every voter of a quorum refusing the second.
func (c *checker) persisted(w *world, r ref) {
	if r.k == kCS {
		h, last := w.css[r.i].hard, c.lastVoter[r.i]
		switch {
		case h.MaxEpoch < last.MaxEpoch:
			w.violate("V1: %v: persisted epoch went down: %d after %d", r, h.MaxEpoch, last.MaxEpoch)
		case h.MaxEpoch == last.MaxEpoch && last.EpochOwner != wire.NoMaster &&
			(h.EpochOwner != last.EpochOwner || h.EpochInc != last.EpochInc):
			w.violate("V1: %v: epoch %d owned by M%d (incarnation %d), then by M%d (incarnation %d)",
				r, h.MaxEpoch, last.EpochOwner, last.EpochInc, h.EpochOwner, h.EpochInc)
		}
		c.lastVoter[r.i] = h
		if !h.Uncertain {
			c.forgot[r.i] = false
		}
		return
	}
	if r.k != kMaster {
		return
	}
	h := w.masters[r.i].store.Hard()
	last := c.lastHard[r.i]
	if h.MaxEpoch < last.MaxEpoch || h.Epoch < last.Epoch {
		w.violate("%v: persisted epochs went down: %d/%d after %d/%d", r, h.Epoch, h.MaxEpoch, last.Epoch, last.MaxEpoch)
	}
	c.lastHard[r.i] = h
}

// after runs after every event. S1 (and S3, since a frozen master's state
// is checked at the true time too): at most one master may hold a quorum
// of countable votes as LEADER at any instant.
func (c *checker) after(w *world) {
	c.checkEpochs(w)
	c.checkWitness(w)
	leaders := 0
	for _, m := range w.masters {
		if m.up && m.m.Role() == roles.Leader {
			leaders++
		}
	}
	// With one LEADER by role there is nothing to compare; it is tallied
	// only while the liveness phase waits for it.
	if leaders == 0 || (leaders == 1 && (!c.healed || c.ledAfterHeal)) {
		return
	}
	var holders []*masterNode
	for _, m := range w.masters {
		if m.up && m.m.Role() == roles.Leader && m.m.HoldsQuorum(roles.Instant(m.clk.local(w.now))) {
			holders = append(holders, m)
		}
	}
	holding := len(holders)
	if holding > 1 {
		var who []string
		for _, m := range holders {
			who = append(who, fmt.Sprintf("%v(epoch %d, paused=%v)", m.ref, m.m.Epoch(), m.paused))
		}
		w.violate("S1: %d masters hold quorum as LEADER at once: %v", holding, who)
	}
	if holding == 1 && c.healed && !c.ledAfterHeal {
		c.ledAfterHeal = true
		c.healToLead = time.Duration(w.now - c.healAt)
	}
}

func (c *checker) completed(w *world, client int, op *clientOp, r roles.ClientReply) {
	c.history = append(c.history, porcupine.Operation{
		ClientId: client, Input: linearize.Input{Write: op.write, Key: op.key, Val: op.val},
		Call: op.call, Output: linearize.Output{Val: r.Value, Found: r.Found}, Return: w.now,
	})
	if op.write {
		c.acked = append(c.acked, ackedWrite{client: client, seq: op.seq, version: r.Version})
	}
	if c.ledAfterHeal {
		c.opsAfterLead++
	}
}

func (c *checker) startFailover(w *world, kind string) {
	c.pending = append(c.pending, failover{kind: kind, at: w.now})
}

// final: liveness after the heal, then linearizability of the history,
// then the election history's truth.
func (c *checker) final(w *world, healAt, end int64) {
	defer c.checkHistory(w)
	if debugSim {
		for i, m := range w.masters {
			if m.up && m.m != nil {
				fmt.Printf("DBG M%d reg=%d inforce=%d witcounted=%v tallies=%+v\n", i+1, m.m.Registry().Version, m.m.InForce(), m.m.WitnessCounted(roles.Instant(m.clk.local(w.now))), m.m.Tallies(roles.Instant(m.clk.local(w.now))))
			}
		}
	}
	bound := w.livenessBound()
	switch {
	case c.liveness != "":
	case c.opsAfterLead == 0 && w.leaderIdx() < 0 && w.uncertainBlock():
		// Documented, not a failure: too many voters' records were damaged
		// or lost for a quorum of whole ones, and only a LEADER (or the
		// operator's -CTRUST) can restore them (docs/architecture.md §7,
		// "Voters that forgot"). A LEADER seen after the heal can only be
		// one that held votes given before a voter's crash: no faults come
		// after the heal, so one elected then by certain voters would
		// still have them, and there would be no block.
		who := "no LEADER"
		if c.ledAfterHeal {
			who = "the LEADER at the heal lost its quorum when the votes a damaged voter gave before its crash ran out, and none can follow it"
		}
		c.stuckUncertain = fmt.Sprintf("%s: no quorum of certain voters (%s)", who, rolesLine(w))
	case !c.ledAfterHeal:
		c.liveness = fmt.Sprintf("no LEADER within %v of the heal (%s)", bound, rolesLine(w))
	case c.healToLead > bound:
		c.liveness = fmt.Sprintf("LEADER only %v after the heal, bound %v", c.healToLead, bound)
	case c.opsAfterLead == 0:
		c.liveness = fmt.Sprintf("a LEADER was elected but no client operation completed in the %v after it (%s)", time.Duration(end-healAt)-c.healToLead, rolesLine(w))
	default:
		c.liveness = w.fullStrength()
	}
	// Writes never answered may or may not have happened.
	hist := append([]porcupine.Operation(nil), c.history...)
	for _, cl := range w.clients {
		if cl.op != nil && cl.op.write {
			hist = append(hist, porcupine.Operation{ClientId: cl.idx, Input: linearize.Input{Write: true, Key: cl.op.key, Val: cl.op.val},
				Call: cl.op.call, Output: linearize.Output{Unknown: true}, Return: linearize.Pending})
		}
	}
	res, _ := porcupine.CheckOperationsVerbose(linearize.KV, hist, 20*time.Second)
	switch res {
	case porcupine.Illegal:
		w.violate("S2: the client history (%d operations) is not linearizable", len(hist))
	case porcupine.Unknown:
		w.violate("S2: linearizability check timed out on %d operations", len(hist))
	}
}

// checkHistory is H1: every record of the election history a master
// holds describes a role change that happened (that master, from, to, at
// that epoch, for that reason): the history never makes one up, whatever
// failovers, restores and clock jumps came before.
func (c *checker) checkHistory(w *world) {
	for _, m := range w.masters {
		if !m.up {
			continue
		}
		rs, _ := m.m.History(0)
		for _, r := range rs {
			if !c.happened[historyKey(r.Master, r.From, r.To, r.Epoch, r.Reason)] {
				w.violate("H1: %v's election history holds %v, a role change that never happened", m.ref, r)
				return
			}
		}
	}
}

// fullStrength (L3): at the end, long after the heal, the LEADER counts
// the vote of every voter that is up, certain and a member of its
// registry (not temporarily removed). A voter the LEADER cannot count
// for good leaves the cluster one fault from losing its quorum: after a
// split, a LEADER whose epoch the other side's voters had passed led
// without them (with a witness: on half of the sites and the lease) for
// ever. "" when it does.
func (w *world) fullStrength() string {
	i := w.leaderIdx()
	if i < 0 {
		return ""
	}
	m := w.masters[i].m
	counted := map[wire.CSID]bool{}
	for _, id := range m.CountedVoters() {
		counted[id] = true
	}
	removed := map[wire.CSID]bool{}
	for _, id := range m.TempRemoved() {
		removed[id] = true
	}
	cfg := m.Registry()
	var missing []string
	for _, c := range w.css {
		if !c.up || c.v == nil || c.stopping || c.v.Uncertain() || removed[c.cfg.ID] {
			continue
		}
		if _, ok := cfg.Member(c.cfg.ID); !ok || counted[c.cfg.ID] {
			continue
		}
		missing = append(missing, fmt.Sprintf("%v (votes for %v, epoch %d)", c.ref, c.v.VoteFor(), c.v.Hard().MaxEpoch))
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("at the end the LEADER %v (epoch %d) does not count %s (%s)", w.masters[i].ref, m.Epoch(), strings.Join(missing, ", "), rolesLine(w))
}

func rolesLine(w *world) string {
	s := ""
	for _, m := range w.masters {
		if !m.up {
			s += fmt.Sprintf("%v=down ", m.ref)
			continue
		}
		s += fmt.Sprintf("%v=%v/e%d/%v ", m.ref, m.m.Role(), m.m.Epoch(), m.m.Log().Last())
	}
	for _, c := range w.css {
		if c.up && c.v != nil {
			s += fmt.Sprintf("%v->%v ", c.ref, c.v.VoteFor())
		}
	}
	return s
}

// uncertainBlock: the voters that are up and certain make no quorum under
// the newest registry an up master holds (the one the voters know of, which
// a LEADER must have), and uncertain ones are up (so they are why no LEADER
// can be elected: only a LEADER restores them).
func (w *world) uncertainBlock() bool {
	uncertain := false
	for _, c := range w.css {
		uncertain = uncertain || (c.up && c.v != nil && c.v.Uncertain())
	}
	if !uncertain {
		return false
	}
	// The configs a LEADER must win under: the newest, and while it is not
	// in force the one before it too (master.Master.Tallies).
	var need []*registry.ClusterConfig
	for _, m := range w.masters {
		if !m.up {
			continue
		}
		latest, prev := m.m.Log().Configs(m.m.Log().Len())
		if latest == nil || (len(need) > 0 && latest.Version <= need[0].Version) {
			continue
		}
		need = []*registry.ClusterConfig{latest}
		if prev != nil && latest.Version > m.m.InForce() {
			need = append(need, prev)
		}
	}
	for _, cfg := range need {
		// The witness breaks an even split for a master that can take it.
		wv := quorum.Unknown
		if cfg.Witness != "" && w.wprof.on && !w.wprof.refused && w.wprof.noStore != 1<<len(w.masters)-1 {
			wv = quorum.For
		}
		t := cfg.Electorate().TallyWitness(func(id wire.CSID) quorum.Vote {
			for _, c := range w.css {
				if c.cfg.ID == id && c.up && c.v != nil && !c.v.Uncertain() {
					return quorum.For
				}
			}
			return quorum.Unknown
		}, wv)
		if t.Outcome != quorum.Won {
			return true
		}
	}
	return false
}

// preHealConflict excuses, once, a LEADER elected after the heal that
// steps down (§3.9) because a voter refuses its epoch with a promise made
// before the heal: an epoch above it, or the same epoch promised to
// another master. Both sides of a split raise epochs on their own, and a
// voter that was down or quiet at the election returns with its promise
// later; the step-down is how every voter comes to vote for one master
// again (docs/roles.md §3.9, golden net_witness_split.txt). The LEADER
// that follows must hold.
func (c *checker) preHealConflict(r ref, a roles.Transition) bool {
	if c.conflictExcused || a.Reason != roles.ReasonHigherEpoch {
		return false
	}
	for _, h := range c.healVoters {
		if h.MaxEpoch > a.Epoch || (h.MaxEpoch == a.Epoch && h.EpochOwner != wire.MasterID(r.i+1)) {
			c.conflictExcused = true
			return true
		}
	}
	return false
}
