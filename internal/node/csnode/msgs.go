package csnode

import (
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// cstomaIn is what a chunkserver may receive from a master.
var cstomaIn = frame.RegistryOf(protocol.AuthChallenge{}, protocol.RegisterReply{}, roles.ProbeReply{}, roles.Heartbeat{}, roles.VoteRelease{}, roles.Redirect{}, protocol.TrustRecord{})
