package master

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Role returns the current role.
func (m *Master) Role() roles.Role { return m.role }

// Epoch is the master's own epoch in ELECT, LEADER and DEPUTY, and the
// highest epoch it has seen otherwise.
func (m *Master) Epoch() uint64 {
	if m.role.TakesVotes() {
		return m.hard.Epoch
	}
	return m.hard.MaxEpoch
}

// Hard returns the durable record as this master holds it.
func (m *Master) Hard() roles.HardState { return m.hard }

// Log gives read access to the changelog.
func (m *Master) Log() *changelog.Log { return &m.log }

// Acked is the newest position this LEADER has acknowledged.
func (m *Master) Acked() changelog.Pos { return m.acked }

// Backup copies the namespace as applied, with the configs as of it: a
// snapshot of committed history, for a backup (the driver confirms the
// commit point first).
func (m *Master) Backup() *namespace.Snapshot { return namespace.SnapshotOf(&m.kv, &m.log) }

// HasMetadata reports whether the master holds any metadata (not INIT).
func (m *Master) HasMetadata() bool { return m.log.Len() > 0 }

// Eligible reports whether the master may be ELECT: it holds metadata, and
// under its own configs a tally could be won at all (with every voter for
// it). The second part matters only during bootstrap, where an inherited
// first registration not yet in force can be won by the founder alone.
func (m *Master) Eligible() bool {
	if !m.HasMetadata() || m.removed {
		return false
	}
	all := func(c *registry.ClusterConfig) bool {
		e := m.electorate(c)
		if e.Size() == 0 {
			return m.mayBootstrap(c)
		}
		return e.Winnable()
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
	IneligibleRemoved    = "removed"         // out of the set of masters (MasterSet, §3.15)
)

// Ineligible says why the master may not be ELECT, "" when it may
// (Eligible): what mfscli -SLQ prints when nobody counts votes.
func (m *Master) Ineligible() string {
	switch {
	case m.Eligible():
		return ""
	case m.removed:
		return IneligibleRemoved
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
	if m.role == roles.Leader {
		return m.cfg.ID
	}
	return m.leader
}

// Registry returns the newest registry and location map in the log.
func (m *Master) Registry() *registry.ClusterConfig {
	c, _ := m.log.Configs(m.log.Len())
	return c
}

// HoldsQuorum reports whether this master is LEADER and the votes it may
// count at t (its own clock) make a quorum: the window in which it could
// accept a change. The simulator checks S1 with it.
func (m *Master) HoldsQuorum(t roles.Instant) bool {
	return m.role == roles.Leader && m.quorumAt(t, nil) == quorum.Won
}

// Accepting reports whether a change arriving at now would be accepted:
// LEADER, not handing over, and a quorum of votes it may still count.
func (m *Master) Accepting(now roles.Instant) bool {
	return m.role == roles.Leader && m.handover == wire.NoMaster && m.quorumAt(now, nil) == quorum.Won
}

// Sync is the sync state shown for a FOLLOWER or USURPER.
func (m *Master) Sync() roles.SyncState {
	switch {
	case !m.HasMetadata():
		return roles.Init
	case m.role == roles.Leader:
		return roles.Synced
	case !m.leaderFresh():
		return roles.Desync
	}
	if p := m.peers[m.leader]; p != nil && p.seen && p.st.Last.Version > m.log.Len() {
		return roles.Delayed
	}
	return roles.Synced
}

func (m *Master) leaderFresh() bool {
	return m.leaderSeen && m.leader != wire.NoMaster && m.now.Sub(m.leaderHeard) < m.cfg.PeerTimeout
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
	if m.role == roles.Leader || !m.leaderFresh() {
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
func (m *Master) Tallies(now roles.Instant) []TallyView {
	if !m.role.TakesVotes() {
		return nil
	}
	latest, prev := m.log.Configs(m.log.Len())
	if latest == nil {
		return nil
	}
	view := func(c *registry.ClusterConfig) TallyView {
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
func (m *Master) Underway(now roles.Instant) string {
	switch {
	case m.role == roles.Leader && m.handover != wire.NoMaster:
		return "LEADER -> FOLLOWER"
	case m.role == roles.Elect && m.quorumAt(now, nil) == quorum.Won:
		return "ELECT -> LEADER"
	}
	return ""
}

// InForce is the newest config version this master knows to be in force.
func (m *Master) InForce() uint64 { return m.hard.InForce }
