package master

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// hold keeps this LEADER's votes for d, in 100 ms rounds: each round
// ticks, has voters 1 and 2 acknowledge their heartbeat, and has the
// followers named acknowledge everything the log holds (the others are
// silent).
func (h *harness) hold(d time.Duration, followers ...wire.MasterID) {
	for end := h.now.Add(d); h.now < end; {
		for _, c := range []string{"time +100ms", "tick", "ack cs=1", "ack cs=2"} {
			h.run(c)
		}
		for _, f := range followers {
			last := h.m.Log().Last()
			h.run(fmt.Sprintf("appendack from=%d epoch=%d match=%v last=%d", f, h.m.Epoch(), last, last.Version))
		}
	}
}

// TestDurability: a LEADER knows on how many follower copies its newest
// acknowledgement rests, against ACK_REPLICAS, and when the ack rule's
// fallback ((b) with fewer followers heard than ACK_REPLICAS) began to
// carry it (review N7, docs/architecture.md §7). Each case elects master 1
// at time 0 (voters 1 and 2), then runs its steps: "hold D [followers]"
// (hold above), "write" (a client change; the case then checks it was
// acknowledged, and that an episode, if any, began no earlier), or a
// script command.
func TestDurability(t *testing.T) {
	for _, c := range []struct {
		name    string
		masters string
		acks    int
		steps   []string
		want    Durability // Since: checked by since
		role    roles.Role
		since   string // a Short episode began with the last write's acknowledgement ("write"), or in the term's first PeerTimeout ("start")
		alone   bool   // ACK_ALONE
	}{
		{"one follower heard: ACK_REPLICAS=1 met", "1,2,3", 1,
			[]string{"hold 1s 2", "write", "hold 200ms 2"},
			Durability{Required: 1, Followers: 2, Replicas: 1}, roles.Leader, "", false},
		{"both followers silent past PeerTimeout: the change rests on this disk alone", "1,2,3", 1,
			[]string{"hold 1s 2", "hold 600ms", "write", "hold 200ms"},
			Durability{Required: 1, Followers: 2, Replicas: 0, Short: true, Unheard: []wire.MasterID{2, 3}}, roles.Leader, "write", true},
		{"the follower is back and catches up: the episode ends without another change", "1,2,3", 1,
			[]string{"hold 1s 2", "hold 600ms", "write", "hold 200ms", "hold 200ms 2"},
			Durability{Required: 1, Followers: 2, Replicas: 1}, roles.Leader, "", true},
		{"the follower is back: the next change rests on it", "1,2,3", 1,
			[]string{"hold 1s 2", "hold 600ms", "write", "hold 200ms", "write", "hold 200ms 2"},
			Durability{Required: 1, Followers: 2, Replicas: 1}, roles.Leader, "", true},
		{"ACK_REPLICAS=2 with one follower: short by one, the follower heard", "1,2", 2,
			[]string{"hold 1s 2", "write", "hold 200ms 2"},
			Durability{Required: 2, Followers: 1, Replicas: 1, Short: true}, roles.Leader, "start", true},
		{"ACK_REPLICAS=2 with two followers heard: met", "1,2,3", 2,
			[]string{"hold 1s 2,3", "write", "hold 200ms 2,3"},
			Durability{Required: 2, Followers: 2, Replicas: 2}, roles.Leader, "", false},
		{"ACK_REPLICAS=0: nothing to fall short of", "1,2,3", 0,
			[]string{"hold 1s", "write", "hold 200ms"},
			Durability{Required: 0, Followers: 2}, roles.Leader, "", false},
		{"MASTER_HOST re-resolves to this master alone", "1,2,3", 1,
			[]string{"hold 1s 2", "masterset masters=1", "write", "hold 200ms"},
			Durability{Required: 1, Followers: 0, Replicas: 0, Short: true}, roles.Leader, "write", true},
		{"a new LEADER's no-op, acknowledged before its follower answered, is not a shortfall", "1,2,3", 1,
			[]string{"hold 300ms 2"},
			Durability{Required: 1, Followers: 2, Replicas: 1}, roles.Leader, "", false},
		{"no follower answers a new LEADER: not declared within PeerTimeout", "1,2,3", 1,
			[]string{"hold 400ms"},
			Durability{Required: 1, Followers: 2}, roles.Leader, "", true},
		{"no follower answers a new LEADER: declared after PeerTimeout, since its first acknowledgement", "1,2,3", 1,
			[]string{"hold 700ms"},
			Durability{Required: 1, Followers: 2, Short: true, Unheard: []wire.MasterID{2, 3}}, roles.Leader, "start", true},
		{"ACK_ALONE off, both followers silent: the change waits for a copy", "1,2,3", 1,
			[]string{"hold 1s 2", "hold 600ms", "write", "hold 200ms"},
			Durability{Required: 1, Followers: 2, Replicas: 1, Waiting: true}, roles.Leader, "", false},
		{"ACK_ALONE off, the follower is back: the waiting change is acknowledged on it", "1,2,3", 1,
			[]string{"hold 1s 2", "hold 600ms", "write", "hold 200ms", "hold 200ms 2"},
			Durability{Required: 1, Followers: 2, Replicas: 1}, roles.Leader, "", false},
		{"stepping down ends the episode", "1,2,3", 1,
			[]string{"hold 1s 2", "hold 600ms", "write", "hold 200ms", "admin do=stepdown"},
			Durability{Required: 1, Followers: 2}, roles.Follower, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.run(fmt.Sprintf("master id=1 masters=%s registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3 acks=%d alone=%v", c.masters, c.acks, c.alone))
			h.run("elect cs=1,2")
			if h.m.Role() != roles.Leader {
				t.Fatalf("setup: %v, want LEADER", h.m.Role())
			}
			var wrote roles.Instant
			seq := 0
			for _, s := range c.steps {
				f := strings.Fields(s)
				switch f[0] {
				case "hold":
					var fs []wire.MasterID
					if len(f) > 2 {
						fs = ids(f[2])
					}
					h.hold(mustDur(f[1]), fs...)
				case "write":
					seq++
					h.run(fmt.Sprintf("write client=1 seq=%d key=k%d val=x", seq, seq))
					wrote = h.now
				default:
					h.run(s)
				}
			}
			got := h.m.Durability()
			if h.m.Role() != c.role {
				t.Fatalf("role %v, want %v", h.m.Role(), c.role)
			}
			if c.role == roles.Leader && !c.want.Waiting && h.m.Acked() != h.m.Log().Last() {
				t.Fatalf("acknowledged %v, the log holds %v: the changes were not acknowledged", h.m.Acked(), h.m.Log().Last())
			}
			switch {
			case c.since == "write" && (got.Since < wrote || got.Since > h.now):
				t.Errorf("episode since %v, want between the last write at %v and now %v", time.Duration(got.Since), time.Duration(wrote), time.Duration(h.now))
			case c.want.Waiting && (got.WaitingSince < wrote || h.m.Acked().Version >= h.m.Log().Len()):
				t.Errorf("waiting since %v (the write at %v), acknowledged %v of %v: want the write waiting", time.Duration(got.WaitingSince), time.Duration(wrote), h.m.Acked(), h.m.Log().Last())
			case c.since == "start" && got.Since >= roles.Instant(DefaultConfig(1, nil).PeerTimeout):
				t.Errorf("episode since %v, want the term's first acknowledgement, within PeerTimeout", time.Duration(got.Since))
			}
			got.Since, got.WaitingSince = 0, 0
			if got.Required != c.want.Required || got.Followers != c.want.Followers || got.Replicas != c.want.Replicas ||
				got.Short != c.want.Short || !slices.Equal(got.Unheard, c.want.Unheard) || got.Waiting != c.want.Waiting {
				t.Errorf("durability %+v, want %+v", got, c.want)
			}
		})
	}
}
