package node

import (
	"testing"
	"time"
)

// The masters' clock (NewClock) is CLOCK_BOOTTIME on Linux, never goes back, and
// keeps pace with the monotonic clock while the machine is awake.
func TestClockBoottime(t *testing.T) {
	c := NewClock()
	if _, ok := boottime(); !ok || !c.boot {
		t.Skip("no CLOCK_BOOTTIME here")
	}
	start := time.Now()
	prev := c.Since()
	for i := 0; i < 1000; i++ {
		now := c.Since()
		if now < prev {
			t.Fatalf("went back: %v after %v", now, prev)
		}
		prev = now
	}
	time.Sleep(20 * time.Millisecond)
	got, want := c.Since(), time.Since(start)
	if d := got - want; d < -5*time.Millisecond || d > 5*time.Millisecond {
		t.Fatalf("boottime says %v elapsed, the monotonic clock %v", got, want)
	}
}
