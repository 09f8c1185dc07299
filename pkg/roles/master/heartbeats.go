package master

import (
	"time"

	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

type sentHB struct {
	at    roles.Instant
	epoch uint64
	lease time.Duration // asked: no grant counts for longer
}

func (m *Master) heartbeatNow() {
	m.nextHB = m.now
}

func (m *Master) heartbeatTo(cs wire.CSID) {
	v := m.voters[cs]
	if v == nil {
		return
	}
	m.hbSeq++
	m.noteSent()
	m.send(roles.ToCS(cs), m.heartbeat(cs, v.session, m.hbSeq))
}

func (m *Master) heartbeat(cs wire.CSID, session, seq uint64) roles.Heartbeat {
	hb := roles.Heartbeat{
		From: m.cfg.ID, Incarnation: m.hard.Incarnation, Session: session, Seq: seq,
		Role: m.role, Epoch: m.hard.Epoch, Lease: m.lease(), InForce: m.hard.InForce,
	}
	if m.keepaliveOnly() {
		// No epoch and no promise asked; Lease says how long the voter may
		// wait for the next one before it gives up on the session (a crowd
		// is renewed less often than helloTimeout: Config.Scaled).
		hb.Keepalive, hb.Epoch = true, 0
	}
	cfg := m.Registry()
	if r, n, ok := cfg.Rank(cs); ok {
		hb.Rank, hb.Ranks = uint32(r), uint32(n)
	} else {
		hb.Rank, hb.Ranks = uint32(n), uint32(n+1)
	}
	if m.role == roles.Leader {
		hb.Commit = m.replicated
		// Voters learn a config version only once it is acknowledged
		// (committed), so a version they report is never discarded and can
		// always be fetched.
		if latest, _ := m.log.Configs(m.acked.Version); latest != nil {
			hb.RegVersion = latest.Version
		}
	} else {
		hb.Commit = m.hard.Commit
		if latest, _ := m.log.Configs(m.hard.Commit.Version); latest != nil {
			hb.RegVersion = latest.Version
		}
	}
	return hb
}

// keepaliveOnly: a DEPUTY, or an ELECT without a quorum of sessions, asks
// for no promise and proposes no epoch (see sessionsQuorum).
func (m *Master) keepaliveOnly() bool {
	return m.role == roles.Deputy || (m.role == roles.Elect && !m.sessionsQuorum())
}

// noteSent remembers when the heartbeat hbSeq left, so that its
// acknowledgement can be counted; a keepalive asks for nothing to count.
func (m *Master) noteSent() {
	if !m.keepaliveOnly() {
		m.hbSent[m.hbSeq] = sentHB{at: m.now, epoch: m.hard.Epoch, lease: m.lease()}
	}
}

// lease is what a heartbeat asks for now (Config.Scaled), interval how
// long to the next round.
func (m *Master) lease() time.Duration {
	_, l := m.cfg.Scaled(len(m.voters))
	return l
}

func (m *Master) heartbeatAll() {
	interval, lease := m.cfg.Scaled(len(m.voters))
	if g := m.shortGrant; g > 0 {
		// Voters grant less than the scaled lease: renew within what they
		// grant, with the silence VOTE_LEASE - HEARTBEAT_INTERVAL to spare,
		// as at any size; but no more often than every VOTE_LEASE, so that
		// a voter claiming a tiny grant cannot make a crowd's LEADER renew
		// at full rate (a MAX_PROMISE below 2 VOTE_LEASE then leaves less
		// to spare: docs/operations.md).
		interval = min(interval, max(m.cfg.VoteLease, g-(m.cfg.VoteLease-m.cfg.HeartbeatInterval)))
	}
	m.roundVoters = len(m.voters)
	m.hbSeq++
	m.roundSeq = m.hbSeq
	m.roundAnswered = 0
	if m.role == roles.Leader {
		m.commitSent = m.replicated.Version
	}
	m.roundSent(m.hbSeq)
	m.noteSent()
	for _, id := range m.voterIDs() {
		v := m.voters[id]
		if v.detached {
			// Nothing to send it on; once its lease is over it is gone.
			if v.validUntil <= m.now {
				m.dropVoter(id)
			}
			continue
		}
		m.send(roles.ToCS(id), m.heartbeat(id, v.session, m.hbSeq))
	}
	m.pruneSent(lease)
	m.nextHB = m.now.Add(interval)
	// What a gate held back is counted once a round (scale.go).
	if m.role == roles.Leader && m.ackGate.seen > 0 {
		m.advanceAcked()
	}
}

// pruneSent forgets the heartbeats sent more than twice their lease ago
// (and lease, the one asked now): acknowledgements of heartbeats older
// than a promise cannot extend anything. Sequence numbers rise with time,
// so it walks up from the oldest and stops at the first one still young
// (one sent earlier but asking a longer lease may keep a few after it a
// while longer, which counts nothing they could not). A LEADER renews at
// every acknowledged batch of changes, hundreds of rounds a second, and a
// pass over every entry each round was a tenth of its processor at 64
// clients.
func (m *Master) pruneSent(lease time.Duration) {
	for ; m.hbLow <= m.hbSeq; m.hbLow++ {
		h, ok := m.hbSent[m.hbLow]
		if !ok {
			continue
		}
		if m.now.Sub(h.at) <= 2*max(h.lease, lease) {
			return
		}
		delete(m.hbSent, m.hbLow)
	}
}

// noteRegistration queues a registry change for a chunkserver that is not
// registered yet.
func (m *Master) noteRegistration(id wire.CSID, v *voterRec) {
	if id == wire.NoCS || !v.addr.IsValid() {
		return
	}
	if _, ok := m.Registry().Member(id); ok {
		return
	}
	if _, queued := m.toRegister[id]; !queued && len(m.toRegister) >= MaxPendingRegistrations {
		m.ignore("registration-queue-full")
		return
	}
	m.toRegister[id] = registry.Chunkserver{ID: id, Addr: v.addr, Port: v.port, VoterOnly: v.voterOnly}
}
