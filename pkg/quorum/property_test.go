package quorum

import (
	"fmt"
	"net/netip"
	"testing"

	"pgregory.net/rapid"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// genRegistry draws a location map (1..8 locations, random ON/OFF, random
// default, v4 and v6 ranges) and 0..30 registered chunkservers with distinct
// ids, at addresses inside mapped ranges, unmapped, or IPv4-mapped IPv6.
func genRegistry(t *rapid.T) (locations.Map, []locations.Member) {
	n := rapid.IntRange(1, locations.MaxLocations).Draw(t, "locations")
	m := locations.New()
	var err error
	for i := 1; i < n; i++ {
		name := fmt.Sprint("l", i)
		if m, err = m.MapRange(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16), name); err != nil {
			t.Fatal(err)
		}
		if rapid.Bool().Draw(t, "v6range") {
			if m, err = m.MapRange(netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(i)}), 48), name); err != nil {
				t.Fatal(err)
			}
		}
	}
	locs := m.Locations()
	for _, l := range locs {
		if rapid.IntRange(0, 3).Draw(t, "off") == 0 { // OFF one time in four
			if m, err = m.SetOn(l.Name, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m, err = m.SetDefault(rapid.SampledFrom(locs).Draw(t, "default").Name); err != nil {
		t.Fatal(err)
	}
	count := rapid.IntRange(0, 30).Draw(t, "chunkservers")
	id := wire.CSID(0)
	members := make([]locations.Member, 0, count)
	for range count {
		id += wire.CSID(rapid.IntRange(1, 3).Draw(t, "idgap"))
		i := rapid.IntRange(0, n-1).Draw(t, "site") // 0: unmapped
		host := byte(rapid.IntRange(1, 254).Draw(t, "host"))
		var a netip.Addr
		switch form := rapid.IntRange(0, 2).Draw(t, "form"); {
		case i == 0 && form == 0:
			a = netip.AddrFrom4([4]byte{192, 168, 0, host})
		case i == 0:
			a = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb9, 15: host})
		case form == 0:
			a = netip.AddrFrom4([4]byte{10, byte(i), 7, host})
		case form == 1:
			a = netip.AddrFrom16(netip.AddrFrom4([4]byte{10, byte(i), 7, host}).As16())
		default: // the v6 range if the location has one, else unmapped
			a = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(i), 15: host})
		}
		members = append(members, locations.Member{ID: id, Addr: a})
	}
	// The registry comes in any order.
	perm := rapid.Permutation(members).Draw(t, "order")
	return m, perm
}

// naive is a deliberately plain, separately written version of the rule
// (docs/architecture.md §2), used as the oracle: Go maps, floats, the undivided and divided rules
// written out on their own, and brute force over the unknown votes.
type naive struct {
	byLoc      map[wire.LocationID][]wire.CSID // counting chunkservers per participating location
	defaultLoc wire.LocationID
}

func newNaive(m locations.Map, members []locations.Member) naive {
	n := naive{byLoc: map[wire.LocationID][]wire.CSID{}, defaultLoc: m.Default()}
	for _, mb := range members {
		loc := m.Locate(mb.Addr)
		l, ok := m.Location(loc)
		if !ok || l.Off {
			continue // OFF locations take no part
		}
		n.byLoc[loc] = append(n.byLoc[loc], mb.ID)
	}
	return n
}

func (n naive) size() int {
	total := 0
	for _, ids := range n.byLoc {
		total += len(ids)
	}
	return total
}

// wonNow applies the rule to a complete picture: for[id] true when the
// chunkserver is with the master.
func (n naive) wonNow(isFor func(wire.CSID) bool) bool {
	switch len(n.byLoc) {
	case 0:
		return false
	case 1: // undivided: more than half of all registered chunkservers
		total, yes := 0, 0
		for _, ids := range n.byLoc {
			for _, id := range ids {
				total++
				if isFor(id) {
					yes++
				}
			}
		}
		return float64(yes) > float64(total)/2
	}
	// divided: location votes
	carried, defaultCarried := 0, false
	for loc, ids := range n.byLoc {
		yes := 0
		for _, id := range ids {
			if isFor(id) {
				yes++
			}
		}
		if float64(yes) > float64(len(ids))/2 {
			carried++
			if loc == n.defaultLoc {
				defaultCarried = true
			}
		}
	}
	half := float64(len(n.byLoc)) / 2
	return float64(carried) > half || (float64(carried) == half && defaultCarried)
}

