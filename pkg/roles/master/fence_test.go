package master

import (
	"slices"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// TestFenceMatchesStep: a fence taken after a step says, at every later
// instant, exactly what the core says after a Tick at that instant: the
// role, epoch, LEADER and sync state (LEADER until its counted quorum
// lapses, then FOLLOWER: roles.md §3.8), whether it holds a quorum, and
// which votes it counts. Checked on a grid and at one nanosecond either
// side of every vote's lapse, for an undivided registry, a divided one
// (locations, default tie-break), and a founder with no chunkserver.
func TestFenceMatchesStep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup []string
		lapse bool // the LEADER's quorum lapses within the window
	}{{
		name: "undivided",
		setup: []string{
			"master id=1 masters=1 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3,4@10.0.1.4,5@10.0.1.5 acks=0",
			"hello cs=1 nominate", "hello cs=2", "hello cs=3", "hello cs=4",
			"ack cs=1", "time +100ms", "tick", "ack cs=2", "time +100ms", "tick", "ack cs=3",
			"time +100ms", "tick", "ack cs=4",
		},
		lapse: true,
	}, {
		name: "divided",
		setup: []string{
			"master id=1 masters=1 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.2.1,4@10.0.2.2,5@10.0.3.1 ranges=10.0.1.0/24:a,10.0.2.0/24:b,10.0.3.0/24:c acks=0",
			"hello cs=1 nominate", "hello cs=2", "hello cs=3 addr=10.0.2.1", "hello cs=4 addr=10.0.2.2", "hello cs=5 addr=10.0.3.1",
			"ack cs=5", "ack cs=3", "time +100ms", "tick", "ack cs=1", "ack cs=4", "time +150ms", "tick", "ack cs=2",
		},
		lapse: true,
	}, {
		name:  "founder",
		setup: []string{"master id=1 masters=1 genesis=true", "time +6s", "tick", "time +100ms", "tick"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for _, cmd := range tc.setup {
				h.run(cmd)
			}
			if h.m.Role() != roles.Leader || !h.m.HoldsQuorum(h.now) {
				t.Fatalf("setup: %v, quorum %v", h.m.Role(), h.m.HoldsQuorum(h.now))
			}
			f := h.m.Fence()
			if f.At != h.now || f.Now.Role != roles.Leader || f.HoldsQuorum(f.At) != true {
				t.Fatalf("fence at the last step: %+v", f)
			}
			if lapses := f.Until != roles.Never; lapses != tc.lapse {
				t.Fatalf("Until %v, want a lapse: %v", f.Until, tc.lapse)
			}
			// Every vote's end, a nanosecond either side, and a grid.
			var at []roles.Instant
			for _, v := range f.Votes {
				at = append(at, v.Until-1, v.Until, v.Until+1)
			}
			for d := time.Duration(0); d <= 1500*time.Millisecond; d += 7 * time.Millisecond {
				at = append(at, f.At.Add(d))
			}
			slices.Sort(at)
			at = slices.Compact(at)
			sawLeader, sawFenced := false, false
			for _, now := range at {
				if now < f.At {
					continue
				}
				holds := h.m.HoldsQuorum(now) // before the step: what HoldsQuorum alone says
				h.m.Step(now, roles.Tick{})
				got := f.ReportAt(now)
				want := RoleReport{Role: h.m.Role(), Epoch: h.m.Epoch(), Leader: h.m.Leader(), Sync: h.m.Sync()}
				if got != want {
					t.Fatalf("at +%v: fence says %+v, the core after a Tick %+v", now.Sub(f.At), got, want)
				}
				if f.HoldsQuorum(now) != holds || holds != h.m.HoldsQuorum(now) {
					t.Fatalf("at +%v: fence holds quorum %v, core %v", now.Sub(f.At), f.HoldsQuorum(now), holds)
				}
				if g, w := f.CountedAt(now), h.m.CountedVoters(); !slices.Equal(g, w) {
					t.Fatalf("at +%v: fence counts %v, core %v", now.Sub(f.At), g, w)
				}
				sawLeader = sawLeader || got.Role == roles.Leader
				sawFenced = sawFenced || got.Role != roles.Leader
				if got.Role == roles.Leader && now >= f.Until {
					t.Fatalf("LEADER at +%v, at or after Until +%v", now.Sub(f.At), f.Until.Sub(f.At))
				}
			}
			if !sawLeader || sawFenced != tc.lapse {
				t.Fatalf("the window saw LEADER %v, fenced %v", sawLeader, sawFenced)
			}
		})
	}
}

// TestFenceNotLeader: a master that is not LEADER never holds a quorum in
// its fence, reports itself as it stands, and counts a vote only while its
// lease holds.
func TestFenceNotLeader(t *testing.T) {
	h := newHarness(t)
	for _, cmd := range []string{
		"master id=1 masters=1,2 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3,4@10.0.1.4,5@10.0.1.5 acks=0",
		"hello cs=1 nominate", "hello cs=2", "hello cs=3", "ack cs=1", "time +100ms", "tick", "ack cs=2",
	} {
		h.run(cmd)
	}
	if h.m.Role() != roles.Elect {
		t.Fatalf("setup: %v", h.m.Role())
	}
	f := h.m.Fence()
	if len(f.Votes) != 2 || f.Until != f.At || f.Fenced != f.Now {
		t.Fatalf("fence of an ELECT: %+v", f)
	}
	first, second := f.Votes[0].Until, f.Votes[1].Until
	for _, c := range []struct {
		at   roles.Instant
		want []wire.CSID
	}{{f.At, []wire.CSID{1, 2}}, {first - 1, []wire.CSID{1, 2}}, {first, []wire.CSID{2}}, {second, nil}} {
		if f.HoldsQuorum(c.at) || f.ReportAt(c.at) != f.Now {
			t.Fatalf("at +%v: holds %v, report %+v", c.at.Sub(f.At), f.HoldsQuorum(c.at), f.ReportAt(c.at))
		}
		if got := f.CountedAt(c.at); !slices.Equal(got, c.want) {
			t.Fatalf("at +%v: counts %v, want %v", c.at.Sub(f.At), got, c.want)
		}
	}
}
