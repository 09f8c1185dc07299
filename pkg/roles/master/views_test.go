package master

import (
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
)

// What a master reports of itself to the listings (mfscli -SIM/-SLQ, the
// web page) is as true as its role: a FOLLOWER shows how far it is behind
// its LEADER and counts no votes; an ELECT that has won its quorum but
// still catches up shows the transition it is in.
func TestOperatorViews(t *testing.T) {
	h := newHarness(t)
	h.run("master id=2 masters=1,2 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.1.3")
	h.run("peer from=1 role=LEADER epoch=2 last=9@2")
	if got := h.m.Behind(); got != 7 {
		t.Errorf("a FOLLOWER at 2 beside a LEADER at 9: behind %d, want 7", got)
	}
	if tv := h.m.Tallies(h.now); tv != nil {
		t.Errorf("a FOLLOWER shows tallies %+v; it counts no votes", tv)
	}
	if tr := h.m.Underway(h.now); tr != "" {
		t.Errorf("a FOLLOWER shows the transition %q", tr)
	}
	// The LEADER's status goes stale: behind what is no longer known.
	h.run("time +10s")
	h.run("tick")
	if got := h.m.Behind(); got != 0 {
		t.Errorf("no fresh LEADER: behind %d, want 0", got)
	}

	// Nominated, voted for, and told of a commit point it lacks: it has
	// won its quorum, and fetches before it may lead.
	h.run("peer from=1 role=FOLLOWER epoch=2 last=5@2")
	h.run("hello cs=1 nominate")
	h.run("hello cs=2")
	h.run("ack cs=1 commit=5@2 tag=2")
	h.run("ack cs=2 commit=5@2 tag=2")
	if h.m.Role() != roles.Elect {
		t.Fatalf("role %v, want ELECT catching up", h.m.Role())
	}
	if tr := h.m.Underway(h.now); tr != "ELECT -> LEADER" {
		t.Errorf("an ELECT holding its quorum while it catches up shows %q", tr)
	}
	tv := h.m.Tallies(h.now)
	if len(tv) != 1 || tv[0].Config != 2 {
		t.Fatalf("an ELECT's tallies: %+v, want one, under registry version 2", tv)
	}
	h.run("fetchresp from=1 base=2@0 upto=5 epoch=2")
	if h.m.Role() != roles.Leader || h.m.Behind() != 0 || h.m.Underway(h.now) != "" {
		t.Errorf("after catching up: %v, behind %d, transition %q; want LEADER, 0, none", h.m.Role(), h.m.Behind(), h.m.Underway(h.now))
	}
}

// A change is checked before it is logged, and each refusal names what is
// wrong; the client library checks the same before it sends.
func TestCheckWrite(t *testing.T) {
	big := func(n int) string { return strings.Repeat("k", n) }
	for _, c := range []struct {
		w    roles.ClientWrite
		want string
	}{
		{roles.ClientWrite{Client: 0, Key: "a"}, roles.ErrNoSession},
		{roles.ClientWrite{Client: 1, Key: ""}, "empty key"},
		{roles.ClientWrite{Client: 1, Key: big(roles.MaxKey + 1)}, "key of 4097 bytes, at most 4096"},
		{roles.ClientWrite{Client: 1, Key: "a", Value: big(roles.MaxValue + 1)}, "value of 262145 bytes, at most 262144"},
		{roles.ClientWrite{Client: 1, Key: big(roles.MaxKey), Value: big(roles.MaxValue)}, ""},
		{roles.ClientWrite{Client: 1, Key: "\x00mfs/history/1"}, "key starts with a NUL byte: those are the cluster's own (the election history)"},
	} {
		if got := roles.CheckWrite(c.w); got != c.want {
			t.Errorf("client %d, key of %d bytes, value of %d: %q, want %q", c.w.Client, len(c.w.Key), len(c.w.Value), got, c.want)
		}
	}
}

// A voter's own report (the chunkserver's metrics and status) shows a
// promise only while it stands; and a voter whose LEADER's heartbeats are
// late looks around at full rate, so that it knows where to go the moment
// its promise lapses (the SIGSTOP failover time rests on it).
func TestVoterPromiseAndLateProbes(t *testing.T) {
	h := newHarness(t)
	h.run("voter id=1 masters=1,2,3 addr=10.0.1.1")
	h.run("time 2s")
	h.run("reply from=1 role=LEADER epoch=1")
	h.run("heartbeat from=1 role=LEADER epoch=1 lease=800ms")
	start := h.now
	if m, until := h.v.Promise(); m != 1 || until != start.Add(800*time.Millisecond) {
		t.Fatalf("promise %v until %v, want M1 until %v", m, until, start.Add(800*time.Millisecond))
	}
	probes := func(from, to time.Duration) int {
		n := 0
		for d := from; d < to; d += 10 * time.Millisecond {
			h.now = start.Add(d)
			for _, s := range h.v.Step(h.now, roles.Tick{}).Sends {
				if _, ok := s.Msg.(roles.Probe); ok {
					n++
				}
			}
		}
		return n
	}
	// On time (until four probe intervals before the grant runs out) it
	// probes rarely; once the heartbeats are late, every 50 ms, each round
	// to all three masters.
	onTime := probes(10*time.Millisecond, 590*time.Millisecond)
	late := probes(600*time.Millisecond, 800*time.Millisecond)
	if onTime > 3 {
		t.Errorf("%d probes in the first 580 ms, while the heartbeats were on time; want at most one round (3)", onTime)
	}
	if late < 3*4 {
		t.Errorf("%d probes in the 200 ms after the heartbeats became late, want at least %d (a round every 50 ms)", late, 3*4)
	}
	h.now = start.Add(800 * time.Millisecond)
	h.v.Step(h.now, roles.Tick{})
	if m, _ := h.v.Promise(); m != 0 {
		t.Errorf("the lease ended and the voter still reports a promise to M%d", m)
	}
}

// A LEADER that hears of a higher epoch which no LEADER holds (an ELECT
// that tried and failed) stays LEADER, and goes on reporting its own epoch,
// not the one it heard of: its status and listings name the epoch its
// votes were given for.
func TestLeaderReportsItsOwnEpoch(t *testing.T) {
	h := leaderAmong(t, "1,2")
	h.run("peer from=2 role=ELECT epoch=6")
	if h.m.Role() != roles.Leader || h.m.Epoch() != 1 {
		t.Errorf("after an ELECT's status at epoch 6: %v reporting epoch %d, want LEADER at 1", h.m.Role(), h.m.Epoch())
	}
}
