package voter

import (
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/roles"
)

// Batch is everything one Step (or New) of a voter asks of its driver:
// the common part, and the voter's own kinds, carried out after its sends
// (roles.Carry, through Carry).
type Batch struct {
	roles.Batch
	// IDTaken: the voter's id is another chunkserver's; the driver forgets
	// it and registers again, and nothing the old voter asked for after
	// this batch is carried out.
	IDTaken *roles.IDTaken
	// Stopped: the voter has ended in order, and this batch's Persist
	// carries the clean-stop mark (roles.VoterHardState.CleanStop). The
	// driver makes it durable and exits; it steps the voter no more.
	Stopped bool
}

// Effects is what a chunkserver's driver does with a batch: the common
// effects and the voter's own.
type Effects interface {
	roles.Effects
	// IDTaken: forget the id and register again (an error ends the
	// process: the id could not be forgotten durably).
	IDTaken(t roles.IDTaken) error
	// Stopped: the voter ended in order (Batch.Stopped).
	Stopped()
}

// Carry carries out a group of a voter's batches (roles.Carry).
func Carry(st roles.Persister, fx Effects, group ...Batch) error {
	return roles.Carry[Effects](st, fx, group...)
}

// CarryRest is Carry for a group whose Early sends already left
// (roles.CarryRest; a voter makes none, so it is Carry without the first
// pass).
func CarryRest(st roles.Persister, fx Effects, group ...Batch) error {
	return roles.CarryRest[Effects](st, fx, group...)
}

// Common is the part of b every machine has.
func (b Batch) Common() roles.Batch { return b.Batch }

// Lead: a voter has nothing to do before the batches' own work.
func (b Batch) Lead(Effects) {}

// Before: nor ahead of a batch's sends.
func (b Batch) Before(Effects) {}

// After hands over a lost id, which ends the group, and a clean stop.
func (b Batch) After(fx Effects) (bool, error) {
	if b.IDTaken != nil {
		if err := fx.IDTaken(*b.IDTaken); err != nil {
			return true, err
		}
	}
	if b.Stopped {
		fx.Stopped()
	}
	return b.IDTaken != nil, nil
}

// Empty reports whether the batch asks for nothing at all.
func (b *Batch) Empty() bool {
	return b.Batch.Empty() && b.IDTaken == nil && !b.Stopped
}

// String lists the batch for traces and test failures.
func (b Batch) String() string {
	return fmt.Sprintf("persist=%d sends=%d idtaken=%v stopped=%v ignored=%v",
		len(b.Persist), len(b.Sends), b.IDTaken, b.Stopped, b.Ignored)
}
