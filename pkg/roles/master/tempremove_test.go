package master

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// TestTempRemovalKeepsQuorumsIntersecting: two masters (or one master at
// two times, or a LEADER whose quorum acknowledged a change and a later
// ELECT) that leave out any chunkservers by the temporary-removal rules
// (LeaveOut) cannot both win, whoever the left-out chunkservers vote for:
// their quorums share a voter. This is the argument of
// docs/architecture.md, "Temporary removal", checked on random registries.
func TestTempRemovalKeepsQuorumsIntersecting(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nloc := rapid.IntRange(1, 4).Draw(t, "locations")
		m := locations.New()
		var err error
		for i := 1; i < nloc; i++ {
			if m, err = m.MapRange(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16), fmt.Sprint("l", i)); err != nil {
				t.Fatal(err)
			}
		}
		if m, err = m.SetDefault(rapid.SampledFrom(m.Locations()).Draw(t, "default").Name); err != nil {
			t.Fatal(err)
		}
		cfg := &registry.ClusterConfig{Version: 1, Locations: m}
		for id := wire.CSID(1); id <= wire.CSID(rapid.IntRange(1, 9).Draw(t, "chunkservers")); id++ {
			site := byte(rapid.IntRange(0, nloc-1).Draw(t, "site")) // 0: the default range
			cfg.Members = append(cfg.Members, registry.Chunkserver{ID: id, Addr: netip.AddrFrom4([4]byte{10, site, 1, byte(id)})})
		}
		pick := func(label string) map[wire.CSID]bool {
			r := map[wire.CSID]bool{}
			for _, c := range cfg.Members {
				if rapid.IntRange(0, 3).Draw(t, label) == 0 {
					r[c.ID] = true
				}
			}
			return r
		}
		ca, leftA := registry.LeaveOut(cfg, pick("removedA"))
		cb, leftB := registry.LeaveOut(cfg, pick("removedB"))
		votes := map[wire.CSID]int{}
		for _, c := range cfg.Members {
			votes[c.ID] = rapid.IntRange(0, 2).Draw(t, "vote") // 0 none, 1 A, 2 B
		}
		count := func(c *registry.ClusterConfig, who int) quorum.Outcome {
			return c.Electorate().Tally(func(id wire.CSID) quorum.Vote {
				switch votes[id] {
				case who:
					return quorum.For
				case 0:
					return quorum.Unknown
				}
				return quorum.Against
			}).Outcome
		}
		if count(ca, 1) == quorum.Won && count(cb, 2) == quorum.Won {
			t.Fatalf("both won: A leaves out %v, B %v, votes %v, registry %v", leftA, leftB, votes, cfg.Members)
		}
	})
}

// TestTempRemoveRules: never a LEADER; never a
// chunkserver with a vote session here, two of one location, or the last
// of its location.
func TestTempRemoveRules(t *testing.T) {
	m, _ := New(DefaultConfig(1, []wire.MasterID{1}), roles.Stored{Entries: changelog.Genesis(1)}, 0)
	locs, _ := locations.New().MapRange(netip.MustParsePrefix("10.1.0.0/16"), "a")
	cfg := &registry.ClusterConfig{Version: 2, Locations: locs, Members: []registry.Chunkserver{
		{ID: 1, Addr: netip.MustParseAddr("10.1.0.1")}, {ID: 2, Addr: netip.MustParseAddr("10.1.0.2")},
		{ID: 3, Addr: netip.MustParseAddr("192.168.0.3")}, {ID: 4, Addr: netip.MustParseAddr("10.1.0.4")},
	}}
	m.log.Append(changelog.Entry{Pos: changelog.Pos{Version: 2, Epoch: 0}, Kind: changelog.EntryConfig, Config: cfg})
	m.role = roles.Leader
	if ok, code, text := m.tempRemove(1); ok || code != wire.CodeState {
		t.Fatalf("a LEADER took a temporary removal, or refused it with %v: %s", code, text)
	}
	m.role = roles.Elect
	m.voters[2] = &voterRec{session: 1}
	// Still active, the last of its location, not registered.
	for id, want := range map[wire.CSID]wire.Code{2: wire.CodeState, 3: wire.CodeState, 9: wire.CodeInvalid} {
		if ok, code, text := m.tempRemove(id); ok || code != want {
			t.Errorf("tempRemove(%d) = %v, %v (%s), want a refusal coded %v", id, ok, code, text, want)
		}
	}
	if ok, code, text := m.tempRemove(1); !ok || code != wire.CodeNone {
		t.Fatalf("tempRemove(1) refused (%v): %s", code, text)
	}
	if ok, _, text := m.tempRemove(1); !ok || !strings.Contains(text, "already left out") {
		t.Errorf("tempRemove(1) again = %v (%s), want it reported as already left out", ok, text)
	}
	// The refusals name where to go instead.
	for _, c := range []struct {
		set  func()
		want string
	}{
		{func() { m.role = roles.Dummy }, "shutting down"},
		{func() { m.role, m.leader, m.leaderSeen, m.leaderHeard = roles.Follower, 2, true, m.now }, "follows LEADER M2"},
	} {
		saved, leader, seen := m.role, m.leader, m.leaderSeen
		c.set()
		if ok, _, text := m.tempRemove(4); ok || !strings.Contains(text, c.want) {
			t.Errorf("tempRemove as %v = %v (%s), want refused with %q", m.role, ok, text, c.want)
		}
		m.role, m.leader, m.leaderSeen = saved, leader, seen
	}
	empty, _ := New(DefaultConfig(1, []wire.MasterID{1}), roles.Stored{}, 0)
	if ok, code, text := empty.tempRemove(1); ok || code != wire.CodeState || !strings.Contains(text, "no metadata") {
		t.Errorf("tempRemove without metadata = %v (%s)", ok, text)
	}
	delete(m.voters, 2)
	if ok, _, _ := m.tempRemove(2); ok {
		t.Error("a second chunkserver of location a was left out")
	}
	if got := m.tally(m.Registry(), func(*voterRec) bool { return true }); got.Locations[0].Registered+got.Locations[1].Registered != 3 {
		t.Errorf("the count still has 4 members: %+v", got)
	}
	m.endTempRemoval(1, "test")
	if len(m.TempRemoved()) != 0 {
		t.Error("the removal did not end")
	}
}

// TestLeaveOutEvenLocation: in a location with an even number of members
// only the one with the highest id can be left out.
func TestLeaveOutEvenLocation(t *testing.T) {
	locs, _ := locations.New().MapRange(netip.MustParsePrefix("10.1.0.0/16"), "a")
	cfg := &registry.ClusterConfig{Version: 2, Locations: locs, Members: []registry.Chunkserver{
		{ID: 1, Addr: netip.MustParseAddr("10.1.0.1")}, {ID: 2, Addr: netip.MustParseAddr("10.1.0.2")},
	}}
	if _, left := registry.LeaveOut(cfg, map[wire.CSID]bool{1: true}); len(left) != 0 {
		t.Errorf("the lower id of an even location was left out: %v", left)
	}
	if _, left := registry.LeaveOut(cfg, map[wire.CSID]bool{2: true}); !left[2] {
		t.Errorf("the highest id of an even location was not left out: %v", left)
	}
}
