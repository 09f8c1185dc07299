package master

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// scaleAddr is chunkserver cs's address in the scale rigs.
func scaleAddr(cs wire.CSID) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(cs >> 16), byte(cs >> 8), byte(cs)})
}

// scaleStored is rigStored with n registered chunkservers.
func scaleStored(n int) roles.Stored {
	log := changelog.Genesis(1)
	cfg := log[0].Config.Clone()
	cfg.Version, cfg.Bootstrap = 2, false
	for cs := wire.CSID(1); cs <= wire.CSID(n); cs++ {
		cfg.Members = append(cfg.Members, registry.Chunkserver{ID: cs, Addr: scaleAddr(cs)})
	}
	log = append(log, changelog.Entry{Pos: changelog.Pos{Version: 2}, Kind: changelog.EntryConfig, Config: cfg})
	return roles.Stored{Entries: log, Hard: roles.HardState{InForce: 2, Commit: changelog.Pos{Version: 2}}}
}

// scaleLeader returns master 1 of masters 1 and 2, LEADER over n voters
// that all voted for it.
func scaleLeader(tb testing.TB, n int) *coreRig {
	tb.Helper()
	m, _ := New(DefaultConfig(1, []wire.MasterID{1, 2}), scaleStored(n), 0)
	r := &coreRig{t: tb, m: m, other: 2, addr: scaleAddr}
	for cs := wire.CSID(1); cs <= wire.CSID(n); cs++ {
		r.step(roles.VoteHello{CS: cs, Addr: scaleAddr(cs), Session: 1, Nominate: cs == 1})
	}
	if m.Role() != roles.Leader {
		tb.Fatalf("the rig's master is %v, want LEADER", m.Role())
	}
	return r
}

// BenchmarkLeaderRound is one heartbeat round of a LEADER over n voters:
// the tick that sends it and every acknowledgement, each its own step.
// ns/op divided by n is the core's cost per voter and round.
func BenchmarkLeaderRound(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("voters=%d", n), func(b *testing.B) {
			r := scaleLeader(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.now = r.m.nextHB
				r.step(roles.Tick{})
				_ = r.m.NextDeadline()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/voter")
		})
	}
}

var _ = time.Second

// TestScaled: past HEARTBEAT_VOTERS the interval grows with the sessions
// up to HEARTBEAT_INTERVAL + 2 VOTE_LEASE, and the silence the lease bears
// beyond one interval grows by half what the interval gained (a round
// takes longer the more it serves), never past the default MAX_PROMISE.
func TestScaled(t *testing.T) {
	c := DefaultConfig(1, []wire.MasterID{1})
	maxPromise := voter.DefaultConfig(1, netip.Addr{}, nil).MaxPromise
	prev := time.Duration(0)
	for _, n := range []int{0, 6, 750, 751, 1000, 5000, 5750, 10000, 1_000_000} {
		i, l := c.Scaled(n)
		if n <= c.HeartbeatVoters && (i != c.HeartbeatInterval || l != c.VoteLease) {
			t.Errorf("%d sessions: %v/%v, want the configured %v/%v", n, i, l, c.HeartbeatInterval, c.VoteLease)
		}
		if want := c.VoteLease - c.HeartbeatInterval + (i-c.HeartbeatInterval)/2; l-i != want {
			t.Errorf("%d sessions: lease %v - interval %v, want %v", n, l, i, want)
		}
		if i < prev || i > c.HeartbeatInterval+2*c.VoteLease || l > maxPromise {
			t.Errorf("%d sessions: interval %v (previous %v), lease %v (MAX_PROMISE %v)", n, i, prev, l, maxPromise)
		}
		prev = i
	}
	// The defaults: a round per 0.2 ms of sessions past 750, as it was at
	// 100 ms per 500 (the LEADER's cost a second at scale did not change
	// with the 150 ms interval).
	if i, l := c.Scaled(1000); i != 200*time.Millisecond || l != 575*time.Millisecond {
		t.Errorf("1,000 sessions: %v/%v, want 200ms/575ms", i, l)
	}
	if i, l := c.Scaled(10000); i != 1150*time.Millisecond || l != maxPromise {
		t.Errorf("10,000 sessions: %v/%v, want 1.15s and the default MAX_PROMISE %v", i, l, maxPromise)
	}
}