// outcome returns the expected outcome, or ok=false when there are too many
// unknown votes to enumerate and the answer is not Won.
func (n naive) outcome(vote func(wire.CSID) Vote) (o Outcome, ok bool) {
	if n.size() == 0 {
		return Lost, true
	}
	if n.wonNow(func(id wire.CSID) bool { return vote(id) == For }) {
		return Won, true
	}
	var unknown []wire.CSID
	for _, ids := range n.byLoc {
		for _, id := range ids {
			if vote(id) != For && vote(id) != Against {
				unknown = append(unknown, id)
			}
		}
	}
	if len(unknown) > 12 {
		return 0, false
	}
	for mask := 0; mask < 1<<len(unknown); mask++ {
		comesOver := map[wire.CSID]bool{}
		for i, id := range unknown {
			comesOver[id] = mask&(1<<i) != 0
		}
		if n.wonNow(func(id wire.CSID) bool { return vote(id) == For || comesOver[id] }) {
			return Pending, true
		}
	}
	return Lost, true
}

func genVotes(t *rapid.T, members []locations.Member) map[wire.CSID]Vote {
	// A per-run weight so some runs have few unknowns and some many.
	unknownBias := rapid.IntRange(0, 4).Draw(t, "unknownBias")
	votes := map[wire.CSID]Vote{}
	for _, mb := range members {
		r := rapid.IntRange(0, 5).Draw(t, "vote")
		switch {
		case r < unknownBias:
			votes[mb.ID] = Unknown
		case r%2 == 0:
			votes[mb.ID] = For
		default:
			votes[mb.ID] = Against
		}
	}
	return votes
}

// TestPropertyAtMostOneWinner: whatever the registry and however the
// chunkservers' votes are spread over k masters, at most one master wins.
func TestPropertyAtMostOneWinner(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, members := genRegistry(t)
		e := NewElectorate(m, members)
		k := rapid.IntRange(1, 5).Draw(t, "masters")
		votes := map[wire.CSID]wire.MasterID{}
		for _, mb := range members {
			if with := wire.MasterID(rapid.IntRange(0, k).Draw(t, "with")); with != wire.NoMaster {
				votes[mb.ID] = with
			}
		}
		winner := wire.NoMaster
		for master := wire.MasterID(1); master <= wire.MasterID(k); master++ {
			got := e.TallyFor(master, votes)
			if got.Outcome != Won {
				continue
			}
			if winner != wire.NoMaster {
				t.Fatalf("both %s and %s win: %s / %s\nmap %s\nelectorate %s\nvotes %v",
					winner, master, e.TallyFor(winner, votes), got, m, e, votes)
			}
			winner = master
		}
	})
}

// TestPropertyMatchesNaive compares the outcome with the naive oracle.
func TestPropertyMatchesNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, members := genRegistry(t)
		e := NewElectorate(m, members)
		n := newNaive(m, members)
		if e.Size() != n.size() || e.Divided() != (len(n.byLoc) >= 2) {
			t.Fatalf("Size %d Divided %v, naive %d / %d locations\nmap %s\nelectorate %s", e.Size(), e.Divided(), n.size(), len(n.byLoc), m, e)
		}
		votes := genVotes(t, members)
		vote := func(id wire.CSID) Vote { return votes[id] }
		got := e.Tally(vote)
		checkTallyShape(t, e, got)
		want, ok := n.outcome(vote)
		switch {
		case !ok && got.Outcome == Won:
			t.Fatalf("Tally = %s, naive says not won\nmap %s\nelectorate %s\nvotes %v", got, m, e, votes)
		case ok && got.Outcome != want:
			t.Fatalf("Tally = %s, naive says %s\nmap %s\nelectorate %s\nvotes %v", got, want, m, e, votes)
		}
	})
}

// TestPropertyWinnable: Winnable is what a tally of every vote for the
// master says.
func TestPropertyWinnable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, members := genRegistry(t)
		e := NewElectorate(m, members)
		all := e.Tally(func(wire.CSID) Vote { return For }).Outcome == Won
		if e.Winnable() != all {
			t.Fatalf("Winnable %v, a tally of every vote won %v\nmap %s\nelectorate %s", e.Winnable(), all, m, e)
		}
	})
}

