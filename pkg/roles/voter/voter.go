package voter

import (
	"fmt"
	"slices"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Voter is a chunkserver's election logic. It holds at most one vote
// session at a time, and its promise (below) is what makes a vote count for
// at most one master at any true instant.
type Voter struct {
	cfg  Config
	now  roles.Instant
	hard roles.VoterHardState
	rng  uint64
	out  Batch // what this step asks of the driver so far

	voteAfter roles.Instant // a restarted voter keeps quiet until then

	// An orderly stop: stopping from StopRequested on (no session, no
	// grant: voteFor stays NoMaster), stopped once the clean-stop mark
	// was emitted (nothing is stepped after).
	stopping, stopped bool

	// The vote session: voteFor is the master the vote connection is with.
	voteFor    wire.MasterID
	session    uint64
	sessionSeq uint64
	voteSince  roles.Instant
	lastHB     roles.Instant
	granted    time.Duration
	voteRole   roles.Role
	nominated  bool

	// gone and goneWhy: the last LEADER this voter's session with ended,
	// and why (changelog.Why*). A nomination carries them, for the history
	// the new LEADER writes; nothing here decides on them.
	gone    wire.MasterID
	goneWhy string

	// The promise: no vote for any master but promiseTo before
	// promiseUntil (this voter's clock). Invariant: voteFor changes to
	// another master only when no promise to a different master stands.
	promiseTo      wire.MasterID
	promiseInc     uint64
	promiseSession uint64
	promiseStart   roles.Instant
	promiseUntil   roles.Instant
	grantedAt      roles.Instant // the newest grant to promiseTo

	views       map[wire.MasterID]*view
	rank, ranks uint32
	// crowd: the most chunkservers a registry was said to have (heartbeat
	// ranks, probe replies): a voter among thousands probes less often.
	crowd        uint32
	nextProbe    roles.Instant
	probedAt     roles.Instant // the last probe round
	probeNonce   uint64
	leaderless   bool
	nominateAt   roles.Instant
	lateTurns    int           // slots this turn waited for the masters' answers (nominationTurn)
	lateCheck    roles.Instant // when the turn counts another slot without them
	turnProbed   roles.Instant // the first probe round of this turn: answers since count
	nominateNext wire.MasterID // a handover's target: vote for it at once
	hint         wire.MasterID // the LEADER a redirect named
	// helloWait: how long a session waits for its first heartbeat (0:
	// helloTimeout). It doubles, to maxHelloWait, each time a session
	// ends without one; it grows to twice the delay of a first heartbeat
	// that came for a session already given up (the master answers, only
	// slowly); it is back to helloTimeout once a session was answered.
	helloWait time.Duration
	// The last session that ended unanswered: its first heartbeat,
	// arriving late, measures how slowly that master answers.
	prevTo      wire.MasterID
	prevSession uint64
	prevSince   roles.Instant
}

// helloTimeout: a vote session that got no heartbeat this long is dropped.
// maxHelloWait bounds how far it grows: a master answering thousands of
// new sessions at once (a failover or a reconnect storm in a crowd) may
// take seconds to answer each, and voters that gave up and opened new
// sessions each time kept it that busy (10,000 voters: every voter
// reopened its session each 500 ms, then each 2 s, the answers always
// arriving for the session just given up; no LEADER for 30 s). A master
// that is gone is seen sooner by its refused or lost connection.
const (
	helloTimeout = 500 * time.Millisecond
	maxHelloWait = 10 * helloTimeout
)

// firstWait is how long a session waits for its first heartbeat:
// helloWait, and in a crowd at least 200 us per chunkserver the registry
// holds (2 s at 10,000; at most maxHelloWait). A master of 10,000 takes
// seconds to answer them all at an election, and a crowd whose sessions
// all gave up after 500 ms and opened new ones kept its ELECT answering
// sessions already abandoned (heartbeats answered 3 s after they left;
// 33,000 acknowledgements for ended sessions in 7 s), with no LEADER for
// 6 s after a kill -9.
func (v *Voter) firstWait() time.Duration {
	return min(max(helloTimeout, v.helloWait, time.Duration(v.crowd)*crowdHelloWait), maxHelloWait)
}

// crowdHelloWait: see firstWait.
const crowdHelloWait = 200 * time.Microsecond

// NewVoter starts a voter from its durable record. It keeps quiet for
// QuietAfterStart: until any promise made before the start has lapsed.
// The first batch's Persist (Boot raised, the clean-stop mark cleared)
// must be durable before the voter is stepped: a grant of this run must
// never sit beside a mark that says the run before ended clean.
func New(cfg Config, hard roles.VoterHardState, now roles.Instant) (*Voter, Batch) {
	v := &Voter{cfg: cfg, now: now, hard: hard, rng: cfg.Seed | 1, views: map[wire.MasterID]*view{}}
	v.hard.Boot++
	v.hard.CleanStop = false
	if cfg.RecordLost || cfg.RecordDamaged {
		// What it granted or acknowledged may be missing from the record
		// (docs/architecture.md §7, "Voters that forgot"). Its sessions are
		// numbered far from any run the lost record may have counted.
		v.hard.Uncertain = true
		v.hard.Boot += 1 + uint64(v.rand(1<<16))
	}
	v.voteAfter = now.Add(QuietAfterStart(cfg, hard))
	v.nextProbe = now
	h := v.hard
	v.persist(h)
	// Look around at once: the first probes leave with this batch (after
	// its Persist), and NextDeadline has a deadline ahead to report even
	// when the voter need not keep quiet.
	v.decide()
	return v, v.flush()
}

// QuietAfterStart is how long a voter starting from hard keeps quiet
// (docs/architecture.md §3, Restart; docs/roles.md §6.4): not at all when
// no promise of an earlier run can stand (it never promised, or its last
// run stopped in order), else the longest promise it can have made
// (MaxPromise, or MaxGranted if MAX_PROMISE was lowered since).
func QuietAfterStart(cfg Config, hard roles.VoterHardState) time.Duration {
	switch {
	case cfg.RecordLost, cfg.RecordDamaged:
	case hard.CleanStop, hard.NeverPromised():
		return 0
	}
	return max(cfg.MaxPromise, hard.MaxGranted)
}

// Uncertain reports that the voter's record may lack what it
// acknowledged before (VoterHardState.Uncertain): it grants nothing until
// a LEADER's heartbeat restores it, or the operator vouches for it.
func (v *Voter) Uncertain() bool { return v.hard.Uncertain }

// Stopped reports that the voter ended in order (Stopped was emitted).
func (v *Voter) Stopped() bool { return v.stopped }

// Session is the current vote session's number (meaningful while VoteFor
// names a master): what a VoteBye must carry.
func (v *Voter) Session() uint64 { return v.session }

// VoteFor is the master the vote connection is with (none: 0).
func (v *Voter) VoteFor() wire.MasterID { return v.voteFor }

// Promise is the master the voter is bound to and until when.
func (v *Voter) Promise() (wire.MasterID, roles.Instant) {
	if v.now >= v.promiseUntil {
		return wire.NoMaster, 0
	}
	return v.promiseTo, v.promiseUntil
}

// Crowd is the most chunkservers a master said its registry holds.
func (v *Voter) Crowd() int { return int(v.crowd) }

// InCrowd: the registry holds more than PROBE_VOTERS chunkservers, where
// this voter probes less, spreads its turns and its redials, and waits
// longer for answers (docs/roles.md §6.3).
func (v *Voter) InCrowd() bool { return v.cfg.ProbeVoters > 0 && int(v.crowd) > v.cfg.ProbeVoters }

// Config is the voter's settings (as its last MasterSet left them).
func (v *Voter) Config() Config { return v.cfg }

// Hard returns the durable record.
func (v *Voter) Hard() roles.VoterHardState { return v.hard }

// NextDeadline is when the driver must call Step with a Tick at the latest
// (only deadlines still ahead count).
func (v *Voter) NextDeadline() roles.Instant {
	d := roles.Never
	if v.stopped {
		return d
	}
	at := func(t roles.Instant) {
		if t > v.now && t < d {
			d = t
		}
	}
	at(v.nextProbe)
	at(v.voteAfter)
	if v.promiseTo != wire.NoMaster {
		at(v.promiseUntil)
	}
	if v.voteFor != wire.NoMaster {
		at(v.dropAt())
		if v.heartbeatsLate() == roles.Never {
			at(v.lateAt())
		}
	}
	if v.leaderless {
		at(v.nominateAt)
		at(v.turnProbeAt())
		at(v.lateCheck)
	}
	return d
}

// lateAt is when the LEADER's heartbeats count as late: from then on the
// voter probes at full rate (see decide), so that its view is fresh when
// the promise lapses. Four probe intervals before the grant runs out, and
// never sooner than half the grant after the heartbeat: a LEADER of
// thousands renews less often (Config.Scaled), and a voter that took each
// renewal for late would probe every master at full rate all the time.
func (v *Voter) lateAt() roles.Instant {
	return v.lastHB.Add(max(v.granted/2, v.granted-4*v.cfg.ProbeInterval))
}

// probeEvery is the probe interval: PROBE_INTERVAL, times how many
// PROBE_VOTERS the registry holds (a crowd of voters looking for a LEADER
// at full rate would swamp every master: 10,000 at 50 ms are 600,000
// probes a second). A view stays fresh three of these.
func (v *Voter) probeEvery() time.Duration {
	if !v.InCrowd() {
		return v.cfg.ProbeInterval
	}
	// The count is a master's word: bounded, so that a master claiming a
	// registry of millions slows a voter's probes to seconds, not hours.
	return v.cfg.ProbeInterval * time.Duration(min(int(v.crowd)/v.cfg.ProbeVoters, maxProbeSlowdown))
}

// maxProbeSlowdown bounds probeEvery's factor: 400 (20 s at the default
// PROBE_INTERVAL, twice what 10,000 voters ask). A voter that slowed down
// loses little: a master that becomes ELECT or LEADER announces itself,
// a link that comes up is probed at once, and a voter probes ahead of its
// nomination turn.
const maxProbeSlowdown = 400

// content: the voter's session is with a LEADER whose heartbeats are on
// time.
func (v *Voter) content() bool {
	return v.voteFor != wire.NoMaster && v.voteRole == roles.Leader && v.heartbeatsLate() == roles.Never
}

// heartbeatsLate returns when the current LEADER session's heartbeats
// became late, or Never while they are on time (or there is none).
func (v *Voter) heartbeatsLate() roles.Instant {
	if v.voteFor == wire.NoMaster || v.voteRole != roles.Leader || v.now < v.lateAt() {
		return roles.Never
	}
	return v.lateAt()
}

func (v *Voter) dropAt() roles.Instant {
	if v.lastHB == 0 || v.granted == 0 {
		return v.voteSince.Add(v.firstWait())
	}
	return v.lastHB.Add(v.granted)
}

// A voter content with its LEADER probes once per contentProbes probe
// intervals (500 ms at the default 50 ms; in a crowd the interval itself
// grows: probeEvery), and no more often than every contentProbeFloor
// intervals (2 s): at rest its probes and their answers were a third of
// an idle chunkserver's messages. Nothing waits on them: a voter that
// stops being content (its LEADER's heartbeats late, its session over, its
// master no longer LEADER) probes at once (decide), and a master that
// becomes ELECT or LEADER announces itself.
const (
	contentProbes     = 10
	contentProbeFloor = 40
)

// persist asks for the voter's record to be made durable before anything
// else of the batch happens.
func (v *Voter) persist(h roles.VoterHardState) {
	v.out.Persist = append(v.out.Persist, roles.Persist{Voter: &h})
}

func (v *Voter) flush() Batch {
	b := v.out
	v.out = Batch{}
	return b
}

func (v *Voter) send(m wire.MasterID, msg wire.Message) {
	v.out.Sends = append(v.out.Sends, roles.Send{To: roles.ToMaster(m), Msg: msg})
}

func (v *Voter) ignore(reason string) { v.out.Ignored = append(v.out.Ignored, reason) }

func (v *Voter) rand(n int64) int64 {
	v.rng ^= v.rng >> 12
	v.rng ^= v.rng << 25
	v.rng ^= v.rng >> 27
	if n <= 0 {
		return 0
	}
	return int64((v.rng * 2685821657736338717) % uint64(n))
}

// Step advances the voter by one event at its own time now.
func (v *Voter) Step(now roles.Instant, ev roles.Event) Batch {
	if now < v.now {
		panic(fmt.Sprintf("invariant monotonic-clock: %d after %d", now, v.now))
	}
	v.now = now
	if v.stopped {
		// Its last record is written: nothing may change it, and above
		// all no grant may follow the clean-stop mark.
		return Batch{Batch: roles.Batch{Ignored: []string{"stopped"}}}
	}
	switch e := ev.(type) {
	case roles.Tick:
	case roles.StopRequested:
		v.stopping = true
		if v.voteFor != wire.NoMaster {
			// The master drops the vote and answers with a release.
			v.send(v.voteFor, roles.VoteBye{CS: v.cfg.ID, Session: v.session})
			v.endSession()
		}
	case roles.ProbeReply:
		v.onProbeReply(e)
	case roles.Heartbeat:
		v.onHeartbeat(e)
	case roles.VoteRelease:
		v.onRelease(e)
	case roles.Redirect:
		v.onRedirect(e)
	case roles.Refused:
		v.onRefused(e)
	case roles.TrustRecord:
		if !v.hard.Uncertain {
			v.ignore("not-uncertain")
			break
		}
		v.hard.Uncertain = false
		v.persist(v.hard)
	case roles.MasterSet:
		v.onMasterSet(e)
	case roles.VoteConnLost:
		v.onConnLost(e)
	case roles.LinkUp:
		v.probe(e.Master)
		if e.Master == v.voteFor && v.lastHB == 0 && !v.stopping && v.mayVoteFor(e.Master) {
			// The hello went out while the link was down (a reconnect:
			// the voter reopens its session at once, before the link is
			// back), and was lost: say it again on the new connection
			// rather than wait out helloWait. After a storm every vote
			// the LEADER still counted lapsed while the hellos waited.
			v.openSession(e.Master, v.nominated)
		}
	default:
		v.ignore("unknown-event")
	}
	v.decide()
	return v.flush()
}

// onRedirect: a master that takes no votes names the LEADER it knows; on
// the session voted for, the session ends (and the id with it, when it is
// another chunkserver's).
func (v *Voter) onRedirect(e roles.Redirect) {
	v.notVoting(e.From, e.Leader)
	if e.From == v.voteFor && e.Session == v.session {
		v.leaderGone(changelog.WhyStepDown)
		v.endSession()
		if e.IDTaken {
			v.out.IDTaken = &roles.IDTaken{Master: e.From}
		}
		if e.Leader != e.From {
			v.hint = e.Leader
		}
	} else {
		v.ignore("stale-session")
	}
}

// onConnLost: the connection to a master is gone (closed from its side,
// or lost); with the master voted for, the session ends.
func (v *Voter) onConnLost(e roles.VoteConnLost) {
	if e.Closed {
		w := v.view(e.Master)
		w.closedAt, w.closed = v.now, true
	}
	if e.Master == v.voteFor {
		why := changelog.WhyConnLost
		if e.Closed {
			why = changelog.WhyClosed
		}
		v.leaderGone(why)
		v.endSession()
		if e.Closed {
			// Its side closed it (a killed process, a restart): its last
			// answer must not bring the voter back. A connection this
			// side closed (a reconnect) says nothing of the master, and
			// after a storm of them its LEADER is where every vote
			// belongs: marking it silent had voters nominate others.
			v.silent(e.Master)
		}
		v.nextProbe = v.now // find out at once whether it is dead
	}
}

// mayVoteFor: no promise to another master stands.
func (v *Voter) mayVoteFor(m wire.MasterID) bool {
	return v.promiseTo == wire.NoMaster || v.promiseTo == m || v.now >= v.promiseUntil
}

// decide is the voter's whole policy, run after every event.
func (v *Voter) decide() {
	if v.promiseTo != wire.NoMaster && v.now >= v.promiseUntil {
		v.promiseTo = wire.NoMaster
	}
	if v.voteFor != wire.NoMaster && v.lastHB != 0 {
		v.helloWait = 0 // a session was answered
	}
	if v.voteFor != wire.NoMaster && v.now >= v.dropAt() {
		// No renewal: the master is gone, frozen or cut off.
		if v.lastHB == 0 {
			v.helloWait = min(2*v.firstWait(), maxHelloWait)
		}
		v.send(v.voteFor, roles.VoteBye{CS: v.cfg.ID, Session: v.session})
		if v.voteRole == roles.Leader {
			// A LEADER gone silent (frozen, cut off) must not win the
			// voter back by its last answer. An ELECT's keepalive that
			// came late is no such sign: its view stands, or voters
			// whose sessions lapsed under load would nominate others
			// while it gathers them.
			v.silent(v.voteFor)
		}
		v.leaderGone(changelog.WhyLeaseLapsed)
		v.endSession()
	}
	leader, elect := v.seen()
	if v.voteFor != wire.NoMaster && (v.voteRole == roles.Elect || v.voteRole == roles.Deputy) && v.worthLeaving(leader, elect) {
		// The ELECT releases the promise when it gets the bye.
		v.send(v.voteFor, roles.VoteBye{CS: v.cfg.ID, Session: v.session})
		v.endSession()
	}
	if v.voteFor == wire.NoMaster && v.now >= v.voteAfter && !v.stopping {
		v.choose(leader, elect)
	}
	if v.stopping && v.promiseTo == wire.NoMaster {
		// No session, no promise, and none can be made any more: the
		// run's last record says so, and the next start votes at once.
		v.stopped = true
		v.hard.CleanStop = true
		h := v.hard
		v.persist(h)
		v.out.Stopped = true
		return
	}
	if every := v.probeEvery(); v.nextProbe > v.now.Add(every+every/4) && (v.heartbeatsLate() != roles.Never || (!v.content() && !v.InCrowd())) {
		// The content round would come too late (an ended session probes
		// at once too: endSession). In a crowd only late heartbeats do
		// this, each voter at its own instant: thousands that just joined
		// an ELECT would probe every master together, and the ELECT's
		// announcement serves them instead.
		v.nextProbe = v.now
	}
	if at := v.turnProbeAt(); v.leaderless && v.now >= at && v.probedAt < at {
		// This voter's nomination turn is near: whom it nominates should
		// rest on answers younger than its (slow, in a crowd) probe round.
		v.nextProbe = v.now
	}
	if v.now >= v.nextProbe {
		v.probedAt = v.now
		for _, id := range v.cfg.Masters {
			v.probe(id)
		}
		every := v.probeEvery()
		if v.content() {
			// A voter content with its LEADER probes rarely; once the
			// heartbeats are late it looks around at full rate, so its view
			// is fresh when the promise lapses and it may nominate at once.
			every = max(every*contentProbes, v.cfg.ProbeInterval*contentProbeFloor)
		}
		if every > v.cfg.ProbeInterval {
			// A crowd: spread its probes, or a loss every voter saw at
			// once brings their rounds in step.
			every += time.Duration(v.rand(int64(every / 4)))
		}
		v.nextProbe = v.now.Add(every)
	}
}

func (v *Voter) probe(m wire.MasterID) {
	v.probeNonce++
	v.send(m, roles.Probe{CS: v.cfg.ID, Nonce: v.probeNonce})
}

// turnProbeAt is when a leaderless voter probes ahead of its nomination
// turn: one probe interval before it.
func (v *Voter) turnProbeAt() roles.Instant {
	return v.nominateAt.Add(-v.cfg.ProbeInterval)
}

func (v *Voter) openSession(m wire.MasterID, nominate bool) {
	if !v.mayVoteFor(m) {
		panic("invariant one-promise: opening a session while promised elsewhere")
	}
	if v.stopping {
		panic("invariant stopping-grants-nothing: opening a session while stopping")
	}
	if v.prevTo != m {
		v.prevSince = 0 // a late answer from another master measures nothing here
	}
	v.sessionSeq++
	v.session = v.hard.Boot<<32 | v.sessionSeq
	v.voteFor, v.voteSince, v.lastHB, v.granted, v.voteRole, v.nominated = m, v.now, 0, 0, 0, nominate
	hello := roles.VoteHello{CS: v.cfg.ID, Addr: v.cfg.Addr, Port: v.cfg.Port, VoterOnly: v.cfg.VoterOnly, Session: v.session, Nominate: nominate, MaxEpoch: v.hard.MaxEpoch}
	if nominate {
		hello.Deposed, hello.Why = v.gone, v.goneWhy
	}
	v.send(m, hello)
}

// onMasterSet takes a new list of masters for a voter: it probes and
// nominates only those. A session with a master no longer named is ended
// (its bye asks for the release); a promise stands until it lapses or is
// released, whoever it was made to.
func (v *Voter) onMasterSet(e roles.MasterSet) {
	list := roles.NormalMasters(e.Masters)
	if len(list) == 0 {
		v.ignore("empty-master-set")
		return
	}
	v.cfg.Masters = list
	for id := range v.views {
		if !slices.Contains(list, id) {
			delete(v.views, id)
		}
	}
	if v.voteFor != wire.NoMaster && !slices.Contains(list, v.voteFor) {
		v.send(v.voteFor, roles.VoteBye{CS: v.cfg.ID, Session: v.session})
		v.endSession()
	}
	for _, p := range []*wire.MasterID{&v.nominateNext, &v.hint, &v.gone} {
		if !slices.Contains(list, *p) {
			*p = wire.NoMaster
		}
	}
}
