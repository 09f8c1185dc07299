package roles

import "time"

// Instant is a reading of one node's monotonic clock, in nanoseconds since an
// arbitrary origin of that node. Instants of different nodes are never
// compared with each other.
type Instant int64

// Never is the Instant of a deadline that is not set.
const Never Instant = 1<<63 - 1

// Add returns i moved by d.
func (i Instant) Add(d time.Duration) Instant { return i + Instant(d) }

// Sub returns the duration i - j.
func (i Instant) Sub(j Instant) time.Duration { return time.Duration(i - j) }

// Before reports whether i is strictly before j.
func (i Instant) Before(j Instant) bool { return i < j }

// Lease arithmetic (docs/architecture.md, "Vote leases").
//
// A voter that receives a heartbeat at its own time r promises not to vote
// for another master before r + L on its own clock. The master sent that
// heartbeat at its own time a < r (true time), and counts the vote until
// a + CountedLease(L, rho, margin) on its own clock.
//
// With clock rates within [1-rho, 1+rho] of true time, the voter's promise
// lasts at least L/(1+rho) true seconds from r, and the master's count lasts
// at most D/(1-rho) true seconds from a. D = L(1-rho)/(1+rho) - margin makes
// the master's count end strictly before the promise does.

// CountedLease is how long after sending a heartbeat a master may count the
// vote that its acknowledgement carries.
func CountedLease(promise time.Duration, rho float64, margin time.Duration) time.Duration {
	d := time.Duration(float64(promise)*(1-rho)/(1+rho)) - margin
	if d < 0 {
		return 0
	}
	return d
}
