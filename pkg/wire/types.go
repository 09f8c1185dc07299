package wire

import (
	"slices"
	"strconv"
)

// Every message type number, in one table: the hello of pkg/wire/frame,
// the election core's messages (pkg/roles) and the daemons' own
// (pkg/protocol). Append-only: a number, once shipped, keeps its meaning
// forever, and a number is never reused. docs/wire.md lists the same rows
// (a test holds the two equal).
const (
	TypeHello Type = 1 // opens every connection

	TypeProbe        Type = 10
	TypeProbeReply   Type = 11
	TypeVoteHello    Type = 12
	TypeVoteBye      Type = 13
	TypeHeartbeat    Type = 14
	TypeHeartbeatAck Type = 15
	TypeVoteRelease  Type = 16
	TypeRedirect     Type = 17

	TypePeerStatus    Type = 20
	TypeAppend        Type = 21
	TypeAppendAck     Type = 22
	TypeFetchReq      Type = 23
	TypeFetchResp     Type = 24
	TypeSnapshotChunk Type = 25

	TypeClientWrite Type = 30
	TypeClientRead  Type = 31
	TypeClientReply Type = 32

	TypeAuthChallenge Type = 40
	TypeAuthProof     Type = 41
	TypeRegisterReq   Type = 42
	TypeRegisterReply Type = 43
	TypeCSInfo        Type = 44
	TypeStatusReq     Type = 45
	TypeStatusResp    Type = 46
	TypeAdminReq      Type = 47
	TypeAdminResp     Type = 48
	TypeClientAuth    Type = 49
	TypeTrustRecord   Type = 50
	TypeBackupChunk   Type = 51
	TypeBackupAck     Type = 52
)

// typeNames names each number of the table above by its message: the Go
// type that carries it, as docs/wire.md names it.
var typeNames = map[Type]string{
	TypeHello:         "Hello",
	TypeProbe:         "Probe",
	TypeProbeReply:    "ProbeReply",
	TypeVoteHello:     "VoteHello",
	TypeVoteBye:       "VoteBye",
	TypeHeartbeat:     "Heartbeat",
	TypeHeartbeatAck:  "HeartbeatAck",
	TypeVoteRelease:   "VoteRelease",
	TypeRedirect:      "Redirect",
	TypePeerStatus:    "PeerStatus",
	TypeAppend:        "Append",
	TypeAppendAck:     "AppendAck",
	TypeFetchReq:      "FetchReq",
	TypeFetchResp:     "FetchResp",
	TypeSnapshotChunk: "SnapshotChunk",
	TypeClientWrite:   "ClientWrite",
	TypeClientRead:    "ClientRead",
	TypeClientReply:   "ClientReply",
	TypeAuthChallenge: "AuthChallenge",
	TypeAuthProof:     "AuthProof",
	TypeRegisterReq:   "RegisterReq",
	TypeRegisterReply: "RegisterReply",
	TypeCSInfo:        "CSInfo",
	TypeStatusReq:     "StatusReq",
	TypeStatusResp:    "StatusResp",
	TypeAdminReq:      "AdminReq",
	TypeAdminResp:     "AdminResp",
	TypeClientAuth:    "ClientAuth",
	TypeTrustRecord:   "TrustRecord",
	TypeBackupChunk:   "BackupChunk",
	TypeBackupAck:     "BackupAck",
}

// String is the message's name ("Heartbeat"), or "type(N)" for a number
// the table does not hold.
func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Types returns every number of the table, in ascending order.
func Types() []Type {
	out := make([]Type, 0, len(typeNames))
	for t := range typeNames {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
