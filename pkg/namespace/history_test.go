package namespace

import (
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// TestHistory: role changes applied from the log are kept in order, once
// each (a record written again, by the same LEADER or the next, is
// skipped; a new incarnation numbers afresh), at most MaxHistory of them,
// the oldest dropped; LEADER records count their cause and name the last
// LEADER; snapshots carry it all; clients never see the keys.
func TestHistory(t *testing.T) {
	var l changelog.Log
	l.Append(changelog.Genesis(1)...)
	add := func(kind changelog.EntryKind, rs ...changelog.RoleChange) {
		l.Append(changelog.Entry{Pos: changelog.Pos{Version: l.Len() + 1, Epoch: 1}, Kind: kind, History: rs})
	}
	rec := func(m wire.MasterID, inc, seq uint64, to, why string) changelog.RoleChange {
		return changelog.RoleChange{Master: m, Inc: inc, Seq: seq, From: "ELECT", To: to, Why: why}
	}
	add(changelog.EntryNoop) // no records: nothing kept
	add(changelog.EntryNoop, rec(1, 7, 1, "ELECT", ""), rec(1, 7, 2, "LEADER", changelog.WhyNoLeader))
	add(changelog.EntryHistory, rec(2, 3, 1, "FOLLOWER", ""))
	add(changelog.EntryHistory, rec(2, 3, 1, "FOLLOWER", ""), rec(1, 7, 2, "LEADER", changelog.WhyNoLeader)) // again
	add(changelog.EntryHistory, rec(2, 4, 1, "LEADER", changelog.WhyRefused))                                // restarted: seq 1 again
	add(changelog.EntryHistory, rec(3, 1, 1, "LEADER", "made-up"))

	var kv KV
	kv.ApplyUpTo(&l, l.Len())
	rs, total := kv.History(0)
	if total != 5 || len(rs) != 5 {
		t.Fatalf("%d records (total %d), want 5: %+v", len(rs), total, rs)
	}
	for i, want := range []struct {
		m        wire.MasterID
		inc, seq uint64
	}{{1, 7, 1}, {1, 7, 2}, {2, 3, 1}, {2, 4, 1}, {3, 1, 1}} {
		if r := rs[i]; r.Master != want.m || r.Inc != want.inc || r.Seq != want.seq {
			t.Errorf("record %d = %v, want master %d inc %d seq %d", i, r, want.m, want.inc, want.seq)
		}
	}
	if newest, _ := kv.History(2); len(newest) != 2 || newest[1].Master != 3 || newest[0].Inc != 4 {
		t.Errorf("History(2) = %+v, want the two newest", newest)
	}
	want := map[string]uint64{changelog.WhyNoLeader: 1, changelog.WhyRefused: 1, "other": 1}
	if got := kv.LeaderChanges(); len(got) != len(want) || got[changelog.WhyNoLeader] != 1 || got[changelog.WhyRefused] != 1 || got["other"] != 1 {
		t.Errorf("LeaderChanges = %v, want %v", got, want)
	}
	if got := kv.LastLeader(); got != 3 {
		t.Errorf("LastLeader = %d, want 3", got)
	}
	if got := kv.Recorded(2, 4); got != 1 {
		t.Errorf("Recorded(2, 4) = %d, want 1", got)
	}
	if got := kv.Recorded(2, 3); got != 0 {
		t.Errorf("Recorded(2, 3) = %d, want 0 (a later incarnation was recorded since)", got)
	}

	// Clients see none of it.
	l.Append(changelog.Entry{Pos: changelog.Pos{Version: l.Len() + 1, Epoch: 1}, Kind: changelog.EntryPut, Key: "a", Value: "1"})
	kv.ApplyUpTo(&l, l.Len())
	if got, _ := kv.List("", "", 0, 0); len(got) != 1 || got[0].Key != "a" {
		t.Errorf(`List("") = %+v, want only the clients' keys`, got)
	}
	if got, _ := kv.List(Reserved, "", 0, 0); len(got) != 0 {
		t.Errorf("List(Reserved) = %+v, want nothing", got)
	}
	if Client(historyKey(1, 0)) || !Client("a") {
		t.Error("Client: the history's keys must be the cluster's own, and only those")
	}

	// A snapshot carries the history; a KV made from it goes on.
	snap := SnapshotOf(&kv, &l)
	kv2 := snap.KV()
	for i := uint64(1); i < MaxHistory; i++ { // with the five above: four too many
		add(changelog.EntryHistory, rec(4, 1, i, "FOLLOWER", ""))
	}
	kv2.ApplyUpTo(&l, l.Len())
	rs, total = kv2.History(0)
	if total != MaxHistory || len(rs) != MaxHistory {
		t.Fatalf("%d records kept, want MaxHistory (%d)", total, MaxHistory)
	}
	if rs[0].Master != 3 || rs[len(rs)-1].Seq != MaxHistory-1 {
		t.Errorf("kept %v .. %v, want the newest %d (master 3's first)", rs[0], rs[len(rs)-1], MaxHistory)
	}
	if err := kv2.CheckIndex(); err != nil {
		t.Fatal(err)
	}
}
