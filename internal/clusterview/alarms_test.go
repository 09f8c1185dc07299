package clusterview

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// three is a healthy cluster: a LEADER carrying all three locations and
// two synced FOLLOWERs, every clock within 1 s, one version; both
// followers hold the LEADER's newest acknowledged change (ACK_REPLICAS 1).
func three() []Answer {
	l := fixture.Master("127.0.0.11", roles.Leader, 7, 1532)
	l.Leader, l.HoldsQuorum, l.Connected, l.Registered, l.Voters = fixture.Addr("127.0.0.11"), true, 6, 6, 6
	l.AckKnown, l.AckRequired, l.AckFollowers, l.AckReplicas = true, 1, 2, 2
	l.Chunkservers = fixture.RegistryOf(fixture.All, fixture.All)
	l.Tallies = []protocol.TallyStatus{fixture.Tally(3, "WON", fixture.Loc("dc1", 2, 2, 2), fixture.Loc("dc2", 2, 2, 2), fixture.Loc("dc3", 2, 2, 2))}
	return []Answer{{Addr: fixture.At("127.0.0.11"), St: l},
		{Addr: fixture.At("127.0.0.12"), St: fixture.Follower("127.0.0.12", 7, 1532, 100*time.Millisecond)},
		{Addr: fixture.At("127.0.0.13"), St: fixture.Follower("127.0.0.13", 7, 1532, -100*time.Millisecond)}}
}

// raised lists the alarm kinds Build raises for answers.
func raised(answers []Answer) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, w := range Build(answers, "mfsmaster", fixture.T0).Warnings {
		out[w.Kind] = w.Masters
		if w.Text == "" {
			out[w.Kind+" without text"] = nil
		}
	}
	return out
}

// textOf is the text of the alarm of kind Build raises for answers.
func textOf(answers []Answer, kind string) string {
	for _, w := range Build(answers, "mfsmaster", fixture.T0).Warnings {
		if w.Kind == kind {
			return w.Text
		}
	}
	return ""
}

// ackShort makes the LEADER of three() say its newest acknowledged change
// rests on replicas of its ACK_REPLICAS follower copies, for 5 minutes,
// with the masters unheard.
func ackShort(a []Answer, required, followers, replicas int, unheard ...string) []Answer {
	st := &a[0].St
	st.AckRequired, st.AckFollowers, st.AckReplicas, st.AckShort, st.AckShortFor = required, followers, replicas, true, 5*time.Minute
	for _, u := range unheard {
		st.AckUnheard = append(st.AckUnheard, fixture.Addr(u))
	}
	return a
}

// TestOneOfSeveralAsked (issue 37): mfscli -H naming one master of three
// raises no "one master only" alarm when that master names the others.
func TestOneOfSeveralAsked(t *testing.T) {
	a := three()
	for i := range a {
		for _, b := range a {
			a[i].St.Masters = append(a[i].St.Masters, b.Addr.Addr())
		}
	}
	if got := raised(a[:1]); got[AlarmSingleMaster] != nil {
		t.Fatalf("one master of three, asked alone, raises %v", got)
	}
	a[0].St.Masters = a[0].St.Masters[:1]
	if got := raised(a[:1]); got[AlarmSingleMaster] == nil {
		t.Fatalf("a master alone in its set raises %v, want %s", got, AlarmSingleMaster)
	}
}

