package master

import (
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The follower tracker: what a LEADER knows of each follower's changelog
// (replication.progress), as etcd's tracker.Progress keeps it, with its
// verbs. Invariant: match only grows while the follower answers (a
// refusal resets it, and the next acknowledgement rebuilds it from what
// the follower holds), and next never falls below 1.

// progress is the LEADER's view of one follower's changelog.
type progress struct {
	next  uint64        // next version to send
	match changelog.Pos // newest position the follower holds durably
	heard roles.Instant
	seen  bool
	// A follower behind the log's base is sent the snapshot in chunks:
	// snapNext is the first record it has not acknowledged.
	snapPos  changelog.Pos
	snapNext uint64
	snapSent roles.Instant
}

// newProgress tracks a follower from a log of logLen entries: optimistic,
// the next Append starts at the end, and a refusal rolls it back.
func newProgress(logLen uint64) *progress { return &progress{next: logLen} }

// heardAt: the follower answered at now.
func (p *progress) heardAt(now roles.Instant) { p.heard, p.seen = now, true }

// present: the follower was heard within timeout of now (it counts for
// the ack rule and as a copy).
func (p *progress) present(now roles.Instant, timeout time.Duration) bool {
	return p.seen && now.Sub(p.heard) < timeout
}

// idle: nothing sent to the follower is unanswered.
func (p *progress) idle() bool { return p.next <= p.match.Version+1 }

// refused: the follower's log does not continue where the last Append
// began; it holds at most last. What it holds is asked again from the
// version before, or from just after last, whichever is lower.
func (p *progress) refused(last uint64) {
	p.match = changelog.Pos{}
	p.next = max(1, min(p.next-1, last+1))
}

// acked: the follower holds match durably (held: this log holds that
// very position). It reports whether match moved.
func (p *progress) acked(match changelog.Pos, held bool) bool {
	if match.Version > p.match.Version && held {
		p.match = match
		return true
	}
	return false
}

// snapshotAcked: the follower acknowledged the snapshot being sent (pos)
// up to record next. It reports whether it was that snapshot's.
func (p *progress) snapshotAcked(pos changelog.Pos, next uint64) bool {
	if pos == (changelog.Pos{}) || pos != p.snapPos {
		return false
	}
	p.snapNext = next
	return true
}

// rewind sends from just after match again: when asked to (resend), when
// what was sent is already held, or when next lies past a log of logLen
// entries (it was cut back).
func (p *progress) rewind(resend bool, logLen uint64) {
	if resend || p.next <= p.match.Version || p.next > logLen+1 {
		p.next = p.match.Version + 1
	}
}

// sent: n more entries left for the follower.
func (p *progress) sent(n int) { p.next += uint64(n) }

// startTerm: a new LEADER term from commit point commit, with a log of
// logLen entries: every other master of masters is tracked afresh, and
// nothing past the commit point is replicated or acknowledged yet.
func (r *replication) startTerm(commit changelog.Pos, self wire.MasterID, masters []wire.MasterID, logLen uint64) {
	r.replicated, r.acked = commit, commit
	r.progress = map[wire.MasterID]*progress{}
	for _, id := range masters {
		if id != self {
			r.progress[id] = newProgress(logLen)
		}
	}
}

// endTerm: no longer LEADER; no follower is tracked.
func (r *replication) endTerm() { r.progress = map[wire.MasterID]*progress{} }
