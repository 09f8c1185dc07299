package roles

import (
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// Batch is everything one Step (or NewMaster, NewVoter) asks of its
// driver. Its fields are in the order they are carried out, and Carry is
// the one place that carries them out, for both daemons and the
// simulator: nothing of a batch happens before its Persist is durable,
// but the Sends marked Early (a LEADER's appends to the other masters),
// which leave first, while the Persist is under way.
type Batch struct {
	// Persist: durable first, in order, all or nothing (Store.Apply).
	Persist []Persist
	// AdminReplies go out next: a step-down's disconnect rule closes the
	// admin's connection with the clients', and the reply says what the
	// command did.
	AdminReplies []AdminReply
	// Transitions, in the order the roles changed; each carries the
	// disconnects its rule requires before it.
	Transitions []Transition
	// Sends, in order.
	Sends []Send
	// SaveSnapshot: a snapshot of this master's own making to write in the
	// background (at most one a batch).
	SaveSnapshot *namespace.Snapshot
	// IDTaken: the voter's id is another chunkserver's; the driver forgets
	// it and registers again, and nothing the old voter asked for after
	// this batch is carried out.
	IDTaken *IDTaken
	// Stopped: the voter has ended in order, and this batch's Persist
	// carries the clean-stop mark (VoterHardState.CleanStop). The driver
	// makes it durable and exits; it steps the voter no more.
	Stopped bool
	// Witness: calls on the witness's store, made after Persist (a write
	// carries the epoch, which must be durable first); each answer comes
	// back as a WitnessResult.
	Witness []witness.Request
	// Ignored: input that was stale, duplicated or foreign, by a stable,
	// low-cardinality reason (counted, never an error).
	Ignored []string
}

// Empty reports whether the batch asks for nothing at all.
func (b *Batch) Empty() bool {
	return len(b.Persist) == 0 && len(b.AdminReplies) == 0 && len(b.Transitions) == 0 && len(b.Sends) == 0 &&
		b.SaveSnapshot == nil && b.IDTaken == nil && !b.Stopped && len(b.Ignored) == 0 && len(b.Witness) == 0
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

// Effects is what a driver does with a batch once its Persist is durable:
// the daemons' connections and logs, the simulator's network and trace.
// Carry calls the methods in the batch's order.
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
	// Close closes every connection of a class; its goodbyes were sent.
	Close(class ConnClass)
	// Transitioned: the role changed (its disconnects are done).
	Transitioned(t Transition)
	// AdminReplied answers an admin command.
	AdminReplied(r AdminReply)
	// SaveSnapshot writes a snapshot in the background and steps
	// SnapshotSaved once it is durable.
	SaveSnapshot(s *namespace.Snapshot)
	// IDTaken: forget the id and register again (an error ends the
	// process: the id could not be forgotten durably).
	IDTaken(t IDTaken) error
	// Stopped: the voter ended in order (Batch.Stopped).
	Stopped()
	// Ignored counts an input the core ignored.
	Ignored(reason string)
	// Witness makes a call on the witness's store, and steps its answer
	// (a WitnessResult) by the call's deadline whatever happens.
	Witness(r witness.Request)
}

// Carry carries out a group of batches the driver stepped one after
// another: the Sends marked Early (Send.Early), then every Persist of them
// in one Apply (one fsync for the group), then every admin reply, then
// each batch's transitions (goodbyes, then closes, then the transition),
// other sends, snapshot save, id loss, stop and ignored inputs, batch by
// batch in order. A failed Apply returns before anything else is done:
// the driver must not run ahead of its disk. After a
// batch with IDTaken the rest of the group is dropped: it was the old
// voter's.
func Carry(st Persister, fx Effects, group ...Batch) error {
	for i := range group {
		if len(group[i].Persist) > 0 {
			return carry(st, fx, true, group...)
		}
	}
	return carry(st, fx, false, group...) // no Persist: every send in order
}

// CarryRest is Carry for a group whose Early sends already left
// (SendEarly, when its Persist began: the simulator, which draws the
// disk's delay between the two).
func CarryRest(st Persister, fx Effects, group ...Batch) error {
	return carry(st, fx, false, group...)
}

// carry persists the group, then carries out the rest of it; early: send
// the Early sends first; false: they left already, or (no Persist) they
// go in order with the others.
func carry(st Persister, fx Effects, early bool, group ...Batch) error {
	var ps []Persist
	for i := range group {
		ps = append(ps, group[i].Persist...)
	}
	if early {
		for i := range group {
			SendEarly(group[i], fx)
		}
	}
	if len(ps) > 0 {
		if err := st.Apply(ps...); err != nil {
			return err
		}
	}
	fx.Durable()
	for i := range group {
		for _, r := range group[i].AdminReplies {
			fx.AdminReplied(r)
		}
	}
	skip := len(ps) > 0 // the Early sends left before the Persist
	for i := range group {
		if err := deliver(&group[i], fx, skip); err != nil {
			return err
		}
		if group[i].IDTaken != nil {
			return nil
		}
	}
	return nil
}

// SendEarly sends a batch's Early sends, in their order: before its
// Persist is durable (Carry; the simulator when it draws the disk's
// delay). Carry's deliver then skips them.
func SendEarly(b Batch, fx Effects) {
	for _, s := range b.Sends {
		if s.Early {
			fx.Send(s.To, stamp(s.Msg, fx))
		}
	}
}

// deliver carries out one batch after its Persist and admin replies; early
// says its Early sends already left.
func deliver(b *Batch, fx Effects, early bool) error {
	for _, t := range b.Transitions {
		for _, d := range t.Disconnects {
			for _, g := range d.Goodbyes {
				fx.Send(g.To, g.Msg)
			}
			fx.Close(d.Class)
		}
		fx.Transitioned(t)
	}
	for _, s := range b.Sends {
		if !s.Early || !early {
			fx.Send(s.To, stamp(s.Msg, fx))
		}
	}
	if b.SaveSnapshot != nil {
		fx.SaveSnapshot(b.SaveSnapshot)
	}
	if b.IDTaken != nil {
		if err := fx.IDTaken(*b.IDTaken); err != nil {
			return err
		}
	}
	if b.Stopped {
		fx.Stopped()
	}
	for _, r := range b.Ignored {
		fx.Ignored(r)
	}
	for _, r := range b.Witness {
		fx.Witness(r)
	}
	return nil
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

// String lists the batch for traces and test failures.
func (b Batch) String() string {
	return fmt.Sprintf("persist=%d replies=%d transitions=%d sends=%d snapshot=%v idtaken=%v stopped=%v ignored=%v",
		len(b.Persist), len(b.AdminReplies), len(b.Transitions), len(b.Sends), b.SaveSnapshot != nil, b.IDTaken, b.Stopped, b.Ignored)
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
