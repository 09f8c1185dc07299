package voter

import (
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// view is what a voter last learned of one master by probing.
type view struct {
	r    roles.ProbeReply
	at   roles.Instant
	seen bool
	// dead: refused, or its vote session lapsed or its connection was
	// lost, since its last reply: what it said last no longer counts.
	dead bool
	// closedAt: when the master's host last closed the connection to it
	// (closed: since its last reply). Half of the proof a refusal needs.
	closedAt roles.Instant
	closed   bool
}

// view is what this voter knows of master m (made empty on first use).
func (v *Voter) view(m wire.MasterID) *view {
	w := v.views[m]
	if w == nil {
		w = &view{}
		v.views[m] = w
	}
	return w
}

func (v *Voter) onProbeReply(r roles.ProbeReply) {
	w := v.view(r.From)
	if w.seen && !w.dead && r.Incarnation < w.r.Incarnation && v.now.Sub(w.at) <= 3*v.probeEvery() {
		v.ignore("stale-incarnation")
		return
	}
	// A view marked dead, or no longer fresh (see freshView), takes any
	// answer, a lower incarnation's too: a master restarted with its data
	// directory restored from an older copy after its wall clock went back
	// starts with a lower incarnation than the run the voter saw last, and
	// was ignored by every voter for good (simulator seed 12401: no LEADER
	// after the heal, the voter saw the old run die; seed 5898 in the
	// chaos run of e867979, it did not). Only the view is revived; a
	// promise is still released early only by a higher incarnation
	// (below), so this can only keep a voter waiting longer.

	w.r, w.at, w.seen, w.dead, w.closed = r, v.now, true, false, false
	v.crowd = max(v.crowd, r.Registered)
	// A newer incarnation proves the one the promise was made to is gone.
	if v.promiseTo == r.From && r.Incarnation > v.promiseInc {
		v.promiseTo, v.promiseUntil = wire.NoMaster, 0
	}
	if v.voteFor == r.From && !r.Role.TakesVotes() && v.lastHB != 0 && r.Incarnation > v.promiseInc {
		v.leaderGone(changelog.WhyRestarted)
		v.endSession()
	}
}

// silent: master m stopped answering (the session lapsed, the connection
// was lost); its last answer must not send the voter back to it, however
// young (a crowd's views live for seconds).
func (v *Voter) silent(m wire.MasterID) {
	if w := v.views[m]; w != nil {
		w.dead = true
	}
}

func (v *Voter) onRefused(e roles.Refused) {
	w := v.views[e.Master]
	if w != nil {
		w.dead = true
	}
	// The process the promise was made to is gone only if its host closed
	// the connection the grant went over (after the grant), and a dial sent
	// after that close was refused. A REJECT rule that answers with ICMP, or
	// a master cut off, closes nothing: the promise stands until it lapses.
	proof := w != nil && w.closed && w.closedAt >= v.grantedAt && e.SentAt >= w.closedAt
	if v.promiseTo == e.Master && v.promiseStart <= e.SentAt && proof {
		v.promiseTo, v.promiseUntil = wire.NoMaster, 0
	}
	if v.voteFor == e.Master {
		v.leaderGone(changelog.WhyRefused)
		v.endSession()
	} else if v.gone == e.Master && v.goneWhy == changelog.WhyClosed {
		v.goneWhy = changelog.WhyRefused // its host closed, now refuses: the process is gone
	}
}

// notVoting corrects the view of a master that said it takes no votes, so
// that a stale probe answer does not send the voter back to it.
func (v *Voter) notVoting(m, leader wire.MasterID) {
	if w := v.views[m]; w != nil && w.r.Role.TakesVotes() {
		// The master said so itself, now.
		w.r.Role, w.r.Leader, w.r.LeaderFresh, w.at = roles.Follower, leader, false, v.now
	}
}

func (v *Voter) freshView(m wire.MasterID) *view {
	w := v.views[m]
	if w == nil || !w.seen || w.dead || v.now.Sub(w.at) > 3*v.probeEvery() {
		return nil
	}
	return w
}

// seen returns the LEADER the voter can see (directly or through a
// follower's fresh record of it) and the best ELECT (or DEPUTY) it can see.
func (v *Voter) seen() (leader, elect wire.MasterID) {
	var leaderEpoch uint64
	var best roles.Candidate
	bestRole := roles.Dummy
	for _, id := range v.cfg.Masters {
		w := v.freshView(id)
		if w == nil {
			continue
		}
		switch w.r.Role {
		case roles.Leader:
			if w.r.Epoch >= leaderEpoch {
				leader, leaderEpoch = id, w.r.Epoch
			}
		case roles.Elect, roles.Deputy:
			// An ELECT before any DEPUTY, then the better candidate: every
			// voter ranks them alike, so split sessions gather at one.
			c := candidateOf(w.r)
			if elect == wire.NoMaster || (w.r.Role == roles.Elect && bestRole == roles.Deputy) || (w.r.Role == bestRole && roles.Better(c, best)) {
				elect, best, bestRole = id, c, w.r.Role
			}
		}
	}
	if leader == wire.NoMaster {
		for _, id := range v.cfg.Masters {
			w := v.freshView(id)
			if w == nil || !w.r.LeaderFresh || w.r.Leader == wire.NoMaster {
				continue
			}
			// A hint loses to what the hinted master itself said last, and
			// to anything recent it said: a master knows its own role
			// better than a follower that heard from it up to a peer
			// timeout ago (a handover would be undone by the old
			// LEADER's followers otherwise).
			if own := v.views[w.r.Leader]; own == nil || own.dead ||
				(own.seen && own.r.Role != roles.Leader && (own.at >= w.at || v.freshView(w.r.Leader) != nil)) {
				continue
			}
			{
				leader = w.r.Leader
				break
			}
		}
	}
	return leader, elect
}

func candidateOf(r roles.ProbeReply) roles.Candidate {
	return roles.Candidate{ID: r.From, Eligible: r.Eligible, Usurper: r.Usurper, Keep: r.Keep, Yielded: r.Yielded, Last: r.Last}
}

// worthLeaving: the ELECT (or DEPUTY) this voter is with should be left for
// a LEADER, for an ELECT if it is a DEPUTY, or for a better one of its kind.
func (v *Voter) worthLeaving(leader, elect wire.MasterID) bool {
	if leader != wire.NoMaster && leader != v.voteFor {
		return true
	}
	if elect == wire.NoMaster || elect == v.voteFor {
		return false
	}
	other := v.views[elect].r
	if v.voteRole == roles.Deputy && other.Role == roles.Elect {
		return true
	}
	cur := v.views[v.voteFor]
	return cur != nil && other.Role == v.voteRole && roles.Better(candidateOf(other), candidateOf(cur.r))
}

// choose opens a vote session where one is due (§6.3 of docs/roles.md):
// a handover's target, a LEADER, an ELECT, a redirect's LEADER, or, on this
// voter's turn, a master it nominates.
func (v *Voter) choose(leader, elect wire.MasterID) {
	target, nominate := wire.NoMaster, false
	switch {
	case v.nominateNext != wire.NoMaster && !v.hard.Uncertain:
		target, nominate = v.nominateNext, true
	case leader != wire.NoMaster:
		target, v.leaderless = leader, false
	case v.hard.Uncertain:
		// It grants nothing but to a LEADER, whose heartbeat restores what
		// it may have forgotten: no ELECT session, no nomination turn.
		v.nominateNext, v.leaderless = wire.NoMaster, false
		if v.hint == wire.NoMaster || v.freshView(v.hint) == nil {
			return
		}
		target, v.hint = v.hint, wire.NoMaster
	case elect != wire.NoMaster:
		target, v.leaderless = elect, false
	case v.hint != wire.NoMaster && v.freshView(v.hint) != nil:
		target, v.hint = v.hint, wire.NoMaster
	default:
		v.nominationTurn()
		return
	}
	if v.mayVoteFor(target) {
		if target == v.nominateNext {
			v.nominateNext = wire.NoMaster
		}
		v.openSession(target, nominate)
	}
}

// nominationTurn: with neither LEADER nor ELECT in sight, voters take turns
// (ordered by registry rank, rotated by epoch) to set one master to ELECT.
func (v *Voter) nominationTurn() {
	if !v.leaderless {
		if !v.anyFresh() {
			// Nothing heard yet (just started, every link down): the
			// turn waits for the first answers, which also tell the
			// registry's size its place depends on.
			return
		}
		v.leaderless, v.lateTurns, v.lateCheck = true, 0, 0
		v.nominateAt = v.now.Add(v.turnDelay())
		return
	}
	if v.now < v.nominateAt {
		return
	}
	// In a crowd a view may be seconds old (fresh for three slow probe
	// rounds): the master it names may have become ELECT since (an
	// announcement missed while its link was down is not repeated, and
	// the master busiest with an election is the slowest to answer a
	// probe), or its log may have grown past what the view says. A
	// nomination on such a view starts a rival election at a higher epoch
	// (after a kill -9 among 10,000 voters two masters were nominated
	// 200 ms apart; after a storm, one after another, epochs climbing,
	// none winning), or finds no master fit and puts the turn off for a
	// whole slow probe round (10 s at 10,000). So in a crowd the turn
	// waits until every master it would consider answered the probe sent
	// ahead of it, for at most maxLateTurns slots; then it goes on what
	// it has.
	crowd := v.InCrowd()
	if v.lateTurns == 0 {
		v.turnProbed = v.probedAt // an answer to any probe since counts
	}
	best := wire.NoMaster
	var bc roles.Candidate
	late := false
	for _, id := range v.cfg.Masters {
		w := v.freshView(id)
		if w == nil || (w.r.Role != roles.Follower && w.r.Role != roles.Usurper) {
			continue
		}
		if crowd && w.at < v.turnProbed {
			late = true
		}
		c := candidateOf(w.r)
		if !roles.MayNominate(c, v.hard.Commit) {
			continue
		}
		if best == wire.NoMaster || roles.Better(c, bc) {
			best, bc = id, c
		}
	}
	if late && v.lateTurns < maxLateTurns {
		// The turn stays due: the answer it waits for steps the voter,
		// which looks again then (waiting out a whole slot instead added
		// 60 ms to every failover at 100 voters). It does not probe
		// again: after an outage every voter's turn is overdue, and
		// thousands probing every master each slot (up to 250,000 probes a
		// second at 5,000 voters) slowed a cold start's links from 1.8 s
		// to 5 s. A link that comes up is probed (LinkUp).
		if v.now >= v.lateCheck {
			v.lateTurns++
			v.lateCheck = v.now.Add(v.cfg.NominateSlot)
		}
		return
	}
	v.lateTurns, v.lateCheck = 0, 0
	ranks := max(v.ranks, 1)
	if best == wire.NoMaster || !v.mayVoteFor(best) {
		// Try again once fresh answers can have come: a slot, or in a
		// crowd a probe interval (each try probes ahead: see decide).
		v.nominateAt = v.now.Add(max(v.cfg.NominateSlot, v.probeEvery()))
		return
	}
	v.openSession(best, true)
	// If this nomination leads nowhere, the next round comes after every
	// other voter has had its turn.
	v.nominateAt = v.now.Add(time.Duration(ranks) * v.cfg.NominateSlot)
}

// maxLateTurns: how many slots a crowd's nomination turn waits for the
// masters' answers (nominationTurn): 8 slots, 480 ms at the default,
// so a master cut off (no answer, no refusal) delays a turn by no more.
const maxLateTurns = 8

// anyFresh: the voter has a fresh answer from some master.
func (v *Voter) anyFresh() bool {
	for _, id := range v.cfg.Masters {
		if v.freshView(id) != nil {
			return true
		}
	}
	return false
}

func (v *Voter) turnDelay() time.Duration {
	slot := v.cfg.NominateSlot
	jit := time.Duration(v.rand(int64(slot / 4)))
	if v.ranks == 0 {
		// No heartbeat has told it its place yet (not registered, or
		// just started): after the first ranked turns, spread by id over
		// the registry's size, or a crowd started at once nominates
		// together.
		return time.Duration(8+uint64(v.cfg.ID)%max(uint64(v.crowd), 8))*slot + jit
	}
	pos := (uint64(v.rank) + v.hard.MaxEpoch) % uint64(v.ranks)
	return time.Duration(pos)*slot + jit
}
