package roles

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Config is one master's election settings. DefaultConfig gives the values
// shipped in mfsmaster.cfg; Validate names every bad value at once.
type Config struct {
	// ID is this master; Masters lists every master of the cluster, itself
	// included (from MASTER_HOST).
	ID      wire.MasterID
	Masters []wire.MasterID

	// HeartbeatInterval: how often a master that takes votes renews them.
	HeartbeatInterval time.Duration
	// VoteLease (L): the promise a voter makes on each heartbeat. A frozen
	// LEADER is replaced about L after its last heartbeat.
	VoteLease time.Duration
	// MaxClockDrift (rho): the bound on how far any clock's rate may stray
	// from true time. Safety assumes it; nothing measures it.
	MaxClockDrift float64
	// LeaseMargin is given up at the end of every counted lease, to cover
	// scheduling between reading the clock and acting on it.
	LeaseMargin time.Duration
	// PeerInterval: status and changelog pushes between masters.
	PeerInterval time.Duration
	// PeerTimeout: a peer not heard from for this long is treated as gone
	// (for sync state, redirects and the ack rule, never for safety).
	PeerTimeout time.Duration
	// SelfNominateAfter: a master nominates itself when no chunkserver has
	// nominated anybody for this long (docs/roles.md §3.2).
	SelfNominateAfter time.Duration
	// DeputyElectionTime: an ELECT that cannot win this long becomes
	// DEPUTY. 0 = never (MooseFS's default).
	DeputyElectionTime time.Duration
	// ElectTimeout: an ELECT that has held no vote at all for this long goes
	// back to FOLLOWER, so that the next nomination turn can pick another.
	ElectTimeout time.Duration
	// HandoverTimeout: how long a LEADER holds writes for a USURPER (or for
	// the target of a step-down) to catch up before it resumes writing.
	HandoverTimeout time.Duration
	// AckReplicas: how many other eligible masters must hold a change
	// durably before it is acknowledged (fewer when fewer are connected).
	AckReplicas int
	// KeepLeadership: this master takes the role back whenever it is a
	// synced FOLLOWER, unless leadership was moved away on purpose.
	KeepLeadership bool
	// SnapshotEvery: a master saves a snapshot of its namespace after this
	// many applied changes (0 = never, and the changelog is never trimmed).
	SnapshotEvery uint64
	// LogRetain: the most entries below its own snapshot a master keeps for
	// masters that have no snapshot past them (one that is down or far
	// behind); such a master is sent a snapshot instead.
	LogRetain uint64
	// LeaseReads: a LEADER answers a read as soon as everything before it
	// is acknowledged, trusting its vote leases, instead of first seeing a
	// quorum acknowledge a heartbeat sent after the read arrived. Faster by
	// about a round trip, and safe only while this machine's monotonic
	// clock counts every moment the process is stopped (not across a VM
	// pause or suspend): docs/architecture.md §7, Reads.
	LeaseReads bool
}

// DefaultConfig returns the shipped defaults, each with its reason.
func DefaultConfig(id wire.MasterID, masters []wire.MasterID) Config {
	return Config{
		ID:      id,
		Masters: append([]wire.MasterID(nil), masters...),
		// Eight renewals per lease: one lost heartbeat or a 200 ms stall
		// leaves most of the lease in hand.
		HeartbeatInterval: 100 * time.Millisecond,
		// Frozen-leader failover is about one lease; 800 ms keeps it under
		// 1.2 s while tolerating 600+ ms of silence.
		VoteLease: 800 * time.Millisecond,
		// 1%: ten times what a bad crystal oscillator drifts.
		MaxClockDrift: 0.01,
		// Covers the gap between a clock reading and the action on it.
		LeaseMargin: 10 * time.Millisecond,
		// Followers learn of new changes within one interval.
		PeerInterval: 100 * time.Millisecond,
		// Five missed pushes.
		PeerTimeout: 500 * time.Millisecond,
		// The fallback for an instance with no chunkserver to nominate
		// (bootstrap). Where voters exist they choose (docs/roles.md §6.3),
		// and 5 s leaves them room after a whole cluster restarts: voters
		// that crashed keep quiet for MAX_PROMISE (2 s), and the turns of a
		// few dozen take about 2 s more at 60 ms a slot. The wait shows only
		// at a new cluster's first election.
		SelfNominateAfter: 5 * time.Second,
		// MooseFS's default: never.
		DeputyElectionTime: 0,
		// Longer than a lease plus a full nomination rotation, so a live
		// ELECT is never abandoned while voters are still arriving.
		ElectTimeout: 3 * time.Second,
		// A synced USURPER needs one push to catch up; 3 s bounds the write
		// pause if it never does.
		HandoverTimeout: 3 * time.Second,
		// One other copy survives the loss of the LEADER's disk.
		AckReplicas: 1,
		// A snapshot costs a copy of the namespace; every 10000 changes
		// keeps that a small share of the work and a restart replays at
		// most that many entries.
		SnapshotEvery: 10000,
		// A follower restarted after a few minutes of heavy writing still
		// catches up from entries.
		LogRetain: 100000,
		// Reads confirmed by a heartbeat round: linearizable even after a
		// VM pause the clock did not see.
		LeaseReads: false,
	}
}

// CountedLease is how long after sending a heartbeat this master counts the
// vote its acknowledgement carries, for a promise of the given length.
func (c Config) CountedLease(promise time.Duration) time.Duration {
	return CountedLease(promise, c.MaxClockDrift, c.LeaseMargin)
}

