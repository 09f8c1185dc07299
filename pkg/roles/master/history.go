package master

import (
	"slices"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The election history (docs/architecture.md §7.2): every role change of
// every master, kept in the replicated metadata (changelog.EntryHistory,
// applied by pkg/namespace under its reserved keys). Only a LEADER writes:
// its own records when it takes office, and the ones the other masters
// carry in their status to it until they see them applied. Nothing in the
// election reads the history; it is written like any change, so it is as
// durable as one and a new LEADER holds the old one's.

// HistoryProtocol is the protocol version that brought the election
// history: a master of an older one refuses to follow an EntryHistory
// entry (a kind it does not know), so a LEADER writes records only once
// every master of its set says it speaks this one (speaks).
const HistoryProtocol = 3

const (
	// maxUnrecorded bounds the role changes a master keeps until it sees
	// them in the history (a master cut off from every LEADER that keeps
	// changing role): past it the oldest is dropped.
	maxUnrecorded = 32
	// maxReport bounds the records one status carries, and so what a
	// LEADER writes for one status.
	maxReport = 16
)

// historyState is this master's part in the history.
type historyState struct {
	// wallMs: the driver's last wall-clock reading (Tick.WallUnixMs) and
	// the instant it was taken at: a record's time is that reading moved
	// on by the monotonic clock (0 before the first: not known).
	wallMs int64
	wallAt roles.Instant
	// histSeq numbers this incarnation's role changes; unrecorded holds
	// the ones not yet seen applied in the history, oldest first.
	histSeq    uint64
	unrecorded []changelog.RoleChange
	histLost   uint64 // dropped from a full unrecorded
	// written: as LEADER, the newest record of each master written in
	// this term (applied or not), so a status that repeats one before it
	// is applied does not write it twice (ApplyUpTo would skip it anyway).
	written map[wire.MasterID]histMark
	// electDeposed and electWhy: why this master's election started, for
	// its record as LEADER (the nominating voter's word, checked).
	electDeposed wire.MasterID
	electWhy     string
}

type histMark struct{ inc, seq uint64 }

// onWall takes the driver's wall-clock reading.
func (m *Master) onWall(ms int64) {
	if ms > 0 {
		m.wallMs, m.wallAt = ms, m.now
	}
}

func (m *Master) wallNow() int64 {
	if m.wallMs == 0 {
		return 0
	}
	return m.wallMs + int64(m.now.Sub(m.wallAt)/time.Millisecond)
}

// noteRoleChange records one role change of this master; t is its tally
// as the change began (before any disconnect).
func (m *Master) noteRoleChange(from, to roles.Role, reason, section string, t recordTally) {
	m.histSeq++
	r := changelog.RoleChange{
		UnixMs: m.wallNow(), Master: m.cfg.ID, Inc: m.hard.Incarnation, Seq: m.histSeq,
		From: from.String(), To: to.String(), Epoch: m.Epoch(), Reason: reason, Section: section, Votes: t.votes,
		Witness: t.witness, LeaseEpoch: t.leaseEpoch,
	}
	if to == roles.Leader {
		r.Deposed, r.Why = m.electDeposed, m.electWhy
		if r.Deposed == wire.NoMaster {
			r.Deposed = m.kv.LastLeader()
		}
		if r.Why == "" {
			r.Why = changelog.WhyNoLeader
		}
	}
	m.unrecorded = append(m.unrecorded, r)
	if len(m.unrecorded) > maxUnrecorded {
		m.unrecorded = slices.Delete(m.unrecorded, 0, 1)
		m.histLost++
	}
}

// recordTally is a record's tally: the votes per location and the
// witness's part in them (changelog.RoleChange.Witness, LeaseEpoch).
type recordTally struct {
	votes      []changelog.LocationVotes
	witness    string
	leaseEpoch uint64
}

// tallyNow is this master's tally per location under its newest config,
// for a record (empty when it counts no votes), with the witness's part
// where that config names one: the lease it relied on for an exact half
// (its lease_epoch), or an exact half without it.
func (m *Master) tallyNow() recordTally {
	tv := m.Tallies(m.now)
	if len(tv) == 0 {
		return recordTally{}
	}
	cfg := m.Registry()
	var rt recordTally
	t := tv[0].Votes
	for _, lt := range t.Locations {
		name := ""
		if l, ok := cfg.Locations.Location(lt.Loc); ok {
			name = l.Name
		}
		rt.votes = append(rt.votes, changelog.LocationVotes{Location: name, Votes: lt.For, Voters: lt.Registered})
	}
	if !t.Witness {
		return rt
	}
	half := t.Participating > 0 && 2*t.Carried == t.Participating
	w := m.witnessFor(cfg)
	switch {
	case half && t.WitnessHeld && w != nil:
		rt.witness, rt.leaseEpoch = changelog.WitnessRelied, w.ackEpoch
	case half && !t.WitnessHeld:
		rt.witness = changelog.WitnessNoLease
	default:
		rt.witness = changelog.WitnessUnused
	}
	return rt
}

// electCause notes why an election starts (startElect's reason; for a
// nomination, what the nominating voter said).
func (m *Master) electCause(reason string, h *roles.VoteHello) {
	m.electDeposed, m.electWhy = wire.NoMaster, ""
	switch {
	case m.role == roles.Usurper && m.placed:
		m.electWhy = changelog.WhyAdmin
	case m.role == roles.Usurper:
		m.electWhy = changelog.WhyKeep
	case reason == roles.ReasonSelfNominated:
		m.electWhy = changelog.WhySelfNominated
	case h != nil:
		// A voter's word: only a known cause and one of the masters.
		if slices.Contains(changelog.Whys, h.Why) {
			m.electWhy = h.Why
		}
		if slices.Contains(m.cfg.Masters, h.Deposed) {
			m.electDeposed = h.Deposed
		}
	}
}

// pruneUnrecorded drops the records the applied history holds.
func (m *Master) pruneUnrecorded() {
	if len(m.unrecorded) == 0 {
		return
	}
	kept := m.kv.Recorded(m.cfg.ID, m.hard.Incarnation)
	m.unrecorded = slices.DeleteFunc(m.unrecorded, func(r changelog.RoleChange) bool { return r.Seq <= kept })
}

// toReport is what this master's status carries: its records not yet
// applied in the history, at most maxReport.
func (m *Master) toReport() []changelog.RoleChange {
	m.pruneUnrecorded()
	if len(m.unrecorded) > maxReport {
		return slices.Clone(m.unrecorded[:maxReport])
	}
	return slices.Clone(m.unrecorded)
}

// writeHistory writes, as LEADER, the records of master from (in its
// incarnation inc) that are newer than any written, as one entry. Not
// during a handover: the target must catch up with a log that stops
// growing (the records come again in the next status).
func (m *Master) writeHistory(from wire.MasterID, inc uint64, rs []changelog.RoleChange) {
	if m.handover != wire.NoMaster || !m.speaks(HistoryProtocol) {
		return
	}
	rs = m.newRecords(from, inc, rs)
	if len(rs) == 0 {
		return
	}
	e := changelog.Entry{Pos: changelog.Pos{Version: m.log.Len() + 1, Epoch: m.hard.Epoch}, Kind: changelog.EntryHistory, History: rs}
	m.log.Append(e)
	m.persist(roles.Persist{Append: []changelog.Entry{e}})
	m.replicateNew()
	m.advanceReplicated()
}

// speaks reports whether every master of the set is known to speak
// protocol version v: this one, and each other one by the newest status
// this process heard from it (a master never heard may be an older
// binary: until it is heard, nothing of v is used; a version-2 master
// says no version, and counts as 2). Rolling upgrades rely on it
// (docs/operations.md, "Upgrade").
func (m *Master) speaks(v uint16) bool {
	if m.cfg.Protocol < v {
		return false
	}
	for _, id := range m.cfg.Masters {
		if id == m.cfg.ID {
			continue
		}
		if p := m.peers[id]; p == nil || !p.seen || max(p.st.Proto, 2) < v {
			return false
		}
	}
	return true
}

// newRecords keeps the records of master from (in its incarnation inc),
// well formed, that are newer than any this LEADER wrote in its term or
// the applied history holds, at most maxReport, and marks them written.
func (m *Master) newRecords(from wire.MasterID, inc uint64, rs []changelog.RoleChange) []changelog.RoleChange {
	if m.role != roles.Leader || len(rs) == 0 {
		return nil
	}
	if m.written == nil {
		m.written = map[wire.MasterID]histMark{}
	}
	mark := m.written[from]
	if mark.inc != inc {
		mark = histMark{inc: inc, seq: m.kv.Recorded(from, inc)}
	}
	var out []changelog.RoleChange
	for i := range rs[:min(len(rs), maxReport)] {
		r := &rs[i]
		if r.Master != from || r.Inc != inc || r.Seq <= mark.seq || changelog.CheckRoleChange(r) != "" {
			continue
		}
		out = append(out, *r)
		mark.seq = r.Seq
	}
	m.written[from] = mark
	return out
}

// History returns the newest max records of the applied election history
// (all when max <= 0), oldest first, and how many it holds.
func (m *Master) History(max int) ([]changelog.RoleChange, int) { return m.kv.History(max) }

// LeaderChanges counts the LEADER changes in the applied history by cause.
func (m *Master) LeaderChanges() map[string]uint64 { return m.kv.LeaderChanges() }

// Unrecorded is how many of this master's role changes wait to be written
// to the history, and how many were dropped from a full queue.
func (m *Master) Unrecorded() (waiting int, lost uint64) { return len(m.unrecorded), m.histLost }
