package master

import (
	"cmp"
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// A master may hold thousands of vote sessions, and every one of them
// acknowledges every heartbeat round. A tally is O(voters), so a master
// that tallied on every acknowledgement would spend O(voters²) a round.
// What keeps the count cheap, without changing what it decides:
//
//   - The quorum deadline (quorumUntil): the instant until which the votes
//     counted now make a quorum, from one pass (quorum.Threshold over the
//     votes' expiries). An acknowledgement only adds or extends votes, so
//     a deadline computed earlier stays a lower bound until a vote may stop
//     counting other than by time (votersGen), the epoch, the configs or
//     the electorates change (the cache key). checkQuorum, the fence and
//     the wake-up read it instead of tallying.
//   - Gates on the re-counts an acknowledgement may complete (a LEADER's
//     acknowledged point, a config put in force, a read round, an ELECT's
//     win): a failed recount waits for an eighth more acknowledgements
//     before the next, so a round costs O(voters log voters) and a small
//     cluster still recounts on every acknowledgement. A gate only delays
//     what a recount would find, never decides it; every recount is exact,
//     and the heartbeat round re-runs what a gate held back.

// gate spaces out a recount that each of many events might complete.
type gate struct{ seen, next int }

// due counts one event and says whether to recount now.
func (g *gate) due() bool {
	g.seen++
	return g.seen >= g.next
}

// missed: the recount found nothing; wait for an eighth more events.
func (g *gate) missed() { g.next = g.seen + max(1, g.seen/8) }

// done: the recount moved on; the next event may complete the next one.
func (g *gate) done() { *g = gate{} }

// quorumKey is what a cached deadline was computed under.
type quorumKey struct {
	role                roles.Role
	epoch, inForce      uint64
	latest, prev        *registry.ClusterConfig
	votersGen, electGen uint64
	witGen              uint64
}

type quorumCache struct {
	valid bool
	key   quorumKey
	until roles.Instant // won at t iff t < until (0: not won)
}

type sessionsCache struct {
	valid bool
	key   quorumKey
	taken bool // witnessTaken when counted
	won   bool
	gate  gate
	round uint64 // the heartbeat round it was counted in
}

func (m *Master) quorumKey() quorumKey {
	latest, prev := m.log.Configs(m.log.Len())
	return quorumKey{role: m.role, epoch: m.hard.Epoch, inForce: m.hard.InForce, latest: latest, prev: prev,
		votersGen: m.votersGen, electGen: m.electGen, witGen: m.witGen}
}

// FenceStamp is an opaque value that changes whenever the quorum this
// master holds may have lapsed earlier than by time: a session ended or
// replaced, the role, the epoch, a config or the electorate changed. A
// fence published under another stamp may say LEADER for longer than the
// core would; a driver that takes fences less often than it steps takes
// one at once when the stamp changes.
type FenceStamp struct{ k quorumKey }

// Stamp returns the current FenceStamp.
func (m *Master) Stamp() FenceStamp { return FenceStamp{m.quorumKey()} }

// Round is the newest heartbeat round: its sequence number and how many
// vote sessions it went to (0, 0 before the first).
func (m *Master) Round() (seq uint64, voters int) { return m.roundSeq, m.roundVoters }

// Voters is how many vote sessions are open here (detached ones too).
func (m *Master) Voters() int { return len(m.voters) }

// registered is the chunkservers of the newest registry (0 without
// metadata).
func (m *Master) registered() int {
	if !m.HasMetadata() {
		return 0
	}
	return len(m.Registry().Members)
}

// crowd is how many voters this master knows of: the registry's members,
// or more while a crowd is still registering (sessions open and
// registrations queued), so that a cluster of thousands started at once
// probes slowly from the first answer on.
func (m *Master) crowd() int {
	return max(m.registered(), len(m.voters)+len(m.toRegister))
}

// announce tells every connected chunkserver, unasked, what a probe would
// (a ProbeReply with nonce 0): a master that just became ELECT or LEADER,
// so that voters among thousands, which probe slowly, come at once.
func (m *Master) announce() {
	m.send(roles.ToAllCS(), m.probeReply(0))
}

// dropVoter ends a vote session here.
func (m *Master) dropVoter(id wire.CSID) { m.drop(id, m.now, m.hard.Epoch) }

// counts: v's vote counts now, so that ending its session may end a
// quorum (votersGen). One that does not count now counts at no later
// instant either (its lease has ended, or it was given to an older
// epoch), so no deadline computed with it depends on it.
func (m *Master) counts(v *voterRec) bool { return v.countsAt(m.now, m.hard.Epoch) }

// resetVoters ends every vote session here.
func (m *Master) resetVoters() { m.election.endSessions() }

// wonAt: the votes this master may count at t (t >= now, no input
// stepped in between) make a quorum; quorumAt(t, nil) == Won, from the
// deadline.
func (m *Master) wonAt(t roles.Instant) bool {
	won := t < m.quorumUntil(t)
	if m.checking() && won != (m.quorumAt(t, nil) == quorum.Won) {
		panic(fmt.Sprintf("invariant quorum-deadline: deadline %v says won=%v at %v, the tally says otherwise", m.qc.until, won, t))
	}
	return won
}

// checking: this cached count is to be checked (Config.CheckCaches).
func (m *Master) checking() bool {
	if m.cfg.CheckCaches <= 0 {
		return false
	}
	m.checks++
	return m.checks%uint64(m.cfg.CheckCaches) == 0
}

// quorumUntil is the instant from which the votes counted now no longer
// make a quorum (0: they make none now), exact or a lower bound that is
// later than t. Cached: recomputed when its key changed or when it is no
// later than t, the instant asked about. A lower bound answers "won at t"
// as the exact deadline would; only a "no" must be exact. (It was also
// recomputed whenever less than half a lease was left: in a crowd, where
// the deadline nears between rounds, that was a count of every vote on
// every acknowledgement until the round's came in.)
func (m *Master) quorumUntil(t roles.Instant) roles.Instant {
	if !m.role.TakesVotes() {
		return 0
	}
	key := m.quorumKey()
	if m.qc.valid && m.qc.key == key && m.qc.until > t && t >= m.now {
		return m.qc.until
	}
	epoch := m.hard.Epoch
	x, ok := thresholdOf(m, roles.Never, func(v *voterRec) (roles.Instant, bool) { return v.validUntil, v.ackEpoch == epoch })
	if !ok || x <= m.now {
		x = 0
	}
	m.qc = quorumCache{valid: true, key: key, until: x}
	return x
}

// sessionsCached is sessionsQuorum: the open sessions alone make a quorum.
// Sessions are added without bumping sessionsGen, and an addition never
// turns a quorum into none, so a cached true stands until the key
// changes; a cached false is recounted once the sessions grew by an
// eighth, and in any case once a heartbeat round (the count that would
// complete it may be within the eighth: the simulator found an ELECT that
// all 136 voters had joined, kept in pre-vote by a count taken at 125).
// A round is a broadcast (roundSeq), not any heartbeat: an ELECT answers
// each hello with one of its own, and each recounted every session.
func (m *Master) sessionsCached() bool {
	key := m.quorumKey()
	key.votersGen = m.sessionsGen
	taken := m.witnessTaken()
	// The witness as a vote that could be had: an ELECT on one side of an
	// even split proposes its epoch once its half is in session, or it
	// would never hold the votes the lease then breaks the tie for. Not
	// while a peer it hears says it holds the lease: that half raising its
	// voters' epochs would only depose the LEADER the lease serves once
	// they return to it (simulator seed 7684 with a witness: voters that
	// had not yet seen the LEADER after a heal followed nominated ELECTs,
	// each proposing a higher epoch, until the LEADER was refused).
	hope := m.witnessHope
	if taken {
		hope = func(*registry.ClusterConfig) quorum.Vote { return quorum.Unknown }
	}
	c := &m.sessions
	if c.valid && c.key == key && c.taken == taken && (c.won || (len(m.voters) < c.gate.next && c.round == m.roundSeq)) {
		if c.won && m.checking() && m.outcomeW(func(*voterRec) bool { return true }, hope) != quorum.Won {
			panic("invariant sessions-cache: the cache says the sessions make a quorum, the tally says not")
		}
		return c.won
	}
	won := m.outcomeW(func(*voterRec) bool { return true }, hope) == quorum.Won
	*c = sessionsCache{valid: true, key: key, taken: taken, won: won, round: m.roundSeq}
	c.gate.next = len(m.voters) + max(1, len(m.voters)/8)
	return won
}

// thresholdOf is quorum.Threshold under this master's newest config and,
// while that one is not in force, the one before it too (joint: both must
// be won, so the smaller). value says what a session counts for, and
// false when it does not count; a session from another address than the
// member's never counts (tally). An empty registry this master may
// bootstrap is won at any value (top).
func thresholdOf[T cmp.Ordered](m *Master, top T, value func(*voterRec) (T, bool)) (x T, ok bool) {
	latest, prev := m.log.Configs(m.log.Len())
	if latest == nil {
		return x, false
	}
	x, ok = thresholdUnder(m, latest, top, value)
	if ok && prev != nil && latest.Version > m.hard.InForce {
		px, pok := thresholdUnder(m, prev, top, value)
		x, ok = min(x, px), pok
	}
	return x, ok
}

func thresholdUnder[T cmp.Ordered](m *Master, c *registry.ClusterConfig, top T, value func(*voterRec) (T, bool)) (x T, ok bool) {
	e := m.electorate(c)
	if e.Size() == 0 {
		if m.mayBootstrap(c) {
			return top, true
		}
		return x, false
	}
	var w T
	has := false
	if wr := m.witnessFor(c); wr != nil {
		w, has = value(wr)
	}
	return quorum.ThresholdWitness(e, func(id wire.CSID) (T, bool) {
		v := m.voters[id]
		if v == nil {
			var zero T
			return zero, false
		}
		if !v.isMemberOf(c, id) {
			var zero T
			return zero, false
		}
		return value(v)
	}, w, has)
}
