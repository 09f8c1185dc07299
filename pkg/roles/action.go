package roles

import (
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Event is one input to Step: a received message or something the driver
// observed. Every message type in msg.go is an Event.
type Event interface{}

// Tick is the event of time passing; the driver sends one at NextDeadline.
type Tick struct{}

// ConnLost: a chunkserver's vote connection to this master closed.
type ConnLost struct{ CS wire.CSID }

// Refused: a chunkserver's dial to a master, made at its own time SentAt,
// was refused. Alone it proves little: a firewall's REJECT and a moved
// address refuse too. With the connection the promise was granted on
// closed by the master's host after the grant (VoteConnLost.Closed) and
// before SentAt, it proves the process that held the promise is gone
// (docs/architecture.md §3, "fast path").
type Refused struct {
	Master wire.MasterID
	SentAt Instant
}

// VoteConnLost: the chunkserver's connection to a master closed. Closed
// says the master's host closed it (a FIN or a RST arrived), as a killed
// process's kernel does; false for a timeout, an ICMP error or our own
// close. Alone it proves nothing about the master; the promise stands.
type VoteConnLost struct {
	Master wire.MasterID
	Closed bool
}

// StopRequested: the chunkserver is being stopped in order (SIGTERM). The
// voter ends its vote session, grants nothing more, and answers Stopped
// once no promise stands (released, proven void or lapsed).
type StopRequested struct{}

// Stopped: the voter has ended in order and the batch's Persist carries
// the clean-stop mark (VoterHardState.CleanStop). The driver makes it
// durable and exits; it steps the voter no more.
type Stopped struct{}

// ForeignCluster: Master, one of MASTER_HOST, answered with another
// cluster's metadata id (its driver refused the connection). A founder
// that hears it does not bootstrap.
type ForeignCluster struct{ Master wire.MasterID }

// AdminKind is an operator command a master receives (through mfscli).
type AdminKind uint8

// Admin commands.
const (
	AdminSetUsurper    AdminKind = 1 + iota // at the master to become USURPER
	AdminCancelUsurper                      // at the USURPER
	AdminStepDown                           // at the LEADER: hand over to the best synced follower
	AdminShutdown                           // any master: orderly stop through DUMMY
	AdminChange                             // at the LEADER: a registry or location change
	AdminTempRemove                         // at an ELECT or DEPUTY: count without a chunkserver that is down (Change.ID)
)

// Admin is an operator command. ID is echoed in the AdminReply.
type Admin struct {
	ID     uint64
	Kind   AdminKind
	Change Change // for AdminChange
}

// PeerKind says what sort of node a Peer is.
type PeerKind uint8

// Peer kinds.
const (
	PeerMaster PeerKind = 1 + iota
	PeerCS
	PeerClient
)

// Peer is the destination of a Send.
type Peer struct {
	Kind PeerKind
	ID   uint64 // a MasterID, CSID or ClientID
}

// ToMaster, ToCS and ToClient build Peers.
func ToMaster(m wire.MasterID) Peer { return Peer{PeerMaster, uint64(m)} }

// ToCS addresses a chunkserver.
func ToCS(c wire.CSID) Peer { return Peer{PeerCS, uint64(c)} }

// ToClient addresses a client session.
func ToClient(c ClientID) Peer { return Peer{PeerClient, uint64(c)} }

func (p Peer) String() string {
	switch p.Kind {
	case PeerMaster:
		return wire.MasterID(p.ID).String()
	case PeerCS:
		return wire.CSID(p.ID).String()
	case PeerClient:
		return fmt.Sprintf("C%d", p.ID)
	}
	return "?"
}

// Action is one effect Step asks the driver to carry out.
type Action interface{}

// HardState is a master's small durable record.
type HardState struct {
	Incarnation uint64 // rises on every start
	Epoch       uint64 // the epoch this master last took for itself
	MaxEpoch    uint64 // the highest epoch it has seen (new epochs go above it)
	LeaderEpoch uint64 // the highest epoch of a LEADER it followed or was: older appends are refused
	Commit      Pos    // the newest position it knows to be committed
	InForce     uint64 // the newest config version it knows to be in force
	Yielded     bool   // leadership was moved away from it on purpose
	// ForcedOut: chunkservers an operator removed offline (mfsmaster
	// repair) because they will never vote again; every tally leaves them
	// out until a LEADER's removal of them is in force.
	ForcedOut []wire.CSID `msgpack:",omitempty"`
}

// VoterHardState is a chunkserver's small durable record: what quorum
// intersection relies on it remembering across restarts.
type VoterHardState struct {
	Boot       uint64 // rises on every start; vote sessions are numbered within it
	MaxEpoch   uint64
	EpochOwner wire.MasterID
	KnownReg   uint64
	InForce    uint64
	Commit     Pos    // the newest "committed up to" a LEADER told it
	CommitTag  uint64 // that LEADER's epoch: a newer LEADER's word supersedes
	// EpochInc is the incarnation of EpochOwner that took MaxEpoch: the
	// same epoch from another incarnation is a master whose data directory
	// was rolled back, and is refused (0: not recorded yet).
	EpochInc uint64 `msgpack:",omitempty"`
	// MaxGranted is the longest promise this voter ever made: after a
	// restart it keeps quiet at least that long, even if MAX_PROMISE was
	// lowered meanwhile.
	MaxGranted time.Duration `msgpack:",omitempty"`
	// CleanStop: the last run ended in order with no promise standing, and
	// granted nothing after (Voter, StopVoting). It is written only then,
	// as that run's last record, and NewVoter clears it in its first
	// Persist, which is durable before any grant of the new run: so a
	// crash can never leave it set while a promise stands.
	CleanStop bool `msgpack:",omitempty"`
}

// NeverPromised reports that the record shows no promise ever made. The
// first grant raises MaxGranted above 0 and names EpochOwner, and is
// persisted before its acknowledgement leaves (Voter.onHeartbeat).
func (h VoterHardState) NeverPromised() bool {
	return h.MaxGranted == 0 && h.EpochOwner == wire.NoMaster
}

// Persist must be durable before any Send of the same batch. For a master,
// in this order: Snapshot replaces the stored snapshot (one received from
// another master); Trim drops every stored entry at or below Trim.Pos and
// records it as the log's base; TruncateAfter drops every entry after that
// version; Append is added. Hard and Voter are whole records to write.
type Persist struct {
	Hard          *HardState
	Snapshot      *Snapshot
	Trim          *LogBase
	TruncateAfter *uint64
	Append        []Entry
	Voter         *VoterHardState
}

// SaveSnapshot asks the driver to write a snapshot of this master's own
// making, in the background (it may be large), and to step SnapshotSaved
// once it is durable. Nothing waits for it: until then the entries it
// covers are kept. A newer stored snapshot must not be replaced by it.
type SaveSnapshot struct{ Snap *Snapshot }

// SnapshotSaved: the snapshot at Pos asked for by SaveSnapshot is durable.
type SnapshotSaved struct{ Pos Pos }

// Send hands a message to the transport.
type Send struct {
	To  Peer
	Msg wire.Message
}

// ConnClass names the connections the disconnect rules close.
type ConnClass uint8

// Connection classes.
const (
	ConnChunkservers ConnClass = 1 + iota
	ConnClients
	ConnSessions // followers' sync sessions, metaloggers, admin sessions
)

func (c ConnClass) String() string {
	switch c {
	case ConnChunkservers:
		return "chunkservers"
	case ConnClients:
		return "clients"
	case ConnSessions:
		return "sessions"
	}
	return "conn?"
}

// Disconnect closes every connection of a class, after sending each its
// goodbye (a VoteRelease for chunkservers).
type Disconnect struct {
	Class    ConnClass
	Goodbyes []Send
}

// Transition records a role change. It takes effect after every Disconnect
// that precedes it in the batch.
type Transition struct {
	From, To Role
	Epoch    uint64
	Reason   string
	Section  string // docs/roles.md section
}

// IDTaken tells a chunkserver's driver that Master's registry gives this
// voter's id to another chunkserver: forget the id and register again.
type IDTaken struct{ Master wire.MasterID }

// Ignored reports input that was stale, duplicated or foreign.
type Ignored struct{ Reason string }

// AdminReply answers an Admin command. Code says why it was refused, for
// programs (Text says what was done, or why not, for people).
type AdminReply struct {
	ID   uint64
	OK   bool
	Text string
	Code wire.Code
}
