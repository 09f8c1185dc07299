package quorum

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Outcome is where a master stands in a tally.
type Outcome uint8

const (
	// Pending: not won now, but it could be won if every voter whose vote is
	// unknown came to this master.
	Pending Outcome = 1 + iota
	// Won: the master holds quorum now.
	Won
	// Lost: the master cannot win whatever the unknown voters do.
	Lost
)

// String prints the outcome as operators see it.
func (o Outcome) String() string {
	switch o {
	case Pending:
		return "PENDING"
	case Won:
		return "WON"
	case Lost:
		return "LOST"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Vote is what one chunkserver does with its vote, seen from the master
// being tallied.
type Vote uint8

const (
	// Unknown: not known to be with this master or with another one (e.g.
	// not connected anywhere yet). Counts against now, but might come over.
	// The zero value, so a missing answer is never taken as For.
	Unknown Vote = iota
	// For: the vote is with this master.
	For
	// Against: the vote is with another master.
	Against
)

// String prints the vote.
func (v Vote) String() string {
	switch v {
	case Unknown:
		return "UNKNOWN"
	case For:
		return "FOR"
	case Against:
		return "AGAINST"
	}
	return "Vote(" + strconv.Itoa(int(v)) + ")"
}

// Member is one counting chunkserver of an Electorate and the location it
// counts in (a chunkserver as the tally sees it; voter.Voter is its role
// machine).
type Member struct {
	ID  wire.CSID
	Loc wire.LocationID
}

// place is one participating location of an Electorate.
type place struct {
	id  wire.LocationID
	def bool
	n   int // registered chunkservers counting here; always >= 1
}

// Electorate is who counts: the registered chunkservers of participating
// locations, grouped by location. It is an immutable value; the zero
// Electorate is empty.
type Electorate struct {
	// places holds only participating locations (ON, at least one voter),
	// sorted by id.
	places []place
	// voters is sorted by ID; every Loc is an entry of places.
	voters []Member
	// at[i] is the index in places of voters[i]'s location (precomputed:
	// Tally runs on every step of every master).
	at []int
	// witness: an even split of the locations is broken by the witness
	// lease (the registry names one), not by the default location.
	witness bool
}

// WithWitness returns the electorate with its ties broken by the witness
// (on) or by the default location (off). Every master must agree on it,
// so it comes from the registry, never from one master's own settings.
func (e Electorate) WithWitness(on bool) Electorate {
	e.witness = on
	return e
}

// Witness reports whether ties are broken by the witness.
func (e Electorate) Witness() bool { return e.witness }

// NewElectorate builds the electorate from the location map and the
// registered chunkservers. Members of OFF locations are left out; locations
// without members do not participate. Like locations.Map.Group, it panics on
// a duplicate or zero chunkserver id.
func NewElectorate(m locations.Map, members []locations.Member) Electorate {
	var e Electorate
	for _, g := range m.Group(members) {
		if !m.Participates(g.Loc.ID) {
			continue // OFF: takes no part in the count
		}
		e.places = append(e.places, place{id: g.Loc.ID, def: g.Default, n: len(g.Members)})
		for _, id := range g.Members {
			e.voters = append(e.voters, Member{ID: id, Loc: g.Loc.ID})
		}
	}
	slices.SortFunc(e.voters, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	e.at = make([]int, len(e.voters))
	for i, v := range e.voters {
		e.at[i] = e.placeIndex(v.Loc)
	}
	return e
}

// Size returns the number of counting chunkservers.
func (e Electorate) Size() int { return len(e.voters) }

// Winnable reports whether a master given every vote would win: exactly
// when the electorate is not empty, since every participating location
// has a member and so is carried by all its votes (a majority of
// locations, all of them, is then carried). O(1): masters ask it on every
// probe and timer, and a tally of 10,000 voters each time was a fifth of a
// crowd's processor (TestPropertyWinnable holds it to Tally).
func (e Electorate) Winnable() bool { return len(e.voters) > 0 }

// Divided reports whether two or more locations participate.
func (e Electorate) Divided() bool { return len(e.places) >= 2 }

// TieBreak reports whether an even split of the participating locations
// has a winner: true with an odd number of them (no even split), with a
// witness (its lease goes to one side), or when the default location
// participates (it is carried by one side). False means two halves of the
// locations elect nobody: losing either half (a site, a link) leaves no
// LEADER. The fix is a witness, a chunkserver (voter-only is enough) in the
// default location, or a default that has chunkservers.
func (e Electorate) TieBreak() bool {
	if len(e.places)%2 == 1 || e.witness {
		return true
	}
	for _, p := range e.places {
		if p.def {
			return true
		}
	}
	return len(e.places) == 0
}

// Contains reports whether the chunkserver counts in this electorate.
func (e Electorate) Contains(id wire.CSID) bool {
	_, ok := slices.BinarySearchFunc(e.voters, id, func(v Member, id wire.CSID) int { return cmp.Compare(v.ID, id) })
	return ok
}

// Members returns the counting chunkservers, sorted by id (a copy).
func (e Electorate) Members() []Member { return slices.Clone(e.voters) }

// String renders the electorate for traces, e.g. `L1*:CS1,CS4 L2:CS2`
// ("*" marks the default location).
func (e Electorate) String() string {
	if len(e.places) == 0 {
		return "(empty)"
	}
	var b strings.Builder
	for i, p := range e.places {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.id.String())
		if p.def {
			b.WriteByte('*')
		}
		b.WriteByte(':')
		first := true
		for _, v := range e.voters {
			if v.Loc == p.id {
				if !first {
					b.WriteByte(',')
				}
				first = false
				b.WriteString(v.ID.String())
			}
		}
	}
	return b.String()
}

// LocationTally is the count in one participating location.
type LocationTally struct {
	Loc     wire.LocationID
	Default bool
	// Registered = For + Against + Unknown.
	Registered, For, Against, Unknown int
	// Carried: 2*For > Registered, the location's vote goes to this master.
	Carried bool
	// CanCarry: 2*(For+Unknown) > Registered, the location could still be
	// carried if every unknown voter came over.
	CanCarry bool
}

// Tally is the result of counting for one master.
type Tally struct {
	Outcome Outcome
	// Empty: no counting chunkserver at all (always Lost).
	Empty bool
	// Divided: two or more participating locations.
	Divided bool
	// Participating locations, and how many of them this master carries.
	Participating, Carried int
	// Needed is the least number of carried locations that wins, given
	// whether the tie is broken for this master (the tie-break lowers it).
	Needed int
	// DefaultCarried: the default location participates and is carried,
	// and breaks ties (no witness is configured).
	DefaultCarried bool
	// Witness: ties are broken by the witness; WitnessHeld: this master
	// holds its lease (the tie is broken for it).
	Witness, WitnessHeld bool
	// Locations has one entry per participating location, sorted by id.
	Locations []LocationTally
}

// wins is the quorum rule on location votes: a strict majority of the
// participating locations, or exactly half with the tie broken (the default
// location among them, or the witness lease held, whichever the registry
// names). With one location it is the undivided rule (carrying it is a
// strict majority of all chunkservers).
func wins(carried, participating int, tieBroken bool) bool {
	return 2*carried > participating || (2*carried == participating && tieBroken)
}

// Wins is the quorum rule on a count of locations (wins): what a reader of
// a reported tally (mfscli, the alarms) asks of a count it changes, e.g.
// one location fewer carried.
func Wins(carried, participating int, tieBroken bool) bool {
	return wins(carried, participating, tieBroken)
}

// Tally counts for one master with the witness's vote Unknown (no lease
// held, but one might be taken). vote is called once per counting
// chunkserver, in ascending id order; a value other than For or Against is
// taken as Unknown.
func (e Electorate) Tally(vote func(wire.CSID) Vote) Tally {
	return e.TallyWitness(vote, Unknown)
}

// TallyWitness is Tally with the witness's vote: For while this master
// holds the lease, Against while another is known to, Unknown otherwise.
// Without a witness configured the vote is not looked at.
//
// Safety is unchanged: the lease is held by one master at a time (docs/
// architecture.md §7.4), so it is a vote like a chunkserver's
// that breaks only an exact half, and two disjoint halves cannot both hold
// it.
func (e Electorate) TallyWitness(vote func(wire.CSID) Vote, witness Vote) Tally {
	t := Tally{
		Empty:         len(e.voters) == 0,
		Divided:       e.Divided(),
		Participating: len(e.places),
		Locations:     make([]LocationTally, len(e.places)),
		Witness:       e.witness,
		WitnessHeld:   e.witness && witness == For,
	}
	for i, p := range e.places {
		t.Locations[i] = LocationTally{Loc: p.id, Default: p.def, Registered: p.n}
	}
	for i, v := range e.voters {
		lt := &t.Locations[e.at[i]]
		switch vote(v.ID) {
		case For:
			lt.For++
		case Against:
			lt.Against++
		default:
			lt.Unknown++
		}
	}
	// The best case: every unknown voter comes to this master, so it carries
	// every location it can carry. Nothing better is possible, so if that
	// does not win, the master has lost.
	bestCarried, bestDefault := 0, false
	for i := range t.Locations {
		lt := &t.Locations[i]
		lt.Carried = 2*lt.For > lt.Registered
		lt.CanCarry = 2*(lt.For+lt.Unknown) > lt.Registered
		if lt.Carried {
			t.Carried++
			t.DefaultCarried = t.DefaultCarried || (lt.Default && !e.witness)
		}
		if lt.CanCarry {
			bestCarried++
			bestDefault = bestDefault || lt.Default
		}
	}
	tie, bestTie := t.DefaultCarried, bestDefault
	if e.witness {
		tie, bestTie = t.WitnessHeld, witness != Against
	}
	if tie {
		t.Needed = (t.Participating + 1) / 2
	} else {
		t.Needed = t.Participating/2 + 1
	}
	switch {
	case t.Empty:
		t.Outcome = Lost
	case wins(t.Carried, t.Participating, tie):
		t.Outcome = Won
	case wins(bestCarried, t.Participating, bestTie):
		t.Outcome = Pending
	default:
		t.Outcome = Lost
	}
	return t
}

func (e Electorate) placeIndex(id wire.LocationID) int {
	i, ok := slices.BinarySearchFunc(e.places, id, func(p place, id wire.LocationID) int { return cmp.Compare(p.id, id) })
	if !ok {
		panic(fmt.Sprintf("quorum: voter in location %s, which does not participate", id))
	}
	return i
}

// TallyFor counts for master m given which master each chunkserver's vote is
// with: a chunkserver absent from votes, or with wire.NoMaster, is Unknown;
// one with m is For; one with any other master is Against. The map is only
// read by key, so its order does not matter.
func (e Electorate) TallyFor(m wire.MasterID, votes map[wire.CSID]wire.MasterID) Tally {
	return e.Tally(func(id wire.CSID) Vote {
		switch with, ok := votes[id]; {
		case !ok || with == wire.NoMaster:
			return Unknown
		case with == m:
			return For
		default:
			return Against
		}
	})
}

// Joint combines the tallies of one master under two electorates (the old
// and new registry while a change is in flight): Won only if both are Won,
// Lost if either is Lost, else Pending. Requiring both keeps two masters
// counting against different registry versions from both winning.
func Joint(a, b Tally) Outcome {
	switch {
	case a.Outcome == Lost || b.Outcome == Lost:
		return Lost
	case a.Outcome == Won && b.Outcome == Won:
		return Won
	}
	return Pending
}

// String renders the tally on one line: divided as "WON 2/3 locations
// (needs 2, default carried)", undivided as "PENDING 2/5 chunkservers (needs
// 3)", empty as "LOST (no counting chunkservers)".
func (t Tally) String() string {
	switch {
	case t.Empty || len(t.Locations) == 0:
		return t.Outcome.String() + " (no counting chunkservers)"
	case !t.Divided:
		l := t.Locations[0]
		return fmt.Sprintf("%s %d/%d chunkservers (needs %d)", t.Outcome, l.For, l.Registered, l.Registered/2+1)
	}
	s := fmt.Sprintf("%s %d/%d locations (needs %d", t.Outcome, t.Carried, t.Participating, t.Needed)
	switch {
	case t.WitnessHeld:
		s += ", witness held"
	case t.DefaultCarried:
		s += ", default carried"
	}
	return s + ")"
}
