package master

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// peerState is what a master knows of the other masters.
type peerState struct {
	leader      wire.MasterID // the LEADER recorded (last heard)
	leaderHeard roles.Instant
	leaderSeen  bool
	peers       map[wire.MasterID]*peerView
	nextPeer    roles.Instant

	yieldFrom  wire.MasterID // the LEADER an ELECT first heard from (leaderPersists)
	yieldFirst roles.Instant

	// placed: an admin command made this master USURPER, and it is still
	// on that path (USURPER, ELECT, LEADER). A KEEP master does not take
	// the role from such a LEADER (keep.go).
	placed    bool
	startedAt roles.Instant // this run began (keep.go waits to hear its peers)

	// foreign: masters of MASTER_HOST that answered with another cluster's
	// metadata id. While any did, this master does not bootstrap: it was
	// most likely wiped and re-initialised where it should have been
	// started with -e, and as a founder it would lead a second, empty
	// cluster on the same master set (docs/architecture.md §6).
	foreign map[wire.MasterID]bool

	// removed: out of the set of masters (MasterSet, §3.15): it sends no
	// status, takes no entries, and may not be ELECT.
	removed bool
}

func (m *Master) sendStatus() {
	if m.removed {
		return
	}
	st := roles.PeerStatus{
		From: m.cfg.ID, Incarnation: m.hard.Incarnation, Role: m.role, Epoch: m.Epoch(), MaxEpoch: m.hard.MaxEpoch,
		Last: m.log.Last(), Commit: m.hard.Commit, Eligible: m.Eligible(), Sync: m.Sync(),
		Usurper: m.role == roles.Usurper, Keep: m.keeps(), KeepSet: m.cfg.KeepLeadership, Placed: m.placed,
		Leader: m.Leader(), Snap: m.SnapshotAt().Version, History: m.toReport(), Proto: m.cfg.Protocol,
		Witness: m.witnessUsable(), WitnessHeld: m.WitnessCounted(m.now), InForce: m.hard.InForce,
		StoreLog: m.storeUsable(),
	}
	for _, id := range m.cfg.Masters {
		if id != m.cfg.ID {
			m.send(roles.ToMaster(id), st)
		}
	}
}

func (m *Master) candidate() roles.Candidate {
	return roles.Candidate{ID: m.cfg.ID, Eligible: m.Eligible(), Usurper: m.role == roles.Usurper,
		Keep: m.keeps(), Yielded: m.hard.Yielded, Last: m.log.Last()}
}

func peerCandidate(st roles.PeerStatus) roles.Candidate {
	return roles.Candidate{ID: st.From, Eligible: st.Eligible, Usurper: st.Usurper, Keep: st.Keep, Last: st.Last}
}

func (m *Master) fresh(p *peerView) bool {
	return p != nil && p.seen && m.now.Sub(p.heard) < m.cfg.PeerTimeout
}

func (m *Master) onPeerStatus(st roles.PeerStatus) {
	if st.From == m.cfg.ID || st.From == wire.NoMaster {
		m.ignore("foreign-peer")
		return
	}
	p := m.peers[st.From]
	if p == nil {
		p = &peerView{}
		m.peers[st.From] = p
	}
	if p.seen && st.Incarnation < p.st.Incarnation && m.fresh(p) {
		// A view not heard within PeerTimeout takes a lower incarnation
		// too: a master restored from an older copy of its DATA_PATH, on a
		// clock behind the run it replaced, starts below that run, and was
		// ignored by every peer for good (its handover never taken, its
		// status never counted: found by TestDiskFaults). The voters' views
		// do the same (voter_choice.go). Liveness only: a status is what a
		// live, authenticated master says now, and nothing safe rests on
		// the order of incarnations among statuses.
		m.ignore("stale-incarnation")
		return
	}
	if m.implausible(st.Epoch) || m.implausible(st.MaxEpoch) {
		return
	}
	p.st, p.heard, p.seen = st, m.now, true
	if st.Role == roles.Leader || st.Role == roles.Elect {
		m.quietSince = m.now
	}
	if st.Role == roles.Leader && st.Epoch >= m.hard.MaxEpoch {
		m.leader, m.leaderHeard, m.leaderSeen = st.From, m.now, true
	}
	if st.MaxEpoch > m.hard.MaxEpoch {
		m.hard.MaxEpoch = st.MaxEpoch
		m.persistHard()
	}
	m.adoptInForce(st)
	m.maybeTrim()
	// A LEADER that still sends its status held quorum when it did (it
	// fences itself before anything else). A LEADER of a higher epoch ends
	// this one's term; any LEADER ends a candidacy or a DEPUTY.
	switch {
	case m.role == roles.Leader && st.Role == roles.Leader && st.Epoch > m.hard.Epoch:
		m.stepDown(roles.ReasonHigherEpoch)
		return
	case (m.role == roles.Elect || m.role == roles.Deputy) && st.Role == roles.Leader && st.Epoch >= m.hard.LeaderEpoch:
		if !m.leaderPersists(st.From) {
			return
		}
		m.stepDown(roles.ReasonLeaderSeen)
		return
	}
	switch m.role {
	case roles.Elect:
		if st.Role == roles.Elect && roles.Better(peerCandidate(st), m.candidate()) {
			m.releaseNext = st.From
			m.stepDown(roles.ReasonBetterElect)
		}
	case roles.Leader:
		m.writeHistory(st.From, st.Incarnation, st.History)
		if st.Role == roles.Usurper && st.Eligible && st.Sync == roles.Synced && m.handover == wire.NoMaster &&
			(m.handoverFailed == 0 || m.now.Sub(m.handoverFailed) >= m.cfg.HandoverTimeout) {
			m.startHandover(st.From, roles.ReasonHandover)
		}
	}
}

// peerView is what this master last heard from another master.
type peerView struct {
	st    roles.PeerStatus
	heard roles.Instant
	seen  bool
}

// behindPeers is the newest commit point a fresh peer reports beyond this
// master's log (zero if none): changes known committed that it lacks.
func (m *Master) behindPeers() changelog.Pos {
	var need changelog.Pos
	for _, id := range m.cfg.Masters {
		p := m.peers[id]
		if id != m.cfg.ID && m.fresh(p) && p.st.Commit.Version > m.log.Last().Version && p.st.Commit.NewerThan(need) {
			need = p.st.Commit
		}
	}
	return need
}

// adoptInForce takes a peer's word that a config is in force where this
// log holds the very entry: the peer's commit point is in this log (log
// matching: the same entries up to it), and a config at least that new
// lies at or below it. In force is a fact about the entry (quorums under
// it and the one before both know it), whoever tells it. Without it, an
// ELECT that missed the LEADER's last word tallies jointly under the old
// config for good, when the old config has lost its quorum (simulator
// seed 19226 with a witness: two of four voters' records damaged, the
// new config counts two sites and the witness).
func (m *Master) adoptInForce(st roles.PeerStatus) {
	if st.InForce <= m.hard.InForce || !m.HasMetadata() || !m.log.Has(st.Commit) {
		return
	}
	if c, _ := m.log.Configs(st.Commit.Version); c == nil || c.Version < st.InForce {
		return
	}
	m.hard.InForce = st.InForce
	m.persistHard()
}
