package roles

import (
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Stored is what a master finds on its disk at start: its newest durable
// snapshot (nil if none), the base its log was trimmed to, and the entries
// after that base.
type Stored struct {
	Hard     HardState
	Snapshot *namespace.Snapshot
	Base     changelog.LogBase
	Entries  []changelog.Entry
}

// HardState is a master's small durable record.
type HardState struct {
	Incarnation uint64        // rises on every start
	Epoch       uint64        // the epoch this master last took for itself
	MaxEpoch    uint64        // the highest epoch it has seen (new epochs go above it)
	LeaderEpoch uint64        // the highest epoch of a LEADER it followed or was: older appends are refused
	Commit      changelog.Pos // the newest position it knows to be committed
	InForce     uint64        // the newest config version it knows to be in force
	Yielded     bool          // leadership was moved away from it on purpose
	// ForcedOut: chunkservers an operator removed offline (mfsmaster
	// repair) because they will never vote again; every tally leaves them
	// out until a LEADER's removal of them is in force.
	ForcedOut []wire.CSID `msgpack:",omitempty"`
	// AcceptLoss: an operator accepted the loss of changes no master and
	// no store holds (mfsmaster repair --accept-loss): reports of commit
	// points told by LEADERs of this epoch or older count as satisfied
	// for the catch-up rule, once. Cleared when this master wins.
	AcceptLoss uint64 `msgpack:",omitempty"`
}

// VoterHardState is a chunkserver's small durable record: what quorum
// intersection relies on it remembering across restarts.
type VoterHardState struct {
	Boot       uint64 // rises on every start; vote sessions are numbered within it
	MaxEpoch   uint64
	EpochOwner wire.MasterID
	KnownReg   uint64
	InForce    uint64
	Commit     changelog.Pos // the newest "committed up to" a LEADER told it
	CommitTag  uint64        // that LEADER's epoch: a newer LEADER's word supersedes
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
	// as that run's last record, and voter.New clears it in its first
	// Persist, which is durable before any grant of the new run: so a
	// crash can never leave it set while a promise stands.
	CleanStop bool `msgpack:",omitempty"`
	// Uncertain: this record may lack something the voter acknowledged
	// before (it was read from the older of its two copies because the
	// newer one was damaged, or it was lost and the id came back from a
	// registration). Until a LEADER's heartbeat restores its epoch and
	// commit knowledge (Voter.onHeartbeat), the voter grants nothing, so
	// no quorum, lease or catch-up rests on what it may have forgotten
	// (docs/architecture.md §7, "Voters that forgot"). Only that heartbeat
	// or the operator (TrustRecord) clears it.
	Uncertain bool `msgpack:",omitempty"`
}

// NeverPromised reports that the record shows no promise ever made. The
// first grant raises MaxGranted above 0 and names EpochOwner, and is
// persisted before its acknowledgement leaves (Voter.onHeartbeat).
func (h VoterHardState) NeverPromised() bool {
	return h.MaxGranted == 0 && h.EpochOwner == wire.NoMaster
}
