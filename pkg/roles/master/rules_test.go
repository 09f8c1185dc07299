package master

import (
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"pgregory.net/rapid"
)

// TestLeaseOrdering is the lease arithmetic of docs/architecture.md §3 as a
// property: whatever the clock rates within the bound and whatever the
// delay of the heartbeat, the master stops counting a vote strictly before
// the voter's promise ends, in true time.
func TestLeaseOrdering(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		promise := time.Duration(rapid.Int64Range(int64(10*time.Millisecond), int64(time.Minute)).Draw(t, "promise"))
		rho := rapid.Float64Range(0, 0.1).Draw(t, "rho")
		margin := time.Duration(rapid.Int64Range(int64(time.Microsecond), int64(50*time.Millisecond)).Draw(t, "margin"))
		master := rapid.Float64Range(1-rho, 1+rho).Draw(t, "master_rate")
		voter := rapid.Float64Range(1-rho, 1+rho).Draw(t, "voter_rate")
		delay := time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "delay"))
		d := roles.CountedLease(promise, rho, margin)
		// True durations: a clock running at rate r needs x/r true seconds
		// to advance by x.
		masterEnd := float64(d) / master
		voterEnd := float64(delay) + float64(promise)/voter
		if masterEnd >= voterEnd {
			t.Fatalf("master counts until %.0fns, voter promised until %.0fns (counted lease %v)", masterEnd, voterEnd, d)
		}
	})
}

func TestCountedLeaseTable(t *testing.T) {
	for _, c := range []struct {
		name            string
		promise, margin time.Duration
		rho             float64
		want            time.Duration
	}{
		{name: "no drift", promise: time.Second, margin: 10 * time.Millisecond, rho: 0, want: 990 * time.Millisecond},
		{name: "1% drift", promise: 800 * time.Millisecond, margin: 10 * time.Millisecond, rho: 0.01, want: 774158415},
		{name: "margin larger than lease", promise: time.Millisecond, margin: time.Second, rho: 0.01, want: 0},
	} {
		if got := roles.CountedLease(c.promise, c.rho, c.margin); got != c.want {
			t.Errorf("%s: CountedLease(%v, %v, %v) = %v, want %v", c.name, c.promise, c.rho, c.margin, got, c.want)
		}
	}
}

func TestNominationRules(t *testing.T) {
	a := roles.Candidate{ID: 1, Eligible: true, Last: changelog.Pos{Version: 10, Epoch: 2}}
	b := roles.Candidate{ID: 2, Eligible: true, Last: changelog.Pos{Version: 12, Epoch: 1}}
	if !roles.Better(a, b) {
		t.Error("a newer epoch must beat a longer log of an older epoch")
	}
	u := b
	u.Usurper = true
	if !roles.Better(u, a) {
		t.Error("a USURPER must be preferred")
	}
	k := b
	k.Keep = true
	if !roles.Better(k, a) || roles.Better(k, u) {
		t.Error("KEEP_LEADERSHIP comes after USURPER and before metadata")
	}
	y := a
	y.Yielded = true
	if roles.Better(y, b) {
		t.Error("a master that yielded on purpose comes after one that did not")
	}
	same := a
	same.ID = 3
	if !roles.Better(a, same) || roles.Better(same, a) {
		t.Error("ties break on the lower id, the same way for every voter")
	}
	if roles.MayNominate(roles.Candidate{Eligible: false, Last: changelog.Pos{Version: 99, Epoch: 9}}, changelog.Pos{}) {
		t.Error("a master without metadata may never be nominated")
	}
	if roles.MayNominate(roles.Candidate{Eligible: true, Last: changelog.Pos{Version: 5, Epoch: 1}}, changelog.Pos{Version: 6, Epoch: 1}) {
		t.Error("a master behind the known commit point may not be nominated")
	}
	if roles.MayNominate(roles.Candidate{Eligible: true, Last: changelog.Pos{Version: 9, Epoch: 1}}, changelog.Pos{Version: 6, Epoch: 2}) {
		t.Error("a master whose last epoch is older than the commit point's may not be nominated")
	}
	if !roles.MayNominate(roles.Candidate{Eligible: true, Last: changelog.Pos{Version: 6, Epoch: 2}}, changelog.Pos{Version: 6, Epoch: 2}) {
		t.Error("a master holding exactly the commit point may be nominated")
	}
}

