package roles

import (
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// voterRec is one open vote session at this master.
type voterRec struct {
	session   uint64
	addr      netip.Addr
	port      uint16
	voterOnly bool
	// validUntil: this master may count the vote until then (its own
	// clock). Invariant: it is never later than sentAt + CountedLease of
	// the acknowledged heartbeat, so the voter's promise outlives it.
	validUntil Instant
	ackEpoch   uint64 // the epoch of the newest heartbeat it acknowledged
	ackedSeq   uint64 // the newest heartbeat it acknowledged with a vote (confirms reads)
	knownReg   uint64
	inForce    uint64
	commit     Pos
	commitTag  uint64
}

// peerView is what this master last heard from another master.
type peerView struct {
	st    PeerStatus
	heard Instant
	seen  bool
}

// progress is the LEADER's view of one follower's changelog.
type progress struct {
	next  uint64 // next version to send
	match Pos    // newest position the follower holds durably
	heard Instant
	seen  bool
	// A follower behind the log's base is sent the snapshot in chunks:
	// snapNext is the first record it has not acknowledged.
	snapPos  Pos
	snapNext uint64
	snapSent Instant
}

type sentHB struct {
	at    Instant
	epoch uint64
}

type pendingOp struct {
	client ClientID
	seq    uint64
	ver    uint64 // write: the entry; read: the read index
	hb     uint64 // read: the newest heartbeat sent before it arrived
	key    string
	read   bool
	prefix bool   // a list: keys under the prefix key,
	after  string // after this one,
	limit  int    // at most this many
}

// Master is the role machine of one mfsmaster. The zero value is not
// usable: build it with NewMaster. It is not safe for concurrent use; one
// driver goroutine owns it.
type Master struct {
	cfg  Config
	now  Instant
	role Role
	hard HardState
	log  Log
	kv   KV
	out  Batch // what this step asks of the driver so far

	snap       *Snapshot  // the newest durable snapshot (nil: none)
	snapSaving *Snapshot  // asked of the driver, not yet durable
	incoming   *snapBuild // a snapshot being received

	leader      wire.MasterID // the LEADER recorded (last heard)
	leaderHeard Instant
	leaderSeen  bool
	peers       map[wire.MasterID]*peerView

	voters map[wire.CSID]*voterRec
	hbSeq  uint64
	hbSent map[uint64]sentHB
	nextHB Instant

	nextPeer     Instant
	quietSince   Instant // last sign of a LEADER, an ELECT or a nomination
	electSince   Instant
	lastVoteSeen Instant
	fetchAt      Instant

	progress   map[wire.MasterID]*progress
	replicated Pos
	acked      Pos
	pending    []pendingOp
	// readHB: the heartbeat round that will confirm the reads that arrived
	// before it (0: none asked for); readRound: the next broadcast is one.
	readHB     uint64
	readRound  bool
	toRegister map[wire.CSID]Chunkserver
	assigned   map[netip.AddrPort]wire.CSID // ids handed out by AssignID

	yieldFrom  wire.MasterID // the LEADER an ELECT first heard from (leaderPersists)
	yieldFirst Instant

	// placed: an admin command made this master USURPER, and it is still
	// on that path (USURPER, ELECT, LEADER). A KEEP master does not take
	// the role from such a LEADER (keep.go).
	placed    bool
	startedAt Instant // this run began (keep.go waits to hear its peers)

	handover       wire.MasterID
	handoverSince  Instant
	handoverWhy    string
	handoverFailed Instant       // when the last handover timed out
	releaseNext    wire.MasterID // set just before a handover step-down
	hardDirty      bool          // hard changed in this step: persist it

	// electorates caches the electorate of each config entry (configs in
	// the log are never edited, so the pointer names the content); it is
	// emptied whenever tempRemoved changes.
	electorates map[*ClusterConfig]quorum.Electorate

	// tempRemoved: chunkservers an operator declared down while this
	// master knew no live LEADER (AdminTempRemove). Every tally leaves
	// them out where leaveOut's rules allow, until the removal is written
	// and in force, the chunkserver asks for a vote session here, or this
	// master hears a LEADER (docs/architecture.md, "Temporary removal").
	tempRemoved map[wire.CSID]bool

	// foreign: masters of MASTER_HOST that answered with another cluster's
	// metadata id. While any did, this master does not bootstrap: it was
	// most likely wiped and re-initialised where it should have been
	// started with -e, and as a founder it would lead a second, empty
	// cluster on the same master set (docs/architecture.md §6).
	foreign map[wire.MasterID]bool
}

// NewMaster starts a master from what its disk holds. The caller must carry
// out the returned batch (its Persist holds the new incarnation) before
// handling any event.
func NewMaster(cfg Config, st Stored, now Instant) (*Master, Batch) {
	m := &Master{
		cfg:        cfg,
		now:        now,
		startedAt:  now,
		role:       Follower,
		hard:       st.Hard,
		peers:      map[wire.MasterID]*peerView{},
		voters:     map[wire.CSID]*voterRec{},
		hbSent:     map[uint64]sentHB{},
		progress:   map[wire.MasterID]*progress{},
		toRegister: map[wire.CSID]Chunkserver{},
		foreign:    map[wire.MasterID]bool{},
		quietSince: now,
		nextPeer:   now,
	}
	m.log.reset(st.Base)
	m.log.append(st.Entries...)
	if s := st.Snapshot; s != nil {
		// A snapshot is committed history. One received from another master
		// is written before the log it replaces (Persist order), so a crash
		// between the two leaves a snapshot the log may not agree with:
		// the log then restarts after it.
		if s.Pos.Version < m.log.base.Version {
			panic(fmt.Sprintf("invariant log-base: stored snapshot %v below the log base %v", s.Pos, m.log.base))
		}
		if s.Pos.Version > m.log.Len() || !m.log.Has(s.Pos) {
			// The store still holds the old log: trim and truncate it to
			// the snapshot too, before anything is appended after it
			// (docs/architecture.md §10, "Snapshots").
			b, v := s.base(), s.Pos.Version
			m.log.reset(b)
			m.persist(Persist{Trim: &b, TruncateAfter: &v})
		}
		if s.Pos.Version > m.hard.Commit.Version {
			m.hard.Commit = s.Pos
		}
		m.snap, m.kv = s, s.kv()
	} else if m.log.base.Version > 0 {
		panic(fmt.Sprintf("invariant log-base: log trimmed to %v without a snapshot", m.log.base))
	}
	if m.hard.Commit.Version > m.log.Len() || !m.log.Has(m.hard.Commit) {
		panic(fmt.Sprintf("invariant stored-commit: commit %v not in stored log (last %v)", m.hard.Commit, m.log.Last()))
	}
	m.kv.applyUpTo(&m.log, m.hard.Commit.Version)
	m.hard.Incarnation++
	m.persistHard()
	return m, m.flush()
}

// Role returns the current role.
func (m *Master) Role() Role { return m.role }

// Epoch is the master's own epoch in ELECT, LEADER and DEPUTY, and the
// highest epoch it has seen otherwise.
func (m *Master) Epoch() uint64 {
	if m.role.TakesVotes() {
		return m.hard.Epoch
	}
	return m.hard.MaxEpoch
}

// Hard returns the durable record as this master holds it.
func (m *Master) Hard() HardState { return m.hard }

// Log gives read access to the changelog.
func (m *Master) Log() *Log { return &m.log }

// Acked is the newest position this LEADER has acknowledged.
func (m *Master) Acked() Pos { return m.acked }

// HasMetadata reports whether the master holds any metadata (not INIT).
func (m *Master) HasMetadata() bool { return m.log.Len() > 0 }

// Eligible reports whether the master may be ELECT: it holds metadata, and
// under its own configs a tally could be won at all (with every voter for
// it). The second part matters only during bootstrap, where an inherited
// first registration not yet in force can be won by the founder alone.
func (m *Master) Eligible() bool {
	if !m.HasMetadata() {
		return false
	}
	all := func(c *ClusterConfig) bool {
		e := m.electorate(c)
		if e.Size() == 0 {
			return m.mayBootstrap(c)
		}
		return e.Tally(func(wire.CSID) quorum.Vote { return quorum.For }).Outcome == quorum.Won
	}
	latest, prev := m.log.Configs(m.log.Len())
	if latest == nil {
		return false
	}
	if prev != nil && latest.Version > m.hard.InForce && !all(prev) {
		return false
	}
	return all(latest)
}

// Reasons Ineligible gives (stable: the listings map them to text).
const (
	IneligibleNoMetadata = "no-metadata"     // INIT: started with -e, not synced yet
	IneligibleFounder    = "founder-only"    // bootstrap: only the founder can win until a registration is in force
	IneligibleForeign    = "foreign-cluster" // the founder beside a master of another cluster (ForeignCluster)
	IneligibleUnwinnable = "unwinnable"      // its registry could not be won even with every vote
)

// Ineligible says why the master may not be ELECT, "" when it may
// (Eligible): what mfscli -SLQ prints when nobody counts votes.
func (m *Master) Ineligible() string {
	switch {
	case m.Eligible():
		return ""
	case !m.HasMetadata():
		return IneligibleNoMetadata
	}
	latest, prev := m.log.Configs(m.log.Len())
	boot := latest != nil && latest.Bootstrap
	if prev != nil && latest.Version > m.hard.InForce && prev.Bootstrap {
		boot = true // the first registration is not in force yet
	}
	switch {
	case boot && latest.Founder == m.cfg.ID && len(m.foreign) > 0:
		return IneligibleForeign
	case boot:
		return IneligibleFounder
	}
	return IneligibleUnwinnable
}

// Leader is the LEADER this master recorded (possibly itself).
func (m *Master) Leader() wire.MasterID {
	if m.role == Leader {
		return m.cfg.ID
	}
	return m.leader
}

// Registry returns the newest registry and location map in the log.
func (m *Master) Registry() *ClusterConfig {
	c, _ := m.log.Configs(m.log.Len())
	return c
}

// HoldsQuorum reports whether this master is LEADER and the votes it may
// count at t (its own clock) make a quorum: the window in which it could
// accept a change. The simulator checks S1 with it.
func (m *Master) HoldsQuorum(t Instant) bool {
	return m.role == Leader && m.quorumAt(t, nil) == quorum.Won
}

// Accepting reports whether a change arriving at now would be accepted:
// LEADER, not handing over, and a quorum of votes it may still count.
func (m *Master) Accepting(now Instant) bool {
	return m.role == Leader && m.handover == wire.NoMaster && m.quorumAt(now, nil) == quorum.Won
}

// Sync is the sync state shown for a FOLLOWER or USURPER.
func (m *Master) Sync() SyncState {
	switch {
	case !m.HasMetadata():
		return Init
	case m.role == Leader:
		return Synced
	case !m.leaderFresh():
		return Desync
	}
	if p := m.peers[m.leader]; p != nil && p.seen && p.st.Last.Version > m.log.Len() {
		return Delayed
	}
	return Synced
}

func (m *Master) leaderFresh() bool {
	return m.leaderSeen && m.leader != wire.NoMaster && m.now.Sub(m.leaderHeard) < m.cfg.PeerTimeout
}

// NextDeadline is when the driver must call Step with a Tick at the latest.
// Only deadlines still ahead count: one already passed was acted on (or its
// condition does not hold) in the Step that passed it.
func (m *Master) NextDeadline() Instant {
	if m.role == Dummy {
		return Never
	}
	d := Never
	at := func(t Instant) {
		if t > m.now && t < d {
			d = t
		}
	}
	at(m.nextPeer)
	if m.role.TakesVotes() {
		at(m.nextHB)
		for _, v := range m.voters {
			at(v.validUntil)
		}
	}
	switch m.role {
	case Follower, Usurper:
		if m.Eligible() {
			at(m.selfNominateAt())
		}
		if m.keeps() {
			at(m.startedAt.Add(m.cfg.PeerTimeout)) // mayReclaim's wait
		}
	case Elect:
		at(m.lastVoteSeen.Add(m.cfg.ElectTimeout))
		if m.cfg.DeputyElectionTime > 0 {
			at(m.electSince.Add(m.cfg.DeputyElectionTime))
		}
	case Leader:
		if m.handover != wire.NoMaster {
			at(m.handoverSince.Add(m.cfg.HandoverTimeout))
		}
	}
	return d
}

func (m *Master) selfNominateAt() Instant {
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
func (m *Master) Step(now Instant, ev Event) Batch {
	if now < m.now {
		panic(fmt.Sprintf("invariant monotonic-clock: %d after %d", now, m.now))
	}
	m.now = now
	if m.role == Dummy {
		m.ignore("dummy")
		return m.flush()
	}
	// Time first: a master resumed from a freeze fences itself before it
	// looks at anything that arrived meanwhile.
	m.checkQuorum()
	switch e := ev.(type) {
	case Tick:
	case Probe:
		m.onProbe(e)
	case VoteHello:
		m.onVoteHello(e)
	case VoteBye:
		m.onVoteBye(e)
	case ConnLost:
		delete(m.voters, e.CS)
	case HeartbeatAck:
		m.onHeartbeatAck(e)
	case PeerStatus:
		m.onPeerStatus(e)
	case Append:
		m.onAppend(e)
	case AppendAck:
		m.onAppendAck(e)
	case FetchReq:
		m.onFetchReq(e)
	case FetchResp:
		m.onFetchResp(e)
	case SnapshotChunk:
		m.onSnapshotChunk(e)
	case SnapshotSaved:
		m.onSnapshotSaved(e)
	case ClientWrite:
		m.onClientWrite(e)
	case ClientRead:
		m.onClientRead(e)
	case Admin:
		m.onAdmin(e)
	case ForeignCluster:
		if !m.foreign[e.Master] {
			m.foreign[e.Master] = true
			m.ignore("foreign-cluster")
		}
	default:
		m.ignore("unknown-event")
	}
	m.timers()
	m.clearForced()
	m.maybeSnapshot()
	return m.flush()
}

// flush hands the step's batch over, with the durable record last when
// it changed.
func (m *Master) flush() Batch {
	if m.hardDirty {
		h := m.hard
		m.persist(Persist{Hard: &h})
		m.hardDirty = false
	}
	b := m.out
	m.out = Batch{}
	return b
}

func (m *Master) persist(p Persist) { m.out.Persist = append(m.out.Persist, p) }

func (m *Master) ignore(reason string) { m.out.Ignored = append(m.out.Ignored, reason) }

// persistHard marks the durable record changed; flush writes it once per
// batch, whatever changed it how often.
func (m *Master) persistHard() { m.hardDirty = true }

func (m *Master) send(to Peer, msg wire.Message) {
	m.out.Sends = append(m.out.Sends, Send{To: to, Msg: msg})
}

// ---- roles -----------------------------------------------------------------

// become moves to a new role through the table, applying the disconnect
// rules first.
func (m *Master) become(to Role, reason string) {
	from := m.role
	rule, ok := FindRule(from, to, reason)
	if !ok {
		panic(fmt.Sprintf("invariant transition-table: %v -> %v (%s) is not in docs/roles.md", from, to, reason))
	}
	if rule.Disconnect != MustDisconnect(from, to) {
		panic(fmt.Sprintf("invariant disconnect-rule: table row %s disagrees with MustDisconnect", rule.Section))
	}
	var disc []Disconnect
	if rule.Disconnect {
		disc = m.disconnectAll(m.releaseNext)
	}
	m.releaseNext = wire.NoMaster
	m.role = to
	if to == Follower || to == Dummy {
		m.placed = false
	}
	m.out.Transitions = append(m.out.Transitions,
		Transition{From: from, To: to, Epoch: m.Epoch(), Reason: reason, Section: rule.Section, Disconnects: disc})
	switch to {
	case Leader:
		m.enterLeader()
	case Elect:
		m.electSince, m.lastVoteSeen = m.now, m.now
	}
	if !to.TakesVotes() {
		m.voters = map[wire.CSID]*voterRec{}
		m.hbSent = map[uint64]sentHB{}
	}
	if from == Leader {
		// The recorded LEADER is no longer this master: hand out the
		// handover target, or none, until a new LEADER is heard of.
		m.leader, m.leaderSeen = m.handover, false
		m.pending = nil
		m.handover = wire.NoMaster
		m.progress = map[wire.MasterID]*progress{}
	}
	m.quietSince = m.now
	m.sendStatus()
}

// disconnectAll is the disconnect rule: every chunkserver is released (it
// may vote elsewhere at once: this master no longer counts it), then
// clients and other sessions are closed. next is a master the chunkservers
// should vote for at once (a handover), or none.
func (m *Master) disconnectAll(next wire.MasterID) []Disconnect {
	var bye []Send
	for _, id := range m.voterIDs() {
		v := m.voters[id]
		bye = append(bye, Send{To: ToCS(id), Msg: VoteRelease{From: m.cfg.ID, Incarnation: m.hard.Incarnation, Session: v.session, Next: next}})
	}
	// Votes stop counting before the goodbyes leave.
	m.voters = map[wire.CSID]*voterRec{}
	return []Disconnect{{Class: ConnChunkservers, Goodbyes: bye}, {Class: ConnClients}, {Class: ConnSessions}}
}

func (m *Master) voterIDs() []wire.CSID {
	ids := make([]wire.CSID, 0, len(m.voters))
	for id := range m.voters {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// startElect takes a new epoch above any seen and becomes ELECT. The epoch
// is persisted before any heartbeat carries it (Persist sorts first).
func (m *Master) startElect(reason string) {
	if !m.Eligible() {
		panic("invariant eligibility: a master without metadata cannot be ELECT")
	}
	if !m.newEpoch(m.hard.MaxEpoch) {
		return
	}
	m.become(Elect, reason)
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
	m.hbSent = map[uint64]sentHB{}
	m.persistHard()
	return true
}

func (m *Master) enterLeader() {
	m.leader, m.leaderSeen, m.leaderHeard = m.cfg.ID, true, m.now
	m.hard.Yielded = false
	m.hard.LeaderEpoch = m.hard.Epoch
	m.persistHard()
	// A new term starts with an entry of its own epoch.
	e := Entry{Pos: Pos{Version: m.log.Len() + 1, Epoch: m.hard.Epoch}, Kind: EntryNoop}
	m.log.append(e)
	m.persist(Persist{Append: []Entry{e}})
	m.replicated, m.acked = m.hard.Commit, m.hard.Commit
	m.kv.applyUpTo(&m.log, m.acked.Version)
	m.progress = map[wire.MasterID]*progress{}
	for _, id := range m.cfg.Masters {
		if id != m.cfg.ID {
			m.progress[id] = &progress{next: m.log.Len()}
		}
	}
	m.replicate()
}

// stepDown leaves LEADER (or ELECT/DEPUTY) for FOLLOWER.
func (m *Master) stepDown(reason string) {
	if m.role == Follower {
		return
	}
	m.become(Follower, reason)
}

// ---- the tally ---------------------------------------------------------------

// quorumAt tallies the votes this master may count at time t, under its
// newest config and, while that config is not yet in force, the one before
// it too (joint). pred narrows which votes count (nil: all).
func (m *Master) quorumAt(t Instant, pred func(*voterRec) bool) quorum.Outcome {
	if !m.role.TakesVotes() {
		return quorum.Lost
	}
	return m.outcome(m.countable(t, pred))
}

// countable: the vote may be counted at t (its lease holds and it was
// given to this master's current epoch), and pred (if any) holds.
func (m *Master) countable(t Instant, pred func(*voterRec) bool) func(*voterRec) bool {
	return func(v *voterRec) bool {
		return v.validUntil > t && v.ackEpoch == m.hard.Epoch && (pred == nil || pred(v))
	}
}

// sessionsQuorum: the open vote sessions alone would make a quorum. An ELECT
// proposes its epoch to voters only from then on (a pre-vote): a candidate
// cut off with a minority never raises the voters' epochs, so it cannot
// unseat a healthy LEADER when it comes back.
func (m *Master) sessionsQuorum() bool {
	return m.outcome(func(*voterRec) bool { return true }) == quorum.Won
}

// outcome tallies the votes for which counts holds under the newest config
// and, while that is not yet in force, the one before it too (joint).
func (m *Master) outcome(counts func(*voterRec) bool) quorum.Outcome {
	latest, prev := m.log.Configs(m.log.Len())
	if latest == nil {
		return quorum.Lost
	}
	if prev != nil && latest.Version > m.hard.InForce {
		return quorum.Joint(m.tally(prev, counts), m.tally(latest, counts))
	}
	return m.tally(latest, counts).Outcome
}

// tallyUnder counts the votes valid at t under one config.
func (m *Master) tallyUnder(c *ClusterConfig, t Instant, pred func(*voterRec) bool) quorum.Tally {
	return m.tally(c, m.countable(t, pred))
}

// tally counts under one config. An empty registry can be won only by the
// founder, and only before any chunkserver ever registered (bootstrap:
// docs/roles.md §5.2, docs/architecture.md §6).
func (m *Master) tally(c *ClusterConfig, counts func(*voterRec) bool) quorum.Tally {
	e := m.electorate(c)
	if e.Size() == 0 {
		if m.mayBootstrap(c) {
			return quorum.Tally{Outcome: quorum.Won, Empty: true}
		}
		return quorum.Tally{Outcome: quorum.Lost, Empty: true}
	}
	return e.Tally(func(id wire.CSID) quorum.Vote {
		// A session from another address than the member's is not that
		// member's vote (an id handed out twice: see Chunkserver.Is).
		if v := m.voters[id]; v != nil && counts(v) {
			if mem, _ := c.Member(id); mem.Is(v.addr, v.port) {
				return quorum.For
			}
		}
		return quorum.Unknown
	})
}

func (m *Master) electorate(c *ClusterConfig) quorum.Electorate {
	e, ok := m.electorates[c]
	if !ok {
		if len(m.electorates) > 8 || m.electorates == nil {
			m.electorates = map[*ClusterConfig]quorum.Electorate{}
		}
		e = m.withoutTempRemoved(c).Electorate()
		m.electorates[c] = e
	}
	return e
}

// counted returns the votes valid now, sorted by id.
func (m *Master) counted() []*voterRec {
	var out []*voterRec
	ok := m.countable(m.now, nil)
	for _, id := range m.voterIDs() {
		if v := m.voters[id]; ok(v) {
			out = append(out, v)
		}
	}
	return out
}

// checkQuorum fences a LEADER whose countable votes no longer make a quorum.
func (m *Master) checkQuorum() {
	if m.role == Leader && m.quorumAt(m.now, nil) != quorum.Won {
		m.stepDown(ReasonQuorumLost)
	}
}

// ---- chunkserver side ----------------------------------------------------------

func (m *Master) onProbe(p Probe) {
	m.send(ToCS(p.CS), m.probeReply(p.Nonce))
}

func (m *Master) probeReply(nonce uint64) ProbeReply {
	return ProbeReply{
		From: m.cfg.ID, Incarnation: m.hard.Incarnation, Nonce: nonce,
		Role: m.role, Epoch: m.Epoch(), Leader: m.Leader(), LeaderFresh: m.role == Leader || m.leaderFresh(),
		Eligible: m.Eligible(), Sync: m.Sync(), Last: m.log.Last(),
		Usurper: m.role == Usurper, Keep: m.keeps(), Yielded: m.hard.Yielded,
	}
}

func (m *Master) onVoteHello(h VoteHello) {
	member := m.registeredAt(h.CS, h.Addr, h.Port)
	if member {
		m.endTempRemoval(h.CS, "it asked for a vote session")
	}
	// Epochs are taken only from a registered member at its own address,
	// and only within reach of what this master has seen. A LEADER takes
	// none from a hello: a voter promised to a newer epoch refuses its
	// heartbeat, and that refusal (on the voter's own session) unseats it.
	if !member || m.role == Leader || m.implausible(h.MaxEpoch) {
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
	if !m.role.TakesVotes() {
		canElect := m.role == Follower || m.role == Usurper
		if h.Nominate && canElect && m.Eligible() {
			m.startElect(ReasonNominated)
		}
		if !m.role.TakesVotes() {
			if h.Nominate && !m.Eligible() {
				m.ignore("nominated-without-metadata")
			}
			m.send(ToCS(h.CS), Redirect{From: m.cfg.ID, Session: h.Session, Leader: m.Leader()})
			return
		}
	}
	if c, ok := m.Registry().Member(h.CS); ok && !c.Is(h.Addr, h.Port) {
		m.ignore("id-taken")
		m.send(ToCS(h.CS), Redirect{From: m.cfg.ID, Session: h.Session, Leader: m.Leader(), IDTaken: true})
		return
	}
	if old := m.voters[h.CS]; old != nil && old.session >= h.Session && old.addr == h.Addr && old.port == h.Port {
		// An older session, or this one again (a duplicate): keep what the
		// session has earned. (From another address it is not the same
		// chunkserver's: a registered id was checked above, and for an id
		// not registered yet the newest claim replaces the old one, so a
		// made-up session number cannot lock the real holder out.)
		m.ignore("stale-session")
		return
	}
	m.voters[h.CS] = &voterRec{session: h.Session, addr: h.Addr, port: h.Port, voterOnly: h.VoterOnly}
	m.lastVoteSeen = m.now
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
	case m.role == Elect && m.sessionsQuorum():
		m.heartbeatNow() // the sessions just made a quorum: propose the epoch to all
	default:
		m.heartbeatTo(h.CS)
	}
}

func (m *Master) onVoteBye(b VoteBye) {
	v := m.voters[b.CS]
	if v == nil || v.session != b.Session {
		m.ignore("stale-session")
		return
	}
	if b.Addr != v.addr {
		m.ignore("wrong-address")
		return
	}
	delete(m.voters, b.CS)
	m.send(ToCS(b.CS), VoteRelease{From: m.cfg.ID, Incarnation: m.hard.Incarnation, Session: b.Session})
}

func (m *Master) onHeartbeatAck(a HeartbeatAck) {
	v := m.voters[a.CS]
	if v == nil || v.session != a.Session {
		m.ignore("stale-session")
		return
	}
	// Only the connection the session was opened from speaks for it: an
	// ack from any other address (a clone, an impostor that learnt the
	// session number) is not this voter's.
	if a.Addr != v.addr {
		m.ignore("wrong-address")
		return
	}
	if m.implausible(a.MaxEpoch) {
		delete(m.voters, a.CS)
		return
	}
	if !a.OK {
		// The voter owns up to an epoch: a newer one, or this very epoch
		// given to another master or to another incarnation of this one (a
		// data directory rolled back to before it took the epoch).
		reused := a.MaxEpoch == m.hard.Epoch && (a.EpochOwner != m.cfg.ID || (a.EpochInc != 0 && a.EpochInc != m.hard.Incarnation))
		if a.MaxEpoch > m.hard.MaxEpoch || reused {
			m.onHigherEpoch(a.MaxEpoch)
			return
		}
		delete(m.voters, a.CS)
		m.ignore("vote-refused")
		return
	}
	if a.Granted == 0 {
		// A keepalive's answer: no vote, but what the voter knows.
		v.knownReg, v.inForce, v.commit, v.commitTag = a.KnownReg, a.InForce, a.Commit, a.CommitTag
		m.lastVoteSeen = m.now
		if m.role == Elect && a.MaxEpoch >= m.hard.Epoch && a.EpochOwner != m.cfg.ID && !m.newEpoch(a.MaxEpoch) {
			m.stepDown(ReasonNoVotes) // propose above it once sessions make a quorum; none is left
		}
		return
	}
	sent, ok := m.hbSent[a.Seq]
	if !ok || sent.epoch < v.ackEpoch {
		m.ignore("stale-ack")
		return
	}
	// An honest voter never grants more than was asked; a forged grant of
	// hours must not keep a vote counted after its sender fell silent.
	granted := min(a.Granted, m.cfg.VoteLease)
	if until := sent.at.Add(m.cfg.CountedLease(granted)); until > v.validUntil || sent.epoch != v.ackEpoch {
		v.validUntil = until
	}
	v.ackEpoch = sent.epoch
	if sent.epoch == m.hard.Epoch {
		v.ackedSeq = max(v.ackedSeq, a.Seq)
	}
	v.knownReg, v.inForce, v.commit, v.commitTag = a.KnownReg, a.InForce, a.Commit, a.CommitTag
	m.lastVoteSeen = m.now
	switch m.role {
	case Elect:
		m.tryWin()
	case Leader:
		m.noteRegistration(a.CS, v)
		m.advanceAcked()
		m.checkInForce()
		if m.readHB != 0 && a.Seq >= m.readHB {
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
	case Leader:
		if e > m.hard.Epoch {
			m.stepDown(ReasonHigherEpoch)
		}
	case Deputy:
		if e > m.hard.Epoch {
			m.stepDown(ReasonHigherEpoch)
		}
	case Elect:
		// Still a candidate: take a newer epoch and ask again.
		if e >= m.hard.Epoch {
			if !m.newEpoch(e) {
				m.stepDown(ReasonNoVotes)
				return
			}
			m.heartbeatNow()
		}
	}
}

// tryWin is ELECT -> LEADER: the tally is won, and the catch-up rule holds.
func (m *Master) tryWin() {
	var inForce uint64
	for _, v := range m.counted() {
		inForce = max(inForce, v.inForce)
	}
	// A voter that knows a config version to be in force learned it from a
	// LEADER that saw quorums under both versions have it: safe to adopt
	// before tallying.
	if inForce > m.hard.InForce && inForce <= m.Registry().Version {
		m.hard.InForce = inForce
		m.persistHard()
	}
	if m.quorumAt(m.now, nil) != quorum.Won {
		return
	}
	// The catch-up rule: the voters whose reports this log satisfies must
	// themselves make a quorum.
	cv := m.Registry().Version
	satisfied := func(v *voterRec) bool { return Satisfies(&m.log, cv, v.commit, v.knownReg) }
	if m.quorumAt(m.now, satisfied) != quorum.Won {
		var need Pos
		var tag uint64
		for _, v := range m.counted() {
			if !satisfied(v) && (v.commitTag > tag || (v.commitTag == tag && v.commit.Version > need.Version)) {
				need, tag = v.commit, v.commitTag
			}
		}
		m.catchUp(need)
		return
	}
	commit := m.hard.Commit
	for _, v := range m.counted() {
		if satisfied(v) && v.commit.Version > commit.Version {
			commit = v.commit
		}
	}
	if commit != m.hard.Commit {
		m.hard.Commit = commit
		m.persistHard()
	}
	m.become(Leader, ReasonWon)
}

// catchUp asks the most advanced master it can reach for what it lacks.
func (m *Master) catchUp(need Pos) {
	if m.now < m.fetchAt {
		return
	}
	best := wire.NoMaster
	var bestLast Pos
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
		m.ignore("no-catch-up-source")
		return
	}
	m.fetchAt = m.now.Add(m.cfg.PeerInterval)
	m.send(ToMaster(best), FetchReq{From: m.cfg.ID, After: m.hard.Commit.Version})
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
	m.send(ToCS(cs), m.heartbeat(cs, v.session, m.hbSeq))
}

func (m *Master) heartbeat(cs wire.CSID, session, seq uint64) Heartbeat {
	hb := Heartbeat{
		From: m.cfg.ID, Incarnation: m.hard.Incarnation, Session: session, Seq: seq,
		Role: m.role, Epoch: m.hard.Epoch, Lease: m.cfg.VoteLease, InForce: m.hard.InForce,
	}
	if m.keepaliveOnly() {
		hb.Keepalive, hb.Epoch, hb.Lease = true, 0, 0
	}
	cfg := m.Registry()
	if r, n, ok := cfg.Rank(cs); ok {
		hb.Rank, hb.Ranks = uint32(r), uint32(n)
	} else {
		hb.Rank, hb.Ranks = uint32(n), uint32(n+1)
	}
	if m.role == Leader {
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
	return m.role == Deputy || (m.role == Elect && !m.sessionsQuorum())
}

// noteSent remembers when the heartbeat hbSeq left, so that its
// acknowledgement can be counted; a keepalive asks for nothing to count.
func (m *Master) noteSent() {
	if !m.keepaliveOnly() {
		m.hbSent[m.hbSeq] = sentHB{at: m.now, epoch: m.hard.Epoch}
	}
}

func (m *Master) heartbeatAll() {
	m.hbSeq++
	if m.readRound {
		m.readHB, m.readRound = m.hbSeq, false
	}
	m.noteSent()
	for _, id := range m.voterIDs() {
		m.send(ToCS(id), m.heartbeat(id, m.voters[id].session, m.hbSeq))
	}
	// Acks to heartbeats older than a promise cannot extend anything.
	for s, h := range m.hbSent {
		if m.now.Sub(h.at) > 2*m.cfg.VoteLease {
			delete(m.hbSent, s)
		}
	}
	m.nextHB = m.now.Add(m.cfg.HeartbeatInterval)
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
	m.toRegister[id] = Chunkserver{ID: id, Addr: v.addr, Port: v.port, VoterOnly: v.voterOnly}
}

// ---- timers --------------------------------------------------------------------

func (m *Master) timers() {
	if m.now >= m.nextPeer {
		m.sendStatus()
		if m.role == Leader {
			m.replicate()
		}
		m.nextPeer = m.now.Add(m.cfg.PeerInterval)
	}
	switch m.role {
	case Follower, Usurper:
		if m.Eligible() && m.now >= m.selfNominateAt() {
			m.startElect(ReasonSelfNominated)
		} else if m.mayReclaim() {
			m.become(Usurper, ReasonKeepLeader)
		}
	case Elect:
		switch {
		case m.quorumAt(m.now, nil) == quorum.Won:
			m.tryWin()
		case m.cfg.DeputyElectionTime > 0 && m.now.Sub(m.electSince) >= m.cfg.DeputyElectionTime:
			m.become(Deputy, ReasonDeputyTime)
		case len(m.counted()) == 0 && m.now.Sub(m.lastVoteSeen) >= m.cfg.ElectTimeout:
			m.stepDown(ReasonNoVotes)
		}
	case Deputy:
		if m.sessionsQuorum() {
			m.stepDown(ReasonQuorumBack)
		}
	case Leader:
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

// CountedVoters lists the chunkservers whose votes this master counts now,
// by id: what the listings and the votes-per-location metric show.
func (m *Master) CountedVoters() []wire.CSID {
	var out []wire.CSID
	ok := m.countable(m.now, nil)
	for _, id := range m.voterIDs() {
		if ok(m.voters[id]) {
			out = append(out, id)
		}
	}
	return out
}

// Behind is how many versions this master's changelog is behind the newest
// version its recorded LEADER reported (0 on the LEADER, or when no LEADER
// is fresh): the gap the listings show beside the sync state.
func (m *Master) Behind() uint64 {
	if m.role == Leader || !m.leaderFresh() {
		return 0
	}
	if p := m.peers[m.leader]; p != nil && p.seen && p.st.Last.Version > m.log.Len() {
		return p.st.Last.Version - m.log.Len()
	}
	return 0
}

// TallyView is one count for this master, for the listings: Votes counts
// the votes it may count now (what decides), Reach the vote sessions open
// to it (who reaches it), both under the config of version Config.
type TallyView struct {
	Config uint64
	Votes  quorum.Tally
	Reach  quorum.Tally
}

// Tallies counts for this master at now, under its newest config and,
// while that is not in force yet, under the one before it too (both must
// be won). Nil for a master that takes no votes.
func (m *Master) Tallies(now Instant) []TallyView {
	if !m.role.TakesVotes() {
		return nil
	}
	latest, prev := m.log.Configs(m.log.Len())
	if latest == nil {
		return nil
	}
	view := func(c *ClusterConfig) TallyView {
		return TallyView{Config: c.Version, Votes: m.tally(c, m.countable(now, nil)),
			Reach: m.tally(c, func(*voterRec) bool { return true })}
	}
	out := []TallyView{view(latest)}
	if prev != nil && latest.Version > m.hard.InForce {
		out = append(out, view(prev))
	}
	return out
}

// Underway names a role change under way, for the listings: a LEADER
// handing over ("LEADER -> FOLLOWER"), an ELECT that has won the count but
// is still catching up before it may lead ("ELECT -> LEADER"); "" if none.
func (m *Master) Underway(now Instant) string {
	switch {
	case m.role == Leader && m.handover != wire.NoMaster:
		return "LEADER -> FOLLOWER"
	case m.role == Elect && m.quorumAt(now, nil) == quorum.Won:
		return "ELECT -> LEADER"
	}
	return ""
}

// InForce is the newest config version this master knows to be in force.
func (m *Master) InForce() uint64 { return m.hard.InForce }
