package quorum

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// forVoters draws which counting chunkservers vote for the master (the
// rest are Unknown, as a LEADER counts) and returns them sorted by id.
func forVoters(t *rapid.T, e Electorate) map[wire.CSID]bool {
	yes := map[wire.CSID]bool{}
	bias := rapid.IntRange(1, 4).Draw(t, "bias")
	for _, v := range e.voters {
		if rapid.IntRange(0, 4).Draw(t, "for") < bias {
			yes[v.ID] = true
		}
	}
	return yes
}

// drawCount draws a registry and votes for the master, and counts them.
func drawCount(t *rapid.T) (Electorate, map[wire.CSID]bool, Tally) {
	m, members := genRegistry(t)
	e := NewElectorate(m, members)
	yes := forVoters(t, e)
	return e, yes, tallyWithout(e, yes, nil)
}

// loseVotes adds to lost n more of the votes for the master in loc.
func loseVotes(e Electorate, yes, lost map[wire.CSID]bool, loc wire.LocationID, n int) {
	for _, v := range e.voters {
		if n > 0 && v.Loc == loc && yes[v.ID] && !lost[v.ID] {
			lost[v.ID], n = true, n-1
		}
	}
}

// tallyWithout counts with the votes for the master minus lost.
func tallyWithout(e Electorate, yes, lost map[wire.CSID]bool) Tally {
	return e.Tally(func(id wire.CSID) Vote {
		if yes[id] && !lost[id] {
			return For
		}
		return Unknown
	})
}

// TestSpare: losing Spare votes of a carried location keeps it carried,
// one more does not; a location not carried has -1.
func TestSpare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, yes, tl := drawCount(t)
		for _, l := range tl.Locations {
			if !l.Carried {
				if l.Spare() != -1 {
					t.Fatalf("%v not carried, Spare %d", l.Loc, l.Spare())
				}
				continue
			}
			lost := map[wire.CSID]bool{}
			loseVotes(e, yes, lost, l.Loc, l.Spare())
			if !carried(tallyWithout(e, yes, lost), l.Loc) {
				t.Fatalf("%v: losing Spare()=%d votes un-carries it", l.Loc, l.Spare())
			}
			loseVotes(e, yes, lost, l.Loc, 1)
			if carried(tallyWithout(e, yes, lost), l.Loc) {
				t.Fatalf("%v: losing Spare()+1=%d votes keeps it carried", l.Loc, l.Spare()+1)
			}
		}
	})
}

func carried(t Tally, loc wire.LocationID) bool {
	for _, l := range t.Locations {
		if l.Loc == loc {
			return l.Carried
		}
	}
	return false
}

// TestMargin: losing the votes Margin names (Spare()+1 in each weakest
// location) ends the win; and, by brute force over every set of Margin
// votes where there are few enough, no loss that small ends it.
func TestMargin(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, yes, tl := drawCount(t)
		margin, weakest := tl.Margin()
		if tl.Outcome != Won {
			if margin != -1 || weakest != nil {
				t.Fatalf("not won (%v), margin %d %v", tl, margin, weakest)
			}
			return
		}
		lost := map[wire.CSID]bool{}
		for _, l := range tl.Locations {
			if slices.Contains(weakest, l.Loc) {
				loseVotes(e, yes, lost, l.Loc, l.Spare()+1)
			}
		}
		if len(lost) != margin+1 {
			t.Fatalf("margin %d, yet the weakest %v cost %d votes", margin, weakest, len(lost))
		}
		if after := tallyWithout(e, yes, lost); after.Outcome == Won {
			t.Fatalf("losing the weakest %v (%d votes) still wins: %v", weakest, len(lost), after)
		}
		var ids []wire.CSID
		for _, v := range e.voters {
			if yes[v.ID] {
				ids = append(ids, v.ID)
			}
		}
		if len(ids) > 14 {
			return
		}
		for mask := 0; mask < 1<<len(ids); mask++ {
			gone := map[wire.CSID]bool{}
			for i, id := range ids {
				if mask&(1<<i) != 0 {
					gone[id] = true
				}
			}
			if len(gone) <= margin && tallyWithout(e, yes, gone).Outcome != Won {
				t.Fatalf("margin %d, yet losing %v (%d votes) ends the win", margin, gone, len(gone))
			}
		}
	})
}