// TestAlarms: each alarm is raised by the fault it names, and only by it,
// and cleared once the fault is gone (the healthy cluster raises none).
func TestAlarms(t *testing.T) {
	if got := raised(three()); len(got) != 0 {
		t.Fatalf("a healthy cluster raises %v", got)
	}
	for _, c := range []struct {
		kind  string
		fault func(a []Answer) []Answer
		also  string // another alarm the same fault raises too
	}{
		{AlarmTwoLeaders, func(a []Answer) []Answer {
			a[1].St.Role = roles.Leader
			return a
		}, ""},
		{AlarmSingleMaster, func(a []Answer) []Answer { return a[:1] }, ""},
		{AlarmMetadataID, func(a []Answer) []Answer {
			a[2].St.ClusterID = "0BADC0FFEE000000"
			return a
		}, ""},
		{AlarmClockOffset, func(a []Answer) []Answer {
			a[2].St.WallUnixMs = fixture.Ms(1500 * time.Millisecond)
			return a
		}, ""},
		{AlarmFollowerBehind, func(a []Answer) []Answer {
			a[1].St.MetaVersion, a[1].St.Commit = 1000, 1000
			a[1].St.Sync = roles.Delayed
			a[1].St.Behind = 532
			a[1].St.Delay = 9 * time.Second
			return a
		}, ""},
		{WarnKeep, func(a []Answer) []Answer {
			a[1].St.Keep, a[2].St.Keep = true, true
			return a
		}, ""},
		{AlarmLocationLoss, func(a []Answer) []Answer {
			// dc3 is gone: dc1 and dc2 carry the quorum, and losing either
			// would lose it.
			a[0].St.Tallies = []protocol.TallyStatus{fixture.Tally(3, "WON", fixture.Loc("dc1", 2, 2, 2), fixture.Loc("dc2", 2, 2, 2), fixture.Loc("dc3", 2, 0, 0))}
			return a
		}, ""},
		{WarnTieBreak, func(a []Answer) []Answer {
			for i := range a {
				a[i].St.Locations = a[i].St.Locations[:3] // dc3 gone from the map: two locations, no default chunkserver
			}
			a[0].St.Tallies = []protocol.TallyStatus{fixture.Tally(3, "WON", fixture.Loc("dc1", 2, 2, 2), fixture.Loc("dc2", 2, 2, 2))}
			return a
		}, AlarmLocationLoss}, // two locations, no tie-break: losing either loses the quorum
		{AlarmAckDurability, func(a []Answer) []Answer {
			// Both followers cut off from the LEADER (they still answer
			// mfscli): the ack rule falls back to this disk alone.
			return ackShort(a, 1, 2, 0, "127.0.0.12", "127.0.0.13")
		}, ""},
		{AlarmAckDurability, func(a []Answer) []Answer {
			return ackShort(a, 1, 0, 0) // MASTER_HOST re-resolved to the LEADER alone
		}, ""},
		{AlarmAckDurability, func(a []Answer) []Answer {
			return ackShort(a, 2, 2, 1, "127.0.0.13") // ACK_REPLICAS 2, one follower heard
		}, ""},
		{AlarmVersionSkew, func(a []Answer) []Answer {
			a[2].St.Version = "0.4.0"
			return a
		}, ""},
		{AlarmVersionSkew, func(a []Answer) []Answer {
			a[2].St.ProtoMin, a[2].St.Proto = 0, 0 // a master of version 2, which says no protocol
			return a
		}, ""},
		{AlarmVersionSkew, func(a []Answer) []Answer {
			for i := range a {
				a[i].St.Chunkservers[0].Version = "0.2.9" // a chunkserver not upgraded yet
			}
			return a
		}, ""},
		{AlarmVoterRecord, func(a []Answer) []Answer {
			// A damaged copy found at start: uncertain until restored.
			for i := range a {
				a[i].St.Chunkservers[1].Record = "/var/lib/mfs/chunkserver.mfs: copy 2 of 2 (bytes 4096-8191) is unreadable"
				a[i].St.Chunkservers[1].Uncertain = true
			}
			return a
		}, ""},
		{AlarmVoterRecord, func(a []Answer) []Answer {
			// Restored by the LEADER: the damage is still named.
			a[0].St.Chunkservers[1].Record = "/var/lib/mfs/chunkserver.mfs: copy 2 of 2 (bytes 4096-8191) is unreadable"
			return a
		}, ""},
		{AlarmVoterRecord, func(a []Answer) []Answer {
			a[2].St.Chunkservers[3].Uncertain = true // its record lost: no damage to name
			return a
		}, ""},
	} {
		got := raised(c.fault(three()))
		want := 1
		if c.also != "" {
			want = 2
			if _, ok := got[c.also]; !ok {
				t.Errorf("%s: %s not raised with it: %v", c.kind, c.also, got)
			}
		}
		if _, ok := got[c.kind]; !ok || len(got) != want {
			t.Errorf("%s: raised %v", c.kind, got)
		}
	}
	// AlarmKinds names each kind once.
	seen := map[string]bool{}
	for _, k := range AlarmKinds {
		if seen[k] {
			t.Errorf("%s twice in AlarmKinds", k)
		}
		seen[k] = true
	}
	if len(seen) != 15 {
		t.Errorf("%d alarm kinds, want 15: the issue's 9, ack_durability (review N7), voter_record (N1-N3), witness and witness_unheld, store_replica and store_behind", len(seen))
	}
}

