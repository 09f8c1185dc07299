package masternode

import (
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
)

// TestStages: a change is timed through each stage of the ack rule, from
// the instants the driver saw; one whose stages were not all seen is not
// counted; a heartbeat round's later heartbeats move nothing; what is
// followed stays bounded.
func TestStages(t *testing.T) {
	s := newStages()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	entry := func(v uint64, c changelog.ClientID, seq uint64) changelog.Entry {
		return changelog.Entry{Pos: changelog.Pos{Version: v, Epoch: 1}, Client: c, Seq: seq}
	}
	s.appended(entry(4, 7, 1), at(0))
	s.appended(entry(5, 8, 1), at(1))
	s.durable(5, at(2))
	s.replicated(4, at(5)) // only 4 is on a follower yet
	s.commitSent(4, at(6))
	s.commitSent(4, at(9)) // the same round's next heartbeat
	got := map[string]time.Duration{}
	s.replied(7, 1, at(10), func(st string, d time.Duration) { got[st] = d })
	want := map[string]time.Duration{stageLeaderWrite: 2 * time.Millisecond, stageReplication: 3 * time.Millisecond,
		stageCommitSend: time.Millisecond, stageVoterRound: 4 * time.Millisecond, stageTotal: 10 * time.Millisecond}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("stage %s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	n := 0
	s.replied(8, 1, at(11), func(string, time.Duration) { n++ }) // never replicated, as far as seen
	if n != 0 {
		t.Errorf("a change not seen through every stage was counted (%d observations)", n)
	}
	if len(s.at) != 0 || len(s.by) != 0 {
		t.Errorf("replied changes still followed: %d, %d", len(s.at), len(s.by))
	}
	// A version claimed past every change followed (a follower's word)
	// does not hide the changes that come after it.
	s.appended(entry(6, 9, 1), at(12))
	s.durable(6, at(13))
	s.replicated(1<<62, at(14))
	s.appended(entry(7, 10, 1), at(15))
	s.durable(7, at(16))
	s.replicated(7, at(17))
	s.commitSent(7, at(18))
	n = 0
	s.replied(10, 1, at(19), func(string, time.Duration) { n++ })
	if n != 5 {
		t.Errorf("after a claimed version far ahead, the next change was observed in %d stages, want 5", n)
	}
	for v := uint64(10); v < 10+stagesMax+100; v++ {
		s.appended(entry(v, changelog.ClientID(v), 1), at(20))
	}
	if len(s.at) > stagesMax || len(s.order) > stagesMax {
		t.Errorf("following %d changes (%d in order), at most %d", len(s.at), len(s.order), stagesMax)
	}
}

// TestPruneHBSent: a heartbeat never answered (a chunkserver that left,
// or one that never acknowledges) does not stay in the round-trip table
// for ever; a recent one stays.
func TestPruneHBSent(t *testing.T) {
	now := time.Unix(5000, 0)
	n := &MasterNode{routes: routes{hbSent: map[hbKey]time.Time{
		{1, 1}: now.Add(-2 * hbSentMaxAge),
		{2, 9}: now.Add(-time.Second),
	}}}
	n.pruneHBSent(now)
	if _, ok := n.hbSent[hbKey{1, 1}]; ok || len(n.hbSent) != 1 {
		t.Fatalf("after pruning: %v, want only the recent heartbeat", n.hbSent)
	}
	n.hbSent[hbKey{3, 1}] = now.Add(-2 * hbSentMaxAge)
	n.pruneHBSent(now.Add(time.Second)) // pruned a moment ago: not again yet
	if len(n.hbSent) != 2 {
		t.Fatalf("pruned again within hbSentMaxAge: %v", n.hbSent)
	}
}
