package master

import (
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"

	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// The object-store witness (docs/architecture.md §7.4). When
// the registry names one, an even split of the locations is broken by its
// lease instead of by the default location. To the tally the lease is one
// more vote, cast only for an exact half: the master that holds it counts
// it like a voter's, from the witness's own record (witRec), which also
// carries what a voter knows (the commit point and registry version the
// holder wrote into the object). Every rule that counts votes (the quorum
// deadline, the catch-up rule, the ack rule, a config put in force) so
// counts the witness too, with nothing of its own.
//
// A healthy cluster never calls the store: a master asks for the lease only
// while a strict majority of the locations is out of its reach (a LEADER
// whose majority is about to lapse, an ELECT that has carried exactly half
// for WitnessConfig.Delay), and gives it up once a strict majority has
// held for a whole witness lease.

// WitnessProtocol is the protocol version that brought the witness: a
// LEADER names one in the registry only once every master speaks it.
const WitnessProtocol = 4

// WitnessConfig is one master's side of the witness.
type WitnessConfig struct {
	// Store: this master can reach the witness's store (its WITNESS_* keys
	// are set). Without it the master never takes the lease, and where the
	// registry names a witness it wins only with a strict majority.
	Store bool
	// Cluster is the metadata id the lease record is written with.
	Cluster string
	// Lease is the lease's timing (WITNESS_LEASE and the clock drift).
	Lease witness.Config
	// Delay: an ELECT that carries exactly half of the locations waits this
	// long for more before it asks for the lease (WITNESS_DELAY): the other
	// half's votes usually come within it in a healthy election.
	Delay time.Duration
	// Log: the store stands in for missing follower masters (WITNESS_LOG;
	// on by default). Off, the witness only breaks ties.
	Log bool
	// The store log's bounds (WITNESS_LOG_OBJECTS, WITNESS_LOG_BYTES): at
	// either the store stands in for no more changes (they wait, or with
	// ACK_ALONE rest on this disk) until followers take some off it. 0:
	// no bound. LogAge (WITNESS_LOG_AGE): how old its oldest object may
	// grow before the alarm says so.
	LogObjects int
	LogBytes   uint64
	LogAge     time.Duration
}

// DefaultWitnessConfig: the lease's defaults, and a delay of two heartbeat
// intervals of the shipped defaults.
func DefaultWitnessConfig() WitnessConfig {
	return WitnessConfig{Lease: witness.DefaultConfig(), Delay: 300 * time.Millisecond, Log: true,
		LogObjects: 1000, LogBytes: 1 << 30, LogAge: 24 * time.Hour}
}

// witnessState is what a master keeps of the witness.
type witnessState struct {
	wit *witness.Lease
	// witRec is the witness as a vote while this master counts the lease
	// (nil when it does not): validUntil the lease's end, ackEpoch and
	// commitTag its lease_epoch, commit and knownReg what the record holds.
	witRec *voterRec
	// witID is the witness id of the record witRec stands for.
	witID string
	// witGen changes whenever witRec does: a cached deadline counted with
	// it may no longer hold (quorumKey).
	witGen  uint64
	witWant witness.Want
	// halfSince: since when an ELECT has carried exactly half (0: not).
	halfSince roles.Instant
	// strictSince: since when a LEADER that holds the lease has had a
	// strict majority well ahead of it (0: not).
	strictSince roles.Instant
	// asideSince: since when an ELECT that cannot take the lease has had
	// exactly half of the locations in session (0: not; stepAside).
	asideSince roles.Instant
	// noWitness leaves the witness out of counts while set (strictUntil).
	noWitness bool
	// relying: a LEADER whose strict majority is about to lapse, so that
	// its acknowledgements and read rounds rest on the witness: only then
	// are its commit point and read rounds written into the record.
	relying bool
}

func (m *Master) initWitness() {
	m.wit = witness.New(m.cfg.witnessLease(), witness.Self{ID: m.cfg.ID, Incarnation: m.hard.Incarnation, Cluster: m.cfg.Witness.Cluster})
}

// witnessLease is the lease's timing under this master's clock bound: one
// MAX_CLOCK_DRIFT for votes and the witness alike.
func (c Config) witnessLease() witness.Config {
	l := c.Witness.Lease
	l.Drift = c.MaxClockDrift
	return l
}

// witnessFor is the witness's vote record under config c: witRec when c
// names the witness this master holds the lease of, else nil.
func (m *Master) witnessFor(c *registry.ClusterConfig) *voterRec {
	if c == nil || c.Witness == "" || m.witRec == nil || m.witID != c.Witness || m.noWitness {
		return nil
	}
	return m.witRec
}

// withWitness adds the witness's record to vs, votes counted now, when it
// counts now too: what the witness knows weighs in the catch-up and ack
// rules like a voter's report.
func (m *Master) withWitness(vs []*voterRec) []*voterRec {
	if w := m.witnessFor(m.Registry()); w != nil && m.countable(m.now, nil)(w) {
		return append(vs, w)
	}
	return vs
}

// witnessVote is what the witness does in a tally under c that counts the
// votes for which counts holds.
func (m *Master) witnessVote(c *registry.ClusterConfig, counts func(*voterRec) bool) quorum.Vote {
	if w := m.witnessFor(c); w != nil && counts(w) {
		return quorum.For
	}
	return quorum.Unknown
}

// witnessHope is the witness's vote in a count of what could be won: For
// where c names a witness and this master has a store to ask it of (the
// lease may be another's for now; a swap will tell).
func (m *Master) witnessHope(c *registry.ClusterConfig) quorum.Vote {
	if c == nil || c.Witness == "" || !m.cfg.Witness.Store {
		return quorum.Unknown
	}
	return quorum.For
}

// witnessTaken: a peer heard within two PEER_INTERVALs says it counts
// the witness's lease now. A peer cut off from this master is not heard,
// so a split leaves the hope as it was. Two intervals, not PEER_TIMEOUT:
// a holder killed with its site would otherwise hold up the survivors'
// pre-vote, and with it their first read of the lease, by half a second
// (make bench BENCH=sites, the lease written recently: 10.3 -> 10.8 s).
func (m *Master) witnessTaken() bool {
	for id, p := range m.peers {
		if id != m.cfg.ID && p.seen && m.now.Sub(p.heard) < 2*m.cfg.PeerInterval && p.st.WitnessHeld {
			return true
		}
	}
	return false
}

// strictUntil is the quorum deadline without the witness: until when the
// votes counted now make a quorum by a strict majority (0: they do not).
func (m *Master) strictUntil() roles.Instant {
	m.noWitness = true
	defer func() { m.noWitness = false }()
	epoch := m.hard.Epoch
	x, ok := thresholdOf(m, roles.Never, func(v *voterRec) (roles.Instant, bool) { return v.validUntil, v.ackEpoch == epoch })
	if !ok || x <= m.now {
		return 0
	}
	return x
}

// halfCarried: the votes counted now make a quorum with the witness's vote
// and not without it.
func (m *Master) halfCarried() bool {
	ok := m.countable(m.now, nil)
	won := func(wv func(*registry.ClusterConfig) quorum.Vote) bool {
		return m.outcomeW(ok, wv) == quorum.Won
	}
	return won(m.witnessHope) && !won(func(*registry.ClusterConfig) quorum.Vote { return quorum.Unknown })
}

// halfSatisfied: the votes counted now win, but those this log satisfies
// (the catch-up rule, tryWin) make a quorum only with the witness's vote.
// The others report a commit point a later LEADER discarded (a voter told
// of a proposal that was never acknowledged keeps it until a LEADER tells
// it otherwise): the lease lets the satisfied half lead, or nobody would
// (simulator seed 106 with a witness).
func (m *Master) halfSatisfied() bool {
	cv := m.Registry().Version
	ok := m.countable(m.now, func(v *voterRec) bool { return changelog.Satisfies(&m.log, cv, v.commit, v.commitTag, v.knownReg) })
	won := func(wv func(*registry.ClusterConfig) quorum.Vote) bool { return m.outcomeW(ok, wv) == quorum.Won }
	return won(m.witnessHope) && !won(func(*registry.ClusterConfig) quorum.Vote { return quorum.Unknown })
}

// witnessNeed says whether this master should hold the lease now. Where
// a witness is named it counts the votes each step (strictUntil, O(voters)):
// cheap at the sizes two-site clusters run at; a crowd would want it
// cached with the quorum deadline.
func (m *Master) witnessNeed() bool {
	m.relying = false
	if !m.cfg.Witness.Store || !m.HasMetadata() || m.Registry().Witness == "" {
		m.halfSince, m.strictSince = 0, 0
		return false
	}
	switch m.role {
	case roles.Leader:
		m.halfSince = 0
		ahead := m.strictUntil() - m.now
		m.relying = ahead < m.witnessAhead()
		if m.witRec == nil {
			m.strictSince = 0
			// Ask before the majority lapses. (Its votes count now, a
			// strict majority or not: with the lease they would win.)
			return ahead < m.witnessAhead() && m.outcomeW(m.countable(m.now, nil), m.witnessHope) == quorum.Won
		}
		if ahead < m.witnessAhead() {
			m.strictSince = 0
			return true
		}
		if m.strictSince == 0 {
			m.strictSince = m.now
		}
		return m.now.Sub(m.strictSince) < m.cfg.Witness.Lease.Lease
	case roles.Elect:
		m.strictSince = 0
		if m.witRec != nil {
			return true // taken: keep it while the election lasts
		}
		if !m.halfCarried() && !m.halfSatisfied() {
			m.halfSince = 0
			return false
		}
		if m.halfSince == 0 {
			m.halfSince = m.now
		}
		return m.now.Sub(m.halfSince) >= m.cfg.Witness.Delay
	}
	m.halfSince, m.strictSince = 0, 0
	return false
}

// witnessAhead is how long before its strict majority lapses a LEADER
// asks for the lease (and relies on it): a quarter of VOTE_LEASE, 125 ms
// at the defaults. That is two heartbeats unanswered in a row, not one
// late: half a lease (one heartbeat late by a scheduling hiccup) had a
// LEADER on a busy host take and renew the lease at rest, and a site lost
// while it held it cost the other site a whole WITNESS_LEASE. What is left
// is room for a read and a swap on a store that answers in milliseconds;
// one that does not make it costs an election on half and the lease, not
// safety (the lease counts from the write's emission either way).
func (m *Master) witnessAhead() roles.Instant { return roles.Instant(m.cfg.VoteLease / 4) }

// witnessUsable: this master can take the witness's lease as far as it
// knows (a store is set, and it does not refuse it).
func (m *Master) witnessUsable() bool {
	return m.cfg.Witness.Store && m.wit != nil && m.wit.Unusable() == ""
}

// asideWait is how long an ELECT that cannot take the lease waits with
// exactly half in session before it hands over: WITNESS_DELAY, and at least
// two vote leases, for the other half's voters to be free of the LEADER they
// were promised to (a handover to it, a reclaim by KEEP_LEADERSHIP) and
// come over. Handing over at its first exact half, an ELECT that would
// have won them all flapped with the one it handed to (simulator seed 241
// with a witness).
func (m *Master) asideWait() time.Duration {
	return max(m.cfg.Witness.Delay, 2*m.cfg.VoteLease)
}

// stepAside: an ELECT that has carried exactly half of the locations for
// WITNESS_DELAY and cannot take the lease hands its voters to the best
// master that can (a VoteRelease naming it, as a handover does), or every
// voter would stay with a candidate that can never win (§3.6). With no
// such master it stays: nobody could do better.
func (m *Master) stepAside() {
	if m.role != roles.Elect || m.witnessUsable() || !m.HasMetadata() || m.Registry().Witness == "" {
		return
	}
	// Its sessions, not its votes: without the lease to hope for it never
	// proposes its epoch (sessionsQuorum), so it never counts a vote.
	all := func(*voterRec) bool { return true }
	named := func(c *registry.ClusterConfig) quorum.Vote {
		if c != nil && c.Witness != "" {
			return quorum.For
		}
		return quorum.Unknown
	}
	if m.outcomeW(all, named) != quorum.Won || m.outcomeW(all, func(*registry.ClusterConfig) quorum.Vote { return quorum.Unknown }) == quorum.Won {
		m.asideSince = 0
		return
	}
	if m.asideSince == 0 {
		m.asideSince = m.now
	}
	if m.now.Sub(m.asideSince) < m.asideWait() {
		return
	}
	m.handAside(func(st roles.PeerStatus) bool { return st.Witness })
}

// handAside releases this ELECT's voters naming the best fresh, eligible
// peer whose status can says yes to, and steps down (ReasonNoWitness);
// with no such peer it stays. The peer's log may be behind this one: as
// ELECT it catches up from this master (the catch-up rule) before it may
// lead. Better ranks the newest first.
func (m *Master) handAside(can func(roles.PeerStatus) bool) {
	best := wire.NoMaster
	var bc roles.Candidate
	for _, id := range m.cfg.Masters {
		p := m.peers[id]
		if id == m.cfg.ID || !m.fresh(p) || !can(p.st) || !p.st.Eligible {
			continue
		}
		if c := peerCandidate(p.st); best == wire.NoMaster || roles.Better(c, bc) {
			best, bc = id, c
		}
	}
	if best == wire.NoMaster {
		return
	}
	m.releaseNext = best
	m.stepDown(roles.ReasonNoWitness)
}

// witnessStep brings the lease up to date with what this master wants,
// and with in (a Result, or nil).
func (m *Master) witnessStep(in any) {
	if m.wit == nil {
		return
	}
	m.stepAside()
	w := witness.Want{Need: m.witnessNeed(), Epoch: m.hard.Epoch, WitnessID: ""}
	if m.HasMetadata() {
		w.WitnessID = m.Registry().Witness
		commit := m.hard.Commit
		if m.role == roles.Leader {
			commit = m.replicated
		}
		w.Commit = commit
		if latest, _ := m.log.Configs(m.hard.Commit.Version); latest != nil {
			w.KnownReg = latest.Version
		}
		switch {
		case m.role == roles.Leader && !m.relying:
			// A strict majority of the locations knows and confirms what
			// the acknowledgements need: no write for them.
			w.Commit, w.KnownReg = changelog.Pos{}, 0
		case m.role == roles.Leader:
			// A read round: a write emitted from now on confirms the lease
			// as a heartbeat acknowledged after the reads does a vote.
			w.Confirm = m.readHB
		}
	}
	if w.WitnessID == "" || !m.cfg.Witness.Store {
		// Nothing to write: the want stays still, and the lease is not
		// stepped on every commit point of a cluster without a witness.
		w.Commit, w.KnownReg, w.Confirm = changelog.Pos{}, 0, 0
	}
	now := witness.Instant(m.now)
	var reqs []witness.Request
	switch {
	case in != nil:
		m.witWant = w
		reqs = m.wit.Step(now, w)
		reqs = append(reqs, m.wit.Step(now, in)...)
	case w != m.witWant || m.wit.NextDeadline() <= now:
		m.witWant = w
		reqs = m.wit.Step(now, w)
	}
	m.out.Witness = append(m.out.Witness, reqs...)
	gen := m.witGen
	m.refreshWitRec()
	if m.witGen != gen && m.witRec != nil {
		// The witness's vote, or what it knows, changed: what waited for
		// it may move now (a win, an acknowledgement, a config in force).
		switch m.role {
		case roles.Elect:
			m.tryWin()
		case roles.Leader:
			m.advanceAcked()
			if m.configPending() {
				m.checkInForce()
			}
			if m.readHB != 0 {
				m.answerPending()
			}
		}
	}
	if e := m.wit.NeedEpoch(); e != 0 && m.role == roles.Elect && e >= m.hard.Epoch && !m.implausible(e) {
		// Another master wrote the lease at this epoch or a later one:
		// ask again above it, as for a voter's refusal.
		m.onHigherEpoch(e)
	}
}

// refreshWitRec makes witRec what the lease says now.
func (m *Master) refreshWitRec() {
	until := roles.Instant(m.wit.Until(witness.Instant(m.now)))
	if until == 0 {
		if m.witRec != nil {
			m.witRec, m.witID = nil, ""
			m.witGen++
		}
		return
	}
	rec := voterRec{validUntil: until, ackEpoch: m.wit.HeldEpoch(), commit: m.wit.HeldCommit(),
		commitTag: m.wit.HeldEpoch(), knownReg: m.wit.HeldKnownReg(), ackedSeq: m.wit.HeldConfirm()}
	id := m.wit.HeldWitnessID()
	if w := m.witRec; w != nil && w.validUntil == rec.validUntil && w.ackEpoch == rec.ackEpoch && w.commit == rec.commit &&
		w.knownReg == rec.knownReg && w.ackedSeq == rec.ackedSeq && m.witID == id {
		return
	}
	m.witRec, m.witID = &rec, id
	m.witGen++
}

// WitnessCounted reports whether this master counts the witness's lease at
// now (cheap: the simulator's W1 asks it after every event).
func (m *Master) WitnessCounted(now roles.Instant) bool {
	return m.wit != nil && m.wit.Until(witness.Instant(now)) != 0
}

// WitnessStatus is the witness as this master sees it, for operators.
type WitnessStatus struct {
	// Configured: the registry names a witness (ID); Store: this master
	// can reach a store.
	Configured, Store bool
	ID                string
	// Counted: this master counts the lease now, until Until.
	Counted bool
	Until   roles.Instant
	// Lease: what the lease machine knows (the record, the last answer).
	Lease witness.Status
}

// Witness returns the witness as this master sees it at now.
func (m *Master) Witness(now roles.Instant) WitnessStatus {
	s := WitnessStatus{Store: m.cfg.Witness.Store}
	if m.HasMetadata() {
		s.ID = m.Registry().Witness
		s.Configured = s.ID != ""
	}
	if m.wit != nil {
		s.Lease = m.wit.Status(witness.Instant(now))
		if u := roles.Instant(m.wit.Until(witness.Instant(now))); u != 0 {
			s.Counted, s.Until = true, u
		}
	}
	return s
}

func (s WitnessStatus) String() string {
	switch {
	case !s.Configured:
		return "no witness"
	case s.Counted:
		return fmt.Sprintf("witness %s: lease held", s.ID)
	case s.Lease.Blocked != "":
		return fmt.Sprintf("witness %s: %s", s.ID, s.Lease.Blocked)
	}
	return fmt.Sprintf("witness %s", s.ID)
}
