package roles

import (
	"slices"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// Event is one input to Step: a received message or something the driver
// observed. The set is closed (the unexported method), so a value that is
// no input of the core does not compile as one: a driver that decodes a
// frame asserts roles.Event on it, and a message the core does not take
// (ClientReply, the daemons' own) is refused there, not ignored here.
type Event interface{ event() }

// Tick is the event of time passing; the driver sends one at NextDeadline.
// WallUnixMs, when set, is the node's wall clock then: a master stamps
// its role changes with it (the election history; 0: not read).
type Tick struct{ WallUnixMs int64 }

// ConnLost: a chunkserver's vote connection to this master closed. ByPeer:
// the chunkserver's side ended it (a FIN or a RST arrived), not this
// master (a replacement, a refusal, a cut for silence, a shutdown).
type ConnLost struct {
	CS     wire.CSID
	ByPeer bool
}

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

// LinkUp: the chunkserver's connection to a master is (re)established.
// The voter asks that master for its role at once: in a crowd its probes
// are seconds apart, and what it sent while the link was down was lost.
type LinkUp struct{ Master wire.MasterID }

// StopRequested: the chunkserver is being stopped in order (SIGTERM). The
// voter ends its vote session, grants nothing more, and answers Stopped
// once no promise stands (released, proven void or lapsed).
type StopRequested struct{}

// TrustRecord: the operator vouches for this voter's record as it is
// (mfscli -CTRUST), when too many voters are uncertain for any quorum. The
// voter stops being uncertain and votes on what its record says: a change
// acknowledged by a quorum this voter was part of, and forgot, may be lost
// (docs/operations.md, "Lost or damaged chunkserver disk").
type TrustRecord struct{}

// ForeignCluster: Master, one of MASTER_HOST, answered with another
// cluster's metadata id (its driver refused the connection). A founder
// that hears it does not bootstrap.
type ForeignCluster struct{ Master wire.MasterID }

// MasterSet: MASTER_HOST was resolved again (every
// MASTER_RESOLVE_INTERVAL, on SIGHUP, on mfscli -CMR) and names another
// set of masters: Masters is all of them. For a master, Member says it is
// in the set: in its own list, and not refused as a stranger by every
// master of it that answered (docs/architecture.md §5.3).
type MasterSet struct {
	Masters []wire.MasterID
	Member  bool
}

// NormalMasters sorts ids, drops duplicates and NoMaster.
func NormalMasters(ids []wire.MasterID) []wire.MasterID {
	out := slices.Clone(ids)
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(id wire.MasterID) bool { return id == wire.NoMaster })
}

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
	// AdminResolve (mfscli -CMR): resolve MASTER_HOST again now. The
	// driver carries it out (it owns the resolver) and steps the result
	// as MasterSet; the core never sees it.
	AdminResolve
	// AdminTrust (mfscli -CTRUST): send the chunkserver Change.ID, if it
	// said it is uncertain, the operator's TrustRecord. The driver
	// carries it out (it owns the connections); the core never sees it.
	AdminTrust
)

// Admin is an operator command. ID is echoed in the AdminReply.
type Admin struct {
	ID     uint64
	Kind   AdminKind
	Change registry.Change // for AdminChange
}

// SnapshotSaved: the snapshot at Pos asked for by SaveSnapshot is durable.
type SnapshotSaved struct{ Pos changelog.Pos }

// The events. Each message a master or a voter takes from a peer is one,
// beside what the drivers observe.
func (Tick) event()           {}
func (ConnLost) event()       {}
func (Refused) event()        {}
func (VoteConnLost) event()   {}
func (LinkUp) event()         {}
func (StopRequested) event()  {}
func (TrustRecord) event()    {}
func (ForeignCluster) event() {}
func (Admin) event()          {}
func (MasterSet) event()      {}
func (SnapshotSaved) event()  {}
func (Probe) event()          {}
func (ProbeReply) event()     {}
func (VoteHello) event()      {}
func (VoteBye) event()        {}
func (Heartbeat) event()      {}
func (HeartbeatAck) event()   {}
func (VoteRelease) event()    {}
func (Redirect) event()       {}
func (PeerStatus) event()     {}
func (Append) event()         {}
func (AppendAck) event()      {}
func (FetchReq) event()       {}
func (FetchResp) event()      {}
func (SnapshotChunk) event()  {}
func (ClientWrite) event()    {}
func (ClientRead) event()     {}

// WitnessResult is the driver's answer to a call the witness asked for.
type WitnessResult struct{ witness.Result }

func (WitnessResult) event() {}
