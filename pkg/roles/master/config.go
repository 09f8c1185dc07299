package master

import (
	"fmt"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Config is one master's election settings. DefaultConfig gives the values
// shipped in mfsmaster.cfg, Ranges what each tunable field accepts on its
// own, and Validate names every bad value at once.
//
// Why each default is what it is, is said once: in the Usage of the
// mfsmaster.cfg key bound to the field (cmd/mfsmaster/keys.go), from which
// etc/mfsmaster.cfg, --help and docs/operations.md are made. The comments
// here say what a field means to the code.
type Config struct {
	// ID is this master; Masters lists every master of the cluster, itself
	// included (from MASTER_HOST).
	ID      wire.MasterID
	Masters []wire.MasterID
	// Protocol is the newest wire protocol version this master speaks
	// (frame.ProtocolVersion): its status says so, and a LEADER uses what
	// a version brought only once every master says it speaks it.
	Protocol uint16

	// HeartbeatInterval: how often a master that takes votes renews them
	// (HEARTBEAT_INTERVAL).
	HeartbeatInterval time.Duration
	// VoteLease (L): the promise asked of a voter on each heartbeat
	// (VOTE_LEASE). A frozen LEADER is replaced about L after its last
	// heartbeat.
	VoteLease time.Duration
	// HeartbeatVoters: the vote sessions one HeartbeatInterval serves
	// (HEARTBEAT_VOTERS). With more, the interval grows in proportion and
	// the lease asked with it (Scaled); 0: never.
	HeartbeatVoters int
	// MaxClockDrift (rho): the bound on how far any clock's rate may stray
	// from true time (MAX_CLOCK_DRIFT). Safety assumes it; nothing
	// measures it.
	MaxClockDrift float64
	// LeaseMargin is given up at the end of every counted lease
	// (LEASE_MARGIN).
	LeaseMargin time.Duration
	// PeerInterval: status and changelog pushes between masters
	// (PEER_INTERVAL).
	PeerInterval time.Duration
	// PeerTimeout: a peer not heard from for this long is treated as gone
	// (PEER_TIMEOUT; for sync state, redirects and the ack rule, never for
	// safety).
	PeerTimeout time.Duration
	// SelfNominateAfter: a master nominates itself when no chunkserver has
	// nominated anybody for this long (SELF_NOMINATE_AFTER).
	SelfNominateAfter time.Duration
	// DeputyElectionTime: an ELECT that cannot win this long becomes
	// DEPUTY (DEPUTY_ELECTION_TIME). 0 = never.
	DeputyElectionTime time.Duration
	// ElectTimeout: an ELECT that has held no vote at all for this long goes
	// back to FOLLOWER (ELECT_TIMEOUT).
	ElectTimeout time.Duration
	// HandoverTimeout: how long a LEADER holds writes for a USURPER (or for
	// the target of a step-down) to catch up before it resumes writing
	// (HANDOVER_TIMEOUT).
	HandoverTimeout time.Duration
	// AckReplicas: how many other eligible masters must hold a change
	// durably before it is acknowledged (ACK_REPLICAS; fewer when fewer
	// are connected).
	AckReplicas int
	// AckAlone: when neither ACK_REPLICAS followers nor the witness's
	// store hold a change, acknowledge it on this master's disk alone, with
	// the followers heard lately (ACK_ALONE; off by default: the change
	// waits for a follower or the store to return, because a change
	// acknowledged on one disk is lost with that disk, and every later
	// LEADER waits for it).
	AckAlone bool
	// KeepLeadership: this master takes the role back whenever it is a
	// synced FOLLOWER, unless leadership was moved away on purpose
	// (KEEP_LEADERSHIP).
	KeepLeadership bool
	// SnapshotEvery: a master saves a snapshot of its namespace after this
	// many applied changes (SNAPSHOT_CHANGES; 0 = never, and the changelog
	// is never trimmed).
	SnapshotEvery uint64
	// LogRetain: the most entries below its own snapshot a master keeps for
	// masters that have no snapshot past them (CHANGELOG_RETAIN); a master
	// further behind is sent a snapshot instead.
	LogRetain uint64
	// LeaseReads: a LEADER answers a read as soon as everything before it
	// is acknowledged, trusting its vote leases, instead of first seeing a
	// quorum acknowledge a heartbeat sent after the read arrived
	// (LEASE_READS). Safe only while this machine's monotonic clock counts
	// every moment the process is stopped: docs/architecture.md §7, Reads.
	LeaseReads bool
	// MaxPending: the most client operations (changes and reads) a LEADER
	// holds waiting for their acknowledgement; one more is refused with
	// CodeBusy (MAX_PENDING; 0: no bound, for tests).
	MaxPending int
	// Witness is this master's side of the object-store witness (the
	// WITNESS_* keys); it matters only where the registry names one.
	Witness WitnessConfig
	// CheckCaches makes cached counts (pkg/roles/scale.go) check
	// themselves against a full tally, and panic on a difference: every
	// one at 1, every CheckCaches-th at more (a full tally per step is
	// O(voters²) a round); 0: none. For the simulator and tests; not a cfg
	// key.
	CheckCaches int
}

// DefaultConfig returns the shipped defaults. Their reasons are in the Usage
// of the keys bound to them (see Config).
func DefaultConfig(id wire.MasterID, masters []wire.MasterID) Config {
	return Config{
		ID:                 id,
		Masters:            append([]wire.MasterID(nil), masters...),
		Protocol:           WitnessProtocol,
		HeartbeatInterval:  150 * time.Millisecond,
		VoteLease:          500 * time.Millisecond,
		HeartbeatVoters:    750,
		MaxClockDrift:      0.01,
		LeaseMargin:        10 * time.Millisecond,
		PeerInterval:       100 * time.Millisecond,
		PeerTimeout:        500 * time.Millisecond,
		SelfNominateAfter:  5 * time.Second,
		DeputyElectionTime: 0,
		ElectTimeout:       3 * time.Second,
		HandoverTimeout:    3 * time.Second,
		AckReplicas:        1,
		SnapshotEvery:      10000,
		LogRetain:          100000,
		LeaseReads:         false,
		MaxPending:         4096,
		Witness:            DefaultWitnessConfig(),
	}
}

// ConfigRanges holds the Range of each tunable field of Config.
type ConfigRanges struct {
	HeartbeatInterval, VoteLease, LeaseMargin, PeerInterval, PeerTimeout,
	SelfNominateAfter, DeputyElectionTime, ElectTimeout, HandoverTimeout roles.Range[time.Duration]
	MaxClockDrift            roles.Range[float64]
	AckReplicas              roles.Range[int]
	HeartbeatVoters          roles.Range[int]
	MaxPending               roles.Range[int]
	SnapshotEvery, LogRetain roles.Range[uint64]
}

// Ranges returns what each tunable field of a Config accepts on its own
// (the same for every Config). These bounds keep out typos and values no
// deployment needs (an hour-long lease); what safety needs of the values
// together (a lease of at least two heartbeats, a counted lease longer
// than one) is in Validate.
func (Config) Ranges() ConfigRanges {
	return ConfigRanges{
		HeartbeatInterval:  roles.Range[time.Duration]{Min: time.Millisecond, Max: 10 * time.Second},
		VoteLease:          roles.VoteLeaseRange(),
		MaxClockDrift:      roles.Range[float64]{Min: 0, Max: 0.1},
		LeaseMargin:        roles.Range[time.Duration]{Min: 0, Max: time.Second},
		PeerInterval:       roles.Range[time.Duration]{Min: time.Millisecond, Max: 10 * time.Second},
		PeerTimeout:        roles.Range[time.Duration]{Min: 2 * time.Millisecond, Max: time.Minute},
		SelfNominateAfter:  roles.Range[time.Duration]{Min: time.Millisecond, Max: 10 * time.Minute},
		DeputyElectionTime: roles.Range[time.Duration]{Min: 0, Max: time.Hour},
		ElectTimeout:       roles.Range[time.Duration]{Min: time.Millisecond, Max: 10 * time.Minute},
		HandoverTimeout:    roles.Range[time.Duration]{Min: time.Millisecond, Max: 10 * time.Minute},
		AckReplicas:        roles.Range[int]{Min: 0, Max: 8},
		HeartbeatVoters:    roles.Range[int]{Min: 0, Max: 1_000_000},
		MaxPending:         roles.Range[int]{Min: 0, Max: 1_000_000},
		SnapshotEvery:      roles.Range[uint64]{Min: 0, Max: 1_000_000_000},
		LogRetain:          roles.Range[uint64]{Min: 0, Max: 1_000_000_000},
	}
}

// Scaled returns the heartbeat interval and the lease a master asks for
// with n vote sessions open: HeartbeatInterval and VoteLease up to
// HeartbeatVoters sessions; past that the interval grows in proportion
// to n, so that a round of heartbeats and acknowledgements costs the same
// per second whatever the count, and the lease by half as much again as
// the interval gained. The silence a lease bears beyond one interval (a
// stall, a late round) is VoteLease - HeartbeatInterval plus half what
// the interval gained: a round itself takes time in proportion to n (the
// LEADER writes n heartbeats and reads n acknowledgements: 117 ms at
// 10,000 on two cores), and a round of 10,000 acknowledged under an
// election's load took longer than the 400 ms a lease bore at every size
// before (new LEADERs of 10,000 voters fell a second after winning).
// The interval grows by at most twice VoteLease, so the lease to at most
// four times VoteLease (2 s at the defaults, the chunkservers' default
// MAX_PROMISE: a voter grants no more, and an interval that outran its
// grant would lose the vote between rounds; a master that sees a voter
// grant less than asked renews within that grant instead:
// Master.shortGrant). A frozen LEADER is replaced about lease -
// interval/2 after it froze. Safety takes no part: a vote is counted for
// what its voter granted, whatever was asked (docs/architecture.md §3.1).
func (c Config) Scaled(n int) (interval, lease time.Duration) {
	if c.HeartbeatVoters <= 0 || n <= c.HeartbeatVoters {
		return c.HeartbeatInterval, c.VoteLease
	}
	interval = time.Duration(int64(c.HeartbeatInterval) * int64(n) / int64(c.HeartbeatVoters))
	interval = min(interval, c.HeartbeatInterval+2*c.VoteLease)
	gained := interval - c.HeartbeatInterval
	return interval, c.VoteLease + gained + gained/2
}

// CountedLease is how long after sending a heartbeat this master counts the
// vote its acknowledgement carries, for a promise of the given length.
func (c Config) CountedLease(promise time.Duration) time.Duration {
	return roles.CountedLease(promise, c.MaxClockDrift, c.LeaseMargin)
}

// Problem is one rule between fields of a Config that its values break:
// the fields, by name, and what is wrong, so that a caller can name its
// own keys for them (mfsmaster names the mfsmaster.cfg keys and lines).
type Problem struct {
	Fields []string
	Text   string
}

// Problems lists the rules between fields that c breaks: what the lease
// arithmetic needs. Validate reports them too.
func (c Config) Problems() []Problem {
	var out []Problem
	add := func(fields []string, format string, a ...any) {
		out = append(out, Problem{Fields: fields, Text: fmt.Sprintf(format, a...)})
	}
	if c.VoteLease < 2*c.HeartbeatInterval {
		add([]string{"VoteLease", "HeartbeatInterval"}, "vote lease %v must be at least twice the heartbeat interval %v", c.VoteLease, c.HeartbeatInterval)
	}
	if roles.CountedLease(c.VoteLease, c.MaxClockDrift, c.LeaseMargin) <= c.HeartbeatInterval {
		add([]string{"LeaseMargin", "VoteLease", "MaxClockDrift", "HeartbeatInterval"},
			"lease margin %v leaves no counted lease beyond one heartbeat interval", c.LeaseMargin)
	}
	if c.PeerTimeout < 2*c.PeerInterval {
		add([]string{"PeerTimeout", "PeerInterval"}, "peer timeout %v must be at least twice the peer interval %v", c.PeerTimeout, c.PeerInterval)
	}
	if c.ElectTimeout < c.VoteLease {
		add([]string{"ElectTimeout", "VoteLease"}, "elect timeout %v must be at least the vote lease %v", c.ElectTimeout, c.VoteLease)
	}
	return out
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
	r := c.Ranges()
	roles.InRange(add, "heartbeat interval", c.HeartbeatInterval, r.HeartbeatInterval)
	roles.InRange(add, "vote lease", c.VoteLease, r.VoteLease)
	roles.InRange(add, "max clock drift", c.MaxClockDrift, r.MaxClockDrift)
	roles.InRange(add, "lease margin", c.LeaseMargin, r.LeaseMargin)
	roles.InRange(add, "peer interval", c.PeerInterval, r.PeerInterval)
	roles.InRange(add, "peer timeout", c.PeerTimeout, r.PeerTimeout)
	roles.InRange(add, "self-nomination delay", c.SelfNominateAfter, r.SelfNominateAfter)
	roles.InRange(add, "deputy election time", c.DeputyElectionTime, r.DeputyElectionTime)
	roles.InRange(add, "elect timeout", c.ElectTimeout, r.ElectTimeout)
	roles.InRange(add, "handover timeout", c.HandoverTimeout, r.HandoverTimeout)
	roles.InRange(add, "ack replicas", c.AckReplicas, r.AckReplicas)
	roles.InRange(add, "heartbeat voters", c.HeartbeatVoters, r.HeartbeatVoters)
	roles.InRange(add, "max pending", c.MaxPending, r.MaxPending)
	roles.InRange(add, "snapshot interval", c.SnapshotEvery, r.SnapshotEvery)
	roles.InRange(add, "changelog retention", c.LogRetain, r.LogRetain)
	for _, p := range c.Problems() {
		add("%s", p.Text)
	}
	if c.Witness.Store {
		if err := c.witnessLease().Validate(); err != nil {
			add("%v", err)
		}
		if c.Witness.Delay < 0 || c.Witness.Delay > time.Minute {
			add("witness delay %v outside [0, 1m]", c.Witness.Delay)
		}
		if c.Witness.Cluster == "" {
			add("witness: the cluster (metadata) id is not set")
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("invalid master config: %s", strings.Join(bad, "; "))
	}
	return nil
}
