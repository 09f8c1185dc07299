package locations

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Member is one registered chunkserver as the location map sees it: its id
// and the address its location is decided by.
type Member struct {
	ID   wire.CSID
	Addr netip.Addr
}

// Group is the set of members that one location holds.
type Group struct {
	// Loc is the location (with its ON/OFF state at the time of grouping).
	Loc Location
	// Default is true when Loc is the default location.
	Default bool
	// Members are the chunkserver ids located there, sorted.
	Members []wire.CSID
}

// Group sorts members into locations: one Group per location that has at
// least one member, sorted by location id, members sorted by id. OFF
// locations are included (with Loc.Off set); leaving them out of a count is
// the caller's decision.
//
// Members must have distinct, non-zero ids (the registry is keyed by id); a
// duplicate or zero id is a broken invariant and panics, because counting a
// chunkserver twice would break the quorum arithmetic.
func (m Map) Group(members []Member) []Group {
	m = m.norm()
	ids := make([]wire.CSID, len(members))
	for i, mb := range members {
		ids[i] = mb.ID
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id == wire.NoCS {
			panic("locations: Group: member with no chunkserver id (CSID 0)")
		}
		if i > 0 && ids[i-1] == id {
			panic(fmt.Sprintf("locations: Group: chunkserver id %s appears twice", id))
		}
	}
	// At most MaxLocations buckets, indexed like m.locs, so no map is needed
	// and the output order follows the sorted locations.
	buckets := make([][]wire.CSID, len(m.locs))
	for _, mb := range members {
		i, _ := m.index(m.Locate(mb.Addr))
		buckets[i] = append(buckets[i], mb.ID)
	}
	var out []Group
	for i, b := range buckets {
		if len(b) == 0 {
			continue
		}
		slices.Sort(b)
		out = append(out, Group{Loc: m.locs[i], Default: m.locs[i].ID == m.def, Members: b})
	}
	return out
}
