package master

import (
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Master is the role machine of one mfsmaster. The zero value is not
// usable: build it with New. It is not safe for concurrent use; one
// driver goroutine owns it.
type Master struct {
	cfg       Config
	now       roles.Instant
	role      roles.Role
	hard      roles.HardState
	hardDirty bool // hard changed in this step: persist it
	log       changelog.Log
	kv        namespace.KV
	out       Batch // what this step asks of the driver so far

	// Each part's state sits in its own file, beside the code that owns
	// it; Step is the one dispatcher.
	election      // the votes this master holds and the tally (election.go)
	peerState     // what it knows of the other masters (peers.go)
	replication   // the LEADER's followers and the ack rule (replicator.go)
	clientOps     // client operations waiting for their answer (sessions.go)
	handoverState // a planned handover under way (handover.go)
	registration  // chunkservers being registered (registration.go)
	snapshots     // its snapshots, taken and received (snapshot.go)
	historyState  // its role changes for the election history (history.go)
	witnessState  // the object-store witness's lease (witness.go)
	storeReplica  // the witness's store as a stand-in replica (storelog.go)
}

// New starts a master from what its disk holds. The caller must carry
// out the returned batch (its Persist holds the new incarnation) before
// handling any event.
func New(cfg Config, st roles.Stored, now roles.Instant) (*Master, Batch) {
	m := &Master{
		cfg:          cfg,
		now:          now,
		role:         roles.Follower,
		hard:         st.Hard,
		election:     election{voters: map[wire.CSID]*voterRec{}, hbSent: map[uint64]sentHB{}, quietSince: now},
		peerState:    peerState{peers: map[wire.MasterID]*peerView{}, foreign: map[wire.MasterID]bool{}, nextPeer: now, startedAt: now},
		replication:  replication{progress: map[wire.MasterID]*progress{}},
		registration: registration{toRegister: map[wire.CSID]registry.Chunkserver{}},
	}
	m.log.Reset(st.Base)
	m.log.Append(st.Entries...)
	if s := st.Snapshot; s != nil {
		// A snapshot is committed history. One received from another master
		// is written before the log it replaces (Persist order), so a crash
		// between the two leaves a snapshot the log may not agree with:
		// the log then restarts after it.
		if s.Pos.Version < m.log.BasePos().Version {
			panic(fmt.Sprintf("invariant log-base: stored snapshot %v below the log base %v", s.Pos, m.log.BasePos()))
		}
		if s.Pos.Version > m.log.Len() || !m.log.Has(s.Pos) {
			// The store still holds the old log: trim and truncate it to
			// the snapshot too, before anything is appended after it
			// (docs/architecture.md §10, "Snapshots").
			b, v := s.Base(), s.Pos.Version
			m.log.Reset(b)
			m.persist(roles.Persist{Trim: &b, TruncateAfter: &v})
		}
		if s.Pos.Version > m.hard.Commit.Version {
			m.hard.Commit = s.Pos
		}
		m.snap, m.kv = s, s.KV()
	} else if m.log.BasePos().Version > 0 {
		panic(fmt.Sprintf("invariant log-base: log trimmed to %v without a snapshot", m.log.BasePos()))
	}
	if m.hard.Commit.Version > m.log.Len() || !m.log.Has(m.hard.Commit) {
		panic(fmt.Sprintf("invariant stored-commit: commit %v not in stored log (last %v)", m.hard.Commit, m.log.Last()))
	}
	m.kv.ApplyUpTo(&m.log, m.hard.Commit.Version)
	m.hard.Incarnation++
	m.persistHard()
	m.initWitness()
	return m, m.flush()
}

// NextDeadline is when the driver must call Step with a Tick at the latest.
// Only deadlines still ahead count: one already passed was acted on (or its
// condition does not hold) in the Step that passed it.
func (m *Master) NextDeadline() roles.Instant {
	if m.role == roles.Dummy {
		return roles.Never
	}
	d := roles.Never
	at := func(t roles.Instant) {
		if t > m.now && t < d {
			d = t
		}
	}
	at(m.nextPeer)
	if m.role.TakesVotes() {
		at(m.nextHB)
	}
	if m.role == roles.Leader && m.qc.valid {
		// The instant its votes stop making a quorum: the step then fences
		// it. (An ELECT or DEPUTY needs no wake-up when a vote lapses: it
		// wins on an input, and every vote it counts lapses before its
		// ELECT_TIMEOUT, which is a deadline of its own.)
		at(m.qc.until)
	}
	switch m.role {
	case roles.Follower, roles.Usurper:
		if m.Eligible() {
			at(m.selfNominateAt())
		}
		if m.keeps() {
			at(m.startedAt.Add(m.cfg.PeerTimeout)) // mayReclaim's wait
		}
	case roles.Elect:
		at(m.lastVoteSeen.Add(m.cfg.ElectTimeout))
		if m.cfg.DeputyElectionTime > 0 {
			at(m.electSince.Add(m.cfg.DeputyElectionTime))
		}
	case roles.Leader:
		if m.handover != wire.NoMaster {
			at(m.handoverSince.Add(m.cfg.HandoverTimeout))
		}
	}
	if m.wit != nil {
		at(roles.Instant(m.wit.NextDeadline()))
		if m.role == roles.Elect && m.halfSince != 0 {
			at(m.halfSince.Add(m.cfg.Witness.Delay))
		}
		if m.role == roles.Elect && m.asideSince != 0 {
			at(m.asideSince.Add(m.asideWait()))
		}
		if m.srDel != nil {
			at(m.srDel.at.Add(logCallLimit))
		}
		switch {
		case m.srCall != nil:
			at(m.srCall.at.Add(m.srCall.limit()))
		case m.role == roles.Elect && m.srNeed != (changelog.Pos{}):
			at(max(m.srAgain, m.srReadAt))
		case m.role == roles.Leader:
			at(m.srAgain)
		}
	}
	return d
}

func (m *Master) selfNominateAt() roles.Instant {
	// Staggered by place in the master list (ids may be large numbers,
	// e.g. addresses) so that masters without chunkservers do not all act
	// at once.
	place := 0
	for _, id := range m.cfg.Masters {
		if id < m.cfg.ID {
			place++
		}
	}
	return m.quietSince.Add(m.cfg.SelfNominateAfter + m.cfg.PeerInterval*2*time.Duration(place+1))
}

// Step advances the machine by one event at this master's time now.
func (m *Master) Step(now roles.Instant, ev roles.Event) Batch {
	if now < m.now {
		panic(fmt.Sprintf("invariant monotonic-clock: %d after %d", now, m.now))
	}
	m.now = now
	if m.role == roles.Dummy {
		m.ignore("dummy")
		return m.flush()
	}
	// Time first: a master resumed from a freeze fences itself before it
	// looks at anything that arrived meanwhile.
	m.checkQuorum()
	switch e := ev.(type) {
	case roles.Tick:
		m.onWall(e.WallUnixMs)
	case roles.Probe:
		m.onProbe(e)
	case roles.VoteHello:
		m.onVoteHello(e)
	case roles.VoteBye:
		m.onVoteBye(e)
	case roles.ConnLost:
		m.onConnLost(e)
	case roles.HeartbeatAck:
		m.onHeartbeatAck(e)
	case roles.PeerStatus:
		m.onPeerStatus(e)
	case roles.Append:
		m.onAppend(e)
	case roles.AppendAck:
		m.onAppendAck(e)
	case roles.FetchReq:
		m.onFetchReq(e)
	case roles.FetchResp:
		m.onFetchResp(e)
	case roles.SnapshotChunk:
		m.onSnapshotChunk(e)
	case roles.SnapshotSaved:
		m.onSnapshotSaved(e)
	case roles.ClientWrite:
		m.onClientWrite(e)
	case roles.ClientRead:
		m.onClientRead(e)
	case roles.Admin:
		m.onAdmin(e)
	case roles.MasterSet:
		m.onMasterSet(e)
	case roles.ForeignCluster:
		if !m.foreign[e.Master] {
			m.foreign[e.Master] = true
			m.ignore("foreign-cluster")
		}
	case roles.WitnessResult:
		if e.Key != "" {
			m.onStoreResult(e.Result)
		} else {
			m.witnessStep(e.Result)
		}
	default:
		m.ignore("unknown-event")
	}
	m.timers()
	m.witnessStep(nil)
	m.storeStep()
	m.clearForced()
	m.maybeSnapshot()
	return m.flush()
}

// flush hands the step's batch over, with the durable record last when
// it changed.
func (m *Master) flush() Batch {
	if m.hardDirty {
		h := m.hard
		m.persist(roles.Persist{Hard: &h})
		m.hardDirty = false
	}
	b := m.out
	m.out = Batch{}
	return b
}

func (m *Master) persist(p roles.Persist) { m.out.Persist = append(m.out.Persist, p) }

func (m *Master) ignore(reason string) { m.out.Ignored = append(m.out.Ignored, reason) }

// persistHard marks the durable record changed; flush writes it once per
// batch, whatever changed it how often.
func (m *Master) persistHard() { m.hardDirty = true }

func (m *Master) send(to roles.Peer, msg wire.Message) {
	m.out.Sends = append(m.out.Sends, roles.Send{To: to, Msg: msg})
}

// sendEarly is send for a message that may leave before the batch's
// Persist is durable (Send.Early): a LEADER's Append.
func (m *Master) sendEarly(to roles.Peer, msg wire.Message) {
	m.out.Sends = append(m.out.Sends, roles.Send{To: to, Msg: msg, Early: m.role == roles.Leader})
}

// ---- roles -----------------------------------------------------------------

// become moves to a new role through the table, applying the disconnect
// rules first.
func (m *Master) become(to roles.Role, reason string) {
	from := m.role
	rule, ok := roles.FindRule(from, to, reason)
	if !ok {
		panic(fmt.Sprintf("invariant transition-table: %v -> %v (%s) is not in docs/roles.md", from, to, reason))
	}
	if rule.Disconnect != roles.MustDisconnect(from, to) {
		panic(fmt.Sprintf("invariant disconnect-rule: table row %s disagrees with MustDisconnect", rule.Section))
	}
	var votes recordTally
	if from.TakesVotes() {
		votes = m.tallyNow() // before the disconnect drops them
	}
	var disc []roles.Disconnect
	if rule.Disconnect {
		disc = m.disconnectAll(m.releaseNext)
	}
	m.releaseNext = wire.NoMaster
	m.role = to
	m.noteRoleChange(from, to, reason, rule.Section, votes)
	if to == roles.Follower || to == roles.Dummy {
		m.placed = false
	}
	m.out.Transitions = append(m.out.Transitions,
		roles.Transition{From: from, To: to, Epoch: m.Epoch(), Reason: reason, Section: rule.Section, Disconnects: disc})
	switch to {
	case roles.Leader:
		m.enterLeader()
	case roles.Elect:
		m.electSince, m.lastVoteSeen = m.now, m.now
		m.catchWait = catchWait{}
		// The acknowledgements an earlier election missed on say nothing
		// of this one: a gate grown over many elections let an ELECT that
		// held every vote try only on the tick (seed 2308 with a witness).
		m.winGate.done()
	}
	if !to.TakesVotes() {
		m.endRounds(m.hbSeq + 1)
	}
	if from == roles.Leader {
		// The recorded LEADER is no longer this master: hand out the
		// handover target, or none, until a new LEADER is heard of.
		m.leader, m.leaderSeen = m.handover, false
		m.pending = nil
		m.handover = wire.NoMaster
		m.replication.endTerm()
	}
	m.quietSince = m.now
	m.sendStatus()
	if to == roles.Elect || to == roles.Leader {
		m.announce()
	}
}

// disconnectAll is the disconnect rule: every chunkserver is released (it
// may vote elsewhere at once: this master no longer counts it), then
// clients and other sessions are closed. next is a master the chunkservers
// should vote for at once (a handover), or none.
func (m *Master) disconnectAll(next wire.MasterID) []roles.Disconnect {
	var bye []roles.Send
	for _, id := range m.voterIDs() {
		v := m.voters[id]
		bye = append(bye, roles.Send{To: roles.ToCS(id), Msg: roles.VoteRelease{From: m.cfg.ID, Incarnation: m.hard.Incarnation, Session: v.session, Next: next}})
	}
	// Votes stop counting before the goodbyes leave.
	m.resetVoters()
	return []roles.Disconnect{{Class: roles.ConnChunkservers, Goodbyes: bye}, {Class: roles.ConnClients}, {Class: roles.ConnSessions}}
}

// startElect takes a new epoch above any seen and becomes ELECT. The epoch
// is persisted before any heartbeat carries it (Persist sorts first).
// h is the nominating voter's hello (nil: none).
func (m *Master) startElect(reason string, h *roles.VoteHello) {
	if !m.Eligible() {
		panic("invariant eligibility: a master without metadata cannot be ELECT")
	}
	if !m.newEpoch(m.hard.MaxEpoch) {
		return
	}
	m.electCause(reason, h)
	m.become(roles.Elect, reason)
	m.heartbeatNow()
	m.tryWin() // bootstrap: the founder needs no vote
}

// newEpoch takes the next epoch above every one seen. It refuses (false)
// at EpochCeiling, so the arithmetic never wraps: only a store damaged or
// written before epochs were bounded can be that high.
func (m *Master) newEpoch(above uint64) bool {
	top := max(m.hard.Epoch, m.hard.MaxEpoch, above)
	if top >= EpochCeiling {
		m.ignore("epoch-exhausted")
		return false
	}
	e := top + 1
	m.hard.Epoch, m.hard.MaxEpoch = e, e
	m.hbSent, m.hbLow = map[uint64]sentHB{}, m.hbSeq+1
	m.persistHard()
	return true
}

func (m *Master) enterLeader() {
	m.leader, m.leaderSeen, m.leaderHeard = m.cfg.ID, true, m.now
	m.hard.Yielded = false
	m.hard.LeaderEpoch = m.hard.Epoch
	m.persistHard()
	// A new term starts with an entry of its own epoch, which carries this
	// master's role changes for the history (this one included).
	m.written = nil
	e := changelog.Entry{Pos: changelog.Pos{Version: m.log.Len() + 1, Epoch: m.hard.Epoch}, Kind: changelog.EntryNoop}
	if m.speaks(HistoryProtocol) {
		e.History = m.newRecords(m.cfg.ID, m.hard.Incarnation, m.toReport())
	}
	m.log.Append(e)
	m.persist(roles.Persist{Append: []changelog.Entry{e}})
	m.commitSent = 0 // no commit round of this term is out
	m.replication.startTerm(m.hard.Commit, m.cfg.ID, m.cfg.Masters, m.log.Len())
	m.kv.ApplyUpTo(&m.log, m.acked.Version)
	m.replicate()
}

// stepDown leaves LEADER (or ELECT/DEPUTY) for FOLLOWER.
func (m *Master) stepDown(reason string) {
	if m.role == roles.Follower {
		return
	}
	m.become(roles.Follower, reason)
}

// ---- timers --------------------------------------------------------------------

func (m *Master) timers() {
	if m.now >= m.nextPeer {
		m.sendStatus()
		if m.role == roles.Leader {
			m.replicate()
			// Its own changes its first entry could not carry (a master
			// not yet heard, or of an older protocol, then).
			if len(m.unrecorded) > 0 {
				m.writeHistory(m.cfg.ID, m.hard.Incarnation, m.toReport())
			}
		}
		m.nextPeer = m.now.Add(m.cfg.PeerInterval)
	}
	switch m.role {
	case roles.Follower, roles.Usurper:
		if m.Eligible() && m.now >= m.selfNominateAt() {
			m.startElect(roles.ReasonSelfNominated, nil)
		} else if m.mayReclaim() {
			m.become(roles.Usurper, roles.ReasonKeepLeader)
		}
	case roles.Elect:
		// Once a heartbeat round (acknowledgements try through a gate):
		// a won ELECT waiting to catch up, or a quorum held back.
		switch {
		case m.now >= m.nextHB && m.wonAt(m.now):
			m.tryWin()
		case m.cfg.DeputyElectionTime > 0 && m.now.Sub(m.electSince) >= m.cfg.DeputyElectionTime:
			m.become(roles.Deputy, roles.ReasonDeputyTime)
		case m.now.Sub(m.lastVoteSeen) >= m.cfg.ElectTimeout && len(m.counted()) == 0:
			m.stepDown(roles.ReasonNoVotes)
		case m.now >= m.fetchAt && m.behindPeers() != (changelog.Pos{}):
			// A peer has committed changes this log lacks: take them now,
			// before any win. Committed entries are final, so nothing is
			// lost; and the registry in them may be what this master must
			// tally under to win at all (simulator seeds 656 and 10799 with
			// a witness: a master restored from an old copy, or one that
			// missed a change, counted only a site that was lost, while the
			// peer that had it could not take the lease).
			m.catchUp(m.behindPeers())
		}
	case roles.Deputy:
		if m.sessionsQuorum() {
			m.stepDown(roles.ReasonQuorumBack)
		}
	case roles.Leader:
		// Followers fall silent or come back: (b) of the ack rule may move.
		m.advanceReplicated()
		m.registerNext()
		if m.handover != wire.NoMaster && m.now.Sub(m.handoverSince) >= m.cfg.HandoverTimeout {
			// Resume writing, and write for as long again before another
			// attempt, so a USURPER that cannot catch up does not starve
			// the clients.
			m.ignore("handover-timeout")
			m.handover, m.handoverFailed = wire.NoMaster, m.now
		}
		m.tryHandover()
	}
	if m.role.TakesVotes() && m.now >= m.nextHB {
		m.heartbeatAll()
	}
}
