package quorum

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// site describes one location of a test cluster and, per registered
// chunkserver, its vote as seen from the master being tallied:
// F = For, A = Against, U = Unknown. Lower-case letters are voter-only
// chunkservers (no disks); the quorum code cannot tell them apart, which is
// the point.
type site struct {
	name  string
	def   bool   // the default location
	off   bool   // switched OFF
	votes string // one letter per registered chunkserver
}

// cluster builds the location map (site i owns 10.i.0.0/16; the initial
// "default" location stays, with no members, unless a site takes the mark),
// the members, and the vote function.
func cluster(t testing.TB, sites ...site) (locations.Map, []locations.Member, func(wire.CSID) Vote) {
	t.Helper()
	m := locations.New()
	var members []locations.Member
	votes := map[wire.CSID]Vote{}
	next := wire.CSID(1)
	for i, s := range sites {
		var err error
		if m, err = m.MapRange(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i + 1), 0, 0}), 16), s.name); err != nil {
			t.Fatal(err)
		}
		if s.def {
			if m, err = m.SetDefault(s.name); err != nil {
				t.Fatal(err)
			}
		}
		if s.off {
			if m, err = m.SetOn(s.name, false); err != nil {
				t.Fatal(err)
			}
		}
		for j, c := range s.votes {
			members = append(members, locations.Member{ID: next, Addr: netip.AddrFrom4([4]byte{10, byte(i + 1), 0, byte(j + 1)})})
			switch c {
			case 'F', 'f':
				votes[next] = For
			case 'A', 'a':
				votes[next] = Against
			case 'U', 'u':
				votes[next] = Unknown
			default:
				t.Fatalf("bad vote letter %q", c)
			}
			next++
		}
	}
	return m, members, func(id wire.CSID) Vote { return votes[id] }
}

