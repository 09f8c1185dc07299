package roles

import (
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Batch is the part of a step's batch every machine has: what one Step
// (or a machine's constructor) asks of its driver, in the order it is
// carried out. Each machine's own batch embeds it and adds its kinds
// (master.Batch: admin replies, transitions, snapshots, witness calls;
// voter.Batch: a lost id, a clean stop), so a driver cannot be handed a
// kind its machine never makes. Carry is the one place that carries
// batches out, for both daemons and the simulator: nothing of a batch
// happens before its Persist is durable, but the Sends marked Early (a
// LEADER's appends to the other masters), which leave first, while the
// Persist is under way.
type Batch struct {
	// Persist: durable first, in order, all or nothing (Store.Apply).
	Persist []Persist
	// Sends, in order, after the machine's own work before them
	// (Carried.Before).
	Sends []Send
	// Ignored: input that was stale, duplicated or foreign, by a stable,
	// low-cardinality reason (counted, never an error).
	Ignored []string
}

// Empty reports whether the common part asks for nothing.
func (b *Batch) Empty() bool {
	return len(b.Persist) == 0 && len(b.Sends) == 0 && len(b.Ignored) == 0
}

// Persister makes Persists durable: in order, all of them or (a failure
// or a crash meanwhile) none, before Apply returns.
type Persister interface {
	Apply(ps ...Persist) error
}

// Store is a master's disk as the core sees it: Load gives what completed
// Applies left (Stored), Apply makes a batch's Persists durable. The
// contract, which rolestest.TestStore holds every implementation to:
//   - Load after any sequence of Applies, and after reopening the store,
//     gives exactly what those Applies made of it;
//   - within one Persist: the Snapshot is kept unless the stored one is
//     newer, then Trim, TruncateAfter and Append in that order, then Hard;
//   - an Apply that would leave a log that does not hold together (an
//     append that does not continue it, a trim below its base, a trim to
//     a position the log holds with another epoch that keeps entries after
//     it) is refused with an error and changes nothing.
//
// Two implementations: metadata.MasterStore (bbolt and a snapshot file)
// and MemStore (the simulator's disk).
type Store interface {
	Persister
	Load() (Stored, error)
}

// Effects is what a driver does with the common part of a batch once its
// Persist is durable: the daemons' connections and logs, the simulator's
// network and trace. Each machine's Effects adds its own kinds.
type Effects interface {
	// Durable: the Persist of the batches being carried is on disk, and
	// nothing of them has been done yet but their Early sends: no report
	// may outlive what a step-down's releases will let the voters do.
	Durable()
	// WallUnixMs reads the node's wall clock, stamped on the status
	// messages that carry it (for display and clock warnings only).
	WallUnixMs() int64
	// Send hands a message to the transport.
	Send(to Peer, msg wire.Message)
	// Ignored counts an input the core ignored.
	Ignored(reason string)
}

// Carried is a machine's batch as Carry carries it out: the common part,
// and the machine's own kinds at their places around it.
type Carried[FX Effects] interface {
	Common() Batch
	// Lead: once the group's Persist is durable, before anything else
	// of any batch of the group (a master's admin replies).
	Lead(fx FX)
	// Before: this batch's work ahead of its sends (a master's
	// transitions, each with its disconnects).
	Before(fx FX)
	// After: this batch's work after its sends; last ends the group
	// (a voter told its id is taken: the rest was the old voter's), and
	// an error ends it too.
	After(fx FX) (last bool, err error)
}

// Carry carries out a group of batches the driver stepped one after
// another: the Sends marked Early (Send.Early), then every Persist of them
// in one Apply (one fsync for the group), then each batch's Lead work,
// then batch by batch in order: its Before work, its other sends, its
// After work and its ignored inputs. A failed Apply returns before
// anything else is done: the driver must not run ahead of its disk. After
// a batch whose After says last, the rest of the group is dropped. Each
// machine's package instantiates it for its batch (master.Carry,
// voter.Carry).
func Carry[FX Effects, B Carried[FX]](st Persister, fx FX, group ...B) error {
	for i := range group {
		if c := group[i].Common(); len(c.Persist) > 0 {
			return carry(st, fx, true, group...)
		}
	}
	return carry(st, fx, false, group...) // no Persist: every send in order
}

// CarryRest is Carry for a group whose Early sends already left
// (SendEarly, when its Persist began: the simulator, which draws the
// disk's delay between the two).
func CarryRest[FX Effects, B Carried[FX]](st Persister, fx FX, group ...B) error {
	return carry(st, fx, false, group...)
}

// carry persists the group, then carries out the rest of it; early: send
// the Early sends first; false: they left already, or (no Persist) they
// go in order with the others.
func carry[FX Effects, B Carried[FX]](st Persister, fx FX, early bool, group ...B) error {
	var ps []Persist
	for i := range group {
		ps = append(ps, group[i].Common().Persist...)
	}
	if early {
		for i := range group {
			SendEarly(group[i].Common(), fx)
		}
	}
	if len(ps) > 0 {
		if err := st.Apply(ps...); err != nil {
			return err
		}
	}
	fx.Durable()
	for i := range group {
		group[i].Lead(fx)
	}
	skip := len(ps) > 0 // the Early sends left before the Persist
	for i := range group {
		c := group[i].Common()
		group[i].Before(fx)
		for _, s := range c.Sends {
			if !s.Early || !skip {
				fx.Send(s.To, stamp(s.Msg, fx))
			}
		}
		last, err := group[i].After(fx)
		for _, r := range c.Ignored {
			fx.Ignored(r)
		}
		if err != nil || last {
			return err
		}
	}
	return nil
}

// SendEarly sends a batch's Early sends, in their order: before its
// Persist is durable (Carry; the simulator when it draws the disk's
// delay). Carry then skips them.
func SendEarly(b Batch, fx Effects) {
	for _, s := range b.Sends {
		if s.Early {
			fx.Send(s.To, stamp(s.Msg, fx))
		}
	}
}

// stamp sets the sender's wall clock on the messages that show it: the
// core never reads a wall clock, and a peer uses it for display and for
// the clock-offset warning only.
func stamp(msg wire.Message, fx Effects) wire.Message {
	switch m := msg.(type) {
	case PeerStatus:
		m.WallUnixMs = fx.WallUnixMs()
		return m
	case ProbeReply:
		m.WallUnixMs = fx.WallUnixMs()
		return m
	}
	return msg
}

// PeerKind says what sort of node a Peer is.
type PeerKind uint8

// Peer kinds.
const (
	PeerMaster PeerKind = 1 + iota
	PeerCS
	PeerClient
	// PeerAllCS: every chunkserver connected to the sender (ID unused).
	PeerAllCS
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

// ToAllCS addresses every chunkserver connected to the master.
func ToAllCS() Peer { return Peer{Kind: PeerAllCS} }

// ToClient addresses a client session.
func ToClient(c changelog.ClientID) Peer { return Peer{PeerClient, uint64(c)} }

func (p Peer) String() string {
	switch p.Kind {
	case PeerMaster:
		return wire.MasterID(p.ID).String()
	case PeerCS:
		return wire.CSID(p.ID).String()
	case PeerClient:
		return fmt.Sprintf("C%d", p.ID)
	case PeerAllCS:
		return "CS*"
	}
	return "?"
}

// Persist must be durable before any Send of the same batch. For a master,
// in this order: Snapshot replaces the stored snapshot (one received from
// another master); Trim drops every stored entry at or below Trim.Pos and
// records it as the log's base; TruncateAfter drops every entry after that
// version; Append is added. Hard and Voter are whole records to write.
type Persist struct {
	Hard          *HardState
	Snapshot      *namespace.Snapshot
	Trim          *changelog.LogBase
	TruncateAfter *uint64
	Append        []changelog.Entry
	Voter         *VoterHardState
}

// Send hands a message to the transport.
type Send struct {
	To  Peer
	Msg wire.Message
	// Early: it may leave before the batch's Persist is durable. Only a
	// LEADER's Append is: it claims nothing about this master's disk, so
	// the follower's fsync runs beside the LEADER's rather than after it.
	// What an acknowledgement counts on the LEADER's own durability (the
	// ack rule's (a)) still holds: the follower's AppendAck is stepped
	// only after this batch is carried, Persist included, and every
	// later answer rests on it (docs/architecture.md §7, Overlap).
	Early bool
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

// Transition records a role change. Disconnects is the disconnect rule's
// work (docs/roles.md §2), empty where the rule does not apply: it is
// carried out, each class's goodbyes first, before the new role takes
// effect outside.
type Transition struct {
	From, To    Role
	Epoch       uint64
	Reason      string
	Section     string // docs/roles.md section
	Disconnects []Disconnect
}

// IDTaken tells a chunkserver's driver that Master's registry gives this
// voter's id to another chunkserver: forget the id and register again.
type IDTaken struct{ Master wire.MasterID }

// AdminReply answers an Admin command. Code says why it was refused, for
// programs (Text says what was done, or why not, for people).
type AdminReply struct {
	ID   uint64
	OK   bool
	Text string
	Code wire.Code
}

// NewestVoter is the voter record a chunkserver's store keeps of a group
// of Persists: the last one given (nil: none). Each record is whole, so
// the newest supersedes the rest.
func NewestVoter(ps []Persist) *VoterHardState {
	var last *VoterHardState
	for _, p := range ps {
		if p.Voter != nil {
			last = p.Voter
		}
	}
	return last
}
