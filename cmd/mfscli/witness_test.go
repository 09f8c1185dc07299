package main

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// The witness's scenarios join the golden tests' (TestGolden prints every
// listing of each in every mode).
func init() {
	scenarios = append(scenarios,
		struct {
			name    string
			answers func() []clusterview.Answer
		}{"witness", witnessHeld},
		struct {
			name    string
			answers func() []clusterview.Answer
		}{"witnessdown", witnessDown},
		struct {
			name    string
			answers func() []clusterview.Answer
		}{"storelog", storeStandsIn})
}

const witnessID = fixture.WitnessID

// storeOf is a master's witness section: the witness named, the store at
// 10.0.3.5 (bucket mfs-witness, prefix mfs), its self-test passed.
func storeOf() *protocol.WitnessStatus {
	return &protocol.WitnessStatus{ID: witnessID, Endpoint: "http://10.0.3.5:7070", Bucket: "mfs-witness", Prefix: "mfs",
		SelfTest: protocol.WitnessSelfTestPassed}
}

// twoWitness: the two sites of twoSites, and a witness on the store at a
// third site (-CWITNESS/on wrote config 4); every master's store passed
// its self-test, and the LEADER carries both sites: nobody calls the
// store.
func twoWitness() []clusterview.Answer {
	as := twoSites()
	for i := range as {
		st := &as[i].St
		st.ConfigVersion, st.InForce, st.Witness = 4, 4, storeOf()
		for j := range st.Tallies {
			st.Tallies[j].Config, st.Tallies[j].Witness, st.Tallies[j].WitnessHeld = 4, true, false
		}
	}
	return as
}

// witnessHeld: twoWitness after dc2 was lost (its chunkservers, and the
// master 127.0.0.13, which is there): the LEADER took the witness's
// lease (lease_epoch 7) and leads with dc1 and the lease. The history
// (fixture.WitnessHistory) says how it came to lead.
func witnessHeld() []clusterview.Answer {
	as := recorded(twoWitness(), fixture.WitnessHistory(7)...)
	for i := range as {
		st := &as[i].St
		switch as[i].Addr.Addr() {
		case addr("127.0.0.11"):
			st.Chunkservers, st.Connected, st.Voters = registryOf(ids(1, 2), ids(1, 2))[:4], 2, 2
			t := tally(4, "WON", loc("dc1", 2, 2, 2), loc("dc2", 2, 0, 0))
			t.Witness, t.WitnessHeld, t.Needed = true, true, 1
			st.Tallies = []protocol.TallyStatus{t}
			w := st.Witness
			w.Held, w.Known, w.RecordID, w.RecordState, w.RecordHolder, w.RecordHolderID, w.RecordEpoch = true, true, witnessID, "held", addr("127.0.0.11"), 2130706443, 7
			w.LastOp, w.LastResult, w.LastLatency, w.LastWriteAge = "swap", "ok", 12*time.Millisecond, 1200*time.Millisecond
			w.Calls = map[string]uint64{"get ok": 1, "swap ok": 5}
		case addr("127.0.0.12"):
			st.Chunkservers, st.Connected = registryOf(ids(1, 2), none)[:4], 2
		case addr("127.0.0.13"):
			as[i] = clusterview.Answer{Addr: as[i].Addr, Err: fmt.Errorf("%w: dial tcp 127.0.0.13:9421: i/o timeout", client.ErrUnreachable)}
		}
	}
	return as
}

// storeStandsIn: witnessHeld with 127.0.0.12 down too (maintenance): the
// LEADER has no follower master, so the witness's store stands in for it
// (docs/architecture.md §7.5): twelve objects with the changes after
// 1500, its acknowledgements resting on them for 95 s.
func storeStandsIn() []clusterview.Answer {
	as := witnessHeld()
	for i := range as {
		switch as[i].Addr.Addr() {
		case addr("127.0.0.11"):
			as[i].St.StoreLog = &protocol.StoreLogStatus{Known: true, Objects: 12, Bytes: 48 << 10, Base: 1500, Last: 1532, Epoch: 7,
				OldestAge: 95 * time.Second, MaxObjects: 1000, MaxBytes: 1 << 30, MaxAge: 24 * time.Hour, StandsIn: true, OnStore: true}
		case addr("127.0.0.12"):
			as[i] = clusterview.Answer{Addr: as[i].Addr, Err: fmt.Errorf("%w: dial tcp 127.0.0.12:9421: connect: connection refused", client.ErrUnreachable)}
		}
	}
	return as
}

