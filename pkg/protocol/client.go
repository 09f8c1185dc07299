package protocol

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// AnonymousClient marks the session ids a master makes up for requests
// that carry none (mfscli's one-off requests): a client draws its own with
// this bit clear, so the two never meet, and a request whose id has it set
// is given a new one (never retried, so never deduplicated).
const AnonymousClient changelog.ClientID = 1 << 63

// ClientIn returns a registry of what a client or mfscli reads from a
// master's client port (9421): the answers to its requests, after the
// hello. (What each daemon reads on each port is the daemons' own.)
func ClientIn() *frame.Registry {
	r := frame.RegistryOf(StatusResp{}, AdminResp{}, roles.ClientReply{})
	// A chunk's Data is decoded into room made for it up front: from an
	// empty slice the codec grows a byte field MaxInitLen (1 KiB) at a
	// time, copying it whole each time, which made a 1 MiB chunk cost
	// half a gigabyte of copying.
	r.Register(wire.TypeBackupChunk, func() wire.Message { return &BackupChunk{Data: make([]byte, 0, BackupChunkBytes)} })
	return r
}
