package node

import "time"

// clock is what a daemon reads to tell its core the time: the time since
// the daemon started, from CLOCK_BOOTTIME where there is one. Unlike
// CLOCK_MONOTONIC (and Go's monotonic clock), CLOCK_BOOTTIME goes on
// counting while the machine is suspended, so a LEADER whose host was
// suspended finds its vote leases lapsed when it wakes, and fences itself
// before it looks at anything. A paused VM is another matter (its guest
// clock does not count the pause): reads confirmed by a heartbeat round
// cover that (docs/architecture.md §7, Reads).
type clock struct {
	base  time.Duration // boottime at start
	start time.Time     // fallback: Go's monotonic clock
	boot  bool
}

func newClock() clock {
	c := clock{start: time.Now()}
	c.base, c.boot = boottime()
	return c
}

// since is the time elapsed since the clock was made; it never goes back.
func (c clock) since() time.Duration {
	if c.boot {
		if t, ok := boottime(); ok {
			return t - c.base
		}
	}
	return time.Since(c.start)
}
