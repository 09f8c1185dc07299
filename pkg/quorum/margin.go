package quorum

import (
	"cmp"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// What a planner asks of a count (mfscli -SQP, the dry runs): how far a
// won tally is from being lost. Both answers come from the tally's own
// numbers and the rule above (a location is carried by more than half of
// its members; wins), so no reader keeps a second copy of the rule;
// TestSpare and TestMargin hold them to Tally.

// Spare is how many of the location's votes for the master could be lost,
// whichever they are, with the location still carried; -1 when it is not
// carried. Losing Spare()+1 of them un-carries it.
func (l LocationTally) Spare() int {
	if !l.Carried {
		return -1
	}
	return l.For - l.Registered/2 - 1
}

// Margin is how many of the votes for the master could be lost, whichever
// they are, with the master still winning; -1 when the tally is not Won.
// weakest names the locations the cheapest loss (Margin()+1 votes)
// un-carries, sorted by id; nil when not Won.
//
// Why this is the cheapest: a loss that ends the win must un-carry a set
// of carried locations whose remainder does not win, and un-carrying one
// costs its Spare()+1 votes, whichever others are lost. Whether the
// remainder wins depends only on how many are left and on whether the
// default is among them, so for each count and each choice about the
// default the cheapest locations of that count are the best set.
func (t Tally) Margin() (margin int, weakest []wire.LocationID) {
	if t.Outcome != Won || t.Empty {
		return -1, nil
	}
	var others []LocationTally
	var def []LocationTally // the carried default location, if any
	for _, l := range t.Locations {
		switch {
		case !l.Carried:
		case l.Default:
			def = append(def, l)
		default:
			others = append(others, l)
		}
	}
	slices.SortStableFunc(others, func(a, b LocationTally) int { return cmp.Compare(a.Spare(), b.Spare()) })
	best := -1
	var bestSet []LocationTally
	try := func(set []LocationTally, withDefault bool) {
		cost := 0
		for _, l := range set {
			cost += l.Spare() + 1
		}
		if wins(t.Carried-len(set), t.Participating, t.DefaultCarried && !withDefault) {
			return
		}
		if best < 0 || cost < best {
			best, bestSet = cost, set
		}
	}
	for k := 0; k <= len(others); k++ {
		try(others[:k], false)
		if len(def) > 0 {
			try(append(slices.Clone(def), others[:k]...), true)
		}
	}
	// Un-carrying every carried location always loses, so best was set.
	for _, l := range bestSet {
		weakest = append(weakest, l.Loc)
	}
	slices.Sort(weakest)
	return best - 1, weakest
}