func TestTally(t *testing.T) {
	tests := []struct {
		name        string
		sites       []site
		want        Outcome
		wantDivided bool
		wantString  string
	}{
		// Undivided: one participating location, a strict majority of all.
		{name: "undivided exactly half, rest unknown", sites: []site{{name: "a", def: true, votes: "FFUU"}},
			want: Pending, wantString: "PENDING 2/4 chunkservers (needs 3)"},
		{name: "undivided exactly half, rest against", sites: []site{{name: "a", def: true, votes: "FFAA"}},
			want: Lost, wantString: "LOST 2/4 chunkservers (needs 3)"},
		{name: "undivided 3 of 5", sites: []site{{name: "a", def: true, votes: "FFFAA"}},
			want: Won, wantString: "WON 3/5 chunkservers (needs 3)"},
		{name: "undivided 3 of 5, rest unknown", sites: []site{{name: "a", def: true, votes: "FUFUF"}},
			want: Won, wantString: "WON 3/5 chunkservers (needs 3)"},
		{name: "undivided 2 of 5, one unknown", sites: []site{{name: "a", def: true, votes: "FFUAA"}},
			want: Pending, wantString: "PENDING 2/5 chunkservers (needs 3)"},
		{name: "undivided 2 of 5, none unknown", sites: []site{{name: "a", def: true, votes: "FFAAA"}},
			want: Lost, wantString: "LOST 2/5 chunkservers (needs 3)"},
		{name: "undivided single chunkserver", sites: []site{{name: "a", def: true, votes: "F"}},
			want: Won, wantString: "WON 1/1 chunkservers (needs 1)"},
		{name: "undivided single chunkserver unknown", sites: []site{{name: "a", def: true, votes: "U"}},
			want: Pending, wantString: "PENDING 0/1 chunkservers (needs 1)"},
		{name: "undivided in a non-default location (empty default does not participate)",
			sites: []site{{name: "a", def: true}, {name: "b", votes: "FFA"}},
			want:  Won, wantString: "WON 2/3 chunkservers (needs 2)"},
		{name: "undivided: voter-only chunkservers count like the others", sites: []site{{name: "a", def: true, votes: "ffFAA"}},
			want: Won, wantString: "WON 3/5 chunkservers (needs 3)"},
		{name: "undivided: voter-only against count like the others", sites: []site{{name: "a", def: true, votes: "FFaaa"}},
			want: Lost, wantString: "LOST 2/5 chunkservers (needs 3)"},

		// Divided: each location casts one vote.
		{name: "12+5+5: b and c carried, the 12 gone", sites: []site{
			{name: "a", def: true, votes: strings.Repeat("U", 12)}, {name: "b", votes: "FFFUU"}, {name: "c", votes: "UFFFU"}},
			want: Won, wantDivided: true, wantString: "WON 2/3 locations (needs 2)"},
		{name: "12+5+5: b and c carried, the 12 with the other master", sites: []site{
			{name: "a", def: true, votes: strings.Repeat("A", 12)}, {name: "b", votes: "FFFAA"}, {name: "c", votes: "AFFFA"}},
			want: Won, wantDivided: true, wantString: "WON 2/3 locations (needs 2)"},
		{name: "12+5+5: the side with the 12 does not win", sites: []site{
			{name: "a", def: true, votes: strings.Repeat("F", 12)}, {name: "b", votes: "AAAFF"}, {name: "c", votes: "FAAAF"}},
			want: Lost, wantDivided: true, wantString: "LOST 1/3 locations (needs 2, default carried)"},
		{name: "12+5+5: the side with the 12, b and c unknown", sites: []site{
			{name: "a", def: true, votes: strings.Repeat("F", 12)}, {name: "b", votes: "UUUFF"}, {name: "c", votes: "AAAFF"}},
			want: Pending, wantDivided: true, wantString: "PENDING 1/3 locations (needs 2, default carried)"},
		{name: "3+3: the side carrying the default wins", sites: []site{{name: "a", def: true, votes: "FFF"}, {name: "b", votes: "AAA"}},
			want: Won, wantDivided: true, wantString: "WON 1/2 locations (needs 1, default carried)"},
		{name: "3+3: the other side cannot win", sites: []site{{name: "a", def: true, votes: "AAA"}, {name: "b", votes: "FFF"}},
			want: Lost, wantDivided: true, wantString: "LOST 1/2 locations (needs 2)"},
		{name: "3+3: the other side while the default is unknown", sites: []site{{name: "a", def: true, votes: "AUU"}, {name: "b", votes: "FFF"}},
			want: Pending, wantDivided: true, wantString: "PENDING 1/2 locations (needs 2)"},
		{name: "3+3: default carried by a bare majority", sites: []site{{name: "a", def: true, votes: "FFA"}, {name: "b", votes: "AAU"}},
			want: Won, wantDivided: true, wantString: "WON 1/2 locations (needs 1, default carried)"},
		{name: "three locations losing one (non-default)", sites: []site{{name: "a", def: true, votes: "FFF"}, {name: "b", votes: "FFF"}, {name: "c", votes: "UUU"}},
			want: Won, wantDivided: true, wantString: "WON 2/3 locations (needs 2, default carried)"},
		{name: "three locations losing the default", sites: []site{{name: "a", def: true, votes: "UUU"}, {name: "b", votes: "FFF"}, {name: "c", votes: "FFA"}},
			want: Won, wantDivided: true, wantString: "WON 2/3 locations (needs 2)"},
		{name: "three locations, one carried", sites: []site{{name: "a", def: true, votes: "AAA"}, {name: "b", votes: "FFF"}, {name: "c", votes: "UUA"}},
			want: Pending, wantDivided: true, wantString: "PENDING 1/3 locations (needs 2)"},
		{name: "split in half casts no vote", sites: []site{{name: "a", def: true, votes: "AAA"}, {name: "b", votes: "FFAA"}, {name: "c", votes: "FFF"}},
			want: Lost, wantDivided: true, wantString: "LOST 1/3 locations (needs 2)"},
		{name: "split in half casts no vote for the other side either", sites: []site{{name: "a", def: true, votes: "FFF"}, {name: "b", votes: "AAFF"}, {name: "c", votes: "AAA"}},
			want: Lost, wantDivided: true, wantString: "LOST 1/3 locations (needs 2, default carried)"},
		{name: "default split in half breaks no tie", sites: []site{{name: "a", def: true, votes: "FFAA"}, {name: "b", votes: "FFF"}},
			want: Lost, wantDivided: true, wantString: "LOST 1/2 locations (needs 2)"},
		{name: "default split with unknowns may still break the tie", sites: []site{{name: "a", def: true, votes: "FFAU"}, {name: "b", votes: "AAA"}},
			want: Pending, wantDivided: true, wantString: "PENDING 0/2 locations (needs 2)"},
		{name: "no default participating: a 1-1 split wins nobody", sites: []site{{name: "a", def: true}, {name: "b", votes: "FFF"}, {name: "c", votes: "AAA"}},
			want: Lost, wantDivided: true, wantString: "LOST 1/2 locations (needs 2)"},
		{name: "four locations, half with the default", sites: []site{{name: "a", def: true, votes: "FF"}, {name: "b", votes: "F"}, {name: "c", votes: "AA"}, {name: "d", votes: "A"}},
			want: Won, wantDivided: true, wantString: "WON 2/4 locations (needs 2, default carried)"},
		{name: "four locations, half without the default", sites: []site{{name: "a", def: true, votes: "AA"}, {name: "b", votes: "F"}, {name: "c", votes: "FFF"}, {name: "d", votes: "U"}},
			want: Pending, wantDivided: true, wantString: "PENDING 2/4 locations (needs 3)"},
		{name: "four locations, three carried", sites: []site{{name: "a", def: true, votes: "AA"}, {name: "b", votes: "F"}, {name: "c", votes: "FFA"}, {name: "d", votes: "F"}},
			want: Won, wantDivided: true, wantString: "WON 3/4 locations (needs 3)"},
		{name: "voter-only witness location decides", sites: []site{{name: "a", def: true, votes: "AAA"}, {name: "b", votes: "FFF"}, {name: "w", votes: "f"}},
			want: Won, wantDivided: true, wantString: "WON 2/3 locations (needs 2)"},
		{name: "voter-only and disk chunkservers mixed in a location", sites: []site{{name: "a", def: true, votes: "AAAAA"}, {name: "b", votes: "FfA"}, {name: "c", votes: "ffFaA"}},
			want: Won, wantDivided: true, wantString: "WON 2/3 locations (needs 2)"},

		// Empty and OFF.
		{name: "empty registry", sites: nil, want: Lost, wantString: "LOST (no counting chunkservers)"},
		{name: "only OFF locations have chunkservers", sites: []site{{name: "a", def: true}, {name: "b", off: true, votes: "FFF"}},
			want: Lost, wantString: "LOST (no counting chunkservers)"},
		{name: "carrying only an OFF location does not win", sites: []site{{name: "a", def: true, votes: "AAA"}, {name: "b", off: true, votes: "FFFFF"}},
			want: Lost, wantString: "LOST 0/3 chunkservers (needs 2)"},
		{name: "OFF location is not a location vote", sites: []site{{name: "a", def: true, votes: "AAA"}, {name: "b", votes: "FFF"}, {name: "c", off: true, votes: "FFF"}},
			want: Lost, wantDivided: true, wantString: "LOST 1/2 locations (needs 2)"},
		{name: "OFF default breaks no tie", sites: []site{{name: "a", def: true, off: true, votes: "FFF"}, {name: "b", votes: "FFF"}, {name: "c", votes: "AAA"}},
			want: Lost, wantDivided: true, wantString: "LOST 1/2 locations (needs 2)"},
		{name: "two locations ON: divided", sites: []site{{name: "a", def: true, votes: "FFFAA"}, {name: "b", votes: "AAAAAAA"}},
			want: Won, wantDivided: true, wantString: "WON 1/2 locations (needs 1, default carried)"},
		{name: "second location OFF: undivided", sites: []site{{name: "a", def: true, votes: "FFFAA"}, {name: "b", off: true, votes: "AAAAAAA"}},
			want: Won, wantString: "WON 3/5 chunkservers (needs 3)"},
		{name: "two locations ON: the non-default side", sites: []site{{name: "a", def: true, votes: "AAF"}, {name: "b", votes: "FFF"}},
			want: Lost, wantDivided: true, wantString: "LOST 1/2 locations (needs 2)"},
		{name: "default OFF: the same side alone", sites: []site{{name: "a", def: true, off: true, votes: "AAF"}, {name: "b", votes: "FFF"}},
			want: Won, wantString: "WON 3/3 chunkservers (needs 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, members, vote := cluster(t, tt.sites...)
			e := NewElectorate(m, members)
			got := e.Tally(vote)
			if got.Outcome != tt.want || got.Divided != tt.wantDivided || got.String() != tt.wantString {
				t.Errorf("Tally = %s (divided %v)\nwant    %s (%s, divided %v)\nelectorate %s, map %s",
					got, got.Divided, tt.wantString, tt.want, tt.wantDivided, e, m)
			}
			if e.Divided() != tt.wantDivided {
				t.Errorf("Divided() = %v", e.Divided())
			}
			if got.Empty != (e.Size() == 0) {
				t.Errorf("Empty = %v with Size %d", got.Empty, e.Size())
			}
			checkTallyShape(t, e, got)
		})
	}
}

