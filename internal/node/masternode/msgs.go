package masternode

import (
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// What each port of a master, and a master on its links, may receive.
var (
	// A master on 9419, from other masters.
	matomlIn = frame.RegistryOf(protocol.AuthProof{}, roles.PeerStatus{}, roles.Append{}, roles.AppendAck{}, roles.FetchReq{}, roles.FetchResp{}, roles.SnapshotChunk{})
	// A master, from the master it dialed on 9419 (only the challenge).
	mltomaIn = frame.RegistryOf(protocol.AuthChallenge{})
	// A master on 9420, from chunkservers.
	matocsIn = frame.RegistryOf(protocol.AuthProof{}, protocol.RegisterReq{}, protocol.CSInfo{}, roles.Probe{}, roles.VoteHello{}, roles.VoteBye{}, roles.HeartbeatAck{})
	// A master on 9421, from clients and mfscli. (What a client reads
	// there: protocol.ClientIn.)
	matoclIn = frame.RegistryOf(protocol.StatusReq{}, protocol.AdminReq{}, roles.ClientWrite{}, roles.ClientRead{}, protocol.ClientAuth{}, protocol.BackupAck{})
)
