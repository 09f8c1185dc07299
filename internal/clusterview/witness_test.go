package clusterview

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

const wid = "w-00112233445566aa"

// twoSites is three() on two locations (dc3 gone from the map) with a
// witness named and every master's store passed its self-test: the
// LEADER carries both, nobody needs the lease.
func twoSites() []Answer {
	a := three()
	for i := range a {
		st := &a[i].St
		st.Locations = st.Locations[:3]
		st.Chunkservers = st.Chunkservers[:4]
		st.Witness = &protocol.WitnessStatus{ID: wid, Endpoint: "http://10.0.3.5:7070", Bucket: "b-1", Prefix: "mfs", SelfTest: protocol.WitnessSelfTestPassed}
	}
	t := fixture.Tally(4, "WON", fixture.Loc("dc1", 2, 2, 2), fixture.Loc("dc2", 2, 2, 2))
	t.Witness = true
	a[0].St.Tallies = []protocol.TallyStatus{t}
	return a
}

// elect makes 127.0.0.11 an ELECT that carries dc1 only, exactly half.
func elect(a []Answer) []Answer {
	st := &a[0].St
	st.Role, st.HoldsQuorum = roles.Elect, false
	t := fixture.Tally(4, "PENDING", fixture.Loc("dc1", 2, 2, 2), fixture.Loc("dc2", 2, 0, 0))
	t.Witness = true
	st.Tallies = []protocol.TallyStatus{t}
	return a
}

