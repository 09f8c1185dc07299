package locations

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// MaxLocations is the most locations a Map may hold (MooseFS has the same
// limit).
const MaxLocations = 8

// MaxNameLen is the longest location name accepted.
const MaxNameLen = 32

// DefaultName is the name of the one location a new Map starts with.
const DefaultName = "default"

// Location is one named location.
type Location struct {
	// ID is assigned when the location is created and never changes, so a
	// rename does not disturb anything that refers to the location by id.
	ID wire.LocationID
	// Name is unique within the Map (case-sensitively).
	Name string
	// Off means the location takes no part in the quorum count.
	Off bool
}

// Range maps one CIDR prefix to a location.
type Range struct {
	// Prefix is always normalised: masked, and in IPv4 form when it is an
	// IPv4-mapped IPv6 prefix.
	Prefix netip.Prefix
	// Loc is the location the addresses of Prefix belong to.
	Loc wire.LocationID
}

// Map is the location map. It is an immutable value: methods that change it
// return a new Map. The zero Map is equivalent to New().
type Map struct {
	// locs is sorted by ID, holds 1..MaxLocations entries with unique
	// names; empty only in the zero Map.
	locs []Location
	// ranges is sorted by prefix address then bits; no two overlap and each
	// refers to an entry of locs.
	ranges []Range
	// def is the id of the default location; always an entry of locs.
	def wire.LocationID
	// next is where the search for a fresh location id starts; never 0 in a
	// valid Map, which is how the zero Map is told apart.
	next wire.LocationID
}

// New returns a map with one location, "default" (id 1), which is the
// default and ON, and no ranges.
func New() Map {
	return Map{
		locs: []Location{{ID: 1, Name: DefaultName}},
		def:  1,
		next: 2,
	}
}

// norm makes the zero Map behave as New().
func (m Map) norm() Map {
	if m.next == 0 {
		return New()
	}
	return m
}

// Locations returns a copy of the locations, sorted by id.
func (m Map) Locations() []Location {
	return slices.Clone(m.norm().locs)
}

// Ranges returns a copy of the mapped ranges, sorted by prefix address then
// prefix length.
func (m Map) Ranges() []Range {
	return slices.Clone(m.norm().ranges)
}

// Default returns the id of the default location.
func (m Map) Default() wire.LocationID {
	return m.norm().def
}

// Lookup returns the location with the given name.
func (m Map) Lookup(name string) (Location, bool) {
	for _, l := range m.norm().locs {
		if l.Name == name {
			return l, true
		}
	}
	return Location{}, false
}

// Location returns the location with the given id.
func (m Map) Location(id wire.LocationID) (Location, bool) {
	m = m.norm()
	if i, ok := m.index(id); ok {
		return m.locs[i], true
	}
	return Location{}, false
}

func (m Map) index(id wire.LocationID) (int, bool) {
	return slices.BinarySearchFunc(m.locs, id, func(l Location, id wire.LocationID) int {
		return cmp.Compare(l.ID, id)
	})
}

// Locate returns the location an address belongs to: the location of the
// longest range containing it, or the default location when no range does.
// An IPv4-mapped IPv6 address is located by its IPv4 form, and a zone is
// ignored, because the same host must land in the same location however its
// address was written.
func (m Map) Locate(addr netip.Addr) wire.LocationID {
	m = m.norm()
	addr = addr.Unmap().WithZone("")
	best, bits := m.def, -1
	for _, r := range m.ranges {
		if r.Prefix.Bits() > bits && r.Prefix.Contains(addr) {
			best, bits = r.Loc, r.Prefix.Bits()
		}
	}
	return best
}

// Participates reports whether the location exists and is ON, i.e. whether
// its chunkservers take part in the quorum count.
func (m Map) Participates(id wire.LocationID) bool {
	l, ok := m.Location(id)
	return ok && !l.Off
}

// MapRange maps prefix p to the location called name, creating that
// location (ON) if no location has the name yet. It fails if the name is
// invalid, if the prefix is invalid, if p overlaps (contains, is contained in,
// or equals) a range already mapped, or if creating the location would exceed
// MaxLocations.
func (m Map) MapRange(p netip.Prefix, name string) (Map, error) {
	m = m.norm()
	if err := checkName(name); err != nil {
		return m, err
	}
	p, err := normPrefix(p)
	if err != nil {
		return m, err
	}
	for _, r := range m.ranges {
		if r.Prefix.Overlaps(p) {
			return m, errorf(ErrOverlap, "range %s overlaps %s of location %q", p, r.Prefix, m.name(r.Loc))
		}
	}
	out := m.clone()
	loc, ok := m.Lookup(name)
	if !ok {
		if len(m.locs) >= MaxLocations {
			return m, errorf(ErrLimit, "cannot create location %q: the limit of %d locations is reached", name, MaxLocations)
		}
		loc = Location{ID: m.freeID(), Name: name}
		out.locs = append(out.locs, loc)
		slices.SortFunc(out.locs, func(a, b Location) int { return cmp.Compare(a.ID, b.ID) })
		out.next = loc.ID + 1
		if out.next == 0 { // wrapped past 255
			out.next = 1
		}
	}
	out.ranges = append(out.ranges, Range{Prefix: p, Loc: loc.ID})
	slices.SortFunc(out.ranges, compareRanges)
	return out, nil
}

// UnmapRange removes the range p (matched exactly, after normalisation). The
// location it belonged to stays, even with no ranges left: it may still be
// the default or be renamed; RemoveLocation removes it.
func (m Map) UnmapRange(p netip.Prefix) (Map, error) {
	m = m.norm()
	p, err := normPrefix(p)
	if err != nil {
		return m, err
	}
	i := slices.IndexFunc(m.ranges, func(r Range) bool { return r.Prefix == p })
	if i < 0 {
		return m, errorf(ErrNotMapped, "range %s is not mapped", p)
	}
	out := m.clone()
	out.ranges = slices.Delete(out.ranges, i, i+1)
	return out, nil
}

