package locations

import (
	"cmp"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Snapshot is the plain, exported form of a Map, for persisting and
// replicating it. Restore turns it back into a Map after checking it.
type Snapshot struct {
	Locations []Location
	Ranges    []Range
	Default   wire.LocationID
	Next      wire.LocationID
}

// Snapshot returns the map's state as plain data (slices are copies).
func (m Map) Snapshot() Snapshot {
	m = m.norm()
	return Snapshot{Locations: slices.Clone(m.locs), Ranges: slices.Clone(m.ranges), Default: m.def, Next: m.next}
}

// Restore rebuilds a Map from a Snapshot, checking every invariant a Map
// keeps: 1..MaxLocations locations with non-zero unique ids and valid unique
// names, a default among them, a non-zero next id, and valid non-overlapping
// ranges that each belong to an existing location. Input order does not
// matter; prefixes are normalised. The snapshot is not retained.
func Restore(s Snapshot) (Map, error) {
	locs := slices.Clone(s.Locations)
	slices.SortFunc(locs, func(a, b Location) int { return cmp.Compare(a.ID, b.ID) })
	if len(locs) == 0 || len(locs) > MaxLocations {
		return Map{}, errorf(ErrInvalidMap, "invalid location map: %d locations, want 1 to %d", len(locs), MaxLocations)
	}
	for i, l := range locs {
		if l.ID == wire.NoLocation {
			return Map{}, errorf(ErrInvalidMap, "invalid location map: location %q has no id", l.Name)
		}
		if i > 0 && locs[i-1].ID == l.ID {
			return Map{}, errorf(ErrInvalidMap, "invalid location map: id %s is used twice", l.ID)
		}
		if err := checkName(l.Name); err != nil {
			return Map{}, errorf(ErrInvalidMap, "invalid location map: %v", err)
		}
		for _, o := range locs[:i] {
			if o.Name == l.Name {
				return Map{}, errorf(ErrInvalidMap, "invalid location map: name %q is used twice", l.Name)
			}
		}
	}
	m := Map{locs: locs, def: s.Default, next: s.Next}
	if _, ok := m.index(s.Default); !ok {
		return Map{}, errorf(ErrInvalidMap, "invalid location map: default %s is not a location", s.Default)
	}
	if s.Next == wire.NoLocation {
		return Map{}, errorf(ErrInvalidMap, "invalid location map: next id is 0")
	}
	for _, r := range s.Ranges {
		if _, ok := m.index(r.Loc); !ok {
			return Map{}, errorf(ErrInvalidMap, "invalid location map: range %s belongs to unknown location %s", r.Prefix, r.Loc)
		}
		name := m.name(r.Loc)
		var err error
		if m, err = m.MapRange(r.Prefix, name); err != nil {
			return Map{}, errorf(ErrInvalidMap, "invalid location map: %v", err)
		}
	}
	return m, nil
}
