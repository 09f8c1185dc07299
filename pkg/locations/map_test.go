package locations

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func ip(s string) netip.Addr    { return netip.MustParseAddr(s) }

// build applies MapRange for each "prefix=name" pair, failing the test on
// any error.
func build(t testing.TB, pairs ...string) Map {
	t.Helper()
	m := New()
	for _, p := range pairs {
		prefix, name, _ := strings.Cut(p, "=")
		var err error
		if m, err = m.MapRange(pfx(prefix), name); err != nil {
			t.Fatalf("MapRange(%s, %s): %v", prefix, name, err)
		}
	}
	return m
}

func id(t testing.TB, m Map, name string) wire.LocationID {
	t.Helper()
	l, ok := m.Lookup(name)
	if !ok {
		t.Fatalf("no location %q in %s", name, m)
	}
	return l.ID
}

// sample is the map most tests start from.
func sample(t testing.TB) Map {
	return build(t,
		"10.1.0.0/16=west", "2001:db8:1::/48=west",
		"10.2.0.0/16=east", "10.3.4.0/24=east",
		"::ffff:10.9.0.0/112=mapped", // stored as 10.9.0.0/16
	)
}

func TestNew(t *testing.T) {
	for name, m := range map[string]Map{"New": New(), "zero": {}} {
		t.Run(name, func(t *testing.T) {
			want := []Location{{ID: 1, Name: "default"}}
			if got := m.Locations(); !slices.Equal(got, want) {
				t.Errorf("Locations() = %v, want %v", got, want)
			}
			if m.Default() != 1 || !m.Participates(1) || len(m.Ranges()) != 0 {
				t.Errorf("Default=%v Participates(1)=%v Ranges=%v", m.Default(), m.Participates(1), m.Ranges())
			}
			if got := m.String(); got != "default*:on" {
				t.Errorf("String() = %q", got)
			}
			if !m.Equal(New()) {
				t.Errorf("not Equal to New()")
			}
		})
	}
}

func TestLocate(t *testing.T) {
	m := sample(t)
	tests := []struct {
		name string
		addr netip.Addr
		want string
	}{
		{name: "v4 in range", addr: ip("10.1.2.3"), want: "west"},
		{name: "v4 at range end", addr: ip("10.2.255.255"), want: "east"},
		{name: "v4 in second range", addr: ip("10.3.4.9"), want: "east"},
		{name: "v4 next to a range", addr: ip("10.3.5.1"), want: "default"},
		{name: "v4 unmapped", addr: ip("192.168.0.1"), want: "default"},
		{name: "v6 in range", addr: ip("2001:db8:1::5"), want: "west"},
		{name: "v6 unmapped", addr: ip("2001:db8:2::5"), want: "default"},
		{name: "v6 zoned in range", addr: ip("2001:db8:1::5%eth0"), want: "west"},
		{name: "v4-mapped v6 in v4 range", addr: ip("::ffff:10.1.2.3"), want: "west"},
		{name: "v4-mapped v6 unmapped", addr: ip("::ffff:192.168.0.1"), want: "default"},
		{name: "v4 in range given as v4-mapped prefix", addr: ip("10.9.1.1"), want: "mapped"},
		{name: "invalid address", addr: netip.Addr{}, want: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := m.Locate(tt.addr), id(t, m, tt.want); got != want {
				t.Errorf("Locate(%v) = %v, want %v (%s)", tt.addr, got, want, tt.want)
			}
		})
	}
	t.Run("unmapped follows the default mark", func(t *testing.T) {
		m2, err := m.SetDefault("east")
		if err != nil {
			t.Fatal(err)
		}
		if got := m2.Locate(ip("192.168.0.1")); got != id(t, m, "east") {
			t.Errorf("Locate = %v, want east", got)
		}
	})
}

