package master

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// snapshots are a master's own snapshots and one being received.
type snapshots struct {
	snap       *namespace.Snapshot // the newest durable snapshot (nil: none)
	snapSaving *namespace.Snapshot // asked of the driver, not yet durable
	incoming   *snapBuild          // a snapshot being received
}

// chunkOf is the SnapshotChunk that carries s's records from offset on,
// at most maxBytes of them (at least one).
func chunkOf(s *namespace.Snapshot, from wire.MasterID, epoch uint64, offset uint64, maxBytes int) roles.SnapshotChunk {
	c := roles.SnapshotChunk{From: from, Epoch: epoch, Pos: s.Pos, Total: s.Records(), Offset: offset}
	if offset == 0 {
		c.Latest, c.Previous = s.Latest, s.Previous
	}
	c.Items, c.Sessions = s.Slice(offset, maxBytes)
	return c
}

// snapBuild is a snapshot being received in chunks.
type snapBuild struct {
	from  wire.MasterID
	total uint64
	next  uint64
	snap  *namespace.Snapshot
}

// snapChunkBytes bounds one SnapshotChunk (a frame holds 4 MiB).
const snapChunkBytes = 1 << 20

// ---- taking snapshots and trimming --------------------------------------------------

// maybeSnapshot asks the driver to save a snapshot once SnapshotEvery
// changes have been applied since the last one.
func (m *Master) maybeSnapshot() {
	if m.cfg.SnapshotEvery == 0 || m.snapSaving != nil {
		return
	}
	var at uint64
	if m.snap != nil {
		at = m.snap.Pos.Version
	}
	if m.kv.Applied < at+m.cfg.SnapshotEvery || m.kv.Applied <= m.log.BasePos().Version {
		return
	}
	m.takeSnapshot()
}

// takeSnapshot asks the driver to save a snapshot of what is applied.
func (m *Master) takeSnapshot() {
	m.snapSaving = namespace.SnapshotOf(&m.kv, &m.log)
	m.out.SaveSnapshot = m.snapSaving
}

func (m *Master) onSnapshotSaved(e roles.SnapshotSaved) {
	s := m.snapSaving
	if s == nil || s.Pos != e.Pos {
		m.ignore("stale-snapshot-saved")
		return
	}
	m.snapSaving = nil
	if m.snap != nil && m.snap.Pos.Version >= s.Pos.Version {
		return // a newer one was installed meanwhile
	}
	m.snap = s
	m.maybeTrim()
}

// SnapshotAt is the position of this master's durable snapshot (zero when
// it has none).
func (m *Master) SnapshotAt() changelog.Pos {
	if m.snap == nil {
		return changelog.Pos{}
	}
	return m.snap.Pos
}

// maybeTrim drops the entries every master has a snapshot past (as their
// statuses say); a master not heard from, or far behind, holds back at
// most LogRetain entries below this master's snapshot. Trimming is never
// a question of safety (the snapshot holds what the entries made), only of
// how a lagging master catches up: from entries, or from a snapshot.
func (m *Master) maybeTrim() {
	if m.snap == nil {
		return
	}
	top := m.snap.Pos.Version
	floor := top
	for _, id := range m.cfg.Masters {
		if id == m.cfg.ID {
			continue
		}
		if p := m.peers[id]; p != nil && p.seen {
			floor = min(floor, p.st.Snap)
		} else {
			floor = 0
		}
	}
	if top > m.cfg.LogRetain {
		floor = max(floor, top-m.cfg.LogRetain)
	}
	if m.role == roles.Leader && m.storeConfigured() {
		// What the followers lack may rest on the store log alone, and
		// the LEADER writes it there from these entries: its snapshot
		// is no second copy until the store holds it (storeChain).
		floor = min(floor, max(m.followerPoint(), m.storeSnapAt()))
	}
	if floor <= m.log.BasePos().Version {
		return
	}
	b := m.log.Trim(floor)
	m.persist(roles.Persist{Trim: &b})
}

// ---- sending snapshots ---------------------------------------------------------------

// sendSnapshot sends a follower that lacks trimmed entries the next chunk
// of this master's snapshot: on its acknowledgement of the last one, or
// again after a PeerInterval without one.
func (m *Master) sendSnapshot(id wire.MasterID, p *progress, acked bool) {
	s := m.snap
	if s == nil {
		panic("invariant log-base: entries trimmed without a snapshot")
	}
	if p.snapPos != s.Pos {
		p.snapPos, p.snapNext, acked = s.Pos, 0, true
	}
	if !acked && m.now.Sub(p.snapSent) < m.cfg.PeerInterval {
		return
	}
	p.snapSent = m.now
	c := chunkOf(s, m.cfg.ID, m.hard.Epoch, p.snapNext, snapChunkBytes)
	c.Commit, c.InForce = m.acked, m.hard.InForce
	m.send(roles.ToMaster(id), c)
}

// ---- receiving snapshots -------------------------------------------------------------

