package roles

import (
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Probe asks a master for its role (any connection, never a vote).
type Probe struct {
	CS    wire.CSID
	Nonce uint64
}

// ProbeReply is a master's answer to Probe.
type ProbeReply struct {
	From        wire.MasterID
	Incarnation uint64 // rises on every start of the master process
	Nonce       uint64
	Role        Role
	Epoch       uint64        // the master's own epoch (LEADER/ELECT/DEPUTY) or the highest it has seen
	Leader      wire.MasterID // the LEADER it recorded, or none
	LeaderFresh bool          // it heard from that LEADER within its peer timeout
	Eligible    bool          // holds metadata
	Sync        SyncState
	Last        changelog.Pos
	Usurper     bool
	Keep        bool // KEEP_LEADERSHIP and not yielded
	Yielded     bool // leadership was moved away from it on purpose
	WallUnixMs  int64
	// Registered: the chunkservers of its registry, or the voters it has
	// sessions with and registrations queued if more (Master.crowd). A
	// voter among
	// thousands probes less often (Voter.probeEvery); an announcement
	// (Nonce 0, unasked: a master that became ELECT or LEADER tells every
	// connected chunkserver) makes up for it.
	Registered uint32 `msgpack:",omitempty"`
}

// VoteHello opens a vote session: from now on the chunkserver's vote is with
// this master, if the master takes votes.
type VoteHello struct {
	CS        wire.CSID
	Addr      netip.Addr
	Port      uint16 `msgpack:",omitempty"`
	VoterOnly bool
	Session   uint64 // chosen by the chunkserver, rises with every session
	Nominate  bool   // "become ELECT": the nomination turn's act
	MaxEpoch  uint64
	// With Nominate: the LEADER the voter last voted for and why its
	// session ended (changelog.Why*), for the election history only.
	Deposed wire.MasterID `msgpack:",omitempty"`
	Why     string        `msgpack:",omitempty"`
	// DgKey and DgPort open the session's datagram path (internal/node,
	// datagram.go): the key its heartbeats and acknowledgements travel
	// under as UDP datagrams beside this connection, and the voter's UDP
	// port. The drivers' alone: the core neither sets nor reads them.
	DgKey  []byte `msgpack:",omitempty"`
	DgPort uint16 `msgpack:",omitempty"`
}

// VoteBye ends a vote session from the chunkserver's side. The master
// answers with VoteRelease, which frees the promise early.
type VoteBye struct {
	CS      wire.CSID
	Session uint64
	// Addr is the source address of the connection it came on, filled in
	// by the driver (never from the wire): only the session's own address
	// may end it.
	Addr netip.Addr `msgpack:"-"`
}

// Heartbeat renews a vote and carries what every voter must learn.
type Heartbeat struct {
	From        wire.MasterID
	Incarnation uint64
	Session     uint64
	Seq         uint64
	Role        Role
	Epoch       uint64
	Lease       time.Duration // the promise asked for
	RegVersion  uint64        // newest config version replicated to the ack set
	InForce     uint64        // newest config version in force
	Commit      changelog.Pos // from a LEADER: replicated as the ack rule requires; voters remember it, tagged with Epoch
	Rank, Ranks uint32        // this voter's place in the nomination rotation
	// Keepalive: no promise asked and no epoch proposed (an ELECT before
	// its sessions make a quorum, or a DEPUTY). Epoch and Lease are 0.
	Keepalive bool
}

// HeartbeatAck answers a Heartbeat. OK=false refuses it (Reason says why).
type HeartbeatAck struct {
	CS         wire.CSID
	Session    uint64
	Seq        uint64
	OK         bool
	Reason     string
	Granted    time.Duration // the promise actually made (<= asked)
	MaxEpoch   uint64
	EpochOwner wire.MasterID
	KnownReg   uint64
	InForce    uint64
	Commit     changelog.Pos
	CommitTag  uint64 // the epoch of the LEADER that told it Commit
	// EpochInc is the incarnation of EpochOwner that took MaxEpoch (0:
	// unknown): a master whose data directory was rolled back learns from
	// it that it took this epoch before, in another life.
	EpochInc uint64 `msgpack:",omitempty"`
	// Addr is the source address of the connection it came on, filled in
	// by the driver (never from the wire): an ack counts only from the
	// address the vote session was opened from.
	Addr netip.Addr `msgpack:"-"`
}

// VoteRelease tells a chunkserver that the master no longer counts its vote
// in that session: the promise is void. Next, when set, is the master it
// should vote for (and nominate) at once: a planned handover.
type VoteRelease struct {
	From        wire.MasterID
	Incarnation uint64
	Session     uint64
	Next        wire.MasterID
}

// Redirect refuses a vote session: this master takes no votes. Leader is the
// LEADER it recorded (or none).
type Redirect struct {
	From    wire.MasterID
	Session uint64
	Leader  wire.MasterID
	// IDTaken: the registry gives this id to a chunkserver at another
	// address; the voter must register again for an id of its own.
	IDTaken bool `msgpack:",omitempty"`
}

// PeerStatus is what masters tell each other every PeerInterval.
type PeerStatus struct {
	From        wire.MasterID
	Incarnation uint64
	Role        Role
	Epoch       uint64
	MaxEpoch    uint64
	Last        changelog.Pos
	Commit      changelog.Pos
	Eligible    bool
	Sync        SyncState
	Usurper     bool
	Keep        bool // KEEP_LEADERSHIP and not yielded
	KeepSet     bool `msgpack:",omitempty"` // KEEP_LEADERSHIP is on (yielded or not)
	Placed      bool `msgpack:",omitempty"` // an admin command put it in its role (§3.12: not reclaimed from)
	Leader      wire.MasterID
	WallUnixMs  int64
	Snap        uint64 `msgpack:",omitempty"` // the version of its durable snapshot (trimming waits for every master's)
	// History: its role changes not yet seen in the election history
	// (at most maxReport); the LEADER writes them.
	History []changelog.RoleChange `msgpack:",omitempty"`
	// Proto: the newest protocol version the sender speaks (0: a
	// version-2 master, which does not say).
	Proto uint16 `msgpack:",omitempty"`
	// Witness: it can take the witness's lease (its store is set and not
	// refusing it). An ELECT that cannot hands an even split to one that
	// can (§3.6).
	Witness bool `msgpack:",omitempty"`
	// WitnessHeld: it counts the witness's lease now.
	WitnessHeld bool `msgpack:",omitempty"`
	// StoreLog: it can read and write the store log (storeUsable). An
	// ELECT waiting for changes only the store holds, with no store of its
	// own, hands its voters to one that can (storeAside).
	StoreLog bool `msgpack:",omitempty"`
	// InForce: the newest config version it knows to be in force. A peer
	// whose log holds the same config entry (at or below Commit) takes it
	// (an earlier build, which does not say, sends 0).
	InForce uint64 `msgpack:",omitempty"`
}

// Append carries changelog entries from the LEADER to one follower; an empty
// one is the LEADER's liveness signal.
type Append struct {
	From    wire.MasterID
	Epoch   uint64
	Prev    changelog.Pos
	Entries []changelog.Entry
	Commit  changelog.Pos
	InForce uint64
}

// AppendAck answers Append: Match is the newest position the follower holds
// durably and in agreement with the LEADER; Last its newest version.
type AppendAck struct {
	From  wire.MasterID
	Epoch uint64
	OK    bool
	Match changelog.Pos
	Last  uint64
	// SnapPos and SnapNext acknowledge a SnapshotChunk: the records of
	// the snapshot at SnapPos received so far.
	SnapPos  changelog.Pos `msgpack:",omitempty"`
	SnapNext uint64        `msgpack:",omitempty"`
}

// FetchReq asks any master for its entries after version After (an ELECT
// catching up before it may lead).
type FetchReq struct {
	From  wire.MasterID
	After uint64
	// SnapPos and SnapNext ask for the next chunk of a snapshot (when the
	// responder has trimmed the entries after After).
	SnapPos  changelog.Pos `msgpack:",omitempty"`
	SnapNext uint64        `msgpack:",omitempty"`
}

// FetchResp answers FetchReq. Base is the responder's entry at After, so the
// asker can check the two logs agree there.
type FetchResp struct {
	From    wire.MasterID
	Base    changelog.Pos
	Entries []changelog.Entry
	Commit  changelog.Pos
}

// ClientWrite asks for a change (Value empty and Delete set removes Key).
// With CAS set, Key becomes Value only if it is at version Expect (0: only
// if absent).
type ClientWrite struct {
	Client changelog.ClientID
	Seq    uint64
	Key    string
	Value  string
	Delete bool
	CAS    bool   `msgpack:",omitempty"`
	Expect uint64 `msgpack:",omitempty"`
}

// ClientRead asks for a linearizable read of Key, or with Prefix set of
// the keys that start with Key, in key order: one page of them, after the
// key After (from the first when empty), at most Limit (0, or above
// ListMax: ListMax) and ListMaxBytes. ClientReply.More says there are more
// keys under the prefix: ask again with After the last key received.
type ClientRead struct {
	Client changelog.ClientID
	Seq    uint64
	Key    string
	Prefix bool   `msgpack:",omitempty"`
	After  string `msgpack:",omitempty"`
	Limit  int    `msgpack:",omitempty"`
}

// ClientReply answers a client. Redirect names the LEADER to try when this
// master cannot serve (none when unknown); Err and Code say why it failed.
type ClientReply struct {
	From     wire.MasterID
	Client   changelog.ClientID
	Seq      uint64
	OK       bool
	Value    string
	Found    bool
	Version  uint64
	Redirect wire.MasterID
	Stale    bool // served by a DEPUTY from its own copy: not linearizable
	Err      string
	// KeyVersion: a read's key, or a write's key after it, is at this
	// version (0: absent). Conflict: a compare-and-set found another.
	KeyVersion uint64              `msgpack:",omitempty"`
	Conflict   bool                `msgpack:",omitempty"`
	Entries    []namespace.KVEntry `msgpack:",omitempty"`
	More       bool                `msgpack:",omitempty"` // a list answer left keys out (Limit, ListMax, ListMaxBytes): ask again after the last one
	// Code says why it failed, for programs (Err says it for people):
	// whether to ask again, elsewhere, or give up.
	Code wire.Code `msgpack:",omitempty"`
}

func (Probe) MsgType() wire.Type        { return wire.TypeProbe }
func (ProbeReply) MsgType() wire.Type   { return wire.TypeProbeReply }
func (VoteHello) MsgType() wire.Type    { return wire.TypeVoteHello }
func (VoteBye) MsgType() wire.Type      { return wire.TypeVoteBye }
func (Heartbeat) MsgType() wire.Type    { return wire.TypeHeartbeat }
func (HeartbeatAck) MsgType() wire.Type { return wire.TypeHeartbeatAck }
func (VoteRelease) MsgType() wire.Type  { return wire.TypeVoteRelease }
func (Redirect) MsgType() wire.Type     { return wire.TypeRedirect }
func (PeerStatus) MsgType() wire.Type   { return wire.TypePeerStatus }
func (Append) MsgType() wire.Type       { return wire.TypeAppend }
func (AppendAck) MsgType() wire.Type    { return wire.TypeAppendAck }
func (FetchReq) MsgType() wire.Type     { return wire.TypeFetchReq }
func (FetchResp) MsgType() wire.Type    { return wire.TypeFetchResp }
func (ClientWrite) MsgType() wire.Type  { return wire.TypeClientWrite }
func (ClientRead) MsgType() wire.Type   { return wire.TypeClientRead }
func (ClientReply) MsgType() wire.Type  { return wire.TypeClientReply }

// SnapshotChunk carries part of a snapshot: to a follower that lacks
// entries the LEADER has trimmed (Epoch is the LEADER's; the follower acks
// with AppendAck.SnapNext), or to an ELECT that asked with FetchReq (Epoch
// 0). Records are the items sorted by key, then the sessions sorted by id;
// Offset is the first record's place, Total their number.
type SnapshotChunk struct {
	From     wire.MasterID
	Epoch    uint64
	Pos      changelog.Pos
	Total    uint64
	Offset   uint64
	Latest   *registry.ClusterConfig  `msgpack:",omitempty"` // in the first chunk
	Previous *registry.ClusterConfig  `msgpack:",omitempty"`
	Items    []namespace.KVEntry      `msgpack:",omitempty"`
	Sessions []namespace.SessionEntry `msgpack:",omitempty"`
	Commit   changelog.Pos            // as in Append
	InForce  uint64
}

// MsgType implements wire.Message.
func (SnapshotChunk) MsgType() wire.Type { return wire.TypeSnapshotChunk }