func TestMapRangeOverlap(t *testing.T) {
	tests := []struct {
		name    string
		prefix  string
		loc     string
		wantErr string // "" = accepted
	}{
		{name: "new inside existing", prefix: "10.1.2.0/24", loc: "x", wantErr: `range 10.1.2.0/24 overlaps 10.1.0.0/16 of location "west"`},
		{name: "existing inside new", prefix: "10.0.0.0/8", loc: "x", wantErr: `range 10.0.0.0/8 overlaps 10.1.0.0/16 of location "west"`},
		{name: "identical, other location", prefix: "10.2.0.0/16", loc: "west", wantErr: `range 10.2.0.0/16 overlaps 10.2.0.0/16 of location "east"`},
		{name: "identical, same location", prefix: "10.2.0.0/16", loc: "east", wantErr: `range 10.2.0.0/16 overlaps 10.2.0.0/16 of location "east"`},
		{name: "unmasked prefix reported masked", prefix: "10.3.4.77/28", loc: "x", wantErr: `range 10.3.4.64/28 overlaps 10.3.4.0/24 of location "east"`},
		{name: "v4-mapped prefix inside v4 range", prefix: "::ffff:10.1.2.0/120", loc: "x", wantErr: `range 10.1.2.0/24 overlaps 10.1.0.0/16 of location "west"`},
		{name: "v6 inside v6", prefix: "2001:db8:1:2::/64", loc: "x", wantErr: `range 2001:db8:1:2::/64 overlaps 2001:db8:1::/48 of location "west"`},
		{name: "v6 around v6", prefix: "2001:db8::/32", loc: "x", wantErr: `range 2001:db8::/32 overlaps 2001:db8:1::/48 of location "west"`},
		{name: "adjacent v4", prefix: "10.3.5.0/24", loc: "east"},
		{name: "v6 around the v4-mapped space does not overlap v4", prefix: "::/64", loc: "x"},
		{name: "new location", prefix: "10.4.0.0/16", loc: "north"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sample(t)
			before := m.String()
			got, err := m.MapRange(pfx(tt.prefix), tt.loc)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrOverlap) {
					t.Fatalf("err = %v, want %q (ErrOverlap)", err, tt.wantErr)
				}
				if !got.Equal(m) {
					t.Errorf("failed MapRange returned a changed map: %s", got)
				}
				if _, ok := got.Lookup("x"); ok {
					t.Errorf("failed MapRange created location x")
				}
			} else {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				l, ok := got.Lookup(tt.loc)
				if !ok || got.Locate(pfx(tt.prefix).Addr()) != l.ID {
					t.Errorf("range not mapped to %q: %s", tt.loc, got)
				}
			}
			if m.String() != before {
				t.Errorf("receiver changed: %s -> %s", before, m)
			}
		})
	}
}

