package changelog

import (
	"testing"
)

func TestReplicatedVersion(t *testing.T) {
	for _, c := range []struct {
		name      string
		leader    uint64
		followers []uint64
		required  int
		want      uint64
	}{
		{name: "no follower needed", leader: 9, followers: []uint64{1, 2}, required: 0, want: 9},
		{name: "no follower connected", leader: 9, required: 1, want: 9},
		{name: "best follower", leader: 9, followers: []uint64{3, 7, 5}, required: 1, want: 7},
		{name: "second best", leader: 9, followers: []uint64{3, 7, 5}, required: 2, want: 5},
		{name: "more required than connected", leader: 9, followers: []uint64{3, 7}, required: 4, want: 3},
		{name: "follower ahead of leader is capped", leader: 4, followers: []uint64{8}, required: 1, want: 4},
	} {
		if got := ReplicatedVersion(c.leader, c.followers, c.required); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}

func TestAckRule(t *testing.T) {
	knows := func(q uint64) func(uint64) bool { return func(v uint64) bool { return v <= q } }
	for _, c := range []struct {
		name      string
		leader    uint64
		followers []uint64
		cands     []uint64
		quorumAt  uint64
		want      uint64
	}{
		{name: "all three hold", leader: 10, followers: []uint64{10}, cands: []uint64{10, 8}, quorumAt: 10, want: 10},
		{name: "follower behind", leader: 10, followers: []uint64{6}, cands: []uint64{10, 6, 5}, quorumAt: 10, want: 6},
		{name: "voters behind", leader: 10, followers: []uint64{10}, cands: []uint64{10, 7}, quorumAt: 7, want: 7},
		{name: "nothing known", leader: 10, followers: []uint64{10}, cands: nil, quorumAt: 10, want: 0},
	} {
		if got := AckRule(ReplicatedVersion(c.leader, c.followers, 1), c.cands, knows(c.quorumAt)); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}

// TestSatisfies: the catch-up rule for one voter report, including a
// proposal a LEADER of a later epoch superseded (docs/architecture.md §7).
func TestSatisfies(t *testing.T) {
	var log Log
	log.Append(Entry{Pos: Pos{Version: 1, Epoch: 1}}, Entry{Pos: Pos{Version: 2, Epoch: 3}}, Entry{Pos: Pos{Version: 3, Epoch: 4}})
	for _, c := range []struct {
		name   string
		commit Pos
		tag    uint64
		reg    uint64
		want   bool
	}{
		{name: "held", commit: Pos{Version: 3, Epoch: 4}, tag: 4, want: true},
		{name: "held, told by a later LEADER", commit: Pos{Version: 2, Epoch: 3}, tag: 6, want: true},
		{name: "a proposal of epoch 3 superseded by epoch 4", commit: Pos{Version: 3, Epoch: 3}, tag: 3, want: true},
		{name: "another entry at the newest epoch's own tag", commit: Pos{Version: 3, Epoch: 2}, tag: 4, want: false},
		{name: "beyond the log, tag at the newest epoch", commit: Pos{Version: 5, Epoch: 4}, tag: 4, want: false},
		{name: "beyond the log, later tag", commit: Pos{Version: 5, Epoch: 5}, tag: 5, want: false},
		{name: "an older entry told by a later LEADER", commit: Pos{Version: 3, Epoch: 3}, tag: 5, want: false},
		{name: "held, but a newer config", commit: Pos{Version: 3, Epoch: 4}, tag: 4, reg: 8, want: false},
		{name: "superseded, but a newer config", commit: Pos{Version: 3, Epoch: 3}, tag: 3, reg: 8, want: false},
	} {
		if got := Satisfies(&log, 7, c.commit, c.tag, c.reg); got != c.want {
			t.Errorf("%s: Satisfies(%v tagged %d, reg %d) = %v, want %v", c.name, c.commit, c.tag, c.reg, got, c.want)
		}
	}
}
