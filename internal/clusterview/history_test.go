package clusterview

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestHistorySource: the history listed is the LEADER's; without one, the
// answer with the highest commit, then the most records, then the lower
// address, whatever the answers' order; none when no master answered.
func TestHistorySource(t *testing.T) {
	with := func(ip string, role roles.Role, commit uint64, records int) Answer {
		st := fixture.Master(ip, role, 7, commit)
		fixture.WithHistory(&st, fixture.Elected(-time.Hour, "127.0.0.11", 7, "", changelog.WhyNoLeader)...)
		st.HistoryTotal = records
		return Answer{Addr: fixture.At(ip), St: st}
	}
	down := Answer{Addr: fixture.At("127.0.0.10"), Err: errUnreachable}
	for _, c := range []struct {
		name    string
		answers []Answer
		want    string
	}{
		{"the LEADER, though behind", []Answer{with("127.0.0.12", roles.Follower, 900, 30), with("127.0.0.11", roles.Leader, 800, 20)}, "127.0.0.11"},
		{"the highest commit", []Answer{with("127.0.0.11", roles.Follower, 800, 30), down, with("127.0.0.13", roles.Elect, 900, 20)}, "127.0.0.13"},
		{"then the most records", []Answer{with("127.0.0.11", roles.Follower, 900, 20), with("127.0.0.12", roles.Follower, 900, 30)}, "127.0.0.12"},
		{"then the lower address", []Answer{with("127.0.0.12", roles.Follower, 900, 30), with("127.0.0.11", roles.Follower, 900, 30)}, "127.0.0.11"},
		{"nobody answered", []Answer{down}, ""},
	} {
		ds := Build(c.answers, "mfsmaster", fixture.T0)
		got := ""
		if ds.HistoryInfo.Source.IP.IsValid() {
			got = ds.HistoryInfo.Source.IP.String()
		}
		if got != c.want {
			t.Errorf("%s: the history of %q, want %q", c.name, got, c.want)
		}
		if got != "" && len(ds.History) != 2 {
			t.Errorf("%s: %d rows, want the source's 2", c.name, len(ds.History))
		}
		if ds.History == nil || ds.HistoryInfo.LeaderChanges == nil || ds.HistoryInfo.Unrecorded == nil {
			t.Errorf("%s: a nil list or map (null in JSON)", c.name)
		}
	}
}

// TestHistoryRows: a record becomes a row as the masters sent it, its
// role names with their tones (a name this version does not know gets
// none); the LEADER changes are the source's, summed; masters with role
// changes not in the history are named, by address, in one note.
func TestHistoryRows(t *testing.T) {
	as := three()
	won := fixture.Won(-time.Minute, "127.0.0.11", 7, "127.0.0.12", changelog.WhyRefused, fixture.Votes("dc1", 2, 2), fixture.Votes("dc2", 1, 2))
	odd := fixture.Change(0, "127.0.0.13", roles.Follower, roles.Elect, 8, roles.ReasonNominated, "§3.1")
	odd.UnixMs, odd.To = 0, "NEWROLE"
	fixture.WithHistory(&as[0].St, won, odd)
	as[0].St.LeaderChanges = map[string]uint64{changelog.WhyRefused: 3, changelog.WhyHandover: 2}
	as[2].St.HistoryWaiting, as[2].St.HistoryLost = 1, 4
	as[1].St.HistoryWaiting = 2
	ds := Build(as, "mfsmaster", fixture.T0)

	want := HistoryRow{TimeMs: fixture.Ms(-time.Minute), IP: fixture.Addr("127.0.0.11"), MasterID: won.MasterID, From: "ELECT", To: "LEADER",
		Epoch: 7, Reason: "quorum-won", Section: "§3.4", Votes: []LocVotes{{"dc1", 2, 2}, {"dc2", 1, 2}},
		Deposed: fixture.Addr("127.0.0.12"), DeposedID: won.DeposedID, Why: changelog.WhyRefused, FromTone: ToneElect, ToTone: ToneLeader}
	if len(ds.History) != 2 || !reflect.DeepEqual(ds.History[0], want) {
		t.Fatalf("rows %+v\nwant first %+v", ds.History, want)
	}
	if r := ds.History[1]; r.TimeMs != 0 || r.FromTone != ToneFollower || r.ToTone != ToneNone || r.Votes == nil || r.Deposed.IsValid() {
		t.Errorf("a record without time or votes, to a role not known: %+v", r)
	}
	h := ds.HistoryInfo
	if h.Source.IP != fixture.Addr("127.0.0.11") || h.Source.State != "LEADER" || h.Held != 2 || h.LeaderChangesTotal != 5 {
		t.Errorf("info %+v", h)
	}
	if got := Causes(h.LeaderChanges); !reflect.DeepEqual(got, []string{changelog.WhyRefused, changelog.WhyHandover}) {
		t.Errorf("causes in the order %q, want the most frequent first", got)
	}
	wantU := []UnrecordedRow{{fixture.Addr("127.0.0.12"), 2, 0}, {fixture.Addr("127.0.0.13"), 1, 4}}
	if !reflect.DeepEqual(h.Unrecorded, wantU) {
		t.Errorf("unrecorded %+v, want %+v", h.Unrecorded, wantU)
	}
	for _, part := range []string{"2 role changes of 127.0.0.12, until a LEADER writes them", "1 role change of 127.0.0.13, until a LEADER writes it", "4 role change(s) of 127.0.0.13, lost"} {
		if !strings.Contains(h.Note, part) {
			t.Errorf("the note lacks %q: %s", part, h.Note)
		}
	}
	if Build(three(), "mfsmaster", fixture.T0).HistoryInfo.Note != "" {
		t.Error("a note while every role change is in the history")
	}
}

