package voter

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// L2: a voter restarted with a lower MAX_PROMISE keeps quiet for the
// longest promise it ever made.
func TestVoterQuietForLongestPromise(t *testing.T) {
	cfg := DefaultConfig(3, netip.MustParseAddr("10.0.1.3"), []wire.MasterID{1})
	v, _ := New(cfg, roles.VoterHardState{MaxGranted: 10 * time.Second}, 0)
	if v.voteAfter != roles.Instant(10*time.Second) {
		t.Fatalf("quiet until %v, want 10s (MAX_PROMISE is %v)", time.Duration(v.voteAfter), cfg.MaxPromise)
	}
	// And the record grows with what it grants (from a record that shows
	// no promise, so it votes at once).
	v, _ = New(cfg, roles.VoterHardState{}, 0)
	now := roles.Instant(cfg.MaxPromise + time.Second)
	v.Step(now, roles.ProbeReply{From: 1, Incarnation: 1, Role: roles.Leader, Epoch: 1, Eligible: true})
	acts := v.Step(now, roles.Heartbeat{From: 1, Incarnation: 1, Session: v.Session(), Seq: 1, Role: roles.Leader, Epoch: 1, Lease: 800 * time.Millisecond})
	persisted := false
	for _, p := range acts.Persist {
		if p.Voter != nil && p.Voter.MaxGranted == 800*time.Millisecond {
			persisted = true
		}
	}
	if !persisted {
		t.Fatalf("the first grant of 800ms was not made durable before the ack: %v", acts)
	}
}

// A voter's view of a master takes a lower incarnation once it is no longer
// fresh: a master restarted from a restored copy on a clock that is behind
// starts below the run the voter heard last, and was ignored by every voter
// for good when the voter had not seen the old run die (simulator seed
// 5898: no LEADER after the heal). While the view is fresh, a lower
// incarnation is a late answer of a run that is gone, and is ignored.
func TestVoterViewTakesLowerIncarnationWhenStale(t *testing.T) {
	cfg := DefaultConfig(3, netip.MustParseAddr("10.0.1.3"), []wire.MasterID{1, 2})
	v, _ := New(cfg, roles.VoterHardState{}, 0)
	now := roles.Instant(cfg.MaxPromise + time.Second)
	v.Step(now, roles.ProbeReply{From: 1, Incarnation: 10, Role: roles.Follower, Epoch: 1, Eligible: true})
	now = now.Add(v.probeEvery())
	v.Step(now, roles.ProbeReply{From: 1, Incarnation: 5, Role: roles.Elect, Epoch: 2, Eligible: true})
	if w := v.views[1]; w.r.Incarnation != 10 || w.r.Role != roles.Follower {
		t.Fatalf("a fresh view took a lower incarnation: %+v", w.r)
	}
	now = now.Add(3 * v.probeEvery())
	v.Step(now, roles.ProbeReply{From: 1, Incarnation: 5, Role: roles.Elect, Epoch: 2, Eligible: true})
	if w := v.views[1]; w.r.Incarnation != 5 || w.r.Role != roles.Elect {
		t.Fatalf("a view no longer fresh ignored the restored run: %+v", w.r)
	}
}
