// Package protocol holds the daemons' own messages, beside the election
// core's (pkg/roles): the AUTH_CODE challenge and proofs of the master and
// chunkserver ports, chunkserver registration and info, and on the client
// port (9421) the status and admin exchanges, the proof of an
// mfsexports.cfg password and the texts of its refusals. docs/wire.md
// describes each; their type numbers are in pkg/wire's table.
//
// Contract: it holds data and functions of their arguments only (no I/O;
// pkg/secret keeps the slow part of each proof's key), so that a client
// links the protocol without the daemons. A field, once
// shipped, keeps its name and meaning; new fields go at the end with
// omitempty.
package protocol
