package master

import (
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// election is what a master knows of the votes it holds: the vote
// sessions open here, the heartbeats that renew them, and when it last saw
// a sign of an election.
type election struct {
	voters map[wire.CSID]*voterRec
	// ids: the keys of voters, sorted, while idsOK (voterIDs).
	ids    []wire.CSID
	idsOK  bool
	hbSeq  uint64
	hbSent map[uint64]sentHB
	// hbLow: no heartbeat below this sequence number is in hbSent
	// (pruneSent walks up from it).
	hbLow uint64
	// shortGrant: the last grant a voter gave below what its heartbeat
	// asked (its MAX_PROMISE is shorter than the scaled lease): rounds
	// must come within it (heartbeatAll).
	shortGrant time.Duration
	nextHB     roles.Instant
	// roundSeq, roundVoters: the last heartbeat round's sequence number
	// and the sessions it went to.
	roundSeq    uint64
	roundVoters int
	// roundAnswered: when the last acknowledgement of round roundSeq came
	// (0: none yet). tryWin reads how long a renewal takes to be answered
	// from it.
	roundAnswered roles.Instant
	// commitSent: the commit point the last round of this LEADER told
	// the voters (replicatedVersion at heartbeatAll). While it is above
	// what is acknowledged a commit round is in flight, and a newer
	// commit point waits for it (commitRound).
	commitSent uint64

	quietSince   roles.Instant // last sign of a LEADER, an ELECT or a nomination
	electSince   roles.Instant
	lastVoteSeen roles.Instant

	// electorates caches the electorate of each config entry (configs in
	// the log are never edited, so the pointer names the content); it is
	// emptied whenever tempRemoved changes.
	electorates map[*registry.ClusterConfig]quorum.Electorate

	// tempRemoved: chunkservers an operator declared down while this
	// master knew no live LEADER (AdminTempRemove). Every tally leaves
	// them out where LeaveOut's rules allow, until the removal is written
	// and in force, the chunkserver asks for a vote session here, or this
	// master hears a LEADER (docs/architecture.md, "Temporary removal").
	tempRemoved map[wire.CSID]bool

	// What makes a count over thousands of voters cheap (scale.go): the
	// quorum deadline, and the gates that space out re-counts that each of
	// many acknowledgements might complete.
	checks    uint64 // cached counts so far (Config.CheckCaches)
	votersGen uint64 // bumped whenever a vote may stop counting other than by time
	// sessionsGen: bumped whenever a session ends or is replaced from
	// another address (what sessionsCached counts). A new session of the
	// same voter from the same address changes neither count: in a crowd
	// whose sessions churn, each such hello recounted every session.
	sessionsGen uint64
	electGen    uint64 // bumped whenever the electorates are dropped (dropElectorates) or recomputed
	qc          quorumCache
	sessions    sessionsCache
	ackGate     gate // advanceAcked
	forceGate   gate // checkInForce
	readGate    gate // answerPending for a read round
	winGate     gate // tryWin from acknowledgements
}

// voterRec is one open vote session at this master.
type voterRec struct {
	session   uint64
	addr      netip.Addr
	port      uint16
	voterOnly bool
	// validUntil: this master may count the vote until then (its own
	// clock). Invariant: it is never later than sentAt + CountedLease of
	// the acknowledged heartbeat, so the voter's promise outlives it.
	validUntil roles.Instant
	ackEpoch   uint64 // the epoch of the newest heartbeat it acknowledged
	ackedSeq   uint64 // the newest heartbeat it acknowledged with a vote (confirms reads)
	knownReg   uint64
	inForce    uint64
	commit     changelog.Pos
	commitTag  uint64
	// detached: its connection closed from the chunkserver's side while
	// this master was LEADER; the vote it granted is counted until
	// validUntil all the same (the voter's promise binds it, connection
	// or not), and passes to its next session (onVoteHello).
	detached bool
	// reg caches isMemberOf for the last two configs asked (the two of
	// a joint count): a binary search of the registry per voter and count
	// was a fifth of a crowd LEADER's counts. addr and port never change.
	reg [2]struct {
		c  *registry.ClusterConfig
		ok bool
	}
}

// isMemberOf: this session is id's, as c registers it (from its address
// and port; see Chunkserver.Is). Configs are never edited, so the pointer
// names the answer.
func (v *voterRec) isMemberOf(c *registry.ClusterConfig, id wire.CSID) bool {
	for _, r := range v.reg {
		if r.c == c {
			return r.ok
		}
	}
	mem, _ := c.Member(id)
	ok := mem.Is(v.addr, v.port)
	v.reg[1] = v.reg[0]
	v.reg[0].c, v.reg[0].ok = c, ok
	return ok
}

func (m *Master) onProbe(p roles.Probe) {
	m.send(roles.ToCS(p.CS), m.probeReply(p.Nonce))
}

func (m *Master) probeReply(nonce uint64) roles.ProbeReply {
	return roles.ProbeReply{
		From: m.cfg.ID, Incarnation: m.hard.Incarnation, Nonce: nonce,
		Role: m.role, Epoch: m.Epoch(), Leader: m.Leader(), LeaderFresh: m.role == roles.Leader || m.leaderFresh(),
		Eligible: m.Eligible(), Sync: m.Sync(), Last: m.log.Last(),
		Usurper: m.role == roles.Usurper, Keep: m.keeps(), Yielded: m.hard.Yielded,
		Registered: uint32(m.crowd()),
	}
}

func (m *Master) onVoteHello(h roles.VoteHello) {
	h, ok := m.admitHello(h)
	if !ok {
		return
	}
	waiting := m.keepaliveOnly() // counted before anything changes (the caches key on the generations)
	m.open(h.CS, &voterRec{session: h.Session, addr: h.Addr, port: h.Port, voterOnly: h.VoterOnly}, m.now, m.hard.Epoch)
	// Equal is not higher: the voter may have acknowledged this very epoch
	// (a refusal tells the case of another master owning it).
	if h.MaxEpoch > m.hard.Epoch {
		m.onHigherEpoch(h.MaxEpoch)
		if !m.role.TakesVotes() {
			return
		}
	}
	switch {
	case m.nextHB <= m.now:
		// A broadcast is due in this very step.
	case waiting && !m.keepaliveOnly():
		// The sessions just made a quorum: propose the epoch to all. Only
		// then: a round per hello would be N rounds of N heartbeats.
		m.heartbeatNow()
	default:
		m.heartbeatTo(h.CS)
	}
}

// admitHello checks a hello before its session is recorded: the epoch it
// brings (kept only from a registered member, within reach), a
// nomination (from a member, or while the registry is empty), this
// master's role (a FOLLOWER starts an election or redirects), the id
// (another address's: redirected as taken) and the session (an older
// one, or a duplicate, changes nothing). It returns the hello as it
// counts; false: it goes no further.
func (m *Master) admitHello(h roles.VoteHello) (roles.VoteHello, bool) {
	member := m.registeredAt(h.CS, h.Addr, h.Port)
	if member {
		m.endTempRemoval(h.CS, "it asked for a vote session")
	}
	// Epochs are taken only from a registered member at its own address,
	// and only within reach of what this master has seen. A LEADER takes
	// none from a hello: a voter promised to a newer epoch refuses its
	// heartbeat, and that refusal (on the voter's own session) unseats it.
	if !member || m.role == roles.Leader || m.implausible(h.MaxEpoch) {
		h.MaxEpoch = 0
	}
	// A nomination starts an election at a new epoch: only a member may
	// ask for one, except while the registry is empty (bootstrap: the
	// founder is the only master that can win, and chunkservers not yet
	// registered nominate it sooner than it would nominate itself).
	if h.Nominate && !member && m.HasMetadata() && len(m.Registry().Members) > 0 {
		h.Nominate = false
		m.ignore("nomination-unregistered")
	}
	if h.MaxEpoch > m.hard.MaxEpoch {
		m.hard.MaxEpoch = h.MaxEpoch
		m.persistHard()
	}
	if !m.role.TakesVotes() && !m.electOn(&h) {
		return h, false
	}
	if c, ok := m.Registry().Member(h.CS); ok && !c.Is(h.Addr, h.Port) {
		m.ignore("id-taken")
		m.send(roles.ToCS(h.CS), roles.Redirect{From: m.cfg.ID, Session: h.Session, Leader: m.Leader(), IDTaken: true})
		return h, false
	}
	if old := m.voters[h.CS]; old != nil && old.session >= h.Session && old.addr == h.Addr && old.port == h.Port {
		// An older session, or this one again (a duplicate): keep what the
		// session has earned. (From another address it is not the same
		// chunkserver's: a registered id was checked above, and for an id
		// not registered yet the newest claim replaces the old one, so a
		// made-up session number cannot lock the real holder out.)
		m.ignore("stale-session")
		return h, false
	}
	return h, true
}

// electOn: a master that takes no votes hears a hello. Nominated, and
// able to, it becomes ELECT (true: the hello goes on to open a session);
// otherwise the voter is redirected to the LEADER it knows.
func (m *Master) electOn(h *roles.VoteHello) bool {
	canElect := m.role == roles.Follower || m.role == roles.Usurper
	if h.Nominate && canElect && m.Eligible() {
		if e := m.betterElectSeen(); e != wire.NoMaster {
			// It would step down at e's next status (§3.6), after
			// raising every voter's epoch: in a crowd, nominations
			// that race a standing ELECT kept one from ever winning.
			m.ignore("nomination-better-elect")
			m.send(roles.ToCS(h.CS), roles.Redirect{From: m.cfg.ID, Session: h.Session, Leader: e})
			return false
		}
		m.startElect(roles.ReasonNominated, h)
	}
	if m.role.TakesVotes() {
		return true
	}
	switch {
	case h.Nominate && m.removed:
		m.ignore("nominated-while-removed")
	case h.Nominate && !m.Eligible():
		m.ignore("nominated-without-metadata")
	}
	m.send(roles.ToCS(h.CS), roles.Redirect{From: m.cfg.ID, Session: h.Session, Leader: m.Leader()})
	return false
}

// onConnLost: a LEADER keeps counting a vote whose connection the voter's
// side closed, until the vote's lease ends (docs/architecture.md §3.1,
// "Reconnects"): a storm of reconnecting voters must not cost it a quorum
// that their promises still make. Anything else ends the session now.
func (m *Master) onConnLost(e roles.ConnLost) {
	v := m.voters[e.CS]
	if v == nil {
		return
	}
	if e.ByPeer && m.role == roles.Leader && m.counts(v) {
		v.detached = true
		return
	}
	m.dropVoter(e.CS)
}

func (m *Master) onVoteBye(b roles.VoteBye) {
	v := m.voters[b.CS]
	if v == nil || v.session != b.Session {
		m.ignore("stale-session")
		return
	}
	if b.Addr != v.addr {
		m.ignore("wrong-address")
		return
	}
	m.dropVoter(b.CS)
	m.send(roles.ToCS(b.CS), roles.VoteRelease{From: m.cfg.ID, Incarnation: m.hard.Incarnation, Session: b.Session})
}

func (m *Master) onHeartbeatAck(a roles.HeartbeatAck) {
	v := m.admitAck(a)
	switch {
	case v == nil:
	case !a.OK:
		m.onVoteRefused(a)
	case a.Granted == 0:
		// A keepalive's answer: no vote, but what the voter knows.
		v.learn(a)
		m.lastVoteSeen = m.now
		if m.role == roles.Elect && a.MaxEpoch >= m.hard.Epoch && a.EpochOwner != m.cfg.ID && !m.newEpoch(a.MaxEpoch) {
			m.stepDown(roles.ReasonNoVotes) // propose above it once sessions make a quorum; none is left
		}
	default:
		sent, ok := m.hbSent[a.Seq]
		if !ok || !m.grant(v, a, sent, m.now, m.hard.Epoch, m.cfg.CountedLease) {
			m.ignore("stale-ack")
			return
		}
		m.onGrant(a, v)
	}
}

// admitAck is the session an acknowledgement is for, if it speaks for
// it: the session open, and the ack from the address the session was
// opened from (a clone, an impostor that learnt the session number, is
// not this voter). An ack claiming an epoch out of reach ends the
// session. Nil: the ack goes no further.
func (m *Master) admitAck(a roles.HeartbeatAck) *voterRec {
	v := m.voters[a.CS]
	switch {
	case v == nil || v.session != a.Session:
		m.ignore("stale-ack-session") // told apart from a stale hello: in a crowd the two say different things
		return nil
	case a.Addr != v.addr:
		m.ignore("wrong-address")
		return nil
	case m.implausible(a.MaxEpoch):
		m.dropVoter(a.CS)
		return nil
	}
	return v
}

// onVoteRefused: the voter owns up to an epoch, a newer one, or this very
// epoch given to another master or to another incarnation of this one (a
// data directory rolled back to before it took the epoch).
func (m *Master) onVoteRefused(a roles.HeartbeatAck) {
	reused := a.MaxEpoch == m.hard.Epoch && (a.EpochOwner != m.cfg.ID || (a.EpochInc != 0 && a.EpochInc != m.hard.Incarnation))
	// A LEADER (or DEPUTY) refused for an epoch above its own, even one
	// it already knew of (an ELECT's, from a peer's status), steps down:
	// that voter never votes at this epoch again, and left in place the
	// LEADER would lead without it for good (a site whose ELECT raised
	// the epoch during a split, then saw the LEADER at the heal; with a
	// witness, half of the sites and the lease).
	above := m.role != roles.Elect && a.MaxEpoch > m.hard.Epoch
	if reused && (m.role == roles.Leader || m.role == roles.Deputy) {
		// Its own epoch, owned by another in that voter's record (two
		// ELECTs proposed it and the voter gave it to the other, which
		// lost and went back to FOLLOWER; or this master forgot it had
		// taken it): the same for good, so the same step-down.
		m.stepDown(roles.ReasonHigherEpoch)
		return
	}
	if a.MaxEpoch > m.hard.MaxEpoch || reused || above {
		m.onHigherEpoch(a.MaxEpoch)
		return
	}
	m.dropVoter(a.CS)
	m.ignore("vote-refused")
}

// onGrant reacts to a recorded vote. Each gate lets a recount run on
// this acknowledgement only when it may be the one that completes a
// quorum (gate): a count is O(voters), and a round brings one
// acknowledgement per voter.
func (m *Master) onGrant(a roles.HeartbeatAck, v *voterRec) {
	switch m.role {
	case roles.Elect:
		if m.winGate.due() {
			m.tryWin()
		}
	case roles.Leader:
		m.noteRegistration(a.CS, v)
		if ahead := v.commitTag == m.hard.Epoch && v.commit.Version > m.acked.Version; ahead && m.ackGate.due() {
			m.advanceAcked()
		}
		if m.configPending() && m.forceGate.due() {
			m.checkInForce()
		}
		if m.readHB != 0 && a.Seq >= m.readHB && m.readGate.due() {
			m.answerPending() // this ack may complete a read round
		}
	}
}

// onHigherEpoch reacts to meeting an epoch at or above this master's own.
func (m *Master) onHigherEpoch(e uint64) {
	if e > m.hard.MaxEpoch {
		m.hard.MaxEpoch = e
		m.persistHard()
	}
	switch m.role {
	case roles.Leader:
		if e > m.hard.Epoch {
			m.stepDown(roles.ReasonHigherEpoch)
		}
	case roles.Deputy:
		if e > m.hard.Epoch {
			m.stepDown(roles.ReasonHigherEpoch)
		}
	case roles.Elect:
		// Still a candidate: take a newer epoch and ask again.
		if e >= m.hard.Epoch {
			if !m.newEpoch(e) {
				m.stepDown(roles.ReasonNoVotes)
				return
			}
			m.heartbeatNow()
		}
	}
}

// tryWin is ELECT -> LEADER: the tally is won, and the catch-up rule holds.
func (m *Master) tryWin() {
	m.adoptVotersInForce()
	// A win is taken only with its quorum holding for half a lease, and
	// for as long again as the newest round has been out (took): the
	// renewal that must follow will take about as long to be answered (a
	// crowd under load), and a LEADER that falls at once only adds an
	// election's burst to that load; a later round, answered sooner,
	// wins. Liveness only: counting stays as exact as for wonAt(now).
	// (The cached deadline is a lower bound; a win is rare and gated, so
	// it is recounted exactly.)
	//
	// took is the time from the round's sending to its latest answer so
	// far, or to now while none has come. Not simply to now: called at the
	// tick just before the next round, that is the whole interval, and a
	// voter granting less than the scaled lease has rounds come at
	// VOTE_LEASE and more (heartbeatAll); a quorum never holds that long
	// past a round, so such an ELECT never won (simulator seed 2308 with a
	// witness: all the votes, ELECT for 36 s).
	took := m.roundTook()
	m.qc.valid = false
	if !m.wonAt(m.now.Add(max(m.cfg.VoteLease/2, took))) {
		m.winGate.missed()
		return
	}
	m.winGate.done()
	if !m.caughtUp() {
		return
	}
	m.become(roles.Leader, roles.ReasonWon)
	// Renew at once when the next round, answered as slowly as the last,
	// would come back after the quorum lapsed (new LEADERs of 10,000
	// voters fell a second after winning, renewed only on the ELECT's
	// schedule).
	if m.nextHB.Add(took) >= m.quorumUntil(m.now) {
		m.heartbeatNow()
	}
}

// adoptVotersInForce takes the newest config version the counted voters know
// to be in force, from those whose commit point this log holds.
func (m *Master) adoptVotersInForce() {
	var inForce uint64
	for _, v := range m.counted() {
		// Only from a voter whose commit point this log holds: below it
		// the logs are one (log matching), so the voter's version names
		// the same config entry as this log's. A version number alone does
		// not: two logs that parted can each hold a config of the same
		// number (simulator seed 283 with a witness, where an ELECT put its
		// own unacknowledged config in force on a word about another).
		if m.log.Has(v.commit) {
			inForce = max(inForce, v.inForce)
		}
	}
	// A voter that knows a config version to be in force learned it from a
	// LEADER that saw quorums under both versions have it: safe to adopt
	// before tallying.
	if inForce > m.hard.InForce && inForce <= m.Registry().Version {
		m.hard.InForce = inForce
		m.persistHard()
	}
}

// roundTook is how long the newest heartbeat round has been out: from
// its sending to its latest answer so far, or to now while none has come.
func (m *Master) roundTook() time.Duration {
	var took time.Duration
	if r, ok := m.hbSent[m.roundSeq]; ok {
		took = m.now.Sub(r.at)
		if m.roundAnswered >= r.at {
			took = m.roundAnswered.Sub(r.at)
		}
	}
	return took
}

// caughtUp: the catch-up rule holds (the voters whose reports this log
// satisfies make a quorum themselves), and the commit point is taken
// from those reports. False: it asked for what it lacks, and waits.
func (m *Master) caughtUp() bool {
	// The catch-up rule: the voters whose reports this log satisfies must
	// themselves make a quorum.
	cv := m.Registry().Version
	satisfied := func(v *voterRec) bool {
		return changelog.Satisfies(&m.log, cv, v.commit, v.commitTag, v.knownReg) ||
			v.commit.Epoch <= m.hard.AcceptLoss && cv >= v.knownReg
	}
	if m.quorumAt(m.now, satisfied) != quorum.Won {
		var need changelog.Pos
		var tag uint64
		for _, v := range m.withWitness(m.counted()) {
			if !satisfied(v) && (v.commitTag > tag || (v.commitTag == tag && v.commit.Version > need.Version)) {
				need, tag = v.commit, v.commitTag
			}
		}
		if m.catchWait.since == 0 || m.catchWait.need != need {
			m.catchWait = catchWait{need: need, tag: tag, since: m.now}
		}
		m.catchUp(need)
		m.storeAside()
		return false
	}
	m.catchWait = catchWait{}
	// The commit point is taken from reports this log holds: one it
	// satisfies only as superseded names an entry it need not have.
	commit := m.hard.Commit
	for _, v := range m.withWitness(m.counted()) {
		if satisfied(v) && m.log.Has(v.commit) && v.commit.Version > commit.Version {
			commit = v.commit
		}
	}
	if commit != m.hard.Commit {
		m.hard.Commit = commit
		m.persistHard()
	}
	if m.hard.AcceptLoss != 0 {
		m.hard.AcceptLoss = 0 // once: the LEADER's word now supersedes what was lost
		m.persistHard()
	}
	return true
}

// catchUp asks the most advanced master it can reach for what it lacks.
func (m *Master) catchUp(need changelog.Pos) {
	if m.now < m.fetchAt {
		return
	}
	if !m.fetchToward(need) {
		// No master it hears can give it: the store may (storelog.go).
		if m.storeUsable() {
			m.srNeed = need
		}
		m.ignore("no-catch-up-source")
	}
}

// fetchToward asks the most advanced master it hears whose log reaches
// need for what it lacks (false: none does).
func (m *Master) fetchToward(need changelog.Pos) bool {
	best := wire.NoMaster
	var bestLast changelog.Pos
	for _, id := range m.cfg.Masters {
		p := m.peers[id]
		if id == m.cfg.ID || p == nil || !p.seen || m.now.Sub(p.heard) > m.cfg.PeerTimeout {
			continue
		}
		// Its log must be at least as new as the commit point the voters
		// report (epoch first): a stale master whose log is merely longer
		// could otherwise truncate acknowledged entries held here.
		if p.st.Last.Version >= need.Version && !need.NewerThan(p.st.Last) && (best == wire.NoMaster || p.st.Last.NewerThan(bestLast)) {
			best, bestLast = id, p.st.Last
		}
	}
	if best == wire.NoMaster {
		return false
	}
	m.fetchAt = m.now.Add(m.cfg.PeerInterval)
	m.send(roles.ToMaster(best), roles.FetchReq{From: m.cfg.ID, After: m.hard.Commit.Version})
	return true
}
