package master

import (
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The vote ledger: the election part's own verbs over the sessions open
// here. Each keeps the part's invariants in one place: a vote never counts
// past what its voter promised (voterRec.validUntil), and every change
// that can end a count before its time moves votersGen (and a change of
// who holds a session, sessionsGen), on which the caches of scale.go key.
// The Master's handlers admit a message, record it here, then react.

// countsAt: v's vote counts at now for a master at epoch.
func (v *voterRec) countsAt(now roles.Instant, epoch uint64) bool {
	return v.validUntil > now && v.ackEpoch == epoch
}

// carries: rec is the same voter process as v (its boot in the session's
// high half) at the same address, back after v's connection closed from
// its side while v's vote counts: the vote it granted binds it until its
// promise ends, whatever session it is on, so it counts on in rec.
func (v *voterRec) carries(rec *voterRec, now roles.Instant, epoch uint64) bool {
	return v.detached && v.countsAt(now, epoch) && v.addr == rec.addr && v.port == rec.port &&
		v.voterOnly == rec.voterOnly && v.session>>32 == rec.session>>32
}

// learn takes what an acknowledgement says the voter knows.
func (v *voterRec) learn(a roles.HeartbeatAck) {
	v.knownReg, v.inForce, v.commit, v.commitTag = a.KnownReg, a.InForce, a.Commit, a.CommitTag
}

// open records rec as id's session from now on, in place of the one
// before it (if any): a carried vote passes to rec; a counting vote of
// the old session stops counting.
func (e *election) open(id wire.CSID, rec *voterRec, now roles.Instant, epoch uint64) {
	if old := e.voters[id]; old == nil {
		e.idsOK = false // a new id among the sessions
	} else {
		switch {
		case old.carries(rec, now, epoch):
			rec.validUntil, rec.ackEpoch, rec.ackedSeq = old.validUntil, old.ackEpoch, old.ackedSeq
			rec.knownReg, rec.inForce, rec.commit, rec.commitTag = old.knownReg, old.inForce, old.commit, old.commitTag
		case old.countsAt(now, epoch):
			e.votersGen++ // the old session's vote stops counting
		}
		if old.addr != rec.addr || old.port != rec.port {
			e.sessionsGen++
		}
	}
	e.voters[id] = rec
	e.lastVoteSeen = now
}

// drop ends id's session, if one is open.
func (e *election) drop(id wire.CSID, now roles.Instant, epoch uint64) {
	if v, ok := e.voters[id]; ok {
		delete(e.voters, id)
		e.idsOK = false
		e.sessionsGen++
		if v.countsAt(now, epoch) {
			e.votersGen++
		}
	}
}

// grant records v's acknowledgement a of its heartbeat, sent as sent, at
// now, for a master at epoch whose counted lease for a grant is counted:
// the vote counts until sent.at plus the counted lease of what was
// granted, never of more than the heartbeat asked (an honest voter never
// grants more; a forged grant of hours must not keep a vote counted after
// its sender fell silent). False: the heartbeat is unknown here, or older
// than one v acknowledged at a newer epoch (a stale ack).
func (e *election) grant(v *voterRec, a roles.HeartbeatAck, sent sentHB, now roles.Instant, epoch uint64, counted func(time.Duration) time.Duration) bool {
	if sent.epoch < v.ackEpoch {
		return false
	}
	granted := min(a.Granted, sent.lease)
	if a.Granted < sent.lease {
		e.shortGrant = a.Granted
	}
	if until := sent.at.Add(counted(granted)); until > v.validUntil || sent.epoch != v.ackEpoch {
		if until < v.validUntil {
			e.votersGen++ // shortened: cached deadlines may no longer hold
		}
		v.validUntil = until
	}
	v.ackEpoch = sent.epoch
	if sent.epoch == epoch {
		v.ackedSeq = max(v.ackedSeq, a.Seq)
	}
	if a.Seq == e.roundSeq {
		e.roundAnswered = now
	}
	v.learn(a)
	e.lastVoteSeen = now
	return true
}

// endSessions ends every vote session: no vote counts any more.
func (e *election) endSessions() {
	e.voters = map[wire.CSID]*voterRec{}
	e.idsOK = false
	e.votersGen++
	e.sessionsGen++
}

// endRounds ends every vote session and forgets the heartbeats sent: an
// acknowledgement of any of them counts for nothing (a master that no
// longer takes votes). next is the sequence number the next heartbeat
// will carry.
func (e *election) endRounds(next uint64) {
	e.endSessions()
	e.hbSent, e.hbLow = map[uint64]sentHB{}, next
}
