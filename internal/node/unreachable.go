package node

import "time"

// unreachableEvery spaces the reminders that a peer is still unreachable:
// the first failure is said at once, then one line a minute, so that a
// wrong MASTER_HOST, a master down or a firewall shows in the log without
// a line per redial.
const unreachableEvery = time.Minute

// Unreachable tells a link's dial failures to its log, spaced out: the
// first after the peer was reached (or at start), then every
// unreachableEvery; and when the peer is reached again, for how long and
// how many dials it was not. One per link; the link's goroutine only.
type Unreachable struct {
	fails int
	since time.Time // the first failure of the current run of them
	said  time.Time // when the last line about them was written
}

// Failed counts a failed dial at now and reports whether to say so.
func (u *Unreachable) Failed(now time.Time) (say bool, fails int, since time.Time) {
	if u.fails == 0 {
		u.since = now
	}
	u.fails++
	if u.fails == 1 || now.Sub(u.said) >= unreachableEvery {
		u.said = now
		return true, u.fails, u.since
	}
	return false, u.fails, u.since
}

// Reached ends a run of failures; it reports how many dials failed and
// since when (fails 0: there were none, nothing to say).
func (u *Unreachable) Reached() (fails int, since time.Time) {
	fails, since = u.fails, u.since
	u.fails = 0
	return fails, since
}
