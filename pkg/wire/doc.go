// Package wire is the leaf of the import graph: the typed ids every other
// package shares (MasterID, CSID, LocationID) and the Message interface,
// whose Type number is all the framing needs to pick a decoder. The
// messages themselves are declared by the protocols that send them: the
// election, replication and client messages in pkg/roles, the daemons' own
// (authentication, registration, status, admin) in pkg/protocol, and the
// hello in pkg/wire/frame, which carries every message over a byte stream.
// docs/wire.md lists every type number.
//
// Contract: nothing here performs I/O or keeps state. Message types are an
// append-only registry: a type number, once shipped, is never reused.
package wire
