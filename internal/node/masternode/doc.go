// Package masternode is mfsmaster's driver: the thin shell around the
// master's role machine (pkg/roles/master). One goroutine, the loop, owns
// the machine and its store. The acceptor (accept.go) checks each
// connection of the three ports (hello, AUTH_CODE, admin and export
// proofs, limits), and its readers feed the loop checked, decoded inputs
// through two bounded inboxes (votes and peers first, clients after);
// each peer has a writer with a bounded queue (node.Conn).
//
// A group of steps shares one fsync: master.Carry makes every Persist
// durable first, then answers the admin commands, carries out each role
// change after the disconnects its rule requires, and then the sends. A
// failed persist ends the daemon: it never runs ahead of its disk.
//
// Whatever a peer sends, the worst outcome is its connection closed with a
// logged, counted reason (mfs_master_connections_refused_total).
package masternode
