package protocol

import (
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Backups (mfscli --backup). The LEADER, asked with an AdminReq of kind
// AdminBackup, first confirms its commit point as for a linearizable read,
// then streams a snapshot of its namespace in the snapshot file format
// (pkg/metadata) as BackupChunks. mfscli acknowledges what it has written
// (BackupAck), and the master keeps at most BackupWindow bytes in flight
// beyond that. A refusal is an AdminResp instead of the first chunk.

// AdminBackup asks the LEADER for a backup, carried out by its driver like
// the witness commands (numbered with them, far above roles' own kinds).
const AdminBackup roles.AdminKind = 202

// BackupChunkBytes bounds a chunk's Data; BackupWindow is how far the
// master sends ahead of the last BackupAck.
const (
	BackupChunkBytes = 1 << 20
	BackupWindow     = 4 << 20
)

// BackupChunk is the next part of a backup file.
type BackupChunk struct {
	ID     uint64 // the AdminReq's
	Offset uint64 // where Data goes in the file
	Data   []byte
	// Last: the file ends after Data; Size and SHA256 are the whole
	// file's, for the receiver to check.
	Last   bool   `msgpack:",omitempty"`
	Size   uint64 `msgpack:",omitempty"`
	SHA256 []byte `msgpack:",omitempty"`
}

// BackupAck says the backup's bytes up to Offset are written.
type BackupAck struct {
	ID     uint64
	Offset uint64
}

func (BackupChunk) MsgType() wire.Type { return wire.TypeBackupChunk }
func (BackupAck) MsgType() wire.Type   { return wire.TypeBackupAck }