// witnessDown: dc2 lost as in witnessHeld, and the store at the third
// site does not answer either: 127.0.0.11 is ELECT with dc1, exactly
// half, its calls on the store ambiguous for 25 s; 127.0.0.12 restarted
// meanwhile and its store's self-test found no answer. Nobody may lead.
func witnessDown() []clusterview.Answer {
	as := witnessHeld()
	for i := range as {
		if as[i].Err != nil {
			continue
		}
		st := &as[i].St
		st.Leader, st.HoldsQuorum, st.Epoch = netip.Addr{}, false, 8
		switch as[i].Addr.Addr() {
		case addr("127.0.0.11"):
			st.Role, st.Sync, st.Delay = roles.Elect, roles.Desync, 30*time.Second
			t := tally(4, "PENDING", loc("dc1", 2, 2, 2), loc("dc2", 2, 0, 0))
			t.Witness = true
			st.Tallies = []protocol.TallyStatus{t}
			w := st.Witness
			w.Held, w.RecordState, w.RecordEpoch = false, "free", 7
			w.LastOp, w.LastResult, w.LastLatency, w.LastWriteAge = "get", "ambiguous", 0, 40*time.Second
			w.LastError = "s3 get mfs-witness/mfs/lease.json: ambiguous: no answer (connection failed or lost): try again"
			w.FailingFor = 25 * time.Second
			w.Calls = map[string]uint64{"get ok": 2, "swap ok": 6, "get ambiguous": 9}
		case addr("127.0.0.12"):
			st.Sync, st.Delay = roles.Desync, 30*time.Second
			st.Witness.SelfTest = "a GET of a missing key: no clear answer, the store is failing or too slow"
		}
	}
	return as
}

// TestWitnessListings: the witness line under -SIM and -SLQ (held, not
// configured, store down), the verdict that says why a half cannot lead,
// the alarms, and the plan that keeps a LEADER through the loss of
// either site with the witness, or not when the LEADER's store fails.
func TestWitnessListings(t *testing.T) {
	slq := map[listing]bool{listLocations: true}
	sim := map[listing]bool{listMasters: true}
	slh := map[listing]bool{listHistory: true}
	for _, c := range []struct {
		name    string
		answers []clusterview.Answer
		show    map[listing]bool
		want    []string
		not     []string
	}{
		{"held", witnessHeld(), slq, []string{
			"quorum held by LEADER 127.0.0.11 (1 of 2 locations carried, needs 1 (half, with the witness's lease); not carried: location dc2: 0 of 2 chunkservers reach it, needs 2)",
			"witness: " + witnessID + " (s3 http://10.0.3.5:7070 mfs-witness/mfs) held by 127.0.0.11 (lease_epoch 7, written 1.2s ago, last call 12ms)",
		}, []string{"no tie-break", "ALARM: witness"}},
		{"held -SIM", witnessHeld(), sim, []string{"held by 127.0.0.11 (lease_epoch 7, written 1.2s ago, last call 12ms)"}, nil},
		{"down", witnessDown(), slq, []string{
			"no quorum for ELECT 127.0.0.11: location dc2: 0 of 2 chunkservers reach it, needs 2; 1 of 2 locations carried, needs 2, or 1 with the witness's lease; " +
				"half of the locations, and the witness's store does not answer (get ambiguous: s3 get mfs-witness/mfs/lease.json: ambiguous: no answer (connection failed or lost): try again): nobody may lead until it does or the other site returns",
			"witness: " + witnessID + " (s3 http://10.0.3.5:7070 mfs-witness/mfs) not held (record: free, lease_epoch 7, written by 127.0.0.11); calls failing on 127.0.0.11 for 25s",
			"store refused on 127.0.0.12: a GET of a missing key",
			"ALARM: witness " + witnessID + ": the calls of 127.0.0.11 on the store have failed for 25s",
			"ALARM: no LEADER: ELECT 127.0.0.11 carries half of the locations, and the witness's store does not answer",
		}, nil},
		{"not configured", withStoresOnly(twoSites()), slq, []string{
			"witness: not configured (WITNESS_ENDPOINT set on 127.0.0.11, 127.0.0.12, 127.0.0.13: mfscli -CWITNESS/on names it)",
			"WARNING: no tie-break", "or name an object-store witness",
		}, nil},
		{"no witness at all", healthy(), map[listing]bool{listMasters: true, listLocations: true}, nil, []string{"witness"}},
		{"-SLH", witnessHeld(), slh, []string{
			"quorum-lost §3.8: half, no witness lease",
			"dc1 0/2 dc2 2/2 + no witness lease",
			"dc1 2/2 dc2 0/2 + witness lease_epoch 7",
		}, []string{"unused"}},
		{"-SLH without a witness", healthy(), slh, nil, []string{"witness", "lease_epoch"}},
	} {
		out := render(t, c.answers, options{mode: modeTable, show: c.show})
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: %q missing:\n%s", c.name, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("%s: %q printed:\n%s", c.name, w, out)
			}
		}
	}
	plain := render(t, witnessHeld(), options{mode: modePlain, show: slq})
	if !strings.Contains(plain, "Witness:\tyes\t"+witnessID+"\t127.0.0.11\t7\twitness: ") {
		t.Errorf("plain:\n%s", plain)
	}
	plain = render(t, witnessHeld(), options{mode: modePlain, show: slh})
	if !strings.Contains(plain, "\tELECT -> LEADER\t7\tquorum-won §3.4\tdc1 2/2 dc2 0/2 + witness lease_epoch 7\t127.0.0.13\tlease-lapsed\n") {
		t.Errorf("-SLH -p: no witness lease_epoch in the LEADER's record:\n%s", plain)
	}

	// -SQP: two sites with the witness: losing either keeps a LEADER.
	sqpOut := render(t, twoWitness(), options{mode: modePlain, show: sqp})
	for _, w := range []string{"Quorum plan: single failures:\tlocation dc1 lost\tyes\t",
		"Quorum plan: single failures:\tlocation dc2 lost\tyes\t", "needs 1 (half, with the witness's lease)"} {
		if !strings.Contains(sqpOut, w) {
			t.Errorf("-SQP with the witness: %q missing:\n%s", w, sqpOut)
		}
	}
	// ... and not when the LEADER's store failed its self-test.
	as := twoWitness()
	as[1].St.Witness.SelfTest = "a create-only PUT was answered 501 NotImplemented: the store does not support conditional writes"
	sqpOut = render(t, as, options{mode: modePlain, show: sqp})
	for _, w := range []string{"Quorum plan: single failures:\tlocation dc1 lost\tno\t",
		"the witness cannot break the tie for it: its witness store failed its self-test: a create-only PUT"} {
		if !strings.Contains(sqpOut, w) {
			t.Errorf("-SQP, the LEADER's store refused: %q missing:\n%s", w, sqpOut)
		}
	}
}

