package master

import (
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// A follower's progress: optimistic sends from the end of the log, a
// refusal rolls back and forgets what it held, an acknowledgement moves
// match only forward and only to a position this log holds.
func TestProgressAckAndRefusal(t *testing.T) {
	p := newProgress(10)
	if p.next != 10 || p.match.Version != 0 {
		t.Fatalf("new progress %+v", p)
	}
	p.sent(3)
	if p.next != 13 || p.idle() {
		t.Fatalf("after sending 3: next %d, idle %v", p.next, p.idle())
	}
	if p.acked(changelog.Pos{Version: 12, Epoch: 2}, false) {
		t.Fatal("a match this log does not hold was taken")
	}
	if !p.acked(changelog.Pos{Version: 12, Epoch: 2}, true) || p.match.Version != 12 {
		t.Fatalf("a held match was not taken: %+v", p.match)
	}
	if p.acked(changelog.Pos{Version: 11, Epoch: 2}, true) || p.match.Version != 12 {
		t.Fatalf("match went back: %+v", p.match)
	}
	if !p.idle() {
		t.Fatal("everything sent is acknowledged, yet not idle")
	}
	// Refused: the follower holds at most 4; ask from 5, not from 12.
	p.refused(4)
	if p.match != (changelog.Pos{}) || p.next != 5 {
		t.Fatalf("after a refusal with last 4: %+v", p)
	}
	// Refused again by a follower that holds more than asked: step back
	// by one, never below 1.
	p.refused(100)
	if p.next != 4 {
		t.Fatalf("after a refusal with last 100: next %d, want 4", p.next)
	}
	for range 10 {
		p.refused(0)
	}
	if p.next != 1 {
		t.Fatalf("next fell to %d", p.next)
	}
}

// rewind restarts just after match when asked, when what was sent is
// held already, or when the log was cut back below next.
func TestProgressRewind(t *testing.T) {
	for _, tt := range []struct {
		name         string
		next, match  uint64
		resend       bool
		logLen, want uint64
	}{
		{"in flight", 9, 5, false, 10, 9},
		{"asked to resend", 9, 5, true, 10, 6},
		{"held already", 5, 5, false, 10, 6},
		{"log cut back", 12, 5, false, 8, 6},
	} {
		p := &progress{next: tt.next, match: changelog.Pos{Version: tt.match}}
		p.rewind(tt.resend, tt.logLen)
		if p.next != tt.want {
			t.Errorf("%s: next %d, want %d", tt.name, p.next, tt.want)
		}
	}
}

// present: heard within the timeout; never heard is not present.
func TestProgressPresent(t *testing.T) {
	p := newProgress(1)
	if p.present(0, time.Second) {
		t.Fatal("a follower never heard is present")
	}
	p.heardAt(roles.Instant(time.Second))
	if !p.present(roles.Instant(1999*time.Millisecond), time.Second) || p.present(roles.Instant(2*time.Second), time.Second) {
		t.Fatal("present disagrees with the timeout")
	}
}

// Only an acknowledgement of the snapshot being sent moves its cursor.
func TestProgressSnapshotAcked(t *testing.T) {
	p := &progress{snapPos: changelog.Pos{Version: 100, Epoch: 3}, snapNext: 10}
	if p.snapshotAcked(changelog.Pos{}, 50) || p.snapshotAcked(changelog.Pos{Version: 90, Epoch: 3}, 50) || p.snapNext != 10 {
		t.Fatalf("another snapshot's ack moved the cursor: %d", p.snapNext)
	}
	if !p.snapshotAcked(changelog.Pos{Version: 100, Epoch: 3}, 50) || p.snapNext != 50 {
		t.Fatalf("the snapshot's own ack: cursor %d, want 50", p.snapNext)
	}
}
