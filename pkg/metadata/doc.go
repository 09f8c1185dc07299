// Package metadata is the daemons' durable state: a master's
// DATA_PATH/metadata.mfs (bbolt: cluster id, HardState, the log base and
// the changelog after it) with its DATA_PATH/snapshot.mfs (the namespace up
// to a committed position, in a file of its own), and a chunkserver's
// DATA_PATH/chunkserver.mfs (bbolt: registered identity, VoterHardState).
//
// The contract:
//   - Every write is one bbolt Update, fsynced before it returns (NoSync
//     stays false), so a roles.Persist is durable, whole or not at all,
//     before the driver sends anything of the same batch. A snapshot a
//     Persist carries is durable before that Update begins.
//   - A snapshot file is written under a temporary name, fsynced, renamed
//     over snapshot.mfs only if it is newer than the one there, and the
//     directory fsynced: a crash leaves the old file or the new one, and an
//     older snapshot never replaces a newer one.
//   - A file that cannot be read (not bbolt, another schema version or kind
//     of store, missing buckets, a page bbolt's consistency check rejects, a
//     value whose checksum does not hold or that does not decode; a snapshot
//     with a bad magic, schema, checksum or cluster id) is an error naming
//     the file and the fault, and the file is left byte for byte as it was:
//     a daemon never "repairs" metadata by starting afresh. A damaged page
//     that makes bbolt fault or panic while the file is opened, checked or
//     loaded is such an error too, not a crash.
//   - Every stored value but the schema version and the kind ends with a
//     CRC-32C of its key and bytes, checked at open and whenever it is read.
//     A store of schema version 1 (before checksums) is upgraded in place
//     at the first read-write open, under the lock, in one transaction,
//     after all of it was read and decoded.
//   - An open file is held under bbolt's exclusive lock, so a second daemon
//     on the same data directory fails at once.
//   - Values use the frame codec; keys are big-endian uint64 so that bbolt's
//     byte order is version order; results are copied out of transactions.
package metadata