// withStoresOnly: every master has a store set, and the registry names
// no witness.
func withStoresOnly(as []clusterview.Answer) []clusterview.Answer {
	for i := range as {
		w := storeOf()
		w.ID = ""
		as[i].St.Witness = w
	}
	return as
}

// TestGoldenWitnessPlan: -SQP for two sites with the witness, in every
// mode.
func TestGoldenWitnessPlan(t *testing.T) {
	for _, m := range goldenModes {
		t.Run(m.name, func(t *testing.T) {
			o := m.o
			o.show = sqp
			golden(t, "twowitness.sqp."+m.name, render(t, twoWitness(), o))
		})
	}
}

// TestParseWitness: -CWITNESS/on, /off, /test, /test/ip, and what is
// refused; rewriteAdmin joins "-CWITNESS on" into -CWITNESS/on.
func TestParseWitness(t *testing.T) {
	for _, c := range []struct {
		cmd, action, only, err string
	}{
		{"WITNESS/on", "on", "", ""},
		{"WITNESS/off", "off", "", ""},
		{"WITNESS/test", "test", "", ""},
		{"WITNESS/test/10.0.0.12", "test", "10.0.0.12", ""},
		{"WITNESS", "", "", "want -CWITNESS/on, -CWITNESS/off or -CWITNESS/test"},
		{"WITNESS/maybe", "", "", "want -CWITNESS/on"},
		{"WITNESS/on/10.0.0.12", "", "", "goes to the LEADER"},
		{"WITNESS/test/host", "", "", `"host" is not an address`},
		{"WITNESS/test/1/2", "", "", "want -CWITNESS/on"},
	} {
		action, only, err := parseWitness(c.cmd, strings.Split(c.cmd, "/"))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want %q", c.cmd, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.cmd, err)
		case c.err == "" && (action != c.action || (c.only == "") != !only.IsValid() || (only.IsValid() && only.String() != c.only)):
			t.Errorf("%s: %q %v", c.cmd, action, only)
		}
	}
	for _, c := range []struct{ in, want []string }{
		{[]string{"mfscli", "-H", "m", "-CWITNESS", "on"}, []string{"mfscli", "-H", "m", "--admin", "WITNESS/on"}},
		{[]string{"mfscli", "-CWITNESS", "test", "-a", "pw"}, []string{"mfscli", "--admin", "WITNESS/test", "-a", "pw"}},
		{[]string{"mfscli", "-CWITNESS/off"}, []string{"mfscli", "--admin", "WITNESS/off"}},
		{[]string{"mfscli", "-CWITNESS", "get"}, []string{"mfscli", "--admin", "WITNESS", "get"}},
	} {
		if got := rewriteAdmin(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("rewriteAdmin(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