func (m *Master) onSnapshotChunk(c roles.SnapshotChunk) {
	if m.removed {
		m.ignore("removed") // as for an Append: no copy of a leaving master counts
		return
	}
	if reason := checkChunk(c); reason != "" {
		m.ignore(reason)
		return
	}
	fromLeader := c.Epoch > 0
	if fromLeader {
		if !m.acceptLeader(c.From, c.Epoch) {
			return
		}
	} else if m.role != roles.Elect {
		m.ignore("not-elect")
		return
	}
	ack := func(next uint64, match changelog.Pos) {
		if fromLeader {
			m.send(roles.ToMaster(c.From), roles.AppendAck{From: m.cfg.ID, Epoch: c.Epoch, OK: true, Match: match,
				Last: m.log.Len(), SnapPos: c.Pos, SnapNext: next})
		} else if next < c.Total {
			m.send(roles.ToMaster(c.From), roles.FetchReq{From: m.cfg.ID, After: m.hard.Commit.Version, SnapPos: c.Pos, SnapNext: next})
		}
	}
	if c.Pos.Version <= m.hard.Commit.Version {
		// Already past it: what is committed here is in agreement.
		if fromLeader {
			ack(c.Total, m.hard.Commit)
		}
		m.ignore("snapshot-not-needed")
		return
	}
	b := m.incoming
	if b == nil || b.snap.Pos != c.Pos || b.from != c.From || c.Offset == 0 {
		if c.Offset != 0 {
			ack(0, changelog.Pos{})
			return
		}
		b = &snapBuild{from: c.From, total: c.Total, snap: &namespace.Snapshot{
			Pos: c.Pos, Latest: c.Latest, Previous: c.Previous,
			Data: map[string]namespace.Item{}, Sessions: map[changelog.ClientID]namespace.Session{},
		}}
		m.incoming = b
	}
	if c.Offset != b.next || c.Total != b.total {
		ack(b.next, changelog.Pos{})
		return
	}
	for _, it := range c.Items {
		b.snap.Data[it.Key] = namespace.Item{Value: it.Value, Version: it.Version}
	}
	for _, se := range c.Sessions {
		b.snap.Sessions[se.Client] = se.Session
	}
	b.next += uint64(len(c.Items) + len(c.Sessions))
	if b.next < b.total {
		ack(b.next, changelog.Pos{})
		return
	}
	if b.snap.Latest == nil || b.next != b.snap.Records() {
		m.incoming = nil
		m.ignore("snapshot-malformed")
		return
	}
	m.incoming = nil
	m.install(b.snap, c.Commit)
	if fromLeader {
		if c.InForce > m.hard.InForce && c.InForce <= m.Registry().Version {
			m.hard.InForce = c.InForce
			m.persistHard()
		}
		ack(b.total, c.Pos)
		return
	}
	m.fetchAt = m.now
	m.tryWin()
}

// install makes a received snapshot this master's state. Entries after it
// are kept if the log agrees with it there; otherwise the log restarts
// right after it.
func (m *Master) install(s *namespace.Snapshot, commit changelog.Pos) {
	var p roles.Persist
	if s.Pos.Version > m.log.BasePos().Version && s.Pos.Version <= m.log.Len() && m.log.Has(s.Pos) {
		b := m.log.Trim(s.Pos.Version)
		p.Trim = &b
	} else {
		b, v := s.Base(), s.Pos.Version
		m.log.Reset(b)
		p.Trim, p.TruncateAfter = &b, &v
	}
	p.Snapshot = s
	m.persist(p)
	m.snap = s
	m.kv = s.KV()
	if s.Pos.Version > m.hard.Commit.Version {
		m.hard.Commit = s.Pos
		m.persistHard()
	}
	if commit.Version > m.hard.Commit.Version && m.log.Has(commit) && commit.Version <= m.log.Len() {
		m.hard.Commit = commit
		m.persistHard()
	}
	m.kv.ApplyUpTo(&m.log, m.hard.Commit.Version)
}

// checkChunk validates a SnapshotChunk's structure before anything is
// taken from it: records within the announced total, configs well formed,
// and a position no newer than its LEADER's epoch.
func checkChunk(c roles.SnapshotChunk) string {
	n := uint64(len(c.Items) + len(c.Sessions))
	switch {
	case c.Offset > c.Total || n > c.Total-c.Offset:
		return "malformed-snapshot"
	case c.Epoch > 0 && (c.Pos.Epoch > c.Epoch || c.Commit.Epoch > c.Epoch):
		return "malformed-snapshot"
	case c.Pos.Version == 0:
		return "malformed-snapshot"
	case c.Pos.Version > VersionCeiling || c.Commit.Version > VersionCeiling:
		return "malformed-snapshot"
	}
	for _, cfg := range []*registry.ClusterConfig{c.Latest, c.Previous} {
		if cfg != nil {
			if reason := checkConfig(cfg); reason != "" {
				return reason
			}
		}
	}
	return ""
}
