package voter

import (
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The promise: a heartbeat of the master voted for is granted (and the
// grant made durable first), a release or a lost LEADER ends the session.

// leaderGone notes why the session with a LEADER ends, before endSession.
func (v *Voter) leaderGone(why string) {
	if v.voteFor != wire.NoMaster && v.voteRole == roles.Leader {
		v.gone, v.goneWhy = v.voteFor, why
	}
}

func (v *Voter) endSession() {
	v.prevTo, v.prevSession, v.prevSince = wire.NoMaster, 0, 0
	if v.voteFor != wire.NoMaster && v.lastHB == 0 {
		v.prevTo, v.prevSession, v.prevSince = v.voteFor, v.session, v.voteSince
	}
	v.voteFor, v.voteRole, v.lastHB, v.granted, v.nominated = wire.NoMaster, 0, 0, 0, false
	// Where to vote next depends on a fresh view: look now.
	v.nextProbe = min(v.nextProbe, v.now)
}

func (v *Voter) onRelease(r roles.VoteRelease) {
	v.notVoting(r.From, r.Next)
	if v.promiseTo == r.From && v.promiseSession == r.Session && v.promiseInc == r.Incarnation {
		v.promiseTo, v.promiseUntil = wire.NoMaster, 0
	}
	if v.voteFor == r.From && v.session == r.Session {
		if r.Next != wire.NoMaster && r.Next != r.From {
			v.leaderGone(changelog.WhyHandover)
		} else {
			v.leaderGone(changelog.WhyReleased)
		}
		v.endSession()
		if r.Next != wire.NoMaster && r.Next != r.From {
			v.nominateNext = r.Next
		}
		return
	}
	v.ignore("stale-release")
}

// onHeartbeat is where a vote is given: the voter promises, from the moment
// it received this heartbeat, not to vote for anybody else for the lease.
func (v *Voter) onHeartbeat(h roles.Heartbeat) {
	if v.refused(h) {
		return
	}
	v.grant(h)
}

// refused answers a heartbeat that gets no vote: not of the session
// voted for, a keepalive (which keeps the session open and promises
// nothing), an epoch below or owned by another master or incarnation, or
// (while this voter is uncertain) any master's but a LEADER's. True: it
// was answered.
func (v *Voter) refused(h roles.Heartbeat) bool {
	nack := func(reason string) {
		v.send(h.From, roles.HeartbeatAck{CS: v.cfg.ID, Session: h.Session, Seq: h.Seq, Reason: reason,
			MaxEpoch: v.hard.MaxEpoch, EpochOwner: v.hard.EpochOwner, EpochInc: v.hard.EpochInc})
		v.ignore(reason)
	}
	switch {
	case h.From != v.voteFor || h.Session != v.session:
		if h.From == v.voteFor && h.Session == v.prevSession && v.prevSince != 0 {
			// The session given up before this one was answered after
			// all: wait as long again, twice over, for this one.
			v.helloWait = min(max(v.helloWait, 2*v.now.Sub(v.prevSince)), maxHelloWait)
			v.prevSince = 0 // one measure a session
		}
		nack("not-voting")
		return true
	case h.Keepalive:
		// Keeps the session open; no promise, and no epoch to learn. The
		// session waits for the next one as long as a grant would last
		// (a crowd's keepalives come less often than helloTimeout).
		v.lastHB, v.granted, v.voteRole = v.now, max(helloTimeout, min(h.Lease, v.cfg.MaxPromise)), h.Role
		v.send(h.From, v.ack(h, 0))
		return true
	case h.Epoch < v.hard.MaxEpoch:
		nack("stale-epoch")
		return true
	case h.Epoch == v.hard.MaxEpoch && v.hard.EpochOwner != wire.NoMaster && v.hard.EpochOwner != h.From:
		nack("epoch-owned")
		return true
	case h.Epoch == v.hard.MaxEpoch && v.hard.EpochInc != 0 && v.hard.EpochInc != h.Incarnation:
		// The same master took this epoch in another incarnation: an honest
		// master never takes an epoch twice (it is persisted before use), so
		// this one forgot it, its data directory restored from an older
		// copy. Its log at this epoch may differ from what it wrote before.
		nack("epoch-reused")
		return true
	case v.hard.Uncertain && h.Role != roles.Leader:
		// Only a LEADER's word restores what this voter may have forgotten
		// (docs/architecture.md §7, "Voters that forgot"); until then it
		// gives no vote an ELECT could count.
		nack("uncertain")
		v.send(h.From, roles.VoteBye{CS: v.cfg.ID, Session: v.session})
		v.endSession()
		if w := v.views[h.From]; w != nil {
			w.r.Role, w.at = h.Role, v.now // what it said itself, now: no session again
		}
		return true
	}
	return false
}

// grant gives the vote: the promise is made (and what it rests on made
// durable first), then acknowledged.
func (v *Voter) grant(h roles.Heartbeat) {
	if v.promiseTo != wire.NoMaster && v.promiseTo != h.From && v.now < v.promiseUntil {
		panic(fmt.Sprintf("invariant one-promise: voting for %v while promised to %v", h.From, v.promiseTo))
	}
	if v.stopping {
		panic("invariant stopping-grants-nothing: a vote session while stopping")
	}
	grant := min(h.Lease, v.cfg.MaxPromise)
	restored := v.hard.Uncertain
	if restored {
		// A LEADER sends this heartbeat only while its lease stands, and on
		// a session opened after this voter started: it was the one LEADER
		// then, its epoch at or above every epoch won before and its commit
		// point at or above every change acknowledged before. Learning both
		// (here and in learn) leaves this voter knowing all that its lost
		// record could have held that a later quorum may rest on
		// (docs/architecture.md §7, "Voters that forgot").
		v.hard.Uncertain = false
		v.hard.Commit, v.hard.CommitTag = h.Commit, h.Epoch
	}
	if v.learn(h, grant) || restored {
		// Quorum intersection needs these remembered across a restart, so
		// they are durable before the acknowledgement leaves.
		hs := v.hard
		v.persist(hs)
	}
	if v.promiseTo != h.From || v.promiseInc != h.Incarnation || v.promiseSession != h.Session || v.now >= v.promiseUntil {
		v.promiseStart = v.now
	}
	v.promiseTo, v.promiseInc, v.promiseSession = h.From, h.Incarnation, h.Session
	v.promiseUntil = max(v.promiseUntil, v.now.Add(grant))
	v.grantedAt = v.now
	v.lastHB, v.granted, v.voteRole = v.now, grant, h.Role
	if h.Ranks > 0 {
		v.rank, v.ranks = h.Rank, h.Ranks
		v.crowd = max(v.crowd, h.Ranks)
	}
	if h.Role == roles.Leader || h.Role == roles.Elect {
		v.leaderless = false
	}
	if h.Role == roles.Leader {
		v.gone, v.goneWhy = wire.NoMaster, ""
	}
	v.send(h.From, v.ack(h, grant))
}

// learn records what a heartbeat it grants tells the voter: the epoch and
// its owner, the registry and config versions, a LEADER's commit point,
// and the longest promise made. It reports whether the record changed.
func (v *Voter) learn(h roles.Heartbeat, grant time.Duration) bool {
	dirty := false
	if h.Epoch > v.hard.MaxEpoch || v.hard.EpochOwner != h.From || v.hard.EpochInc != h.Incarnation {
		v.hard.MaxEpoch, v.hard.EpochOwner, v.hard.EpochInc = h.Epoch, h.From, h.Incarnation
		dirty = true
	}
	if h.RegVersion > v.hard.KnownReg {
		v.hard.KnownReg = h.RegVersion
		dirty = true
	}
	if h.InForce > v.hard.InForce {
		v.hard.InForce = h.InForce
		dirty = true
	}
	// Commit knowledge comes from a LEADER only, and a newer LEADER's
	// supersedes an older one's (docs/architecture.md §7): an ELECT's view
	// must not overwrite what a quorum was told.
	if h.Role == roles.Leader && (h.Epoch > v.hard.CommitTag || (h.Epoch == v.hard.CommitTag && h.Commit.Version > v.hard.Commit.Version)) {
		v.hard.Commit, v.hard.CommitTag = h.Commit, h.Epoch
		dirty = true
	}
	if grant > v.hard.MaxGranted {
		v.hard.MaxGranted = grant
		dirty = true
	}
	return dirty
}

// ack answers a heartbeat with the promise granted (0: none) and everything
// the voter knows.
func (v *Voter) ack(h roles.Heartbeat, granted time.Duration) roles.HeartbeatAck {
	return roles.HeartbeatAck{CS: v.cfg.ID, Session: h.Session, Seq: h.Seq, OK: true, Granted: granted,
		MaxEpoch: v.hard.MaxEpoch, EpochOwner: v.hard.EpochOwner, KnownReg: v.hard.KnownReg, InForce: v.hard.InForce,
		Commit: v.hard.Commit, CommitTag: v.hard.CommitTag}
}