// RemoveLocation removes the location called name. It refuses the default
// location and a location that still has ranges (unmap them first), so that
// removing a location never moves a chunkserver.
func (m Map) RemoveLocation(name string) (Map, error) {
	m = m.norm()
	l, ok := m.Lookup(name)
	if !ok {
		return m, errorf(ErrUnknownLocation, "unknown location %q", name)
	}
	if l.ID == m.def {
		return m, errorf(ErrIsDefault, "location %q is the default and cannot be removed", name)
	}
	if n := m.rangeCount(l.ID); n > 0 {
		return m, errorf(ErrHasRanges, "location %q still has %d range(s); unmap them first", name, n)
	}
	out := m.clone()
	i, _ := m.index(l.ID)
	out.locs = slices.Delete(out.locs, i, i+1)
	return out, nil
}

// Rename gives the location called oldName the name newName. The location
// keeps its id, ranges, ON/OFF state and default mark. Renaming to the
// current name is a no-op.
func (m Map) Rename(oldName, newName string) (Map, error) {
	m = m.norm()
	l, ok := m.Lookup(oldName)
	if !ok {
		return m, errorf(ErrUnknownLocation, "unknown location %q", oldName)
	}
	if err := checkName(newName); err != nil {
		return m, err
	}
	if oldName == newName {
		return m, nil
	}
	if _, taken := m.Lookup(newName); taken {
		return m, errorf(ErrNameTaken, "cannot rename %q to %q: a location named %q exists", oldName, newName, newName)
	}
	out := m.clone()
	i, _ := m.index(l.ID)
	out.locs[i].Name = newName
	return out, nil
}

// SetDefault moves the default mark to the location called name. Unmapped
// addresses then belong to it, and it breaks ties in a divided count. An OFF
// location may be the default; it then breaks no tie because it does not
// take part.
func (m Map) SetDefault(name string) (Map, error) {
	m = m.norm()
	l, ok := m.Lookup(name)
	if !ok {
		return m, errorf(ErrUnknownLocation, "unknown location %q", name)
	}
	out := m.clone()
	out.def = l.ID
	return out, nil
}

// SetOn switches the location called name ON (on = true) or OFF. Setting the
// state it already has is a no-op.
func (m Map) SetOn(name string, on bool) (Map, error) {
	m = m.norm()
	l, ok := m.Lookup(name)
	if !ok {
		return m, errorf(ErrUnknownLocation, "unknown location %q", name)
	}
	out := m.clone()
	i, _ := m.index(l.ID)
	out.locs[i].Off = !on
	return out, nil
}

// Equal reports whether two maps have the same locations, ranges, default
// and next id (the next id decides the id of a location created later, so
// two maps that differ in it are not interchangeable).
func (m Map) Equal(o Map) bool {
	m, o = m.norm(), o.norm()
	return m.def == o.def && m.next == o.next &&
		slices.Equal(m.locs, o.locs) && slices.Equal(m.ranges, o.ranges)
}

// String renders the map compactly and deterministically for traces: each
// location in id order as name, "*" when it is the default, ":on" or ":off",
// then its ranges in brackets, e.g. `default*:on west:off[10.1.0.0/16]`.
func (m Map) String() string {
	m = m.norm()
	var b strings.Builder
	for i, l := range m.locs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(l.Name)
		if l.ID == m.def {
			b.WriteByte('*')
		}
		if l.Off {
			b.WriteString(":off")
		} else {
			b.WriteString(":on")
		}
		first := true
		for _, r := range m.ranges {
			if r.Loc != l.ID {
				continue
			}
			if first {
				b.WriteByte('[')
				first = false
			} else {
				b.WriteByte(',')
			}
			b.WriteString(r.Prefix.String())
		}
		if !first {
			b.WriteByte(']')
		}
	}
	return b.String()
}

// clone copies the slices so the result can be changed without touching m.
func (m Map) clone() Map {
	return Map{locs: slices.Clone(m.locs), ranges: slices.Clone(m.ranges), def: m.def, next: m.next}
}

func (m Map) name(id wire.LocationID) string {
	l, _ := m.Location(id)
	return l.Name
}

func (m Map) rangeCount(id wire.LocationID) int {
	n := 0
	for _, r := range m.ranges {
		if r.Loc == id {
			n++
		}
	}
	return n
}

// freeID returns the first unused id from next on, wrapping past 255. Ids
// are not reused straight away so that a stale reference to a removed
// location does not silently name a new one. With at most MaxLocations in
// use the search always ends.
func (m Map) freeID() wire.LocationID {
	id := m.next
	for {
		if id == wire.NoLocation {
			id = 1
		}
		if _, used := m.index(id); !used {
			return id
		}
		id++
	}
}

func compareRanges(a, b Range) int {
	if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
		return c
	}
	return cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits())
}

// normPrefix masks p and stores an IPv4-mapped IPv6 prefix in IPv4 form,
// because Locate looks mapped addresses up by their IPv4 form: kept as IPv6
// the range could never match anything.
func normPrefix(p netip.Prefix) (netip.Prefix, error) {
	if !p.IsValid() {
		return p, errorf(ErrInvalidPrefix, "invalid range %q", p.String())
	}
	p = p.Masked()
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p, nil
}

func checkName(name string) error {
	ok := len(name) >= 1 && len(name) <= MaxNameLen
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	if !ok {
		return errorf(ErrInvalidName, "invalid location name %q: want 1 to %d characters of A-Z a-z 0-9 _ . -", name, MaxNameLen)
	}
	return nil
}
