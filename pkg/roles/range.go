package roles

import (
	"fmt"
	"time"
)

// Range is what one setting accepts on its own: every value from Min to
// Max, both included. Validate checks each field against its Range before
// the rules that tie fields together, and the daemons' cfg keys are bound
// to the same Ranges (cmd/*/keys.go), so that each bound is written once and
// a value is refused alike from a cfg file, a flag or code.
type Range[T int | uint64 | float64 | time.Duration] struct{ Min, Max T }

// Has reports whether v lies in r.
func (r Range[T]) Has(v T) bool { return r.Min <= v && v <= r.Max }

// String shows r as an interval, for error messages.
func (r Range[T]) String() string { return fmt.Sprintf("[%v, %v]", r.Min, r.Max) }

// InRange adds a problem (named what) when v lies outside r.
func InRange[T int | uint64 | float64 | time.Duration](add func(string, ...any), what string, v T, r Range[T]) {
	if !r.Has(v) {
		add("%s %v outside %v", what, v, r)
	}
}

// VoteLeaseRange is what a lease may be: at least 20 ms, and at most a
// minute, since a frozen LEADER is replaced only about a lease after its
// last heartbeat. A master's VOTE_LEASE is bound to it, and so is a
// voter's MAX_PROMISE: the promise must cover every master's lease.
func VoteLeaseRange() Range[time.Duration] {
	return Range[time.Duration]{20 * time.Millisecond, time.Minute}
}