// TestPropertyMonotonic: one more vote for the master never hurts it.
func TestPropertyMonotonic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, members := genRegistry(t)
		e := NewElectorate(m, members)
		votes := genVotes(t, members)
		var unknown, against []wire.CSID
		for _, v := range e.Members() { // sorted, so the draw is reproducible
			switch votes[v.ID] {
			case Unknown:
				unknown = append(unknown, v.ID)
			case Against:
				against = append(against, v.ID)
			}
		}
		before := e.Tally(func(id wire.CSID) Vote { return votes[id] })
		check := func(change string, id wire.CSID, to Vote) {
			after := e.Tally(func(c wire.CSID) Vote {
				if c == id {
					return to
				}
				return votes[c]
			})
			if before.Outcome == Won && after.Outcome != Won || before.Outcome == Pending && after.Outcome == Lost {
				t.Fatalf("%s %s: %s -> %s\nmap %s\nelectorate %s\nvotes %v", change, id, before, after, m, e, votes)
			}
		}
		if len(unknown) > 0 {
			check("Unknown->For", rapid.SampledFrom(unknown).Draw(t, "unknown"), For)
		}
		if len(against) > 0 {
			check("Against->Unknown", rapid.SampledFrom(against).Draw(t, "against"), Unknown)
		}
	})
}

// TestPropertyTieBreak: TieBreak is true exactly when every split of
// whole locations between two masters elects one of them. With it false,
// the half/half split elects nobody.
func TestPropertyTieBreak(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, members := genRegistry(t)
		e := NewElectorate(m, members)
		if len(e.places) == 0 {
			return
		}
		side := map[wire.LocationID]wire.MasterID{}
		if e.TieBreak() {
			for _, p := range e.places {
				side[p.id] = wire.MasterID(rapid.IntRange(1, 2).Draw(t, "side"))
			}
		} else {
			for i, p := range e.places {
				side[p.id] = wire.MasterID(1 + 2*i/len(e.places))
			}
		}
		votes := map[wire.CSID]wire.MasterID{}
		for _, v := range e.voters {
			votes[v.ID] = side[v.Loc]
		}
		winners := 0
		for master := wire.MasterID(1); master <= 2; master++ {
			if e.TallyFor(master, votes).Outcome == Won {
				winners++
			}
		}
		if e.TieBreak() && winners != 1 {
			t.Fatalf("TieBreak true but %d winners: electorate %s, sides %v", winners, e, side)
		}
		if !e.TieBreak() && winners != 0 {
			t.Fatalf("TieBreak false but the half/half split elected: electorate %s, sides %v", e, side)
		}
	})
}

// TestThreshold checks Threshold against Tally: for random electorates and
// random values (some voters without one), the voters at or above the
// threshold win, and at the next value up they do not; with no threshold,
// even every voter with a value loses.
func TestThreshold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, members := genRegistry(t)
		e := NewElectorate(m, members)
		vals := map[wire.CSID]int{}
		for _, v := range e.voters {
			if rapid.IntRange(0, 4).Draw(t, "has") > 0 {
				vals[v.ID] = rapid.IntRange(0, 6).Draw(t, "value")
			}
		}
		value := func(id wire.CSID) (int, bool) { v, ok := vals[id]; return v, ok }
		winsAt := func(x int) bool {
			return e.Tally(func(id wire.CSID) Vote {
				if v, ok := vals[id]; ok && v >= x {
					return For
				}
				return Unknown
			}).Outcome == Won
		}
		x, ok := Threshold(e, value)
		if !ok {
			if winsAt(-1) {
				t.Fatalf("no threshold, yet every voter with a value wins (%v)", vals)
			}
			return
		}
		if !winsAt(x) {
			t.Fatalf("threshold %d does not win (%v)", x, vals)
		}
		if winsAt(x + 1) {
			t.Fatalf("threshold %d, yet %d wins too (%v)", x, x+1, vals)
		}
	})
}

