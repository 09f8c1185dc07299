// Package node is what both daemons' drivers share: the connection with
// its bounded send queue (Conn), the one link type that dials a master
// again with back-off (Link; each daemon brings its LinkSide), the loop's
// Lifecycle and group commit (Group), the clocks the cores are stepped
// with, the datagram path's sealing, keys and filters, MASTER_HOST as a
// daemon resolves it while it runs (HostSpec, ResolveLoop), and the
// commands' start rules (AuthCodeRule, Exposed, ListenAddr, SourceFor).
//
// The drivers are its subpackages: masternode (mfsmaster's, around
// pkg/roles/master) and csnode (mfschunkserver's, around
// pkg/roles/voter). This package imports the contract, pkg/roles, and
// neither machine; neither driver imports the other. So a chunkserver
// links nothing of the master, and the import graph says so
// (internal/purity, TestDriversApart).
package node
