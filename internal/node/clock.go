package node

import "time"

// Clock is what a daemon reads to tell its core the time: the time since
// the daemon started, from CLOCK_BOOTTIME where there is one. Unlike
// CLOCK_MONOTONIC (and Go's monotonic clock), CLOCK_BOOTTIME goes on
// counting while the machine is suspended, so a LEADER whose host was
// suspended finds its vote leases lapsed when it wakes, and fences itself
// before it looks at anything. A paused VM is another matter (its guest
// clock does not count the pause): reads confirmed by a heartbeat round
// cover that (docs/architecture.md §7, Reads).
type Clock struct {
	base  time.Duration // boottime at start
	start time.Time     // fallback: Go's monotonic clock
	boot  bool
}

// NewVoterClock is a chunkserver's clock: Go's monotonic clock, which
// stops while the machine is suspended. A voter's clock may run slow,
// never fast: one that stood still through a suspend keeps each promise
// longer than it was asked for, and the master counts a promise from its
// own clock and never beyond what it asked (docs/architecture.md §3).
// Go reads it without a system call (vDSO); CLOCK_BOOTTIME is one from
// Go, and a voter reads its clock on every heartbeat (8% of the
// processor of a swarm of 10,000 voters, more than its whole pure core).
func NewVoterClock() Clock { return Clock{start: time.Now()} }

// NewClock is a master's clock: CLOCK_BOOTTIME where there is one, else
// Go's monotonic clock.
func NewClock() Clock {
	c := Clock{start: time.Now()}
	c.base, c.boot = boottime()
	return c
}

// Since is the time elapsed since the clock was made; it never goes back.
func (c Clock) Since() time.Duration {
	if c.boot {
		if t, ok := boottime(); ok {
			return t - c.base
		}
	}
	return time.Since(c.start)
}