// TestHistoryDocument: the history is in the document when asked for (and
// in every part the masters' /api/v1/status serves), absent otherwise.
func TestHistoryDocument(t *testing.T) {
	ds := Build(three(), "mfsmaster", fixture.T0)
	if d := NewDocument(ds, nil, AllParts, "0.3.0", fixture.T0).Dataset; d.History == nil || d.HistoryInfo == nil {
		t.Error("AllParts without the history")
	}
	if d := NewDocument(ds, nil, Parts{Masters: true}, "0.3.0", fixture.T0).Dataset; d.History != nil || d.HistoryInfo != nil {
		t.Error("the history without -SLH")
	}
	if RoleNameTone(roles.Usurper.String()) != RoleTone(protocol.StatusResp{Role: roles.Usurper, Sync: roles.Synced}) {
		t.Error("a USURPER in the history is not coloured as a synced USURPER")
	}
}

// TestHistoryByTime: rows are listed by time, though the history holds a
// deposed LEADER's own step-down after its successor's election (it waits
// in its status until a LEADER writes it); a record of unknown time stays
// after the one written before it.
func TestHistoryByTime(t *testing.T) {
	as := three()
	elect := fixture.Change(-50*time.Second, "127.0.0.12", roles.Follower, roles.Elect, 8, roles.ReasonNominated, "§3.1")
	won := fixture.Won(-49*time.Second, "127.0.0.12", 8, "127.0.0.11", changelog.WhyLeaseLapsed)
	lost := fixture.Change(-51*time.Second, "127.0.0.11", roles.Leader, roles.Follower, 7, roles.ReasonQuorumLost, "§3.8")
	unknown := fixture.Change(0, "127.0.0.13", roles.Follower, roles.Elect, 8, roles.ReasonNominated, "§3.1")
	unknown.UnixMs = 0
	fixture.WithHistory(&as[0].St, elect, won, lost, unknown)
	ds := Build(as, "mfsmaster", fixture.T0)
	var got []string
	for _, r := range ds.History {
		got = append(got, r.IP.String()+" "+r.From+"->"+r.To)
	}
	want := []string{"127.0.0.11 LEADER->FOLLOWER", "127.0.0.13 FOLLOWER->ELECT", "127.0.0.12 FOLLOWER->ELECT", "127.0.0.12 ELECT->LEADER"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// TestHistoryWitness: a record's witness part comes through to its row
// and its JSON (witness, lease_epoch); the votes say "+ witness
// lease_epoch N" where the change relied on the lease and "+ no witness
// lease" on an exact half without it; a LEADER that left on half without
// the lease says so in its reason; a record without a witness, or one the
// lease had no part in, says nothing of it.
func TestHistoryWitness(t *testing.T) {
	as := three()
	won := fixture.Won(-time.Minute, "127.0.0.11", 7, "127.0.0.12", changelog.WhyLeaseLapsed, fixture.Votes("a", 2, 2), fixture.Votes("b", 0, 2))
	won.Witness, won.LeaseEpoch = changelog.WitnessRelied, 7
	left := fixture.Change(-61*time.Second, "127.0.0.12", roles.Leader, roles.Follower, 6, roles.ReasonQuorumLost, "§3.8", fixture.Votes("a", 0, 2), fixture.Votes("b", 2, 2))
	left.Witness = changelog.WitnessNoLease
	first := fixture.Won(-time.Hour, "127.0.0.12", 6, "", changelog.WhyNoLeader, fixture.Votes("a", 2, 2), fixture.Votes("b", 2, 2))
	first.Witness = changelog.WitnessUnused
	plain := fixture.Won(-2*time.Hour, "127.0.0.13", 5, "", changelog.WhyNoLeader, fixture.Votes("a", 2, 2), fixture.Votes("b", 2, 2))
	fixture.WithHistory(&as[0].St, plain, first, left, won)
	ds := Build(as, "mfsmaster", fixture.T0)
	if len(ds.History) != 4 {
		t.Fatalf("%d rows, want 4", len(ds.History))
	}
	for i, c := range []struct{ witness, votes, reason string }{
		{"", "", "quorum-won §3.4"},
		{changelog.WitnessUnused, "", "quorum-won §3.4"},
		{changelog.WitnessNoLease, "+ no witness lease", "quorum-lost §3.8: half, no witness lease"},
		{changelog.WitnessRelied, "+ witness lease_epoch 7", "quorum-won §3.4"},
	} {
		r := ds.History[i]
		if r.Witness != c.witness || r.WitnessVotes() != c.votes || r.ReasonText() != c.reason {
			t.Errorf("row %d: witness %q votes %q reason %q, want %q %q %q", i, r.Witness, r.WitnessVotes(), r.ReasonText(), c.witness, c.votes, c.reason)
		}
	}
	if ds.History[3].LeaseEpoch != 7 || ds.History[2].LeaseEpoch != 0 {
		t.Errorf("lease_epoch %d and %d, want 7 (relied) and 0", ds.History[3].LeaseEpoch, ds.History[2].LeaseEpoch)
	}
	b, err := json.Marshal(ds.History[3])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"witness":"relied","lease_epoch":7`) {
		t.Errorf("JSON %s: no witness part", b)
	}
}
