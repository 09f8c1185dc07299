package master

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Preferred leaders: KEEP_LEADERSHIP, the "yielded" mark and moves an admin
// ordered (docs/roles.md §3.10-§3.12).
//
// The rule, which settles whatever the number of KEEP masters:
//   - A master "keeps" (prefers to lead) while KEEP_LEADERSHIP is on and it
//     has not yielded. Every LEADER that hands leadership over, for an admin
//     (-CLU, -CLS) or to a KEEP master, yields: the mark is persisted and
//     cleared only when it next becomes LEADER or an admin makes it USURPER.
//   - Among the masters that keep, the lowest id ranks first. A FOLLOWER
//     that keeps takes the role back (§3.12) only if no fresh, eligible
//     master ranked above it keeps too, and only from a LEADER that an
//     admin did not put there ("placed").
//
// So once any move ends, at most one master may still reclaim: the
// highest-ranked one that keeps. It takes the role once, yields nothing
// (it is LEADER), and every master ranked below it defers; the one it took
// the role from has yielded. No two masters can take the role from each
// other in turn, which is what made two KEEP masters flap.

// keeps reports whether this master prefers to lead now.
func (m *Master) keeps() bool { return m.cfg.KeepLeadership && !m.hard.Yielded }

// yield records that leadership is being moved away from this master on
// purpose. It is persisted in the same batch as the step-down.
func (m *Master) yield() {
	if !m.hard.Yielded {
		m.hard.Yielded = true
		m.persistHard()
	}
}

// mayReclaim is §3.12: a synced, eligible FOLLOWER that keeps becomes
// USURPER while another master leads, unless an admin put that LEADER there
// or a master ranked above it keeps too.
func (m *Master) mayReclaim() bool {
	if m.role != roles.Follower || !m.keeps() || !m.Eligible() || !m.leaderFresh() || m.leader == m.cfg.ID || m.Sync() != roles.Synced {
		return false
	}
	p := m.peers[m.leader]
	if p != nil && p.st.Placed {
		return false
	}
	if m.Registry().Witness != "" && !m.witnessUsable() && (p == nil || p.st.Role != roles.Leader || p.st.WitnessHeld) {
		// The LEADER may lead on half of the locations with the witness's
		// lease, which this master could not take: it would win nothing,
		// and hand the voters back (§3.6, no-witness). Only the LEADER's
		// own word that it does not counts.
		return false
	}
	// Just started, it may not know yet of a master ranked above it:
	// wait to hear from every master, or for one peer timeout.
	if m.now.Sub(m.startedAt) < m.cfg.PeerTimeout && !m.heardAll() {
		return false
	}
	return m.outrankedBy() == wire.NoMaster
}

func (m *Master) heardAll() bool {
	for _, id := range m.cfg.Masters {
		if p := m.peers[id]; id != m.cfg.ID && (p == nil || !p.seen) {
			return false
		}
	}
	return true
}

// outrankedBy returns the highest-ranked fresh, eligible master above this
// one that keeps, or none.
func (m *Master) outrankedBy() wire.MasterID {
	best := wire.NoMaster
	for id, p := range m.peers {
		if id < m.cfg.ID && (best == wire.NoMaster || id < best) && m.fresh(p) && p.st.Keep && p.st.Eligible {
			best = id
		}
	}
	return best
}

// KeepMasters lists the masters known to have KEEP_LEADERSHIP on, this one
// included, from fresh statuses: more than one is a configuration an
// operator should hear about (only the highest-ranked one reclaims).
func (m *Master) KeepMasters() []wire.MasterID {
	var ids []wire.MasterID
	for _, id := range m.cfg.Masters {
		if id == m.cfg.ID {
			if m.cfg.KeepLeadership {
				ids = append(ids, id)
			}
		} else if p := m.peers[id]; m.fresh(p) && p.st.KeepSet {
			ids = append(ids, id)
		}
	}
	return ids
}

// Yielded reports the persisted "yielded" mark.
func (m *Master) Yielded() bool { return m.hard.Yielded }

// Placed reports whether an admin command put this master in its role
// (USURPER, and the ELECT and LEADER it becomes from there).
func (m *Master) Placed() bool { return m.placed }
