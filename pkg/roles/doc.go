// Package roles is the pure election core: the master role machine
// (Master.Step) and the chunkserver voter (Voter.Step).
//
// Contract:
//   - Step never blocks, never fails and never reads a clock: time arrives as
//     an Instant, a reading of the calling node's own monotonic clock.
//     Readings of two nodes are never compared.
//   - Every effect is returned in a Batch, whose fields are in the order
//     they must be carried out: Persist (durably, through a Store), admin
//     replies, transitions (each after the disconnects its rule requires),
//     sends, a snapshot to save. Carry is the one executor; both daemons
//     and the simulator use it. A batch whose Persist failed goes no
//     further.
//   - Event is a closed set: only the core's inputs compile as one.
//   - Stale, duplicate and foreign input becomes an Ignored reason in the
//     batch, stable and never an error. A broken invariant panics with its
//     name.
//   - No goroutines, channels, sync, os, net, time.Now or global random
//     source: the same inputs give the same outputs, which is what lets the
//     simulator in internal/sim replay thousands of fault schedules.
//
// The transition table the master follows is Transitions (table.go); it is
// printed in docs/roles.md, whose numbered sections the golden scripts under
// testdata/ cite.
package roles
