package locations

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

var names = []string{"default", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}

// genPrefix draws from a small space so that overlaps and exact matches are
// frequent.
func genPrefix(t *rapid.T, label string) netip.Prefix {
	x := rapid.IntRange(0, 3).Draw(t, label+"x")
	y := rapid.IntRange(0, 3).Draw(t, label+"y")
	switch rapid.IntRange(0, 2).Draw(t, label+"family") {
	case 0:
		bits := rapid.SampledFrom([]int{8, 16, 24}).Draw(t, label+"bits")
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(x), byte(y), 0}), bits)
	case 1:
		bits := rapid.SampledFrom([]int{32, 40, 48}).Draw(t, label+"bits")
		return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(x), byte(y)}), bits)
	default: // IPv4-mapped form of a v4 prefix
		bits := rapid.SampledFrom([]int{8, 16, 24}).Draw(t, label+"bits")
		a := netip.AddrFrom4([4]byte{10, byte(x), byte(y), 0})
		return netip.PrefixFrom(netip.AddrFrom16(a.As16()), bits+96)
	}
}

func genAddr(t *rapid.T, label string) netip.Addr {
	b := rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, label)
	v4 := netip.AddrFrom4([4]byte{10, b[0] % 5, b[1] % 5, b[2]})
	switch rapid.IntRange(0, 2).Draw(t, label+"family") {
	case 0:
		return v4
	case 1:
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, b[0] % 5, b[1] % 5, 15: b[3]})
	default:
		return netip.AddrFrom16(v4.As16())
	}
}

// checkInvariants verifies every invariant a Map promises.
func checkInvariants(t *rapid.T, m Map) {
	s := m.Snapshot()
	if n := len(s.Locations); n < 1 || n > MaxLocations {
		t.Fatalf("%d locations: %s", n, m)
	}
	if !slices.IsSortedFunc(s.Locations, func(a, b Location) int { return cmp.Compare(a.ID, b.ID) }) {
		t.Fatalf("locations not sorted: %v", s.Locations)
	}
	seen := map[string]bool{}
	defaults := 0
	for i, l := range s.Locations {
		if l.ID == 0 || (i > 0 && s.Locations[i-1].ID == l.ID) || seen[l.Name] || checkName(l.Name) != nil {
			t.Fatalf("bad location %+v in %s", l, m)
		}
		seen[l.Name] = true
		if l.ID == s.Default {
			defaults++
		}
	}
	if defaults != 1 || s.Next == 0 {
		t.Fatalf("%d defaults, next %v: %s", defaults, s.Next, m)
	}
	if !slices.IsSortedFunc(s.Ranges, compareRanges) {
		t.Fatalf("ranges not sorted: %v", s.Ranges)
	}
	for i, r := range s.Ranges {
		if r.Prefix != r.Prefix.Masked() || r.Prefix.Addr().Is4In6() {
			t.Fatalf("range %s not normalised", r.Prefix)
		}
		if _, ok := m.Location(r.Loc); !ok {
			t.Fatalf("range %s of unknown location %v", r.Prefix, r.Loc)
		}
		for _, o := range s.Ranges[:i] {
			if o.Prefix.Overlaps(r.Prefix) {
				t.Fatalf("ranges %s and %s overlap", o.Prefix, r.Prefix)
			}
		}
	}
	if r, err := Restore(s); err != nil || !r.Equal(m) {
		t.Fatalf("Restore(Snapshot()) = %s, %v; want %s", r, err, m)
	}
}

// naiveLocate is the definition: the one range containing the address, in
// its IPv4 form when it is IPv4-mapped, else the default.
func naiveLocate(m Map, a netip.Addr) string {
	if a.Is4In6() {
		a = netip.AddrFrom4(a.As4())
	}
	for _, r := range m.Ranges() {
		if r.Prefix.Contains(a) {
			l, _ := m.Location(r.Loc)
			return l.Name
		}
	}
	l, _ := m.Location(m.Default())
	return l.Name
}

func TestPropertyChanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := New()
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for i := range steps {
			before, snap := m.String(), m.Snapshot()
			name := rapid.SampledFrom(names).Draw(t, "name")
			var next Map
			var err error
			var op string
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1: // mapping is the common change
				p := genPrefix(t, "p")
				op = fmt.Sprintf("MapRange(%s, %s)", p, name)
				next, err = m.MapRange(p, name)
			case 2:
				var p netip.Prefix
				if rs := m.Ranges(); len(rs) > 0 && rapid.Bool().Draw(t, "existing") {
					p = rapid.SampledFrom(rs).Draw(t, "range").Prefix
				} else {
					p = genPrefix(t, "p")
				}
				op = fmt.Sprintf("UnmapRange(%s)", p)
				next, err = m.UnmapRange(p)
			case 3:
				op = "RemoveLocation(" + name + ")"
				next, err = m.RemoveLocation(name)
			case 4:
				to := rapid.SampledFrom(names).Draw(t, "to")
				op = "Rename(" + name + ", " + to + ")"
				next, err = m.Rename(name, to)
			default:
				if rapid.Bool().Draw(t, "setDefault") {
					op = "SetDefault(" + name + ")"
					next, err = m.SetDefault(name)
				} else {
					on := rapid.Bool().Draw(t, "on")
					op = fmt.Sprintf("SetOn(%s, %v)", name, on)
					next, err = m.SetOn(name, on)
				}
			}
			if m.String() != before || !snapEqual(m.Snapshot(), snap) {
				t.Fatalf("step %d %s changed its receiver", i, op)
			}
			if err != nil && !next.Equal(m) {
				t.Fatalf("step %d %s failed (%v) but returned a changed map", i, op, err)
			}
			checkInvariants(t, next)
			for j := range 5 {
				a := genAddr(t, fmt.Sprint("addr", j))
				l, _ := next.Location(next.Locate(a))
				if want := naiveLocate(next, a); l.Name != want {
					t.Fatalf("Locate(%s) = %q, want %q in %s", a, l.Name, want, next)
				}
			}
			m = next
		}
	})
}
