package master

import (
	"cmp"
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// replication is the LEADER's view of its followers and where the ack
// rule stands; a follower's catch-up request time.
type replication struct {
	progress   map[wire.MasterID]*progress
	replicated changelog.Pos
	acked      changelog.Pos
	fetchAt    roles.Instant
	dur        ackDurability // what the newest acknowledgement rests on (durability.go)
	waitSince  roles.Instant // since when changes have waited for a copy (durability.go)
}

// maxBatch and maxBatchBytes bound what one Append or FetchResp carries
// (a frame holds 4 MiB).
const (
	maxBatch      = 256
	maxBatchBytes = 1 << 20
)

func (m *Master) replicate() {
	for _, id := range m.cfg.Masters {
		if id != m.cfg.ID {
			m.appendTo(id, false)
		}
	}
}

// replicateNew sends a new entry to each follower that has no Append out
// unanswered: one in flight to each. The entries written while an Append
// is out leave together when it is acknowledged (onAppendAck sends the
// rest), so under load a follower writes one batch per round trip rather
// than an Append per change, and a lone change leaves at once as before.
// A lost Append is found as any other: the next one (or the PeerInterval
// sign of life, which is not held back) leaves a gap the follower refuses,
// and next rolls back.
func (m *Master) replicateNew() {
	for _, id := range m.cfg.Masters {
		if p := m.progress[id]; id != m.cfg.ID && p != nil && p.idle() {
			m.appendTo(id, false)
		}
	}
}

// appendTo sends one follower what it lacks (or an empty Append as a sign
// of life). Sends are optimistic; a refusal or a lapse rolls next back.
func (m *Master) appendTo(id wire.MasterID, resend bool) {
	m.appendOrChunk(id, resend, false)
}

// appendOrChunk is appendTo; snapAcked says a SnapshotChunk was just
// acknowledged, so the next one may leave at once.
func (m *Master) appendOrChunk(id wire.MasterID, resend, snapAcked bool) {
	p := m.progress[id]
	if p == nil {
		return
	}
	p.rewind(resend, m.log.Len())
	if p.next-1 < m.log.BasePos().Version {
		m.sendSnapshot(id, p, snapAcked)
		return
	}
	prev := m.log.PosAt(p.next - 1)
	es := m.log.From(p.next-1, maxBatch, maxBatchBytes)
	p.sent(len(es))
	// Early: the follower's fsync runs beside this master's own (Send.Early).
	m.sendEarly(roles.ToMaster(id), roles.Append{From: m.cfg.ID, Epoch: m.hard.Epoch, Prev: prev, Entries: es, Commit: m.acked, InForce: m.hard.InForce})
}

// leaderPersists: an ELECT (or DEPUTY) yields to a LEADER only on a second
// sign of it, at least half a PeerInterval after the first one since the
// candidacy began. A live LEADER sends one every PeerInterval; a single
// status or append sent just before that LEADER stepped down (a handover
// to this very master, read after the nomination because the disk or the
// loop was busy) must not undo the handover. Yielding is for liveness
// only: a candidate that stays wins nothing while the LEADER holds the
// votes.
func (m *Master) leaderPersists(from wire.MasterID) bool {
	if m.yieldFrom != from || m.yieldFirst < m.electSince {
		m.yieldFrom, m.yieldFirst = from, m.now
		m.ignore("leader-seen-once")
		return false
	}
	return m.now.Sub(m.yieldFirst) >= m.cfg.PeerInterval/2
}

// acceptLeader takes an Append or a SnapshotChunk from a LEADER of this
// epoch as a sign of it, or refuses one from an older LEADER (the answer
// tells it so).
func (m *Master) acceptLeader(from wire.MasterID, epoch uint64) bool {
	if m.implausible(epoch) {
		return false
	}
	if epoch < m.hard.LeaderEpoch || (m.role == roles.Leader && epoch <= m.hard.Epoch) {
		newer := m.hard.LeaderEpoch
		if m.role == roles.Leader {
			newer = m.hard.Epoch
		}
		m.send(roles.ToMaster(from), roles.AppendAck{From: m.cfg.ID, Epoch: newer, Last: m.log.Len()})
		m.ignore("stale-epoch")
		return false
	}
	switch m.role {
	case roles.Leader:
		m.stepDown(roles.ReasonHigherEpoch)
	case roles.Elect, roles.Deputy:
		if !m.leaderPersists(from) {
			return false
		}
		m.stepDown(roles.ReasonLeaderSeen)
	}
	if epoch > m.hard.MaxEpoch || epoch > m.hard.LeaderEpoch {
		m.hard.MaxEpoch, m.hard.LeaderEpoch = max(m.hard.MaxEpoch, epoch), max(m.hard.LeaderEpoch, epoch)
		m.persistHard()
	}
	m.leader, m.leaderHeard, m.leaderSeen, m.quietSince = from, m.now, true, m.now
	if len(m.tempRemoved) > 0 {
		// A LEADER won without them: the next one will count the registry.
		m.tempRemoved = nil
		m.dropElectorates()
	}
	return true
}

func (m *Master) onAppend(a roles.Append) {
	if m.removed {
		// A LEADER that still counts this master must not count its copy
		// toward ACK_REPLICAS: it is leaving (§5.3).
		m.ignore("removed")
		return
	}
	// Well formed before anything else: a malformed Append (entries out of
	// order, an epoch above its sender's, a config entry without a config)
	// is dropped whole and changes nothing, whoever sent it.
	if reason := checkEntries(a.Prev, a.Entries, a.Epoch); reason != "" || a.Commit.Epoch > a.Epoch {
		m.ignore(cmp.Or(reason, "malformed-commit"))
		return
	}
	if !m.acceptLeader(a.From, a.Epoch) {
		return
	}
	if !m.log.Has(a.Prev) {
		m.send(roles.ToMaster(a.From), roles.AppendAck{From: m.cfg.ID, Epoch: a.Epoch, Last: min(m.log.Len(), a.Prev.Version-1)})
		return
	}
	trunc, app, ok := m.merge(a.Entries)
	if !ok {
		return
	}
	if trunc != nil || len(app) > 0 {
		m.persist(roles.Persist{TruncateAfter: trunc, Append: app})
	}
	// Entries at or below the base are committed history already held.
	match := m.log.PosAt(max(a.Prev.Version+uint64(len(a.Entries)), m.log.BasePos().Version))
	if a.Commit.Version > m.hard.Commit.Version && m.log.Has(a.Commit) {
		m.hard.Commit = a.Commit
		m.persistHard()
	}
	if a.InForce > m.hard.InForce && a.InForce <= m.Registry().Version {
		m.hard.InForce = a.InForce
		m.persistHard()
	}
	m.kv.ApplyUpTo(&m.log, m.hard.Commit.Version)
	m.send(roles.ToMaster(a.From), roles.AppendAck{From: m.cfg.ID, Epoch: a.Epoch, OK: true, Match: match, Last: m.log.Len()})
}

// merge adds entries that continue a matching prefix, dropping a
// conflicting suffix first. It never drops a committed entry: a leader that
// asks for that is refused (and the simulator counts it as a violation).
func (m *Master) merge(es []changelog.Entry) (trunc *uint64, app []changelog.Entry, ok bool) {
	for _, e := range es {
		if e.Version <= m.log.BasePos().Version {
			continue // committed history, trimmed here (see Log)
		}
		if cur, has := m.log.At(e.Version); has {
			if cur.Epoch == e.Epoch {
				continue
			}
			if e.Version <= m.hard.Commit.Version {
				m.ignore("conflict-below-commit")
				return nil, nil, false
			}
			t := e.Version - 1
			m.log.Truncate(t)
			trunc = &t
			app = nil
		}
		if e.Version != m.log.Len()+1 {
			m.ignore("gap-in-entries")
			return nil, nil, false
		}
		m.log.Append(e)
		app = append(app, e)
	}
	return trunc, app, true
}

func (m *Master) onAppendAck(a roles.AppendAck) {
	if m.implausible(a.Epoch) {
		return
	}
	if a.Epoch > m.hard.Epoch && !a.OK {
		m.onHigherEpoch(a.Epoch)
		return
	}
	if m.role != roles.Leader || a.Epoch != m.hard.Epoch {
		m.ignore("stale-append-ack")
		return
	}
	p := m.progress[a.From]
	if p == nil {
		m.ignore("foreign-peer")
		return
	}
	p.heardAt(m.now)
	if !a.OK {
		p.refused(a.Last)
		m.appendTo(a.From, false)
		return
	}
	snapAcked := p.snapshotAcked(a.SnapPos, a.SnapNext)
	p.acked(a.Match, m.log.Has(a.Match))
	if p.next <= m.log.Len() || snapAcked {
		m.appendOrChunk(a.From, false, snapAcked)
	}
	m.advanceReplicated()
	if m.commitSent > m.acked.Version {
		// The commit round out may wait for this follower rather than
		// for the voters: its point was told while no follower had been
		// heard (b), and the voters have answered already. Without this
		// the next round, and every change behind it, waited for the
		// schedule (150 ms after a failover).
		m.advanceAcked()
	}
	m.tryHandover()
}

// followerMatches lists the durable versions of the followers that count
// for the ack rule: those of its set heard from within the peer timeout.
// Fewer of them than ACK_REPLICAS lowers (b) to what they are (none: this
// master's disk alone); noteAcked and recheckDurability keep that from
// going unseen (durability.go).
func (m *Master) followerMatches() []uint64 {
	var out []uint64
	for _, id := range m.cfg.Masters {
		if p := m.progress[id]; p != nil && p.present(m.now, m.cfg.PeerTimeout) {
			out = append(out, p.match.Version)
		}
	}
	return out
}

// advanceReplicated moves the position voters are told about: (a) and (b)
// of the ack rule.
func (m *Master) advanceReplicated() {
	r := m.replicatedLimit()
	if r > m.replicated.Version {
		m.replicated = m.log.PosAt(r)
		m.commitRound()
	}
	m.recheckDurability()
}

// commitRound tells the voters a new commit point: at once, unless a round
// carrying an earlier one still waits for its quorum. Then the new point
// goes out when that round is answered (advanceAcked) or with the next
// scheduled round, whichever comes first. One commit round in flight: under
// load each round carries every change replicated while the one before it
// was out, instead of a round (six chunkserver fsyncs, twelve messages)
// for every follower acknowledgement; a lone change is sent at once as
// before. Only when rounds go out changes, never what they say or what an
// acknowledgement needs (docs/architecture.md §7, One round in flight).
func (m *Master) commitRound() {
	if m.commitSent > m.acked.Version {
		return
	}
	m.heartbeatNow()
}

// advanceAcked applies (c) of the ack rule and answers what it can.
func (m *Master) advanceAcked() {
	// Only what voters were told by this LEADER counts: an older LEADER's
	// word can later be superseded by this one's lower figure.
	mine := func(v *voterRec) bool { return v.commitTag == m.hard.Epoch && m.log.Has(v.commit) }
	ok := m.countable(m.now, nil)
	limit := m.replicatedLimit()
	if limit <= m.acked.Version {
		return // (a) and (b) hold nothing newer: followers move this on
	}
	// changelog.AckRule over every counted report, in one pass: the newest
	// version a quorum knows committed is the threshold of the reports
	// (quorum.Threshold), and the rule takes the newest report at or
	// below both it and what (a) and (b) allow.
	known, _ := thresholdOf(m, ^uint64(0), func(v *voterRec) (uint64, bool) { return v.commit.Version, ok(v) && mine(v) })
	best := uint64(0)
	for _, v := range m.voters {
		if c := v.commit.Version; c > best && c <= min(known, limit) && ok(v) && mine(v) {
			best = c
		}
	}
	if w := m.witnessFor(m.Registry()); w != nil {
		if c := w.commit.Version; c > best && c <= min(known, limit) && ok(w) && mine(w) {
			best = c
		}
	}
	if m.checking() {
		if want := m.ackRuleByTally(mine); want != best && max(want, best) > m.acked.Version {
			panic(fmt.Sprintf("invariant ack-threshold: %d by threshold, %d by tallies", best, want))
		}
	}
	if best <= m.acked.Version {
		m.ackGate.missed()
		return
	}
	m.ackGate.done()
	m.acked = m.log.PosAt(best)
	m.noteAcked()
	// Not persisted on its own: the answers below would wait for one more
	// disk write, and nothing needs the LEADER to remember this figure (a
	// quorum of voters holds it, and a later LEADER holds every entry it
	// covers). It reaches the disk with the next record that must.
	m.hard.Commit = m.acked
	m.kv.ApplyUpTo(&m.log, best)
	m.answerPending()
	if m.replicated.Version > m.commitSent && m.acked.Version >= m.commitSent {
		m.heartbeatNow() // the commit round is answered: the next one goes
	}
}

// ackRuleByTally is advanceAcked's figure by changelog.AckRule and a
// tally per candidate, as it was before thresholds: CheckCaches compares.
func (m *Master) ackRuleByTally(mine func(*voterRec) bool) uint64 {
	var cands []uint64
	for _, v := range m.withWitness(m.counted()) {
		if v.commit.Version > m.acked.Version && mine(v) {
			cands = append(cands, v.commit.Version)
		}
	}
	return changelog.AckRule(m.replicatedLimit(), cands, func(ver uint64) bool {
		return m.quorumAt(m.now, func(v *voterRec) bool { return mine(v) && v.commit.Version >= ver }) == quorum.Won
	})
}

// checkInForce marks the newest config in force once a quorum under the old
// config and a quorum under the new one both know it (docs/architecture.md).
func (m *Master) checkInForce() {
	latest, prev := m.log.Configs(m.log.Len())
	if prev == nil || latest.Version <= m.hard.InForce {
		return
	}
	knows := func(v *voterRec) bool { return v.knownReg >= latest.Version }
	if m.tallyUnder(prev, m.now, knows).Outcome != quorum.Won || m.tallyUnder(latest, m.now, knows).Outcome != quorum.Won {
		m.forceGate.missed()
		return
	}
	m.forceGate.done()
	{
		m.hard.InForce = latest.Version
		m.persistHard()
		m.heartbeatNow()
	}
}

func (m *Master) configPending() bool {
	latest, prev := m.log.Configs(m.log.Len())
	return prev != nil && latest.Version > m.hard.InForce
}

func (m *Master) onFetchReq(f roles.FetchReq) {
	if !m.HasMetadata() {
		m.ignore("no-metadata")
		return
	}
	if f.After < m.log.BasePos().Version || f.SnapPos != (changelog.Pos{}) {
		// The asker lacks entries trimmed here: it gets the snapshot, one
		// chunk per request.
		off := f.SnapNext
		if m.snap == nil || f.SnapPos != m.snap.Pos {
			off = 0
		}
		if m.snap == nil || off > m.snap.Records() {
			m.ignore("no-snapshot")
			return
		}
		c := chunkOf(m.snap, m.cfg.ID, 0, off, snapChunkBytes)
		c.Commit = m.hard.Commit
		m.send(roles.ToMaster(f.From), c)
		return
	}
	resp := roles.FetchResp{From: m.cfg.ID, Commit: m.hard.Commit}
	if f.After <= m.log.Len() {
		resp.Base = m.log.PosAt(f.After)
		resp.Entries = m.log.From(f.After, 16*maxBatch, maxBatchBytes)
	}
	m.send(roles.ToMaster(f.From), resp)
}

func (m *Master) onFetchResp(r roles.FetchResp) {
	if m.role != roles.Elect {
		m.ignore("not-elect")
		return
	}
	// The responder is no LEADER of an epoch: its entries may be of any
	// epoch up to the highest this master could adopt.
	if reason := checkEntries(r.Base, r.Entries, min(EpochCeiling, max(m.hard.Epoch, m.hard.MaxEpoch)+MaxEpochJump)); reason != "" {
		m.ignore(reason)
		return
	}
	if len(r.Entries) == 0 || !m.log.Has(r.Base) || r.Base.Version < m.hard.Commit.Version {
		m.ignore("fetch-base-mismatch")
		return
	}
	trunc, app, ok := m.merge(r.Entries)
	if !ok {
		return
	}
	if trunc != nil || len(app) > 0 {
		m.persist(roles.Persist{TruncateAfter: trunc, Append: app})
	}
	// Only a fetch that grew the log asks again at once (a long catch-up
	// goes on at the network's pace; it ends when the source's log does).
	// One that replaced entries or changed nothing waits out the usual
	// spacing: two reports this log cannot satisfy together would
	// otherwise have it fetch one and the other back at message speed,
	// and each duplicated answer start one more such chain (simulator
	// seed 885 with a witness: 11 M events in a second).
	if trunc == nil && len(app) > 0 {
		m.fetchAt = m.now
	}
	m.tryWin()
}
