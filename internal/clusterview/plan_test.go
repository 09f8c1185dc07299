package clusterview

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// withVotes is three() where the LEADER counts the votes of the
// chunkservers in mask (bit id-1) only, its reported count made to match.
func withVotes(mask int) []Answer {
	as := three()
	voting := func(id wire.CSID) bool { return mask&(1<<(id-1)) != 0 }
	st := &as[0].St
	st.Chunkservers = fixture.RegistryOf(fixture.All, voting)
	var locs []protocol.LocTally
	won := 0
	for loc := 1; loc <= 3; loc++ {
		n := 0
		for k := 1; k <= 2; k++ {
			if voting(wire.CSID(2*(loc-1) + k)) {
				n++
			}
		}
		l := fixture.Loc(fmt.Sprintf("dc%d", loc), 2, 2, n)
		if l.Carried {
			won++
		}
		locs = append(locs, l)
	}
	outcome := "PENDING"
	if won >= 2 {
		outcome = "WON"
	}
	st.Tallies, st.HoldsQuorum = []protocol.TallyStatus{fixture.Tally(3, outcome, locs...)}, outcome == "WON"
	return as
}

// TestPlanAgreesWithAlarm: for every way the six chunkservers can vote,
// the locations whose loss the plan says leaves no LEADER are the ones
// the location_loss alarm names (it applies quorum.Wins to the count the
// LEADER reports); the plan's count agrees with the LEADER's (no note);
// and each location's safe loss is exact: losing that many of its
// chunkservers, the voting ones first, keeps the quorum, one more does
// not.
func TestPlanAgreesWithAlarm(t *testing.T) {
	losing := 0
	for mask := 0; mask < 1<<6; mask++ {
		as := withVotes(mask)
		p := PlanOf(as)
		if !as[0].St.HoldsQuorum {
			if p.Leader.IP.IsValid() {
				t.Errorf("votes %06b: a plan without a LEADER holding quorum: %+v", mask, p)
			}
			continue
		}
		if len(p.Notes) > 0 {
			t.Errorf("votes %06b: %v", mask, p.Notes)
		}
		var lose []string
		for _, f := range p.Failures {
			if f.Kind == FailLocation && !f.Keeps {
				lose = append(lose, f.Name)
			}
		}
		var alarm []string
		for _, w := range Build(as, "mfsmaster", fixture.T0).Warnings {
			if w.Kind == AlarmLocationLoss {
				// "ALARM: losing location dc1 or dc2 (all of its ..."
				names, _, _ := strings.Cut(strings.TrimPrefix(w.Text, "ALARM: losing location "), " (")
				alarm = strings.Split(names, " or ")
			}
		}
		if !slices.Equal(alarm, lose) {
			t.Errorf("votes %06b: the plan loses %v, the alarm %v", mask, lose, alarm)
		}
		if len(lose) > 0 {
			losing++
		}
		lv, _ := liveOf(as[0].St)
		for _, l := range p.Locations {
			for k := 0; k <= l.Registered; k++ {
				gone := lostOf(lv, l.Name, k)
				kept := tallyWith(lv.cfg, func(id wire.CSID) bool { return lv.votes[id] && !gone[id] }).Outcome.String() == "WON"
				if kept != (k <= l.SafeLoss) {
					t.Errorf("votes %06b: %s may lose %d, yet losing %d keeps the quorum: %v", mask, l.Name, l.SafeLoss, k, kept)
				}
			}
		}
	}
	if losing == 0 {
		t.Error("no vote pattern has a location whose loss loses the quorum: the comparison compared nothing")
	}
}

// lostOf is k chunkservers of the location, those voting for the LEADER
// first (the worst k).
func lostOf(lv live, name string, k int) map[wire.CSID]bool {
	var in []wire.CSID
	for _, m := range lv.cfg.Members {
		if locName(lv.cfg, lv.cfg.Locations.Locate(m.Addr)) == name {
			in = append(in, m.ID)
		}
	}
	slices.SortStableFunc(in, func(a, b wire.CSID) int {
		switch {
		case lv.votes[a] == lv.votes[b]:
			return 0
		case lv.votes[a]:
			return -1
		}
		return 1
	})
	gone := map[wire.CSID]bool{}
	for _, id := range in[:k] {
		gone[id] = true
	}
	return gone
}

// TestPlanNotes: a count that differs from the LEADER's, and a map that
// cannot be rebuilt, are said, not planned over.
func TestPlanNotes(t *testing.T) {
	as := three()
	as[0].St.Tallies[0].Locations[2].Registered = 1 // as if it counted without one of dc3 (-CTR)
	if p := PlanOf(as); len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "is not the one 127.0.0.11 reports") {
		t.Errorf("a count that differs: %v", p.Notes)
	}
	as = three()
	as[0].St.Locations = nil
	if p := PlanOf(as); len(p.Failures) != 0 || !strings.Contains(p.Verdict, "cannot be rebuilt") {
		t.Errorf("no location map: %+v", p)
	}
}

// TestDryRunMatchesLeaderRules: the dry run refuses what the LEADER
// refuses (removing a chunkserver still connected to it, an invalid
// change, one under which its votes are no quorum) and accepts the rest.
func TestDryRunMatchesLeaderRules(t *testing.T) {
	as := withVotes(0b001111) // dc3 is not carried
	for _, c := range []struct {
		cmd    string
		change registry.Change
		want   string // "" accepted
	}{
		{"-COFF/dc3", registry.Change{Kind: registry.ChangeSetOn, Name: "dc3"}, ""},
		{"-CMAP/127.0.4.0/24/dc4", registry.Change{Kind: registry.ChangeMapRange, Prefix: netip.MustParsePrefix("127.0.4.0/24"), Name: "dc4"}, ""},
		{"-CRC/127.0.1.1/9422", registry.Change{Kind: registry.ChangeRemove, ID: 1}, "still active"},
		{"-CDEF/nowhere", registry.Change{Kind: registry.ChangeSetDefault, Name: "nowhere"}, `unknown location "nowhere"`},
		{"-COFF/dc1", registry.Change{Kind: registry.ChangeSetOn, Name: "dc1"}, "would not make a quorum"},
	} {
		d := DryRunChange(as, c.cmd, c.change)
		if (c.want == "") != d.Accepted || !strings.Contains(d.Refused, c.want) || d.Sent {
			t.Errorf("%s: accepted %v, refused %q, sent %v; want %q", c.cmd, d.Accepted, d.Refused, d.Sent, c.want)
		}
	}
}
