// Package roles is the pure election core: the master role machine
// (Master.Step) and the chunkserver voter (Voter.Step).
//
// Contract:
//   - Step never blocks, never fails and never reads a clock: time arrives as
//     an Instant, a reading of the calling node's own monotonic clock.
//     Readings of two nodes are never compared.
//   - Every effect is returned as an Action. Within one batch the caller
//     performs every Persist (durably) first, then every Disconnect, then
//     every Send, then logs. A batch whose Persist failed must not go further.
//   - Stale, duplicate and foreign input becomes an Ignored action with a
//     stable reason, never an error. A broken invariant panics with its name.
//   - No goroutines, channels, sync, os, net, time.Now or global random
//     source: the same inputs give the same outputs, which is what lets the
//     simulator in internal/sim replay thousands of fault schedules.
//
// The transition table the master follows is Transitions (table.go); it is
// printed in docs/roles.md, whose numbered sections the golden scripts under
// testdata/ cite.
package roles
