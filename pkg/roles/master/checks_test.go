package master

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Better is the one ranking every voter and every rival ELECT applies
// (docs/roles.md §6.3): each rule is seen deciding on its own.
func TestBetterRanksEachRule(t *testing.T) {
	base := roles.Candidate{ID: 2, Eligible: true, Last: changelog.Pos{Version: 5, Epoch: 1}}
	with := func(f func(*roles.Candidate)) roles.Candidate { c := base; f(&c); return c }
	for _, c := range []struct {
		name string
		a, b roles.Candidate
	}{
		{"metadata first", with(func(c *roles.Candidate) { c.ID = 3; c.Last = changelog.Pos{} }), with(func(c *roles.Candidate) { c.Eligible = false; c.Last = changelog.Pos{Version: 9, Epoch: 9} })},
		{"a USURPER before any other", with(func(c *roles.Candidate) { c.ID = 3; c.Usurper = true }), with(func(c *roles.Candidate) { c.Keep = true; c.Last = changelog.Pos{Version: 9, Epoch: 2} })},
		{"KEEP before newer metadata", with(func(c *roles.Candidate) { c.ID = 3; c.Keep = true }), with(func(c *roles.Candidate) { c.Last = changelog.Pos{Version: 9, Epoch: 2} })},
		{"among KEEP masters the lower id, whatever the metadata", with(func(c *roles.Candidate) { c.Keep = true }), with(func(c *roles.Candidate) { c.ID = 3; c.Keep = true; c.Last = changelog.Pos{Version: 9, Epoch: 2} })},
		{"one that did not yield before one that did", with(func(c *roles.Candidate) { c.ID = 3 }), with(func(c *roles.Candidate) { c.Yielded = true; c.Last = changelog.Pos{Version: 9, Epoch: 2} })},
		{"newer metadata", with(func(c *roles.Candidate) { c.ID = 3; c.Last = changelog.Pos{Version: 6, Epoch: 1} }), base},
		{"then the lower id", base, with(func(c *roles.Candidate) { c.ID = 3 })},
	} {
		if !roles.Better(c.a, c.b) || roles.Better(c.b, c.a) {
			t.Errorf("%s: Better(a, b)=%v Better(b, a)=%v, want true, false", c.name, roles.Better(c.a, c.b), roles.Better(c.b, c.a))
		}
	}
}

// MayNominate: eligible, and a log at least as new as the commit point the
// voter knows, by version and by epoch.
func TestMayNominate(t *testing.T) {
	commit := changelog.Pos{Version: 5, Epoch: 2}
	for _, c := range []struct {
		last changelog.Pos
		elig bool
		want bool
	}{
		{changelog.Pos{Version: 5, Epoch: 2}, true, true},
		{changelog.Pos{Version: 7, Epoch: 2}, true, true},
		{changelog.Pos{Version: 4, Epoch: 2}, true, false}, // behind by version
		{changelog.Pos{Version: 4, Epoch: 3}, true, false}, // behind by version, newer epoch
		{changelog.Pos{Version: 6, Epoch: 1}, true, false}, // longer, but of an older epoch
		{changelog.Pos{Version: 9, Epoch: 3}, false, false},
	} {
		if got := roles.MayNominate(roles.Candidate{Eligible: c.elig, Last: c.last}, commit); got != c.want {
			t.Errorf("last %v eligible %v, commit %v: %v, want %v", c.last, c.elig, commit, got, c.want)
		}
	}
}