// TestVoterRecordText: the alarm names the chunkserver and the file, says
// whether the voter is uncertain, and the quorum verdict names the
// uncertain voters when no quorum is held.
func TestVoterRecordText(t *testing.T) {
	a := three()
	for i := range a {
		a[i].St.Chunkservers[1].Record = "/var/lib/mfs/chunkserver.mfs: copy 2 of 2 (bytes 4096-8191) is unreadable"
		a[i].St.Chunkservers[1].Uncertain = true
	}
	text := textOf(a, AlarmVoterRecord)
	cs := a[0].St.Chunkservers[1]
	for _, want := range []string{fmt.Sprintf("%s:%d (id %d)", cs.Addr, cs.Port, cs.ID), "/var/lib/mfs/chunkserver.mfs", "UNCERTAIN"} {
		if !strings.Contains(text, want) {
			t.Errorf("alarm %q does not say %q", text, want)
		}
	}
	if v := Build(a, "mfsmaster", fixture.T0).Quorum.Verdict; strings.Contains(v, "uncertain") {
		t.Errorf("a quorum held, yet the verdict names uncertain voters: %q", v)
	}
	a[0].St.Tallies = []protocol.TallyStatus{fixture.Tally(3, "LOST", fixture.Loc("dc1", 2, 1, 1), fixture.Loc("dc2", 2, 0, 0), fixture.Loc("dc3", 2, 0, 0))}
	if v := Build(a, "mfsmaster", fixture.T0).Quorum.Verdict; !strings.Contains(v, "1 chunkserver(s) uncertain") || !strings.Contains(v, "-CTRUST") {
		t.Errorf("no quorum held and an uncertain voter, yet the verdict: %q", v)
	}
}

// TestAckDurabilityText: the alarm names the LEADER, the copies against
// ACK_REPLICAS, since when (the LEADER's clock), the cause and the fix;
// -SIM and -SLQ both print it. A LEADER that does not say (an older
// version), or says its copies are enough, raises nothing.
func TestAckDurabilityText(t *testing.T) {
	for _, c := range []struct {
		answers []Answer
		want    string
	}{
		{ackShort(three(), 1, 2, 0, "127.0.0.12", "127.0.0.13"), "ALARM: the LEADER 127.0.0.11 acknowledges changes on 0 of ACK_REPLICAS=1 follower copies, " +
			"for 5m0s (since 2026-03-14 09:55:00 UTC by its clock): it has not heard 127.0.0.12, 127.0.0.13 within PEER_TIMEOUT; " +
			"a loss of its disk now loses acknowledged changes: bring a follower master back, or check MASTER_HOST (mfscli -CMR resolves it again); " +
			"with one master on purpose, set ACK_REPLICAS = 0"},
		{ackShort(three(), 1, 0, 0), "follower copies, for 5m0s (since 2026-03-14 09:55:00 UTC by its clock): its MASTER_HOST names no other master;"},
		{ackShort(three(), 3, 2, 2), "on 2 of ACK_REPLICAS=3 follower copies, for 5m0s (since 2026-03-14 09:55:00 UTC by its clock): its MASTER_HOST names 2 other master(s);"},
	} {
		if got := textOf(c.answers, AlarmAckDurability); !strings.Contains(got, c.want) {
			t.Errorf("text %q, want it to hold %q", got, c.want)
		}
	}
	if !slices.Contains(SIMAlarms, AlarmAckDurability) || !slices.Contains(SLQAlarms, AlarmAckDurability) {
		t.Errorf("%s not printed under both -SIM %v and -SLQ %v", AlarmAckDurability, SIMAlarms, SLQAlarms)
	}
	old := three()
	old[0].St.AckKnown, old[0].St.AckRequired, old[0].St.AckFollowers, old[0].St.AckReplicas = false, 0, 0, 0
	if got := raised(old); len(got) != 0 {
		t.Errorf("a LEADER that says nothing of its copies raises %v", got)
	}
	follower := ackShort(three(), 1, 2, 0, "127.0.0.12")
	follower[0].St.Role = roles.Follower // an answer built after it stepped down says FOLLOWER
	if _, ok := raised(follower)[AlarmAckDurability]; ok {
		t.Errorf("raised for a master that is not LEADER")
	}
}