func TestMapRangeInvalid(t *testing.T) {
	tests := []struct {
		name    string
		prefix  netip.Prefix
		loc     string
		wantIs  error
		wantSub string
	}{
		{name: "zero prefix", prefix: netip.Prefix{}, loc: "x", wantIs: ErrInvalidPrefix, wantSub: "invalid range"},
		{name: "bad name", prefix: pfx("10.4.0.0/16"), loc: "no spaces", wantIs: ErrInvalidName, wantSub: `"no spaces"`},
		{name: "empty name", prefix: pfx("10.4.0.0/16"), loc: "", wantIs: ErrInvalidName, wantSub: `""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sample(t).MapRange(tt.prefix, tt.loc)
			if !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("err = %v, want %v containing %q", err, tt.wantIs, tt.wantSub)
			}
		})
	}
}

func TestLocationLimit(t *testing.T) {
	m := New()
	for i := 2; i <= MaxLocations; i++ {
		var err error
		if m, err = m.MapRange(pfx(fmt.Sprintf("10.%d.0.0/16", i)), fmt.Sprintf("loc%d", i)); err != nil {
			t.Fatalf("location %d: %v", i, err)
		}
	}
	if n := len(m.Locations()); n != MaxLocations {
		t.Fatalf("%d locations, want %d", n, MaxLocations)
	}
	tests := []struct {
		name    string
		loc     string
		wantErr string
	}{
		{name: "ninth location fails", loc: "ninth", wantErr: `cannot create location "ninth": the limit of 8 locations is reached`},
		{name: "existing location still takes ranges", loc: "loc3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.MapRange(pfx("10.99.0.0/16"), tt.loc)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrLimit) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Locate(ip("10.99.1.1")) != id(t, m, tt.loc) {
				t.Fatalf("err = %v, map %s", err, got)
			}
		})
	}
	t.Run("room again after a removal", func(t *testing.T) {
		m2, err := m.UnmapRange(pfx("10.5.0.0/16"))
		if err == nil {
			m2, err = m2.RemoveLocation("loc5")
		}
		if err == nil {
			m2, err = m2.MapRange(pfx("10.99.0.0/16"), "ninth")
		}
		if err != nil {
			t.Fatal(err)
		}
		l, _ := m2.Lookup("ninth")
		if l.ID != 9 { // ids are not reused straight away
			t.Errorf("new id = %v, want 9", l.ID)
		}
	})
}

func TestIDWrap(t *testing.T) {
	// Create and remove locations until the id counter wraps past 255; the
	// map must keep working and never hand out 0 or an id in use.
	m := build(t, "10.1.0.0/16=keep")
	for i := 0; i < 600; i++ {
		var err error
		if m, err = m.MapRange(pfx("10.2.0.0/16"), "tmp"); err != nil {
			t.Fatal(err)
		}
		l, _ := m.Lookup("tmp")
		if l.ID == wire.NoLocation || l.ID == id(t, m, "keep") || l.ID == id(t, m, "default") {
			t.Fatalf("round %d: bad id %v in %v", i, l.ID, m.Locations())
		}
		if m, err = m.UnmapRange(pfx("10.2.0.0/16")); err == nil {
			m, err = m.RemoveLocation("tmp")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestUnmapAndRemove(t *testing.T) {
	tests := []struct {
		name    string
		op      func(Map) (Map, error)
		wantIs  error
		wantErr string
		check   func(t *testing.T, m Map)
	}{
		{name: "unmap exact", op: func(m Map) (Map, error) { return m.UnmapRange(pfx("10.3.4.0/24")) },
			check: func(t *testing.T, m Map) {
				if m.Locate(ip("10.3.4.1")) != m.Default() || m.Locate(ip("10.2.0.1")) != id(t, m, "east") {
					t.Errorf("map %s", m)
				}
			}},
		{name: "unmap unmasked form", op: func(m Map) (Map, error) { return m.UnmapRange(pfx("10.3.4.5/24")) }},
		{name: "unmap v4-mapped form", op: func(m Map) (Map, error) { return m.UnmapRange(pfx("::ffff:10.9.0.0/112")) }},
		{name: "unmap sub-range", op: func(m Map) (Map, error) { return m.UnmapRange(pfx("10.1.2.0/24")) },
			wantIs: ErrNotMapped, wantErr: "range 10.1.2.0/24 is not mapped"},
		{name: "unmap invalid", op: func(m Map) (Map, error) { return m.UnmapRange(netip.Prefix{}) }, wantIs: ErrInvalidPrefix},
		{name: "last range leaves the location", op: func(m Map) (Map, error) { return m.UnmapRange(pfx("10.9.0.0/16")) },
			check: func(t *testing.T, m Map) {
				if _, ok := m.Lookup("mapped"); !ok {
					t.Errorf("location removed with its last range")
				}
			}},
		{name: "remove with ranges", op: func(m Map) (Map, error) { return m.RemoveLocation("east") },
			wantIs: ErrHasRanges, wantErr: `location "east" still has 2 range(s); unmap them first`},
		{name: "remove default", op: func(m Map) (Map, error) { return m.RemoveLocation("default") },
			wantIs: ErrIsDefault, wantErr: `location "default" is the default and cannot be removed`},
		{name: "remove unknown", op: func(m Map) (Map, error) { return m.RemoveLocation("nowhere") },
			wantIs: ErrUnknownLocation, wantErr: `unknown location "nowhere"`},
		{name: "remove empty", op: func(m Map) (Map, error) {
			m, err := m.UnmapRange(pfx("10.9.0.0/16"))
			if err != nil {
				return m, err
			}
			return m.RemoveLocation("mapped")
		}, check: func(t *testing.T, m Map) {
			if _, ok := m.Lookup("mapped"); ok || len(m.Locations()) != 3 {
				t.Errorf("map %s", m)
			}
		}},
		{name: "remove old default after the mark moved", op: func(m Map) (Map, error) {
			m, err := m.SetDefault("west")
			if err != nil {
				return m, err
			}
			return m.RemoveLocation("default")
		}, check: func(t *testing.T, m Map) {
			if got := m.String(); got != "west*:on[10.1.0.0/16,2001:db8:1::/48] east:on[10.2.0.0/16,10.3.4.0/24] mapped:on[10.9.0.0/16]" {
				t.Errorf("String() = %q", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sample(t)
			got, err := tt.op(m)
			if tt.wantIs != nil {
				if !errors.Is(err, tt.wantIs) || (tt.wantErr != "" && err.Error() != tt.wantErr) {
					t.Fatalf("err = %v, want %v %q", err, tt.wantIs, tt.wantErr)
				}
				if !got.Equal(m) {
					t.Errorf("failed change returned a changed map")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

func TestRename(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		wantIs   error
		wantErr  string
	}{
		{name: "plain", from: "west", to: "west-2.a_b"},
		{name: "case differs from another", from: "east", to: "West"},
		{name: "same name is a no-op", from: "west", to: "west"},
		{name: "default keeps the mark", from: "default", to: "home"},
		{name: "32 chars", from: "west", to: strings.Repeat("w", 32)},
		{name: "collision", from: "west", to: "east", wantIs: ErrNameTaken, wantErr: `cannot rename "west" to "east": a location named "east" exists`},
		{name: "unknown", from: "north", to: "south", wantIs: ErrUnknownLocation, wantErr: `unknown location "north"`},
		{name: "empty", from: "west", to: "", wantIs: ErrInvalidName, wantErr: `invalid location name "": want 1 to 32 characters of A-Z a-z 0-9 _ . -`},
		{name: "33 chars", from: "west", to: strings.Repeat("w", 33), wantIs: ErrInvalidName},
		{name: "space", from: "west", to: "far west", wantIs: ErrInvalidName, wantErr: `invalid location name "far west": want 1 to 32 characters of A-Z a-z 0-9 _ . -`},
		{name: "slash", from: "west", to: "a/b", wantIs: ErrInvalidName},
		{name: "non-ASCII", from: "west", to: "wést", wantIs: ErrInvalidName},
		{name: "star", from: "west", to: "w*", wantIs: ErrInvalidName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sample(t)
			before := m.Snapshot()
			got, err := m.Rename(tt.from, tt.to)
			if tt.wantIs != nil {
				if !errors.Is(err, tt.wantIs) || (tt.wantErr != "" && err.Error() != tt.wantErr) {
					t.Fatalf("err = %v, want %v %q", err, tt.wantIs, tt.wantErr)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.to)) && !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.from)) {
					t.Errorf("error %q does not name the bad value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			old, _ := m.Lookup(tt.from)
			l, ok := got.Lookup(tt.to)
			if !ok || l.ID != old.ID || l.Off != old.Off {
				t.Fatalf("after rename: %s", got)
			}
			if tt.from != tt.to {
				if _, ok := got.Lookup(tt.from); ok {
					t.Errorf("old name still present")
				}
			}
			if got.Default() != m.Default() || !slices.Equal(got.Ranges(), m.Ranges()) {
				t.Errorf("rename changed default or ranges: %s", got)
			}
			if !slices.EqualFunc([]Snapshot{before}, []Snapshot{m.Snapshot()}, snapEqual) {
				t.Errorf("receiver changed")
			}
		})
	}
}

func snapEqual(a, b Snapshot) bool {
	return a.Default == b.Default && a.Next == b.Next && slices.Equal(a.Locations, b.Locations) && slices.Equal(a.Ranges, b.Ranges)
}

func TestSetDefaultAndOn(t *testing.T) {
	tests := []struct {
		name        string
		op          func(Map) (Map, error)
		wantIs      error
		wantDefault string
		wantOff     []string
		wantString  string
	}{
		{name: "move default", op: func(m Map) (Map, error) { return m.SetDefault("east") }, wantDefault: "east",
			wantString: "default:on west:on[10.1.0.0/16,2001:db8:1::/48] east*:on[10.2.0.0/16,10.3.4.0/24] mapped:on[10.9.0.0/16]"},
		{name: "move default to itself", op: func(m Map) (Map, error) { return m.SetDefault("default") }, wantDefault: "default"},
		{name: "move default to unknown", op: func(m Map) (Map, error) { return m.SetDefault("nowhere") }, wantIs: ErrUnknownLocation},
		{name: "switch off", op: func(m Map) (Map, error) { return m.SetOn("west", false) }, wantDefault: "default", wantOff: []string{"west"},
			wantString: "default*:on west:off[10.1.0.0/16,2001:db8:1::/48] east:on[10.2.0.0/16,10.3.4.0/24] mapped:on[10.9.0.0/16]"},
		{name: "switch off then on", op: func(m Map) (Map, error) {
			m, err := m.SetOn("west", false)
			if err != nil {
				return m, err
			}
			return m.SetOn("west", true)
		}, wantDefault: "default"},
		{name: "switch on when on", op: func(m Map) (Map, error) { return m.SetOn("west", true) }, wantDefault: "default"},
		{name: "switch the default off", op: func(m Map) (Map, error) { return m.SetOn("default", false) }, wantDefault: "default", wantOff: []string{"default"}},
		{name: "off location can become default", op: func(m Map) (Map, error) {
			m, err := m.SetOn("east", false)
			if err != nil {
				return m, err
			}
			return m.SetDefault("east")
		}, wantDefault: "east", wantOff: []string{"east"}},
		{name: "switch unknown", op: func(m Map) (Map, error) { return m.SetOn("nowhere", false) }, wantIs: ErrUnknownLocation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sample(t)
			got, err := tt.op(m)
			if tt.wantIs != nil {
				if !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), `"nowhere"`) {
					t.Fatalf("err = %v, want %v naming the location", err, tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Default() != id(t, got, tt.wantDefault) {
				t.Errorf("Default() = %v, want %s", got.Default(), tt.wantDefault)
			}
			for _, l := range got.Locations() {
				wantOff := slices.Contains(tt.wantOff, l.Name)
				if l.Off != wantOff || got.Participates(l.ID) == wantOff {
					t.Errorf("%s: Off=%v Participates=%v, want off=%v", l.Name, l.Off, got.Participates(l.ID), wantOff)
				}
			}
			if tt.wantString != "" && got.String() != tt.wantString {
				t.Errorf("String() = %q\nwant        %q", got.String(), tt.wantString)
			}
			if !m.Equal(sample(t)) {
				t.Errorf("receiver changed: %s", m)
			}
		})
	}
	t.Run("participates", func(t *testing.T) {
		m := sample(t)
		if m.Participates(wire.NoLocation) || m.Participates(77) {
			t.Errorf("unknown ids participate")
		}
	})
}

// TestImmutability runs every kind of change on one map and checks that the
// map, and slices it handed out before, are unchanged afterwards.
func TestImmutability(t *testing.T) {
	ops := []struct {
		name string
		op   func(Map) (Map, error)
	}{
		{name: "MapRange new location", op: func(m Map) (Map, error) { return m.MapRange(pfx("10.4.0.0/16"), "north") }},
		{name: "MapRange existing location", op: func(m Map) (Map, error) { return m.MapRange(pfx("10.0.0.0/16"), "west") }},
		{name: "UnmapRange", op: func(m Map) (Map, error) { return m.UnmapRange(pfx("10.1.0.0/16")) }},
		{name: "RemoveLocation", op: func(m Map) (Map, error) {
			m, _ = m.UnmapRange(pfx("10.9.0.0/16"))
			return m.RemoveLocation("mapped")
		}},
		{name: "Rename", op: func(m Map) (Map, error) { return m.Rename("west", "far") }},
		{name: "SetDefault", op: func(m Map) (Map, error) { return m.SetDefault("west") }},
		{name: "SetOn", op: func(m Map) (Map, error) { return m.SetOn("east", false) }},
	}
	for _, tt := range ops {
		t.Run(tt.name, func(t *testing.T) {
			m := sample(t)
			locs, ranges, str, snap := m.Locations(), m.Ranges(), m.String(), m.Snapshot()
			got, err := tt.op(m)
			if err != nil {
				t.Fatal(err)
			}
			if got.Equal(m) {
				t.Fatalf("change had no effect")
			}
			if m.String() != str || !slices.Equal(m.Locations(), locs) || !slices.Equal(m.Ranges(), ranges) || !snapEqual(m.Snapshot(), snap) {
				t.Errorf("receiver changed: %s -> %s", str, m)
			}
			// Changing the new map further must not reach back either.
			if _, err := got.MapRange(pfx("172.16.0.0/12"), "extra"); err != nil && !errors.Is(err, ErrLimit) {
				t.Fatal(err)
			}
			if m.String() != str {
				t.Errorf("receiver changed by a change to a derived map")
			}
		})
	}
	t.Run("returned slices are copies", func(t *testing.T) {
		m := sample(t)
		str := m.String()
		m.Locations()[0].Name = "hacked"
		m.Ranges()[0].Loc = 99
		s := m.Snapshot()
		s.Locations[0].Off = true
		m.Group([]Member{{ID: 1, Addr: ip("10.1.0.1")}})[0].Members[0] = 5
		if m.String() != str {
			t.Errorf("map changed through a returned slice: %s", m)
		}
	})
}

func TestGroup(t *testing.T) {
	m := sample(t)
	m, _ = m.SetOn("east", false)
	tests := []struct {
		name    string
		members []Member
		want    []Group
	}{
		{name: "none", members: nil, want: nil},
		{name: "sorted by location then id", members: []Member{
			{ID: 9, Addr: ip("10.2.0.9")},        // east (off)
			{ID: 3, Addr: ip("192.168.1.1")},     // default
			{ID: 7, Addr: ip("10.1.0.7")},        // west
			{ID: 2, Addr: ip("::ffff:10.1.0.2")}, // west via mapped
			{ID: 5, Addr: ip("2001:db8:1::5")},   // west via v6
			{ID: 1, Addr: ip("10.3.4.1")},        // east
			{ID: 4, Addr: netip.Addr{}},          // default
		}, want: []Group{
			{Loc: Location{ID: 1, Name: "default"}, Default: true, Members: []wire.CSID{3, 4}},
			{Loc: Location{ID: 2, Name: "west"}, Members: []wire.CSID{2, 5, 7}},
			{Loc: Location{ID: 3, Name: "east", Off: true}, Members: []wire.CSID{1, 9}},
		}},
		{name: "location without members left out", members: []Member{
			{ID: 10, Addr: ip("10.9.0.1")},
			{ID: 1, Addr: ip("10.1.0.1")},
		}, want: []Group{
			{Loc: Location{ID: 2, Name: "west"}, Members: []wire.CSID{1}},
			{Loc: Location{ID: 4, Name: "mapped"}, Members: []wire.CSID{10}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := m.Group(tt.members)
			if !slices.EqualFunc(got, tt.want, func(a, b Group) bool {
				return a.Loc == b.Loc && a.Default == b.Default && slices.Equal(a.Members, b.Members)
			}) {
				t.Errorf("Group() = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name    string
		members []Member
		want    string
	}{
		{name: "duplicate id panics", members: []Member{{ID: 4, Addr: ip("10.1.0.1")}, {ID: 4, Addr: ip("10.2.0.1")}}, want: "CS4 appears twice"},
		{name: "zero id panics", members: []Member{{ID: 0, Addr: ip("10.1.0.1")}}, want: "CSID 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tt.want) {
					t.Errorf("recover() = %v, want panic containing %q", r, tt.want)
				}
			}()
			m.Group(tt.members)
		})
	}
}

func TestRestore(t *testing.T) {
	good := sample(t)
	good, _ = good.SetOn("east", false)
	good, _ = good.SetDefault("west")
	t.Run("round trip", func(t *testing.T) {
		s := good.Snapshot()
		slices.Reverse(s.Locations) // order does not matter
		slices.Reverse(s.Ranges)
		got, err := Restore(s)
		if err != nil || !got.Equal(good) || got.String() != good.String() {
			t.Fatalf("Restore = %s, %v; want %s", got, err, good)
		}
	})
	tests := []struct {
		name    string
		mutate  func(*Snapshot)
		wantSub string
	}{
		{name: "no locations", mutate: func(s *Snapshot) { s.Locations = nil }, wantSub: "0 locations"},
		{name: "too many", mutate: func(s *Snapshot) {
			for i := 10; i < 15; i++ {
				s.Locations = append(s.Locations, Location{ID: wire.LocationID(i), Name: fmt.Sprint("l", i)})
			}
		}, wantSub: "9 locations"},
		{name: "zero id", mutate: func(s *Snapshot) { s.Locations[1].ID = 0 }, wantSub: "has no id"},
		{name: "duplicate id", mutate: func(s *Snapshot) { s.Locations[1].ID = 1 }, wantSub: "id L1 is used twice"},
		{name: "duplicate name", mutate: func(s *Snapshot) { s.Locations[1].Name = "default" }, wantSub: `name "default" is used twice`},
		{name: "bad name", mutate: func(s *Snapshot) { s.Locations[1].Name = "a b" }, wantSub: `"a b"`},
		{name: "unknown default", mutate: func(s *Snapshot) { s.Default = 42 }, wantSub: "default L42"},
		{name: "zero next", mutate: func(s *Snapshot) { s.Next = 0 }, wantSub: "next id"},
		{name: "range of unknown location", mutate: func(s *Snapshot) { s.Ranges[0].Loc = 42 }, wantSub: "unknown location L42"},
		{name: "overlapping ranges", mutate: func(s *Snapshot) {
			s.Ranges = append(s.Ranges, Range{Prefix: pfx("10.1.2.0/24"), Loc: 1})
		}, wantSub: "overlaps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good.Snapshot()
			tt.mutate(&s)
			_, err := Restore(s)
			if !errors.Is(err, ErrInvalidMap) || !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("err = %v, want ErrInvalidMap containing %q", err, tt.wantSub)
			}
		})
	}
}