// What a peer sends is checked before it counts: entries (checkEntries),
// snapshot chunks (checkChunk) and epochs (plausibleEpoch), each reason on
// its own.
func TestPeerInputChecks(t *testing.T) {
	noop := func(v, e uint64) changelog.Entry {
		return changelog.Entry{Pos: changelog.Pos{Version: v, Epoch: e}, Kind: changelog.EntryNoop}
	}
	history := func(v, e uint64, rs ...changelog.RoleChange) changelog.Entry {
		return changelog.Entry{Pos: changelog.Pos{Version: v, Epoch: e}, Kind: changelog.EntryHistory, History: rs}
	}
	rec := changelog.RoleChange{Master: 2, Inc: 5, Seq: 1, From: "LEADER", To: "FOLLOWER", Reason: roles.ReasonQuorumLost, Section: "§3.8",
		Votes: []changelog.LocationVotes{{Location: "dc1", Votes: 0, Voters: 3}}}
	for _, c := range []struct {
		name  string
		prev  changelog.Pos
		es    []changelog.Entry
		epoch uint64
		want  string
	}{
		{"well formed", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{noop(3, 1), noop(4, 2)}, 2, ""},
		{"prev above the sender's epoch", changelog.Pos{Version: 2, Epoch: 3}, nil, 2, "malformed-prev"},
		{"a gap", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{noop(4, 1)}, 2, "malformed-gap"},
		{"an epoch that falls", changelog.Pos{Version: 2, Epoch: 2}, []changelog.Entry{noop(3, 1)}, 2, "malformed-epoch"},
		{"an epoch above the sender's", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{noop(3, 3)}, 2, "malformed-epoch"},
		{"history well formed", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{history(3, 1, rec)}, 2, ""},
		{"history of no master", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{history(3, 1, changelog.RoleChange{Seq: 1})}, 2, "malformed-history-master"},
		{"history numbered 0", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{history(3, 1, changelog.RoleChange{Master: 1})}, 2, "malformed-history-seq"},
		{"history with a long reason", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{history(3, 1, changelog.RoleChange{Master: 1, Seq: 1, Reason: strings.Repeat("r", 65)})}, 2, "malformed-history-text"},
		{"history with too many locations", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{history(3, 1, changelog.RoleChange{Master: 1, Seq: 1, Votes: make([]changelog.LocationVotes, 9)})}, 2, "malformed-history-votes"},
		{"history with negative votes", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{history(3, 1, changelog.RoleChange{Master: 1, Seq: 1, Votes: []changelog.LocationVotes{{Votes: -1}}})}, 2, "malformed-history-votes"},
		{"history with an unknown witness part", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{history(3, 1, changelog.RoleChange{Master: 1, Seq: 1, Witness: "maybe"})}, 2, "malformed-history-witness"},
		{"history with a lease_epoch above its epoch", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{history(3, 1, changelog.RoleChange{Master: 1, Seq: 1, Epoch: 1, Witness: changelog.WitnessRelied, LeaseEpoch: 2})}, 2, "malformed-history-witness"},
		{"too many records in one entry", changelog.Pos{Version: 2, Epoch: 1}, []changelog.Entry{history(3, 1, slices.Repeat([]changelog.RoleChange{rec}, 17)...)}, 2, "malformed-history-count"},
	} {
		if got := checkEntries(c.prev, c.es, c.epoch); got != c.want {
			t.Errorf("entries, %s: %q, want %q", c.name, got, c.want)
		}
	}

	good := roles.SnapshotChunk{From: 1, Epoch: 2, Pos: changelog.Pos{Version: 9, Epoch: 2}, Commit: changelog.Pos{Version: 9, Epoch: 2}, Total: 3, Offset: 1,
		Items: []namespace.KVEntry{{Key: "a"}, {Key: "b"}}}
	for _, c := range []struct {
		name string
		f    func(*roles.SnapshotChunk)
		want string
	}{
		{"well formed", func(*roles.SnapshotChunk) {}, ""},
		{"records past the total", func(c *roles.SnapshotChunk) { c.Offset = 2 }, "malformed-snapshot"},
		{"a position above the LEADER's epoch", func(c *roles.SnapshotChunk) { c.Pos.Epoch = 3 }, "malformed-snapshot"},
		{"a commit point above the LEADER's epoch", func(c *roles.SnapshotChunk) { c.Commit.Epoch = 3 }, "malformed-snapshot"},
		{"a position of version 0", func(c *roles.SnapshotChunk) { c.Pos = changelog.Pos{}; c.Epoch = 0 }, "malformed-snapshot"},
		{"a position past the version ceiling", func(c *roles.SnapshotChunk) { c.Pos.Version = VersionCeiling + 1 }, "malformed-snapshot"},
		{"a commit point past the version ceiling", func(c *roles.SnapshotChunk) { c.Commit.Version = math.MaxUint64 }, "malformed-snapshot"},
		{"a config without members sorted", func(c *roles.SnapshotChunk) {
			c.Latest = &registry.ClusterConfig{Version: 2, Members: []registry.Chunkserver{{ID: 2}, {ID: 1}}}
		}, "?"},
	} {
		ch := good
		c.f(&ch)
		got := checkChunk(ch)
		if c.want == "?" {
			if got == "" {
				t.Errorf("chunk, %s: taken", c.name)
			}
			continue
		}
		if got != c.want {
			t.Errorf("chunk, %s: %q, want %q", c.name, got, c.want)
		}
	}

	m, _ := New(DefaultConfig(1, []wire.MasterID{1}), rigStored(), 0)
	m.hard.Epoch, m.hard.MaxEpoch = 5, 7
	for _, c := range []struct {
		e    uint64
		want bool
	}{
		{3, true}, {7 + MaxEpochJump, true}, {8 + MaxEpochJump, false}, {EpochCeiling + 1, false},
	} {
		if got := m.plausibleEpoch(c.e); got != c.want {
			t.Errorf("epoch %d beside 7: plausible %v, want %v", c.e, got, c.want)
		}
	}
	m.hard.Epoch, m.hard.MaxEpoch = EpochCeiling-1, EpochCeiling-1
	if m.plausibleEpoch(EpochCeiling + 1) {
		t.Errorf("an epoch above the ceiling, within a jump of what was seen, was plausible")
	}
}