// Validate reports every bad value at once; it never changes c.
func (c Config) Validate() error {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	if c.ID == wire.NoMaster {
		add("master id must not be 0")
	}
	found := false
	seen := map[wire.MasterID]bool{}
	for _, m := range c.Masters {
		if m == wire.NoMaster {
			add("master list contains id 0")
		}
		if seen[m] {
			add("master list names %v twice", m)
		}
		seen[m] = true
		if m == c.ID {
			found = true
		}
	}
	if !found {
		add("master list %v does not contain this master %v", c.Masters, c.ID)
	}
	if c.HeartbeatInterval < time.Millisecond || c.HeartbeatInterval > 10*time.Second {
		add("heartbeat interval %v outside [1ms, 10s]", c.HeartbeatInterval)
	}
	if c.VoteLease < 2*c.HeartbeatInterval {
		add("vote lease %v must be at least twice the heartbeat interval %v", c.VoteLease, c.HeartbeatInterval)
	}
	if c.VoteLease > time.Minute {
		add("vote lease %v above 1m", c.VoteLease)
	}
	if c.MaxClockDrift < 0 || c.MaxClockDrift > 0.1 {
		add("max clock drift %v outside [0, 0.1]", c.MaxClockDrift)
	}
	if c.LeaseMargin < 0 || CountedLease(c.VoteLease, c.MaxClockDrift, c.LeaseMargin) <= c.HeartbeatInterval {
		add("lease margin %v leaves no counted lease beyond one heartbeat interval", c.LeaseMargin)
	}
	if c.PeerInterval <= 0 || c.PeerTimeout < 2*c.PeerInterval {
		add("peer interval %v / timeout %v: need interval > 0 and timeout >= 2 intervals", c.PeerInterval, c.PeerTimeout)
	}
	if c.SelfNominateAfter <= 0 {
		add("self-nomination delay %v must be positive", c.SelfNominateAfter)
	}
	if c.DeputyElectionTime < 0 {
		add("deputy election time %v must not be negative (0 = never)", c.DeputyElectionTime)
	}
	if c.ElectTimeout < c.VoteLease {
		add("elect timeout %v must be at least the vote lease %v", c.ElectTimeout, c.VoteLease)
	}
	if c.HandoverTimeout <= 0 {
		add("handover timeout %v must be positive", c.HandoverTimeout)
	}
	if c.AckReplicas < 0 || c.AckReplicas > 8 {
		add("ack replicas %d outside [0, 8]", c.AckReplicas)
	}
	if len(bad) > 0 {
		return fmt.Errorf("invalid master config: %s", strings.Join(bad, "; "))
	}
	return nil
}

// VoterConfig is one chunkserver's election settings.
type VoterConfig struct {
	ID        wire.CSID
	Addr      netip.Addr // the address it connects from: decides its location
	Port      uint16     // its CSSERV port: with Addr, its identity (as in MooseFS)
	VoterOnly bool       // no disks configured
	Masters   []wire.MasterID
	// MaxPromise caps the promise a master may ask for. A restarted voter
	// waits this long before voting, since it cannot remember promises.
	MaxPromise time.Duration
	// ProbeInterval: how often a voter without a LEADER asks every master
	// for its role.
	ProbeInterval time.Duration
	// NominateSlot: the gap between two consecutive nomination turns.
	NominateSlot time.Duration
	// Seed for the small jitter source kept in the state (logged by the
	// driver, drawn by the simulator).
	Seed uint64
	// RecordLost: the durable record may not show every promise this id
	// made (the driver got back an id that was already a member into a
	// record that is new: a wiped data directory). The voter then keeps
	// quiet as after a crash, even though the record says it never voted.
	RecordLost bool
}

// DefaultVoterConfig returns the shipped chunkserver defaults.
func DefaultVoterConfig(id wire.CSID, addr netip.Addr, masters []wire.MasterID) VoterConfig {
	return VoterConfig{
		ID:      id,
		Addr:    addr,
		Masters: append([]wire.MasterID(nil), masters...),
		// Must be >= every master's VoteLease; a master asking more gets
		// this much and counts only what it got.
		MaxPromise: 2 * time.Second,
		// Several probes per nomination slot chain keep the view fresh.
		ProbeInterval: 50 * time.Millisecond,
		// Longer than a probe round trip on a LAN, so the next in turn sees
		// the ELECT its predecessor made before its own turn comes.
		NominateSlot: 60 * time.Millisecond,
	}
}

// Validate reports every bad value at once.
func (c VoterConfig) Validate() error {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	if len(c.Masters) == 0 {
		add("no masters configured")
	}
	if c.ID == 0 {
		add("chunkserver id must not be 0")
	}
	if !c.Addr.IsValid() {
		add("chunkserver address is not set")
	}
	if c.MaxPromise <= 0 || c.MaxPromise > time.Minute {
		add("max promise %v outside (0, 1m]", c.MaxPromise)
	}
	if c.ProbeInterval <= 0 || c.ProbeInterval > 10*time.Second {
		add("probe interval %v outside (0, 10s]", c.ProbeInterval)
	}
	if c.NominateSlot <= 0 || c.NominateSlot > 10*time.Second {
		add("nomination slot %v outside (0, 10s]", c.NominateSlot)
	}
	if len(bad) > 0 {
		return fmt.Errorf("invalid chunkserver config: %s", strings.Join(bad, "; "))
	}
	return nil
}
