package roles

import (
	"fmt"
	"maps"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/registry"
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
	case m.role == Leader:
		return false, wire.CodeState, "this master is LEADER: remove a disconnected chunkserver with -CRC/ip/port"
	case m.role == Dummy:
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
	if _, left := LeaveOut(cfg, try); !left[id] {
		return false, wire.CodeState, fmt.Sprintf("chunkserver %v can't be left out: another of its location already is, it is the last of its location (switch the location OFF instead), or its location has an even number of chunkservers and only the one with the highest id may be left out there", id)
	}
	m.tempRemoved = try
	m.dropElectorates()
	m.heartbeatNow()
	return true, wire.CodeNone, fmt.Sprintf("chunkserver %v left out of the count until it votes again; removed for good once a LEADER is elected", id)
}

// LeaveOut applies the temporary removals to c where the rules allow:
// going by id, a member is left out unless another of its location already
// is, it is the last of its location, or its location has an even number
// of members and it is not the one with the highest id. It returns the
// config as counted and who was left out.
//
// The parity rule is what makes the rules hold without any coordination,
// across masters and across time: two majorities of n-1 members of one
// location of n, each leaving out a different member, share a member when
// n is odd (2(n-1)/2+2 > n) but may split an even location exactly in two;
// in an even location every master can only leave out the same member.
//
// Exported for the tools that show what a temporary removal would do
// (mfscli -CTR --dry-run), so they run this rule, not a copy of it.
func LeaveOut(c *registry.ClusterConfig, removed map[wire.CSID]bool) (*registry.ClusterConfig, map[wire.CSID]bool) {
	perLoc := map[wire.LocationID]int{}
	highest := map[wire.LocationID]wire.CSID{}
	for _, mem := range c.Members {
		loc := c.Locations.Locate(mem.Addr)
		perLoc[loc]++
		highest[loc] = max(highest[loc], mem.ID)
	}
	taken := map[wire.LocationID]bool{}
	left := map[wire.CSID]bool{}
	for _, mem := range c.Members { // sorted by id
		loc := c.Locations.Locate(mem.Addr)
		n := perLoc[loc]
		if removed[mem.ID] && !taken[loc] && n > 1 && (n%2 == 1 || mem.ID == highest[loc]) {
			taken[loc], left[mem.ID] = true, true
		}
	}
	if len(left) == 0 {
		return c, left
	}
	n := c.Clone()
	n.Members = slices.DeleteFunc(n.Members, func(mem registry.Chunkserver) bool { return left[mem.ID] })
	return n, left
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
	n, _ := LeaveOut(c, m.tempRemoved)
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
