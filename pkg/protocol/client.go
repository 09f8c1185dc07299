package protocol

import (
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
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
	return frame.RegistryOf(StatusResp{}, AdminResp{}, roles.ClientReply{}, BackupChunk{})
}
