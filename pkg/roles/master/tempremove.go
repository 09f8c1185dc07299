package master

import (
	"fmt"
	"maps"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Temporary removal (mfscli -CTR): when too many chunkservers are down for
// any master to win, an operator can tell the masters to count without one
// that is down. A master takes it while it knows no live LEADER, keeps it
// through its ELECT, DEPUTY and FOLLOWER turns, and counts with it whenever
// it takes votes. The rules that keep two masters from both
// winning (docs/architecture.md, "Temporary removal"):
//
//   - at most one chunkserver per location, never the last of its
//     location, and in a location with an even number of members only the
//     one with the highest id (LeaveOut), applied to each config on its
//     own: whatever any two masters leave out, at any two times, they count
//     over the same locations and their majorities in each location share
//     a member;
//   - only one without a vote session here, and it ends at once when the
//     chunkserver opens one, when this master follows a LEADER, or when it
//     restarts (it is not written down);
//   - the LEADER it leads to writes it as an ordinary removal first thing.
//
// mfscli sends it to every master but a LEADER, so they count alike, and
// refuses when any master already leaves out another of that location (a
// courtesy: the rules above do not depend on it).

// tempRemove handles AdminTempRemove.
func (m *Master) tempRemove(id wire.CSID) (bool, wire.Code, string) {
	switch {
	case m.role == roles.Leader:
		return false, wire.CodeState, "this master is LEADER: remove a disconnected chunkserver with -CRC/ip/port"
	case m.role == roles.Dummy:
		return false, wire.CodeState, "this master is shutting down"
	case m.leaderFresh():
		return false, wire.CodeState, fmt.Sprintf("this master follows LEADER %v: remove a disconnected chunkserver there with -CRC/ip/port", m.leader)
	case !m.HasMetadata():
		return false, wire.CodeState, "this master has no metadata yet (INIT)"
	}
	cfg := m.Registry()
	if _, ok := cfg.Member(id); !ok {
		return false, wire.CodeInvalid, fmt.Sprintf("chunkserver %v is not registered", id)
	}
	if m.voters[id] != nil {
		return false, wire.CodeState, fmt.Sprintf("chunkserver %v can't be removed because it is still active (it has a vote session here)", id)
	}
	if m.tempRemoved[id] {
		return true, wire.CodeNone, fmt.Sprintf("chunkserver %v is already left out of the count", id)
	}
	try := maps.Clone(m.tempRemoved)
	if try == nil {
		try = map[wire.CSID]bool{}
	}
	try[id] = true
	if _, left := registry.LeaveOut(cfg, try); !left[id] {
		return false, wire.CodeState, fmt.Sprintf("chunkserver %v can't be left out: another of its location already is, it is the last of its location (switch the location OFF instead), or its location has an even number of chunkservers and only the one with the highest id may be left out there", id)
	}
	m.tempRemoved = try
	m.dropElectorates()
	m.heartbeatNow()
	return true, wire.CodeNone, fmt.Sprintf("chunkserver %v left out of the count until it votes again; removed for good once a LEADER is elected", id)
}

// endTempRemoval counts a chunkserver again.
func (m *Master) endTempRemoval(id wire.CSID, why string) {
	if m.tempRemoved[id] {
		delete(m.tempRemoved, id)
		m.dropElectorates()
		m.ignore("temp-removal-ended: " + why)
	}
}

// withoutTempRemoved is c as this master counts it. The rules are applied
// to each config on its own, so they hold whatever configs the log comes
// to hold.
func (m *Master) withoutTempRemoved(c *registry.ClusterConfig) *registry.ClusterConfig {
	c = m.withoutForced(c)
	if len(m.tempRemoved) == 0 {
		return c
	}
	n, _ := registry.LeaveOut(c, m.tempRemoved)
	return n
}

// removeTempRemoved, at a LEADER, writes the next temporary removal as a
// registry change, and forgets those that are in force. It reports whether
// it proposed one.
func (m *Master) removeTempRemoved() bool {
	if len(m.tempRemoved) == 0 {
		return false
	}
	cfg := m.Registry()
	for _, id := range slices.Sorted(maps.Keys(m.tempRemoved)) {
		if _, ok := cfg.Member(id); !ok {
			delete(m.tempRemoved, id) // in force (registerNext runs only then)
			m.dropElectorates()
			continue
		}
		if err := m.proposeChange(registry.Change{Kind: registry.ChangeRemove, ID: uint32(id)}); err != nil {
			m.ignore("temp-removal-refused") // a stable reason: it is a metric label
			continue
		}
		return true
	}
	return false
}

// TempRemoved lists the chunkservers this master counts without (-CTR's
// and a repair's).
func (m *Master) TempRemoved() []wire.CSID {
	out := slices.Sorted(maps.Keys(m.tempRemoved))
	out = append(out, m.hard.ForcedOut...)
	slices.Sort(out)
	return slices.Compact(out)
}
