// Package node is the daemons' driver: the thin shell around the pure role
// machines of pkg/roles. One goroutine per daemon owns the machine and its
// store; connection readers feed it checked, decoded messages through a
// bounded inbox, and each peer has a writer goroutine with a bounded queue.
//
// A batch of actions runs in order: every Persist (bbolt, fsync) first, then
// Disconnects (goodbyes, then close) and Sends in the order the machine gave
// them. A failed persist ends the daemon: it never runs ahead of its disk.
//
// Whatever a peer sends, the worst outcome is its connection closed with a
// logged, counted reason (mfs_master_connections_refused_total).
package node
