package node

import (
	"testing"
	"time"
)

// TestUnreachableSpaced: the first failure is said, the next ones only a
// minute apart, and reaching the peer again reports the run and resets it.
func TestUnreachableSpaced(t *testing.T) {
	var u Unreachable
	t0 := time.Unix(1000, 0)
	var said []int
	for i := 0; i < 200; i++ { // one failure every second for 200 s
		if say, fails, since := u.Failed(t0.Add(time.Duration(i) * time.Second)); say {
			said = append(said, fails)
			if !since.Equal(t0) {
				t.Fatalf("since %v, want %v", since, t0)
			}
		}
	}
	if want := []int{1, 61, 121, 181}; len(said) != len(want) || said[0] != 1 || said[1] != 61 || said[3] != 181 {
		t.Fatalf("said after failures %v, want %v", said, want)
	}
	if fails, since := u.Reached(); fails != 200 || !since.Equal(t0) {
		t.Fatalf("reached after %d failures since %v, want 200 since %v", fails, since, t0)
	}
	if fails, _ := u.Reached(); fails != 0 {
		t.Fatalf("a second Reached reports %d failures", fails)
	}
	if say, fails, _ := u.Failed(t0.Add(300 * time.Second)); !say || fails != 1 {
		t.Fatalf("the first failure of a new run: say %v, fails %d", say, fails)
	}
}
