package master

import (
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// Batch is everything one Step (or New) of a master asks of its driver:
// the common part, and the master's own kinds, each carried out at its
// place (roles.Carry, through Carry).
type Batch struct {
	roles.Batch
	// AdminReplies go out once the group's Persist is durable, before
	// anything else: a step-down's disconnect rule closes the admin's
	// connection with the clients', and the reply says what the command
	// did.
	AdminReplies []roles.AdminReply
	// Transitions, in the order the roles changed, before the batch's
	// sends; each carries the disconnects its rule requires before it.
	Transitions []roles.Transition
	// SaveSnapshot: a snapshot of this master's own making to write in the
	// background (at most one a batch), after the sends.
	SaveSnapshot *namespace.Snapshot
	// Witness: calls on the witness's store, made after Persist (a write
	// carries the epoch, which must be durable first); each answer comes
	// back as a roles.WitnessResult.
	Witness []witness.Request
}

// Effects is what a master's driver does with a batch: the common effects
// and the master's own.
type Effects interface {
	roles.Effects
	// Close closes every connection of a class; its goodbyes were sent.
	Close(class roles.ConnClass)
	// Transitioned: the role changed (its disconnects are done).
	Transitioned(t roles.Transition)
	// AdminReplied answers an admin command.
	AdminReplied(r roles.AdminReply)
	// SaveSnapshot writes a snapshot in the background and steps
	// roles.SnapshotSaved once it is durable.
	SaveSnapshot(s *namespace.Snapshot)
	// Witness makes a call on the witness's store, and steps its answer
	// (a roles.WitnessResult) by the call's deadline whatever happens.
	Witness(r witness.Request)
}

// Carry carries out a group of a master's batches (roles.Carry).
func Carry(st roles.Persister, fx Effects, group ...Batch) error {
	return roles.Carry[Effects](st, fx, group...)
}

// CarryRest is Carry for a group whose Early sends already left
// (roles.CarryRest).
func CarryRest(st roles.Persister, fx Effects, group ...Batch) error {
	return roles.CarryRest[Effects](st, fx, group...)
}

// Common is the part of b every machine has.
func (b Batch) Common() roles.Batch { return b.Batch }

// Lead sends the admin replies.
func (b Batch) Lead(fx Effects) {
	for _, r := range b.AdminReplies {
		fx.AdminReplied(r)
	}
}

// Before carries out the transitions: each class's goodbyes, then its
// close, then the transition itself.
func (b Batch) Before(fx Effects) {
	for _, t := range b.Transitions {
		for _, d := range t.Disconnects {
			for _, g := range d.Goodbyes {
				fx.Send(g.To, g.Msg)
			}
			fx.Close(d.Class)
		}
		fx.Transitioned(t)
	}
}

// After starts the snapshot write and the witness calls.
func (b Batch) After(fx Effects) (bool, error) {
	if b.SaveSnapshot != nil {
		fx.SaveSnapshot(b.SaveSnapshot)
	}
	for _, r := range b.Witness {
		fx.Witness(r)
	}
	return false, nil
}

// Empty reports whether the batch asks for nothing at all.
func (b *Batch) Empty() bool {
	return b.Batch.Empty() && len(b.AdminReplies) == 0 && len(b.Transitions) == 0 && b.SaveSnapshot == nil && len(b.Witness) == 0
}

// String lists the batch for traces and test failures.
func (b Batch) String() string {
	return fmt.Sprintf("persist=%d replies=%d transitions=%d sends=%d snapshot=%v witness=%d ignored=%v",
		len(b.Persist), len(b.AdminReplies), len(b.Transitions), len(b.Sends), b.SaveSnapshot != nil, len(b.Witness), b.Ignored)
}