// TestWitnessAlarms: with a witness named, an even split raises neither
// no_tie_break nor location_loss while the LEADER can take the lease; the
// witness alarm names each master that cannot use it for good (no store,
// a failed self-test, calls failing for WitnessFailing, a lease object
// it cannot use, stores that differ) and nothing passing (a self-test
// running, calls failing for less); witness_unheld, an ELECT on half of
// the locations that holds no lease.
func TestWitnessAlarms(t *testing.T) {
	if got := raised(twoSites()); len(got) != 0 {
		t.Fatalf("two sites with a witness raise %v", got)
	}
	line := Build(twoSites(), "mfsmaster", fixture.T0).Quorum.Witness.Line
	if line != "witness: "+wid+" (s3 http://10.0.3.5:7070 b-1/mfs) not held" {
		t.Errorf("line %q", line)
	}
	for _, c := range []struct {
		name    string
		fault   func(a []Answer) []Answer
		kinds   []string
		masters []string
		text    string
	}{
		{"no store", func(a []Answer) []Answer { a[2].St.Witness.Endpoint = ""; return a }, []string{AlarmWitness}, []string{"127.0.0.13"}, "127.0.0.13 has no store"},
		{"no section", func(a []Answer) []Answer { a[1].St.Witness = nil; return a }, []string{AlarmWitness}, []string{"127.0.0.12"}, "127.0.0.12 has no store"},
		{"self-test failed", func(a []Answer) []Answer { a[1].St.Witness.SelfTest = "501 NotImplemented"; return a },
			[]string{AlarmWitness}, []string{"127.0.0.12"}, "the store of 127.0.0.12 failed its self-test: 501 NotImplemented"},
		{"self-test running", func(a []Answer) []Answer { a[1].St.Witness.SelfTest = ""; return a }, nil, nil, ""},
		// The LEADER's calls fail now: losing a site would cost the quorum
		// (location_loss says so at once), but the witness alarm waits.
		{"calls failing briefly", func(a []Answer) []Answer { a[0].St.Witness.FailingFor = 3 * time.Second; return a }, []string{AlarmLocationLoss}, nil, "-"},
		{"calls failing", func(a []Answer) []Answer {
			w := a[0].St.Witness
			w.FailingFor, w.LastOp, w.LastResult, w.LastError = 12*time.Second, "swap", "refused", "AccessDenied"
			return a
		}, []string{AlarmWitness, AlarmLocationLoss}, []string{"127.0.0.11"}, "the calls of 127.0.0.11 on the store have failed for 12s (swap refused: AccessDenied)"},
		{"another cluster's object", func(a []Answer) []Answer {
			a[2].St.Witness.Blocked = `the lease object belongs to cluster "X", this is "Y": one bucket prefix per cluster`
			return a
		}, []string{AlarmWitness}, []string{"127.0.0.13"}, "127.0.0.13 cannot take the lease: the lease object belongs to cluster"},
		{"a wait is no alarm", func(a []Answer) []Answer {
			a[2].St.Witness.Blocked = "lease_epoch 9 written by M1; this master is at epoch 7"
			return a
		}, nil, nil, ""},
		{"stores differ", func(a []Answer) []Answer { a[2].St.Witness.Prefix = "mfs2"; return a }, []string{AlarmWitness}, nil, "the masters name different stores"},
		{"unheld", elect, []string{AlarmWitnessUnheld}, []string{"127.0.0.11"}, "ALARM: no LEADER: ELECT 127.0.0.11 carries half of the locations; the witness's lease is being asked for"},
		{"unheld, store down", func(a []Answer) []Answer {
			a = elect(a)
			w := a[0].St.Witness
			w.FailingFor, w.LastOp, w.LastResult, w.LastError = 30*time.Second, "get", "ambiguous", "timeout"
			return a
		}, []string{AlarmWitnessUnheld, AlarmWitness}, []string{"127.0.0.11"}, "ALARM: no LEADER: ELECT 127.0.0.11 carries half of the locations, and the witness's store does not answer (get ambiguous: timeout): nobody may lead until it does or the other site returns"},
	} {
		a := c.fault(twoSites())
		got := raised(a)
		var kinds []string
		for k := range got {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		want := slices.Clone(c.kinds)
		slices.Sort(want)
		if !slices.Equal(kinds, want) {
			t.Errorf("%s: raised %v, want %v", c.name, kinds, want)
			continue
		}
		if len(c.kinds) == 0 || c.text == "-" {
			continue
		}
		if c.masters != nil {
			var ms []string
			for _, m := range got[c.kinds[0]] {
				ms = append(ms, m.String())
			}
			if !slices.Equal(ms, c.masters) {
				t.Errorf("%s: masters %v, want %v", c.name, ms, c.masters)
			}
		}
		all := textOf(a, AlarmWitness) + "\n" + textOf(a, AlarmWitnessUnheld)
		if !strings.Contains(all, c.text) {
			t.Errorf("%s: %q not in\n%s", c.name, c.text, all)
		}
	}
	// Without a witness named, a store that fails raises nothing, and the
	// even split is the tie warning's.
	a := twoSites()
	for i := range a {
		a[i].St.Witness.ID = ""
		a[i].St.Witness.SelfTest = "failed"
	}
	a[0].St.Tallies[0].Witness = false
	got := raised(a)
	_, tie := got[WarnTieBreak]
	if _, loss := got[AlarmLocationLoss]; len(got) != 2 || !tie || !loss {
		t.Errorf("no witness named: %v, want the tie warning and location_loss", got)
	}
}

// TestHalfReason: what the verdict says stands between a half of the
// locations and the lease.
func TestHalfReason(t *testing.T) {
	ok := func() *protocol.WitnessStatus {
		return &protocol.WitnessStatus{ID: wid, Endpoint: "http://s", Bucket: "b-1", SelfTest: protocol.WitnessSelfTestPassed}
	}
	for _, c := range []struct {
		w    func() *protocol.WitnessStatus
		want string
	}{
		{func() *protocol.WitnessStatus { return nil }, "and it has no witness store (WITNESS_ENDPOINT is not set on it): this master cannot take the witness's lease"},
		{func() *protocol.WitnessStatus { w := ok(); w.SelfTest = ""; return w }, "self-test has not finished"},
		{func() *protocol.WitnessStatus { w := ok(); w.SelfTest = "racy"; return w }, "failed its self-test: racy"},
		{func() *protocol.WitnessStatus { w := ok(); w.NotUsed = "started without metadata (-e)"; return w }, "does not use its witness store"},
		{func() *protocol.WitnessStatus {
			w := ok()
			w.FailingFor, w.LastOp, w.LastResult, w.LastError = time.Second, "swap", "refused", "AccessDenied"
			return w
		}, "the witness's store refuses this master (swap refused: AccessDenied): nobody may lead until that is fixed or the other site returns"},
		{func() *protocol.WitnessStatus {
			w := ok()
			w.Waiting, w.Known, w.RecordHolder, w.RecordEpoch = true, true, netip.MustParseAddr("10.0.0.12"), 9
			return w
		}, "the witness's lease is held by 10.0.0.12 (lease_epoch 9): it is taken once that record has stood unchanged for WITNESS_LEASE"},
		{func() *protocol.WitnessStatus { w := ok(); w.Blocked = "lease_epoch 9 written by M2"; return w }, "cannot be taken yet: lease_epoch 9 written by M2"},
		{ok, "is being asked for"},
	} {
		if got := halfReason(c.w()); !strings.HasPrefix(got, "half of the locations") || !strings.Contains(got, c.want) {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// TestMarginOfWitness: marginOf of a count with a witness is the fewest
// votes whose loss ends the win, found by trying every set of votes, on
// random registries of up to four locations, with and without the lease.
func TestMarginOfWitness(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for n := 0; n < 400; n++ {
		m := locations.New()
		locs := 2 + r.IntN(3)
		var members []locations.Member
		id := wire.CSID(1)
		for l := 0; l < locs; l++ {
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(l + 1), 0, 0}), 16)
			var err error
			if m, err = m.MapRange(p, "l"+string(rune('a'+l))); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 1+r.IntN(3); k++ {
				members = append(members, locations.Member{ID: id, Addr: p.Addr().Next()})
				id++
			}
		}
		e := quorum.NewElectorate(m, members).WithWitness(true)
		votes := map[wire.CSID]bool{}
		for _, mb := range members {
			votes[mb.ID] = r.IntN(4) > 0
		}
		lease := quorum.Unknown
		if r.IntN(2) == 0 {
			lease = quorum.For
		}
		count := func(lost map[wire.CSID]bool) quorum.Tally {
			return e.TallyWitness(func(id wire.CSID) quorum.Vote {
				if votes[id] && !lost[id] {
					return quorum.For
				}
				return quorum.Unknown
			}, lease)
		}
		tl := count(nil)
		got, _ := marginOf(tl)
		var voting []wire.CSID
		for _, mb := range members {
			if votes[mb.ID] {
				voting = append(voting, mb.ID)
			}
		}
		want := -1
		if tl.Outcome == quorum.Won {
			want = len(voting) // losing every vote always ends it
			for mask := 0; mask < 1<<len(voting); mask++ {
				lost := map[wire.CSID]bool{}
				k := 0
				for i, v := range voting {
					if mask&(1<<i) != 0 {
						lost[v], k = true, k+1
					}
				}
				if k <= want && count(lost).Outcome != quorum.Won {
					want = k
				}
			}
			want--
		}
		if got != want {
			t.Fatalf("case %d (%d locations, lease %v): marginOf %d, brute force %d: %v", n, locs, lease, got, want, tl)
		}
	}
}

// TestWitnessViewWrite: the view names the master whose write the store
// took last (the youngest age any answer gives) and the holder's last
// call; the line says how long ago the holder wrote while it holds the
// lease; a master's own section carries its age.
func TestWitnessViewWrite(t *testing.T) {
	a := twoSites()
	a[0].St.Witness.Held, a[0].St.Witness.RecordEpoch = true, 9
	a[0].St.Witness.LastWriteAge, a[0].St.Witness.LastLatency = 2500*time.Millisecond, 31*time.Millisecond
	a[1].St.Witness.LastWriteAge = time.Hour // an older holder's last write
	ds := Build(a, "mfsmaster", fixture.T0)
	v := ds.Quorum.Witness
	if v.LastWriteBy != fixture.Addr("127.0.0.11") || v.LastWriteAge != 2.5 || v.LastLatency != 0.031 {
		t.Errorf("last write by %v %vs ago, latency %vs; want 127.0.0.11, 2.5, 0.031", v.LastWriteBy, v.LastWriteAge, v.LastLatency)
	}
	if want := "held by 127.0.0.11 (lease_epoch 9, written 2.5s ago, last call 31ms)"; !strings.Contains(v.Line, want) {
		t.Errorf("line %q lacks %q", v.Line, want)
	}
	for _, m := range ds.Masters {
		if m.IP == fixture.Addr("127.0.0.12") && (m.MasterInfo == nil || m.Witness == nil || m.Witness.LastWriteAge != 3600) {
			t.Errorf("127.0.0.12's own witness section lacks its last write's age: %+v", m.MasterInfo)
		}
	}
	// Nobody wrote since they started: no age, and none in the line.
	ds = Build(twoSites(), "mfsmaster", fixture.T0)
	if v := ds.Quorum.Witness; v.LastWriteBy.IsValid() || v.LastWriteAge != 0 || strings.Contains(v.Line, "written") {
		t.Errorf("a write nobody made: %+v", v)
	}
}
