// Package metadata is the daemons' durable state, one bbolt file per data
// directory: a master's DATA_PATH/metadata.mfs (cluster id, HardState,
// changelog) and a chunkserver's DATA_PATH/chunkserver.mfs (registered
// identity, VoterHardState).
//
// The contract:
//   - Every write is one bbolt Update, fsynced before it returns (NoSync
//     stays false), so a roles.Persist is durable, whole or not at all,
//     before the driver sends anything of the same batch.
//   - A file that cannot be read (not bbolt, another schema version or kind
//     of store, missing buckets, a value that does not decode) is an error
//     naming the file and the fault, and the file is left byte for byte as
//     it was: a daemon never "repairs" metadata by starting afresh.
//   - An open file is held under bbolt's exclusive lock, so a second daemon
//     on the same data directory fails at once.
//   - Values use the frame codec; keys are big-endian uint64 so that bbolt's
//     byte order is version order; results are copied out of transactions.
package metadata
