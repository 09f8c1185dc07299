// Package witness is the object-store witness: one lease object in an
// S3-compatible bucket (lease.json under the cluster's prefix) that breaks
// the tie when a master holds exactly half of the location votes
// (docs/architecture.md §7.4). It is pure: no I/O, no clock,
// no goroutines. The master's role machine drives a Lease with its clock
// readings and what it wants; the daemon makes the calls it asks for
// (internal/witness/s3store) and feeds the answers back; the simulator
// does the same against its model of a store.
//
// The lease rests on two things only: the store's conditional PUT
// (create-only with If-None-Match: *, swap with If-Match: ETag) being
// atomic per key, which the self-test checks before a store is trusted,
// and the bound on clock rates the vote leases already use. It does not
// rest on synchronised clocks: nothing in the record is a time anyone
// compares. A holder counts the lease from when it emitted the write the
// store took; a taker of another's held record first watches its ETag
// unchanged for the lease duration on its own clock; a record its writer
// set Free may be swapped at once. Every write carries a nonce, so no two
// writes have the same content, and so (on stores whose ETag is the
// content's MD5) the same ETag.
package witness