// TestPropertyWitnessAtMostOneWinner: with ties broken by the witness, and
// the lease held by at most one master (any one, or none), at most one
// master wins however the votes are spread; and the default location
// breaks no tie then.
func TestPropertyWitnessAtMostOneWinner(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, members := genRegistry(t)
		e := NewElectorate(m, members).WithWitness(true)
		k := rapid.IntRange(1, 4).Draw(t, "masters")
		holder := wire.MasterID(rapid.IntRange(0, k).Draw(t, "holder"))
		votes := map[wire.CSID]wire.MasterID{}
		for _, mb := range members {
			if with := wire.MasterID(rapid.IntRange(0, k).Draw(t, "with")); with != wire.NoMaster {
				votes[mb.ID] = with
			}
		}
		winner := wire.NoMaster
		for master := wire.MasterID(1); master <= wire.MasterID(k); master++ {
			w := Unknown
			switch {
			case holder == master:
				w = For
			case holder != wire.NoMaster:
				w = Against
			}
			got := e.TallyWitness(func(id wire.CSID) Vote {
				switch with, ok := votes[id]; {
				case !ok:
					return Unknown
				case with == master:
					return For
				}
				return Against
			}, w)
			if got.DefaultCarried {
				t.Fatalf("with a witness the default location broke a tie: %s", got)
			}
			if got.Outcome != Won {
				continue
			}
			if 2*got.Carried == got.Participating && holder != master {
				t.Fatalf("%s won exactly half without the lease (held by %s): %s", master, holder, got)
			}
			if winner != wire.NoMaster {
				t.Fatalf("both %s and %s win (lease with %s)\nelectorate %s\nvotes %v", winner, master, holder, e, votes)
			}
			winner = master
		}
	})
}

// TestPropertyWitnessTieBreak: with a witness every split of whole locations
// between two masters elects exactly the one that holds the lease when the
// split is even, and the majority side otherwise.
func TestPropertyWitnessTieBreak(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, members := genRegistry(t)
		e := NewElectorate(m, members).WithWitness(true)
		if len(e.places) == 0 {
			return
		}
		if !e.TieBreak() {
			t.Fatalf("a witness breaks every tie, TieBreak false: %s", e)
		}
		side := map[wire.LocationID]wire.MasterID{}
		n1 := 0
		for _, p := range e.places {
			side[p.id] = wire.MasterID(rapid.IntRange(1, 2).Draw(t, "side"))
			if side[p.id] == 1 {
				n1++
			}
		}
		holder := wire.MasterID(rapid.IntRange(1, 2).Draw(t, "holder"))
		want := holder
		switch {
		case 2*n1 > len(e.places):
			want = 1
		case 2*n1 < len(e.places):
			want = 2
		}
		for master := wire.MasterID(1); master <= 2; master++ {
			w := Against
			if master == holder {
				w = For
			}
			got := e.TallyWitness(func(id wire.CSID) Vote {
				for _, v := range e.voters {
					if v.ID == id {
						if side[v.Loc] == master {
							return For
						}
						return Against
					}
				}
				return Unknown
			}, w)
			if (got.Outcome == Won) != (master == want) {
				t.Fatalf("master %s: %s, want the winner %s (lease with %s, sides %v, electorate %s)", master, got, want, holder, side, e)
			}
		}
	})
}

// TestThresholdWitness checks ThresholdWitness against TallyWitness: the
// witness counts at x while its own value is at least x.
func TestThresholdWitness(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, members := genRegistry(t)
		e := NewElectorate(m, members).WithWitness(rapid.Bool().Draw(t, "witness"))
		vals := map[wire.CSID]int{}
		for _, v := range e.voters {
			if rapid.IntRange(0, 4).Draw(t, "has") > 0 {
				vals[v.ID] = rapid.IntRange(0, 6).Draw(t, "value")
			}
		}
		w, has := rapid.IntRange(0, 6).Draw(t, "w"), rapid.Bool().Draw(t, "has w")
		value := func(id wire.CSID) (int, bool) { v, ok := vals[id]; return v, ok }
		winsAt := func(x int) bool {
			wv := Unknown
			if has && w >= x {
				wv = For
			}
			return e.TallyWitness(func(id wire.CSID) Vote {
				if v, ok := vals[id]; ok && v >= x {
					return For
				}
				return Unknown
			}, wv).Outcome == Won
		}
		x, ok := ThresholdWitness(e, value, w, has)
		if !ok {
			if winsAt(-1) {
				t.Fatalf("no threshold, yet every voter with a value wins (%v, w=%d/%v)", vals, w, has)
			}
			return
		}
		if !winsAt(x) {
			t.Fatalf("threshold %d does not win (%v, w=%d/%v, %s)", x, vals, w, has, e)
		}
		if winsAt(x + 1) {
			t.Fatalf("threshold %d, yet %d wins too (%v, w=%d/%v, %s)", x, x+1, vals, w, has, e)
		}
	})
}
