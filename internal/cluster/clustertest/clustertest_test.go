package clustertest

import (
	"fmt"
	"testing"
	"time"
)

// TestWaitHelpers: WaitUntil returns as soon as check passes, and gives up
// with check's last error once its bound has passed; Throughout stops at
// the first error and passes when none comes.
func TestWaitHelpers(t *testing.T) {
	n := 0
	if err := WaitUntil(time.Second, time.Millisecond, func() error {
		if n++; n < 3 {
			return fmt.Errorf("try %d", n)
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("WaitUntil passing on the third try: %v after %d tries", err, n)
	}
	n = 0
	err := WaitUntil(30*time.Millisecond, 10*time.Millisecond, func() error { n++; return fmt.Errorf("try %d", n) })
	if err == nil || err.Error() != fmt.Sprintf("not within 30ms: try %d", n) || n < 2 || n > maxTries(30*time.Millisecond, 10*time.Millisecond) {
		t.Fatalf("WaitUntil never passing: %v after %d tries", err, n)
	}
	n = 0
	if err := Throughout(time.Second, time.Millisecond, func() error {
		if n++; n == 2 {
			return fmt.Errorf("broken on try %d", n)
		}
		return nil
	}); err == nil || n != 2 {
		t.Fatalf("Throughout broken on the second try: %v after %d tries", err, n)
	}
	n = 0
	if err := Throughout(30*time.Millisecond, 10*time.Millisecond, func() error { n++; return nil }); err != nil || n < 2 {
		t.Fatalf("Throughout holding: %v after %d tries", err, n)
	}
}

// TestBase: every draw is a block of its own in 100..249.
func TestBase(t *testing.T) {
	seen := map[uint8]bool{}
	for range 20 {
		b := Base()
		if b < 100 || b > 249 || seen[b] {
			t.Fatalf("Base drew %d after %v", b, seen)
		}
		seen[b] = true
	}
}
