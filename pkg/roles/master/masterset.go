package master

import (
	"slices"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The set of masters changes while everything runs (docs/architecture.md
// §5.3): MASTER_HOST is resolved again and the driver steps MasterSet. The
// set decides none of the quorum (the votes are the chunkservers', the
// registry is replicated), only whom a master talks to: the followers a
// LEADER replicates to and counts for ACK_REPLICAS, the snapshots trimming
// waits for, the masters a voter probes and nominates, the rank a master
// self-nominates at. Each of those reads cfg.Masters at the moment it
// acts, so a new list is in force from the step that takes it.

// onMasterSet takes a new list of masters. A master no longer in it, or
// told by every master of it that answered that it is a stranger
// (Member false), leaves any role for FOLLOWER (§3.15), may not be ELECT
// and sends no status; named again, it takes part as a FOLLOWER.
func (m *Master) onMasterSet(e roles.MasterSet) {
	list := roles.NormalMasters(e.Masters)
	member := e.Member && slices.Contains(list, m.cfg.ID)
	if !slices.Contains(list, m.cfg.ID) {
		// Kept in the list, like every master's own id: the loops over
		// it skip this master, and Validate wants it there.
		list = roles.NormalMasters(append(list, m.cfg.ID))
	}
	old := m.cfg.Masters
	m.cfg.Masters = list
	for _, id := range old {
		if !slices.Contains(list, id) {
			// Gone: nothing of it counts any more (ACK_REPLICAS, the
			// snapshot trimming waits for, a handover's target).
			delete(m.peers, id)
			delete(m.progress, id)
			delete(m.foreign, id)
			if m.handover == id {
				m.handover = wire.NoMaster
			}
			if m.leader == id && m.role != roles.Leader {
				m.leader, m.leaderSeen = wire.NoMaster, false
			}
		}
	}
	if m.removed != !member {
		m.removed = !member
		if m.removed {
			m.ignore("removed-from-masters")
		}
	}
	if m.removed {
		switch m.role {
		case roles.Leader, roles.Elect, roles.Deputy, roles.Usurper:
			m.become(roles.Follower, roles.ReasonRemoved)
		}
		return
	}
	if m.role == roles.Leader {
		for _, id := range list {
			if id != m.cfg.ID && m.progress[id] == nil {
				// A new follower: it is sent what it lacks (a snapshot
				// when that is below the log base), as after a restart.
				m.progress[id] = newProgress(m.log.Len())
				m.appendTo(id, false)
			}
		}
		// Fewer followers may let the ack rule move (or hold it where it
		// is: a removed follower's copy no longer counts).
		m.advanceReplicated()
	}
	m.maybeTrim()
}

// Removed reports whether this master is out of the set of masters
// (§3.15): it takes part in nothing until it is named again.
func (m *Master) Removed() bool { return m.removed }