// reporter is what checkTallyShape needs from *testing.T and *rapid.T.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// checkTallyShape checks the fields of a Tally against each other.
func checkTallyShape(t reporter, e Electorate, got Tally) {
	t.Helper()
	registered, carried, defCarried := 0, 0, false
	for _, l := range got.Locations {
		registered += l.Registered
		if l.For+l.Against+l.Unknown != l.Registered || l.Registered == 0 {
			t.Errorf("location %+v: counts do not add up", l)
		}
		if l.Carried != (2*l.For > l.Registered) || l.CanCarry != (2*(l.For+l.Unknown) > l.Registered) {
			t.Errorf("location %+v: Carried/CanCarry wrong", l)
		}
		if l.Carried {
			carried++
			defCarried = defCarried || l.Default
		}
	}
	if registered != e.Size() || carried != got.Carried || defCarried != got.DefaultCarried || got.Participating != len(got.Locations) {
		t.Errorf("totals wrong: %+v (size %d)", got, e.Size())
	}
	// Needed is exactly the threshold of the rule.
	if !got.Empty && (got.Outcome == Won) != (got.Carried >= got.Needed) {
		t.Errorf("Outcome %s but Carried %d, Needed %d", got.Outcome, got.Carried, got.Needed)
	}
}

func TestElectorate(t *testing.T) {
	m, members, _ := cluster(t,
		site{name: "a", def: true, votes: "UUU"}, // CS1..3
		site{name: "b", off: true, votes: "UU"},  // CS4..5, OFF
		site{name: "c", votes: "UU"},             // CS6..7
	)
	// Registry order must not matter.
	slices.Reverse(members)
	e := NewElectorate(m, members)
	a, _ := m.Lookup("a")
	c, _ := m.Lookup("c")
	tests := []struct {
		name string
		got  any
		want any
	}{
		{name: "Size leaves OFF out", got: e.Size(), want: 5},
		{name: "Divided", got: e.Divided(), want: true},
		{name: "Contains counted", got: e.Contains(6), want: true},
		{name: "Contains OFF", got: e.Contains(4), want: false},
		{name: "Contains unregistered", got: e.Contains(99), want: false},
		{name: "Members sorted", got: fmt.Sprint(e.Members()), want: fmt.Sprint([]Member{{1, a.ID}, {2, a.ID}, {3, a.ID}, {6, c.ID}, {7, c.ID}})},
		{name: "String", got: e.String(), want: "L2*:CS1,CS2,CS3 L4:CS6,CS7"},
		{name: "TieBreak: a and c, default a", got: e.TieBreak(), want: true},
		{name: "zero Electorate", got: fmt.Sprint(Electorate{}.Size(), Electorate{}.Divided(), Electorate{}.Tally(nil).Outcome, Electorate{}), want: "0 false LOST (empty)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
	t.Run("Voters is a copy", func(t *testing.T) {
		e.Members()[0].ID = 42
		if !e.Contains(1) || e.Contains(42) {
			t.Errorf("electorate changed through Members()")
		}
	})
}

func TestTieBreak(t *testing.T) {
	for _, tt := range []struct {
		sites []site
		want  bool
	}{
		{[]site{{name: "a", votes: "UU"}}, true},
		{[]site{{name: "a", def: true, votes: "UU"}, {name: "b", votes: "UU"}}, true},
		// The two-site trap: the default location has no chunkserver.
		{[]site{{name: "a", votes: "UU"}, {name: "b", votes: "UU"}}, false},
		{[]site{{name: "a", votes: "UU"}, {name: "b", votes: "UU"}, {name: "c", votes: "u"}}, true},
		{[]site{{name: "a", def: true, off: true, votes: "UU"}, {name: "b", votes: "U"}, {name: "c", votes: "U"}}, false},
	} {
		m, members, _ := cluster(t, tt.sites...)
		if got := NewElectorate(m, members).TieBreak(); got != tt.want {
			t.Errorf("%v: TieBreak %v, want %v", tt.sites, got, tt.want)
		}
	}
}

func TestTallyCallsVoteInOrder(t *testing.T) {
	m, _, _ := cluster(t, site{name: "a", def: true}, site{name: "b"})
	// Ids interleave the locations, so location order is not id order.
	members := []locations.Member{
		{ID: 5, Addr: netip.MustParseAddr("10.2.0.1")},
		{ID: 2, Addr: netip.MustParseAddr("10.1.0.1")},
		{ID: 9, Addr: netip.MustParseAddr("10.1.0.2")},
		{ID: 3, Addr: netip.MustParseAddr("10.2.0.2")},
		{ID: 7, Addr: netip.MustParseAddr("192.168.0.1")}, // unmapped -> default "a"
	}
	var calls []wire.CSID
	NewElectorate(m, members).Tally(func(id wire.CSID) Vote { calls = append(calls, id); return Unknown })
	if want := []wire.CSID{2, 3, 5, 7, 9}; !slices.Equal(calls, want) {
		t.Errorf("vote called for %v, want %v", calls, want)
	}
}

func TestTallyFor(t *testing.T) {
	m, members, _ := cluster(t, site{name: "a", def: true, votes: "UUUUU"})
	e := NewElectorate(m, members)
	votes := map[wire.CSID]wire.MasterID{1: 1, 2: 1, 3: 2, 4: wire.NoMaster, 99: 1} // 5 absent, 99 unregistered
	tests := []struct {
		name   string
		master wire.MasterID
		want   string
		counts [3]int // For, Against, Unknown
	}{
		{name: "M1", master: 1, want: "PENDING 2/5 chunkservers (needs 3)", counts: [3]int{2, 1, 2}},
		{name: "M2", master: 2, want: "PENDING 1/5 chunkservers (needs 3)", counts: [3]int{1, 2, 2}},
		{name: "M3 (no votes)", master: 3, want: "LOST 0/5 chunkservers (needs 3)", counts: [3]int{0, 3, 2}},
		{name: "NoMaster", master: wire.NoMaster, want: "LOST 0/5 chunkservers (needs 3)", counts: [3]int{0, 3, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.TallyFor(tt.master, votes)
			l := got.Locations[0]
			if got.String() != tt.want || [3]int{l.For, l.Against, l.Unknown} != tt.counts {
				t.Errorf("TallyFor = %s %+v, want %s %v", got, l, tt.want, tt.counts)
			}
		})
	}
}

func TestJoint(t *testing.T) {
	tests := []struct {
		name string
		a, b Outcome
		want Outcome
	}{
		{name: "won+won", a: Won, b: Won, want: Won},
		{name: "won+pending", a: Won, b: Pending, want: Pending},
		{name: "won+lost", a: Won, b: Lost, want: Lost},
		{name: "pending+won", a: Pending, b: Won, want: Pending},
		{name: "pending+pending", a: Pending, b: Pending, want: Pending},
		{name: "pending+lost", a: Pending, b: Lost, want: Lost},
		{name: "lost+won", a: Lost, b: Won, want: Lost},
		{name: "lost+pending", a: Lost, b: Pending, want: Lost},
		{name: "lost+lost", a: Lost, b: Lost, want: Lost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Joint(Tally{Outcome: tt.a}, Tally{Outcome: tt.b}); got != tt.want {
				t.Errorf("Joint(%s, %s) = %s, want %s", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		name string
		got  fmt.Stringer
		want string
	}{
		{name: "Pending", got: Pending, want: "PENDING"},
		{name: "Won", got: Won, want: "WON"},
		{name: "Lost", got: Lost, want: "LOST"},
		{name: "bad outcome", got: Outcome(0), want: "Outcome(0)"},
		{name: "Unknown", got: Unknown, want: "UNKNOWN"},
		{name: "For", got: For, want: "FOR"},
		{name: "Against", got: Against, want: "AGAINST"},
		{name: "bad vote", got: Vote(9), want: "Vote(9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s := tt.got.String(); s != tt.want {
				t.Errorf("String() = %q, want %q", s, tt.want)
			}
		})
	}
}

func TestTallyOutOfRangeVoteIsUnknown(t *testing.T) {
	m, members, _ := cluster(t, site{name: "a", def: true, votes: "FFUUU"})
	got := NewElectorate(m, members).Tally(func(id wire.CSID) Vote {
		if id <= 2 {
			return For
		}
		return Vote(7) // never For: an unexpected value must not win a vote
	})
	if l := got.Locations[0]; l.For != 2 || l.Unknown != 3 || got.Outcome != Pending {
		t.Errorf("Tally = %s %+v, want PENDING with 3 unknown", got, l)
	}
}

// TestWitnessTally: the two-site cases of docs/architecture.md §7.4:
// exactly half wins only with the lease, the default location
// breaks no tie once a witness is configured, and a strict majority needs
// no witness.
func TestWitnessTally(t *testing.T) {
	for _, tt := range []struct {
		name    string
		sites   []site
		witness Vote
		want    Outcome
		str     string
	}{
		{"half with the lease", []site{{name: "a", votes: "FFF"}, {name: "b", votes: "UUU"}}, For, Won, "WON 1/2 locations (needs 1, witness held)"},
		{"half, lease unknown", []site{{name: "a", votes: "FFF"}, {name: "b", votes: "UUU"}}, Unknown, Pending, "PENDING 1/2 locations (needs 2)"},
		{"half, lease with another", []site{{name: "a", votes: "FFF"}, {name: "b", votes: "AAA"}}, Against, Lost, "LOST 1/2 locations (needs 2)"},
		{"half, lease with another, b unknown", []site{{name: "a", votes: "FFF"}, {name: "b", votes: "UUA"}}, Against, Pending, "PENDING 1/2 locations (needs 2)"},
		{"default breaks no tie", []site{{name: "a", def: true, votes: "FF"}, {name: "b", votes: "AA"}}, Unknown, Pending, "PENDING 1/2 locations (needs 2)"},
		{"majority needs no lease", []site{{name: "a", votes: "FF"}, {name: "b", votes: "FFU"}}, Against, Won, "WON 2/2 locations (needs 2)"},
		{"three sites: two of three", []site{{name: "a", votes: "F"}, {name: "b", votes: "F"}, {name: "c", votes: "A"}}, Against, Won, "WON 2/3 locations (needs 2)"},
		{"four sites: two with the lease", []site{{name: "a", votes: "F"}, {name: "b", votes: "F"}, {name: "c", votes: "A"}, {name: "d", votes: "U"}}, For, Won, "WON 2/4 locations (needs 2, witness held)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, members, vote := cluster(t, tt.sites...)
			e := NewElectorate(m, members).WithWitness(true)
			got := e.TallyWitness(vote, tt.witness)
			if got.Outcome != tt.want || got.String() != tt.str {
				t.Errorf("%s, want %s (%q)", got, tt.want, tt.str)
			}
			// Without a witness the vote is not looked at.
			plain := NewElectorate(m, members)
			if a, b := plain.TallyWitness(vote, tt.witness), plain.Tally(vote); a.String() != b.String() {
				t.Errorf("no witness configured, yet its vote changed the tally: %s vs %s", a, b)
			}
		})
	}
}
