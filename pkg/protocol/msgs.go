package protocol

import (
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// AuthChallenge: a master sends it right after its hello on the chunkserver
// port (9420) and on the master port (9419); the peer must answer with
// AuthProof before anything it sends is heard. Without AUTH_CODE the nonce
// is empty and any proof passes. On the master port, NotMember instead
// tells a master that this one's MASTER_HOST does not name it (it was
// removed from the set of masters): the connection closes after it.
type AuthChallenge struct {
	Nonce     []byte
	NotMember bool `msgpack:",omitempty"`
}

// AuthProof proves AUTH_CODE without sending it: ChunkserverProof from a
// chunkserver, MasterProof from a master (each under its own key, so that
// one can never pass for the other), over the challenge's nonce, the
// challenging master's cluster id and the prover's address.
type AuthProof struct{ MAC []byte }

// RegisterReq: a chunkserver without an id asks for one. Addr is what it
// believes its address is (for logs); the master registers the source
// address of the connection, never a claim.
type RegisterReq struct {
	Addr      netip.Addr
	Port      uint16
	VoterOnly bool
}

// RegisterReply answers RegisterReq: ID is 0 when this master is not the
// LEADER; Leader is then the LEADER's address it recorded (invalid: none).
// New says the id is no member of the registry (not the id of an earlier
// chunkserver at this address): no promise can have been made under it
// that a master could count. A chunkserver whose record is empty and
// gets a known id back (a wiped data directory) keeps quiet as after a
// crash; a master that does not send New leaves every one quiet.
type RegisterReply struct {
	ID     wire.CSID
	Leader netip.Addr
	New    bool `msgpack:",omitempty"`
}

// CSInfo is what a chunkserver tells each master it connects to, for the
// listings: its identity, labels and disk space (voter-only: none).
type CSInfo struct {
	ID        wire.CSID
	Addr      netip.Addr
	Port      uint16
	Labels    string
	VoterOnly bool
	Total     uint64
	Used      uint64
	Version   string
	// Record: what was found wrong with its voter record this run (a copy
	// of chunkserver.mfs unreadable at start or changed on the disk since
	// it was written), naming the file; empty when nothing was. Uncertain:
	// its voter grants nothing until a LEADER restores its record
	// (roles.VoterHardState.Uncertain). Only a chunkserver of this release
	// or later says either.
	Record    string `msgpack:",omitempty"`
	Uncertain bool   `msgpack:",omitempty"`
}

// TrustRecord is the operator vouching for an uncertain chunkserver's
// voter record as it is (mfscli -CTRUST): a master sends it on that
// chunkserver's connection, and only to one that said it is uncertain (so
// never to a build that would not know it). CS names the chunkserver.
type TrustRecord struct {
	CS wire.CSID
}

// StatusReq asks a master (port 9421) for its state. History: how many
// records of the election history to send, newest (0: DefaultHistory; at
// most namespace.MaxHistory).
type StatusReq struct {
	History int `msgpack:",omitempty"`
}

// DefaultHistory is how many records of the election history a status
// answer carries unless asked for more (mfscli -SLH asks for them all).
const DefaultHistory = 20

// StatusResp is a master's state as mfscli shows it.
type StatusResp struct {
	Addr         netip.Addr
	Version      string
	Role         roles.Role
	Sync         roles.SyncState
	Epoch        uint64
	Leader       netip.Addr // recorded LEADER (invalid: none)
	HoldsQuorum  bool
	MetaVersion  uint64
	Commit       uint64
	ClusterID    string
	WallUnixMs   int64
	Behind       uint64        // versions behind the LEADER (FOLLOWER, USURPER)
	Delay        time.Duration // how long since it was last in sync (0: in sync)
	Connected    int           // chunkserver vote connections open to it
	Registered   int
	Voters       int // votes it counts now
	Chunkservers []CSStatus
	// SnapshotVersion is the version of its durable snapshot (0: none);
	// ChangelogEntries the entries it holds after its log base (the rest
	// were trimmed: they are in the snapshot).
	SnapshotVersion  uint64 `msgpack:",omitempty"`
	ChangelogEntries int    `msgpack:",omitempty"`
	// Transition names a role change under way ("LEADER -> FOLLOWER"
	// while handing over, "ELECT -> LEADER" while a winning ELECT catches
	// up).
	Transition string `msgpack:",omitempty"`
	// RSS is the process's resident memory in bytes; CPU its use of one
	// core over the last second or so, in percent.
	RSS uint64  `msgpack:",omitempty"`
	CPU float64 `msgpack:",omitempty"`
	// ConfigVersion is its newest registry/location config, InForce the
	// newest it knows to be in force (they differ while a change is put in
	// force).
	ConfigVersion uint64 `msgpack:",omitempty"`
	InForce       uint64 `msgpack:",omitempty"`
	// Locations is the location map of that config.
	Locations []LocStatus `msgpack:",omitempty"`
	// Tallies: a LEADER's or ELECT's count for itself, under the newest
	// config and, while it is not in force, the previous one too.
	Tallies []TallyStatus `msgpack:",omitempty"`
	// LeaderChangeUnixMs: when this master last saw the LEADER change
	// (its wall clock; 0: not since it started).
	LeaderChangeUnixMs int64 `msgpack:",omitempty"`
	// TempRemoved: chunkservers this ELECT or DEPUTY counts without
	// (mfscli -CTR) until they vote again or a LEADER removes them.
	TempRemoved []wire.CSID `msgpack:",omitempty"`
	// Clones: chunkserver connections refused because their id was
	// already connected from another address (a cloned chunkserver or an
	// impostor), newest kept.
	Clones []CloneStatus `msgpack:",omitempty"`
	// What is open on this master, for mfscli's alarm: no AUTH_CODE (any
	// host that reaches 9419/9420 can pose as a master or a chunkserver),
	// no ADMIN_PASSWORD (admin commands are open to anyone who reaches
	// 9421), no mfsexports.cfg (every client may read and change every
	// key).
	NoAuthCode  bool `msgpack:",omitempty"`
	AdminOpen   bool `msgpack:",omitempty"`
	ExportsOpen bool `msgpack:",omitempty"`
	// Preferred leaders (docs/roles.md §3.12): KEEP_LEADERSHIP is on here;
	// leadership was moved away from it on purpose (yielded); an admin
	// command put it in its role (placed); and the masters it knows to
	// have KEEP_LEADERSHIP on, itself included.
	Keep        bool         `msgpack:",omitempty"`
	Yielded     bool         `msgpack:",omitempty"`
	Placed      bool         `msgpack:",omitempty"`
	KeepMasters []netip.Addr `msgpack:",omitempty"`
	// NotEligible says why this master may not be ELECT (empty: it may),
	// in words: what mfscli -SLQ prints when nobody counts votes.
	NotEligible string `msgpack:",omitempty"`
	// Removed: this master is out of the set of masters (its MASTER_HOST
	// no longer names it, or every master it reaches refuses it as a
	// stranger): it takes part in nothing until it is named again.
	Removed bool `msgpack:",omitempty"`
	// Masters: every master of its set, itself included (its MASTER_HOST
	// as last resolved); none from a master older than this field. With
	// it, a listing that asked one master knows whether there are more.
	Masters []netip.Addr `msgpack:",omitempty"`
	// ProtoMin-Proto: the protocol versions this master speaks (both 0
	// from a master of version 2, which did not say).
	ProtoMin uint16 `msgpack:",omitempty"`
	Proto    uint16 `msgpack:",omitempty"`
	// History: the newest records of the election history this master
	// has applied (committed), oldest first; HistoryTotal how many it
	// holds; LeaderChanges the LEADER changes ever recorded, by cause
	// (changelog.Whys, "other"). Its own role changes not yet in the
	// history: HistoryWaiting, and HistoryLost dropped from a full queue.
	History        []RoleChangeStatus `msgpack:",omitempty"`
	HistoryTotal   int                `msgpack:",omitempty"`
	LeaderChanges  map[string]uint64  `msgpack:",omitempty"`
	HistoryWaiting int                `msgpack:",omitempty"`
	HistoryLost    uint64             `msgpack:",omitempty"`
	// What a LEADER's acknowledgements rest on (roles.Durability, review
	// N7); a LEADER only says it (AckKnown). AckRequired is its
	// ACK_REPLICAS, AckFollowers the other masters of its set,
	// AckReplicas the followers known to hold its newest acknowledged
	// change. AckShort: an acknowledgement rested on fewer than
	// AckRequired follower copies and the newest still does, for
	// AckShortFor up to this answer (a duration, not a time, so that no
	// two clocks are compared); AckUnheard are the masters of its set it
	// has not heard within PEER_TIMEOUT.
	AckKnown     bool          `msgpack:",omitempty"`
	AckRequired  int           `msgpack:",omitempty"`
	AckFollowers int           `msgpack:",omitempty"`
	AckReplicas  int           `msgpack:",omitempty"`
	AckShort     bool          `msgpack:",omitempty"`
	AckShortFor  time.Duration `msgpack:",omitempty"`
	AckUnheard   []netip.Addr  `msgpack:",omitempty"`
	// Witness is the object-store witness as this master sees it (nil:
	// the registry names none and this master has no store).
	Witness *WitnessStatus `msgpack:",omitempty"`
	// StoreLog is the witness's store as a stand-in replica (nil: no
	// witness, or no store on this master).
	StoreLog *StoreLogStatus `msgpack:",omitempty"`
	// CatchUp: an ELECT whose votes would win waits for changes its log
	// lacks (the catch-up rule, docs/architecture.md §7): NeedVersion
	// (epoch NeedEpoch) told committed by the LEADER of epoch Tag, for
	// For; Sources: a master it hears or the store log could give them
	// (false: only a master that is gone held them).
	CatchUp *CatchUpStatus `msgpack:",omitempty"`
}

// CatchUpStatus is StatusResp.CatchUp.
type CatchUpStatus struct {
	NeedVersion uint64
	NeedEpoch   uint64
	Tag         uint64
	For         time.Duration
	Sources     bool `msgpack:",omitempty"`
}

// RoleChangeStatus is one record of the election history as the listings
// show it (changelog.RoleChange with the masters' addresses).
type RoleChangeStatus struct {
	UnixMs    int64 // the master's wall clock then (0: not known)
	Master    netip.Addr
	MasterID  wire.MasterID
	From, To  string
	Epoch     uint64
	Reason    string
	Section   string
	Votes     []changelog.LocationVotes `msgpack:",omitempty"`
	Deposed   netip.Addr                `msgpack:",omitempty"` // a new LEADER: the one before it
	DeposedID wire.MasterID             `msgpack:",omitempty"`
	Why       string                    `msgpack:",omitempty"` // and why it went (changelog.Why*)
	// The witness's part in the tally (changelog.Witness*; "" none named)
	// and the lease_epoch of the lease the change relied on (0: none).
	Witness    string `msgpack:",omitempty"`
	LeaseEpoch uint64 `msgpack:",omitempty"`
}

// LocStatus is one location of the map.
type LocStatus struct {
	Name    string
	Ranges  []netip.Prefix `msgpack:",omitempty"`
	On      bool
	Default bool
}

// TallyStatus is one count (quorum.Tally) for the listings. Votes are the
// votes counted now, Reach the vote sessions open, per location.
type TallyStatus struct {
	Config        uint64
	Outcome       string // WON, PENDING, LOST
	Empty         bool   `msgpack:",omitempty"`
	Divided       bool   `msgpack:",omitempty"`
	Participating int
	Carried       int
	Needed        int
	Locations     []LocTally
	// Witness: the registry names a witness, so an even split is broken
	// by its lease, not by the default location; WitnessHeld: this master
	// counts the lease (the tie is broken for it).
	Witness     bool `msgpack:",omitempty"`
	WitnessHeld bool `msgpack:",omitempty"`
}

// LocTally is one participating location's count.
type LocTally struct {
	Name       string
	Default    bool `msgpack:",omitempty"`
	Registered int
	Votes      int
	Reach      int
	Carried    bool `msgpack:",omitempty"`
	CanCarry   bool `msgpack:",omitempty"` // could be carried if every chunkserver that reaches it voted
}

// CSStatus is one registered chunkserver as a master sees it.
type CSStatus struct {
	ID        wire.CSID
	Addr      netip.Addr
	Port      uint16
	Location  string
	VoterOnly bool
	Connected bool // has a connection to this master
	Voting    bool // its vote is counted here now
	Labels    string
	Total     uint64
	Used      uint64
	// Maintenance: the operator marked it (mfscli -CM1): its absence is
	// planned. It still counts towards quorum.
	Maintenance bool `msgpack:",omitempty"`
	// Version is its binary's version and ProtoMin-Proto the protocol
	// versions it speaks, as it told this master (empty and 0 while it is
	// not connected here; Proto 0 and ProtoMin 2 from a version-2 one).
	Version  string `msgpack:",omitempty"`
	ProtoMin uint16 `msgpack:",omitempty"`
	Proto    uint16 `msgpack:",omitempty"`
	// Record and Uncertain as its CSInfo said them (see there).
	Record    string `msgpack:",omitempty"`
	Uncertain bool   `msgpack:",omitempty"`
}

// CloneStatus is a chunkserver connection refused because its id was
// already connected from another address: a cloned chunkserver (a copied
// VM or data directory) or an impostor.
type CloneStatus struct {
	ID          wire.CSID
	Addr        netip.Addr // where the refused connection came from
	Holder      netip.Addr // the address that holds the id's connection
	FirstUnixMs int64
	LastUnixMs  int64
	Count       int
}

// AdminReq carries an operator command to a master.
type AdminReq struct {
	ID     uint64
	Kind   roles.AdminKind
	Change registry.Change
	// Proof: AdminProof, when the master has an ADMIN_PASSWORD.
	Proof []byte `msgpack:",omitempty"`
	// Target is the master the command is meant for: the address mfscli
	// dialed. The proof covers it, and a master with ADMIN_PASSWORD
	// refuses a command that names another master (a relay cannot move a
	// -CMS meant for one master to another).
	Target netip.Addr
}

// ClientAuth proves, once per connection, a password of mfsexports.cfg: a
// client sends it right after the hellos when it has a password
// (ClientProof over the nonce of the master's hello). There is no answer;
// a request the proof does not open is refused with ErrExportsPassword*.
type ClientAuth struct{ MAC []byte }

// AdminResp answers AdminReq: Text says what was done, or why not, for
// people; Code says why not, for programs.
type AdminResp struct {
	ID   uint64
	OK   bool
	Text string
	Code wire.Code `msgpack:",omitempty"`
}

func (AuthChallenge) MsgType() wire.Type { return wire.TypeAuthChallenge }
func (AuthProof) MsgType() wire.Type     { return wire.TypeAuthProof }
func (RegisterReq) MsgType() wire.Type   { return wire.TypeRegisterReq }
func (RegisterReply) MsgType() wire.Type { return wire.TypeRegisterReply }
func (CSInfo) MsgType() wire.Type        { return wire.TypeCSInfo }
func (StatusReq) MsgType() wire.Type     { return wire.TypeStatusReq }
func (StatusResp) MsgType() wire.Type    { return wire.TypeStatusResp }
func (AdminReq) MsgType() wire.Type      { return wire.TypeAdminReq }
func (AdminResp) MsgType() wire.Type     { return wire.TypeAdminResp }
func (ClientAuth) MsgType() wire.Type    { return wire.TypeClientAuth }
func (TrustRecord) MsgType() wire.Type   { return wire.TypeTrustRecord }