func TestMustDisconnect(t *testing.T) {
	for from := roles.Dummy; from <= roles.Deputy; from++ {
		for to := roles.Dummy; to <= roles.Deputy; to++ {
			want := from != to && (from == roles.Leader || from == roles.Deputy || (from == roles.Elect && (to == roles.Follower || to == roles.Dummy)))
			if got := roles.MustDisconnect(from, to); got != want {
				t.Errorf("MustDisconnect(%v, %v) = %v, want %v", from, to, got, want)
			}
		}
	}
	for _, r := range roles.Transitions {
		if r.Disconnect != roles.MustDisconnect(r.From, r.To) {
			t.Errorf("table row %s %v -> %v disagrees with the disconnect rule", r.Section, r.From, r.To)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig(1, []wire.MasterID{1, 2, 3})
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := good
	bad.ID = 4
	bad.VoteLease = 50 * time.Millisecond
	bad.MaxClockDrift = 0.5
	bad.AckReplicas = -1
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"does not contain this master M4", "vote lease 50ms", "max clock drift 0.5", "ack replicas -1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if bad.ID != 4 || bad.VoteLease != 50*time.Millisecond {
		t.Error("Validate changed its receiver")
	}
	v := voter.DefaultConfig(1, netip.MustParseAddr("10.0.0.1"), []wire.MasterID{1})
	if err := v.Validate(); err != nil {
		t.Fatalf("voter defaults invalid: %v", err)
	}
	v.ID, v.Masters = 0, nil
	if err := v.Validate(); err == nil || !strings.Contains(err.Error(), "id must not be 0") || !strings.Contains(err.Error(), "no masters") {
		t.Errorf("voter config errors not named: %v", err)
	}
}

// TestConfigRanges: Validate refuses a value just outside each field's
// Range, naming the field and the range, and takes the ends of the ranges
// that the rules between fields leave free. The cfg keys read the same
// Ranges (cmd/*/keys_test.go checks that side).
func TestConfigRanges(t *testing.T) {
	r := Config{}.Ranges()
	for _, c := range []struct {
		name string
		set  func(*Config)
	}{
		{"heartbeat interval", func(c *Config) { c.HeartbeatInterval = r.HeartbeatInterval.Min - 1 }},
		{"vote lease", func(c *Config) { c.VoteLease, c.ElectTimeout = r.VoteLease.Max+1, r.VoteLease.Max+1 }},
		{"vote lease", func(c *Config) {
			c.HeartbeatInterval, c.LeaseMargin, c.VoteLease = time.Millisecond, 0, r.VoteLease.Min-1
		}},
		{"max clock drift", func(c *Config) { c.MaxClockDrift = r.MaxClockDrift.Max + 0.001 }},
		{"max clock drift", func(c *Config) { c.MaxClockDrift = math.NaN() }},
		{"lease margin", func(c *Config) { c.LeaseMargin = r.LeaseMargin.Min - 1 }},
		{"peer interval", func(c *Config) { c.PeerInterval = r.PeerInterval.Min - 1 }},
		{"peer timeout", func(c *Config) { c.PeerTimeout = r.PeerTimeout.Max + 1 }},
		{"self-nomination delay", func(c *Config) { c.SelfNominateAfter = r.SelfNominateAfter.Max + 1 }},
		{"deputy election time", func(c *Config) { c.DeputyElectionTime = r.DeputyElectionTime.Min - 1 }},
		{"elect timeout", func(c *Config) { c.ElectTimeout = r.ElectTimeout.Max + 1 }},
		{"handover timeout", func(c *Config) { c.HandoverTimeout = r.HandoverTimeout.Min - 1 }},
		{"ack replicas", func(c *Config) { c.AckReplicas = r.AckReplicas.Max + 1 }},
		{"snapshot interval", func(c *Config) { c.SnapshotEvery = r.SnapshotEvery.Max + 1 }},
		{"changelog retention", func(c *Config) { c.LogRetain = r.LogRetain.Max + 1 }},
	} {
		cfg := DefaultConfig(1, []wire.MasterID{1})
		c.set(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.name+" ") || !strings.Contains(err.Error(), " outside [") {
			t.Errorf("%s out of range: %v", c.name, err)
		}
	}
	edges := DefaultConfig(1, []wire.MasterID{1})
	edges.MaxClockDrift, edges.LeaseMargin = r.MaxClockDrift.Max, r.LeaseMargin.Min
	edges.PeerInterval, edges.PeerTimeout = r.PeerInterval.Max, r.PeerTimeout.Max
	edges.DeputyElectionTime, edges.ElectTimeout, edges.HandoverTimeout = r.DeputyElectionTime.Max, r.ElectTimeout.Max, r.HandoverTimeout.Min
	edges.AckReplicas, edges.SnapshotEvery, edges.LogRetain = r.AckReplicas.Max, r.SnapshotEvery.Max, r.LogRetain.Min
	if err := edges.Validate(); err != nil {
		t.Errorf("ends of the ranges refused: %v", err)
	}

	// MAX_PROMISE takes VOTE_LEASE's range: 10 ms (once accepted by the
	// cfg key) is below every lease a master may ask for.
	v := voter.DefaultConfig(1, netip.MustParseAddr("10.0.0.1"), []wire.MasterID{1})
	for _, p := range []time.Duration{10 * time.Millisecond, r.VoteLease.Min - 1, r.VoteLease.Max + 1} {
		v.MaxPromise = p
		if err := v.Validate(); err == nil || !strings.Contains(err.Error(), "max promise "+p.String()) {
			t.Errorf("max promise %v: %v", p, err)
		}
	}
	for _, p := range []time.Duration{r.VoteLease.Min, r.VoteLease.Max} {
		v.MaxPromise = p
		if err := v.Validate(); err != nil {
			t.Errorf("max promise %v: %v", p, err)
		}
	}
}
