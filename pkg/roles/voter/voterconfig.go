package voter

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Config is one chunkserver's election settings. As with master.Config, the
// reason for each default is in the Usage of the mfschunkserver.cfg key
// bound to the field (cmd/mfschunkserver/keys.go).
type Config struct {
	ID        wire.CSID
	Addr      netip.Addr // the address it connects from: decides its location
	Port      uint16     // its CSSERV port: with Addr, its identity (as in MooseFS)
	VoterOnly bool       // no disks configured
	Masters   []wire.MasterID
	// MaxPromise caps the promise a master may ask for (MAX_PROMISE). A
	// restarted voter waits this long before voting, since it cannot
	// remember promises.
	MaxPromise time.Duration
	// ProbeInterval: how often a voter without a LEADER asks every master
	// for its role (PROBE_INTERVAL).
	ProbeInterval time.Duration
	// ProbeVoters: in a registry of more chunkservers than this, a voter
	// probes that many times less often (PROBE_VOTERS; 0: never).
	ProbeVoters int
	// NominateSlot: the gap between two consecutive nomination turns
	// (NOMINATE_SLOT).
	NominateSlot time.Duration
	// Seed for the small jitter source kept in the state (logged by the
	// driver, drawn by the simulator).
	Seed uint64
	// RecordLost: the durable record may not show every promise this id
	// made (the driver got back an id that was already a member into a
	// record that is new: a wiped data directory). The voter then keeps
	// quiet as after a crash, even though the record says it never voted.
	RecordLost bool
	// RecordDamaged: the record was read from the older of its two copies,
	// the newer one being unreadable (a torn write, rot, a bad sector): it
	// may be one record behind what the voter acted on. Like RecordLost,
	// the voter keeps quiet as after a crash and starts uncertain
	// (VoterHardState.Uncertain).
	RecordDamaged bool
}

// DefaultVoterConfig returns the shipped chunkserver defaults.
func DefaultConfig(id wire.CSID, addr netip.Addr, masters []wire.MasterID) Config {
	return Config{
		ID:            id,
		Addr:          addr,
		Masters:       append([]wire.MasterID(nil), masters...),
		MaxPromise:    2 * time.Second,
		ProbeInterval: 50 * time.Millisecond,
		ProbeVoters:   50,
		NominateSlot:  60 * time.Millisecond,
	}
}

// VoterConfigRanges holds the Range of each tunable field of Config.
type ConfigRanges struct {
	MaxPromise, ProbeInterval, NominateSlot roles.Range[time.Duration]
	ProbeVoters                             roles.Range[int]
}

// Ranges returns what each tunable field of a Config accepts on its
// own (the same for every Config).
func (Config) Ranges() ConfigRanges {
	return ConfigRanges{
		// VOTE_LEASE's range: the promise must cover every master's lease
		// (a master asking more gets less and counts only what it got), so
		// a MaxPromise below the shortest lease a master may ask could
		// never be right, and one above the longest is never asked for.
		MaxPromise:    roles.VoteLeaseRange(),
		ProbeInterval: roles.Range[time.Duration]{Min: time.Millisecond, Max: 10 * time.Second},
		NominateSlot:  roles.Range[time.Duration]{Min: time.Millisecond, Max: 10 * time.Second},
		ProbeVoters:   roles.Range[int]{Min: 0, Max: 1_000_000},
	}
}

// Validate reports every bad value at once; it never changes c.
func (c Config) Validate() error {
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
	r := c.Ranges()
	roles.InRange(add, "max promise", c.MaxPromise, r.MaxPromise)
	roles.InRange(add, "probe interval", c.ProbeInterval, r.ProbeInterval)
	roles.InRange(add, "nomination slot", c.NominateSlot, r.NominateSlot)
	roles.InRange(add, "probe voters", c.ProbeVoters, r.ProbeVoters)
	if len(bad) > 0 {
		return fmt.Errorf("invalid chunkserver config: %s", strings.Join(bad, "; "))
	}
	return nil
}
