package roles

import "testing"

// TestIncarnationNeverRepeats (security review N5): a master restarted from
// an older copy of its store on a clock that is behind gets an incarnation
// other than the one the copy's run had, and above the stored one; on a
// clock that is ahead, one above every earlier start.
func TestIncarnationNeverRepeats(t *testing.T) {
	const wall = int64(1798761600000) // 2027-01-01
	// The run the copy was taken in: started at wall, incarnation I.
	old := IncarnationBase(0, wall, 12345) + 1
	// Restored and started again, the clock an hour behind: twice, with
	// other salt each time (the daemon draws 31 random bits).
	seen := map[uint64]bool{old: true}
	stored := old - 1 // the copy's store may hold the one before too
	for _, salt := range []uint32{1, 2, 999, 1 << 30, 1<<31 - 1} {
		inc := IncarnationBase(stored, wall-3600_000, salt) + 1
		if inc <= stored {
			t.Fatalf("salt %d: incarnation %d not above the stored %d", salt, inc, stored)
		}
		if seen[inc] {
			t.Fatalf("salt %d: incarnation %d repeated", salt, inc)
		}
		seen[inc] = true
	}
	// A clock far behind 1970 or unset counts as nothing.
	if got := IncarnationBase(7, -5, 0); got != 7 {
		t.Fatalf("no clock: %d", got)
	}
	// A later start on a sane clock is above every start of an earlier
	// second, whatever their salt.
	if IncarnationBase(0, wall+1000, 0) <= IncarnationBase(0, wall, 1<<31-1) {
		t.Fatal("a start a second later is not above")
	}
}
