package registry

import (
	"slices"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

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
func LeaveOut(c *ClusterConfig, removed map[wire.CSID]bool) (*ClusterConfig, map[wire.CSID]bool) {
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
	n.Members = slices.DeleteFunc(n.Members, func(mem Chunkserver) bool { return left[mem.ID] })
	return n, left
}
