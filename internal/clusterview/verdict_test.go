package clusterview

import (
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

func counting(role roles.Role, ts ...protocol.TallyStatus) Answer {
	st := fixture.Master("127.0.0.12", role, 8, 100)
	st.Tallies = ts
	if len(ts) > 1 {
		st.InForce = ts[len(ts)-1].Config
	}
	return Answer{Addr: fixture.At("127.0.0.12"), St: st}
}

func withDefault(l protocol.LocTally) protocol.LocTally { l.Default = true; return l }

// TestVerdict: the quorum line for each shape of count.
func TestVerdict(t *testing.T) {
	cases := []struct {
		name string
		a    Answer
		want string
	}{
		{"held, divided", counting(roles.Leader, fixture.Tally(3, "WON", fixture.Loc("a", 3, 3, 3), fixture.Loc("b", 3, 2, 2), fixture.Loc("c", 3, 1, 1))),
			"quorum held by LEADER 127.0.0.12 (2 of 3 locations carried, needs 2; not carried: location c: 1 of 3 chunkservers reach it, needs 2)"},
		{"held, one location", counting(roles.Leader, fixture.Tally(3, "WON", fixture.Loc("default", 5, 4, 3))),
			"quorum held by LEADER 127.0.0.12 (3 of 5 chunkservers vote for it, needs 3)"},
		{"the brief's example", counting(roles.Elect, fixture.Tally(3, "PENDING", fixture.Loc("a", 3, 3, 2), fixture.Loc("b", 3, 1, 1), fixture.Loc("c", 3, 1, 0))),
			"no quorum for ELECT 127.0.0.12: location b: 1 of 3 chunkservers reach it, needs 2; location c: 1 of 3 chunkservers reach it, needs 2; 1 of 3 locations carried, needs 2"},
		{"reached, votes elsewhere", counting(roles.Elect, fixture.Tally(3, "PENDING", fixture.Loc("default", 4, 4, 1))),
			"no quorum for ELECT 127.0.0.12: location default: 4 of 4 chunkservers reach it but 1 of their votes are counted, needs 3"},
		{"tie-break available", counting(roles.Elect, fixture.Tally(3, "PENDING", fixture.Loc("a", 2, 2, 2), withDefault(fixture.Loc("d", 2, 1, 1)), fixture.Loc("b", 2, 0, 0), fixture.Loc("c", 2, 0, 0))),
			"no quorum for ELECT 127.0.0.12: location d: 1 of 2 chunkservers reach it, needs 2; location b: 0 of 2 chunkservers reach it, needs 2; location c: 0 of 2 chunkservers reach it, needs 2; 1 of 4 locations carried, needs 3, or 2 with the default location d"},
		{"tie-break used", counting(roles.Leader, fixture.Tally(3, "WON", fixture.Loc("a", 2, 2, 2), withDefault(fixture.Loc("d", 2, 2, 2)), fixture.Loc("b", 2, 0, 0), fixture.Loc("c", 2, 0, 0))),
			"quorum held by LEADER 127.0.0.12 (2 of 4 locations carried, needs 2 (half, with the default location d); not carried: location b: 0 of 2 chunkservers reach it, needs 2; location c: 0 of 2 chunkservers reach it, needs 2)"},
		{"empty", counting(roles.Elect, protocol.TallyStatus{Config: 3, Outcome: "LOST", Empty: true}),
			"no quorum for ELECT 127.0.0.12: no chunkserver is registered in a location that is ON"},
		{"no config", counting(roles.Deputy),
			"no quorum for DEPUTY 127.0.0.12: it reports no count (it holds no registry config)"},
		{"in flight, one lost", counting(roles.Leader, fixture.Tally(5, "PENDING", fixture.Loc("a", 3, 1, 1)), fixture.Tally(4, "WON", fixture.Loc("a", 2, 2, 2))),
			"no quorum for LEADER 127.0.0.12: config 5 is being put in force (in force: 4), both counts must be won. Config 5: location a: 1 of 3 chunkservers reach it, needs 2. Config 4: won (2 of 2 chunkservers vote for it, needs 2)"},
	}
	for _, c := range cases {
		if got := verdict(c.a); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestNoCounter: without a LEADER, ELECT or DEPUTY the verdict lists every
// master's state.
func TestNoCounter(t *testing.T) {
	f := fixture.Follower("127.0.0.12", 7, 10, 0)
	f.Sync = roles.Desync
	answers := []Answer{{Addr: fixture.At("127.0.0.11"), Err: errUnreachable}, {Addr: fixture.At("127.0.0.12"), St: f}}
	q := quorumOf(answers, VoteCounter(answers))
	want := "no LEADER or ELECT counts votes: 127.0.0.11 UNREACHABLE, 127.0.0.12 FOLLOWER (DESYNC)"
	if q.Held || q.Verdict != want {
		t.Errorf("got %v %q, want %q", q.Held, q.Verdict, want)
	}
	rows := locRows(ChooseView(answers), nil)
	if len(rows) != 4 || rows[1].LocCount != nil || !rows[1].Participating || rows[0].Participating {
		t.Errorf("locations without a count: %+v", rows)
	}
}

// TestVoteCounter: the LEADER, else the ELECT, else a DEPUTY.
func TestVoteCounter(t *testing.T) {
	mk := func(ip string, r roles.Role, epoch uint64) Answer {
		return Answer{Addr: fixture.At(ip), St: fixture.Master(ip, r, epoch, 1)}
	}
	cases := []struct {
		answers []Answer
		want    string
	}{
		{[]Answer{mk("127.0.0.1", roles.Deputy, 9), mk("127.0.0.2", roles.Elect, 3), mk("127.0.0.3", roles.Leader, 2)}, "127.0.0.3"},
		{[]Answer{mk("127.0.0.1", roles.Deputy, 9), mk("127.0.0.2", roles.Elect, 3)}, "127.0.0.2"},
		{[]Answer{mk("127.0.0.1", roles.Follower, 9), mk("127.0.0.2", roles.Deputy, 3)}, "127.0.0.2"},
		{[]Answer{mk("127.0.0.1", roles.Follower, 9), mk("127.0.0.2", roles.Usurper, 3)}, ""},
	}
	for i, c := range cases {
		got := ""
		if a := VoteCounter(c.answers); a != nil {
			got = a.Addr.Addr().String()
		}
		if got != c.want {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
}

// TestGrades: clock offsets and delays against MooseFS's thresholds.
func TestGrades(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		off  Level
		wait Level
	}{
		{0, LevelOK, LevelOK}, {time.Second, LevelOK, LevelOK}, {-1500 * time.Millisecond, LevelWarn, LevelWarn},
		{2 * time.Second, LevelWarn, LevelWarn}, {-2001 * time.Millisecond, LevelFlag, LevelWarn}, {7 * time.Second, LevelFlag, LevelFlag},
	} {
		if o, w := grade(c.d, OffsetWarn, OffsetFlag), grade(c.d, DelayWarn, DelayFlag); o != c.off || w != c.wait {
			t.Errorf("%v: offset %v delay %v", c.d, o, w)
		}
	}
}
