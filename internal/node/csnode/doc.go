// Package csnode is mfschunkserver's driver: the shell around the voter
// (pkg/roles/voter). One goroutine, the loop, owns the voter and its
// record. A link to each master (node.Link) dials it, answers its
// AUTH_CODE challenge and feeds what the master sends to the loop through
// a bounded inbox. A group of steps shares one fsync (voter.Carry): the
// voter record is durable before any acknowledgement that depends on it
// leaves. A failed write ends the daemon.
//
// It imports neither the master's machine nor its driver, and so neither
// does mfschunkserver (internal/purity, TestDriversApart).
package csnode
