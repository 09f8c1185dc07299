// Package client is all of the client side of the masters' client port
// (9421), the way a MooseFS client and mfscli use it.
//
// A Client is a session for the namespace (Put, Get, CAS, Delete, List):
// it finds the masters through MASTER_HOST, follows redirects to the
// LEADER, waits and retries with back-off and jitter when there is none,
// and retries a change under the same session id and sequence number, so
// a change retried across a failover is applied once. Whether to ask
// again is decided by the refusal's code (wire.Code), never by its text.
// A Client runs one operation at a time; use one per goroutine.
//
// Status, Admin and Query are one-off requests to one given master,
// whatever its role, as mfscli sends them for its listings and admin
// commands: no session, no redirect, no retry.
//
// Every connection opens with the same handshake: hellos (checked: a
// master, of the pinned cluster), then a proof of the password when there
// is one. The package links public packages only (pkg/wire, pkg/protocol,
// pkg/masterhost, pkg/secret, and pkg/roles for the namespace messages),
// never the daemons or their stores.
package client
