package cluster_test

import (
	"fmt"
	"testing"
	"time"
)

// eventually calls check every poll until it returns nil, for at most
// within, and fails the test with what it waited for and check's last
// error if it never does.
func eventually(t *testing.T, within, poll time.Duration, what string, check func() error) {
	t.Helper()
	if err := waitUntil(within, poll, check); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitUntil is eventually for helpers that hand the failure to their
// caller: nil once check passes, else check's last error. check runs at
// least once; after that both the time and the number of tries are
// bounded (the count is a backstop: at one try per poll, within runs out
// first).
func waitUntil(within, poll time.Duration, check func() error) error {
	end := time.Now().Add(within)
	tries := maxTries(within, poll)
	for try := 1; ; try++ {
		err := check()
		if err == nil {
			return nil
		}
		if try >= tries || time.Now().After(end) {
			return fmt.Errorf("not within %v: %w", within, err)
		}
		time.Sleep(poll)
	}
}

// throughout calls check every poll for d and returns its first error:
// for what must hold the whole time, where eventually is for what must
// come about.
func throughout(d, poll time.Duration, check func() error) error {
	end := time.Now().Add(d)
	for try, tries := 0, maxTries(d, poll); try < tries && time.Now().Before(end); try++ {
		if err := check(); err != nil {
			return err
		}
		time.Sleep(poll)
	}
	return nil
}

// maxTries is how many checks one every poll fit in d, plus the first.
func maxTries(d, poll time.Duration) int {
	if poll <= 0 {
		panic("poll interval must be positive")
	}
	return int((d+poll-1)/poll) + 1
}

// TestWaitHelpers: waitUntil returns as soon as check passes, and gives up
// with check's last error once its bound has passed; throughout stops at
// the first error and passes when none comes.
func TestWaitHelpers(t *testing.T) {
	n := 0
	if err := waitUntil(time.Second, time.Millisecond, func() error {
		if n++; n < 3 {
			return fmt.Errorf("try %d", n)
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("waitUntil passing on the third try: %v after %d tries", err, n)
	}
	n = 0
	err := waitUntil(30*time.Millisecond, 10*time.Millisecond, func() error { n++; return fmt.Errorf("try %d", n) })
	if err == nil || err.Error() != fmt.Sprintf("not within 30ms: try %d", n) || n < 2 || n > maxTries(30*time.Millisecond, 10*time.Millisecond) {
		t.Fatalf("waitUntil never passing: %v after %d tries", err, n)
	}
	n = 0
	if err := throughout(time.Second, time.Millisecond, func() error {
		if n++; n == 2 {
			return fmt.Errorf("broken on try %d", n)
		}
		return nil
	}); err == nil || n != 2 {
		t.Fatalf("throughout broken on the second try: %v after %d tries", err, n)
	}
	n = 0
	if err := throughout(30*time.Millisecond, 10*time.Millisecond, func() error { n++; return nil }); err != nil || n < 2 {
		t.Fatalf("throughout holding: %v after %d tries", err, n)
	}
}
