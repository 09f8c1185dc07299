package master

import (
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestHistoryWitnessPart (docs/roles.md §7, §3.8): a record says what the
// witness did for the change. On two sites with a witness, the first
// election (both sites) did not need it; with site b lost and the store
// down, the LEADER leaves on half of the sites without the lease (§3.8,
// quorum-lost, witness no-lease); when the store is back it leads again on
// half with the lease and records its lease_epoch. Without a witness no
// record carries any of it.
func TestHistoryWitnessPart(t *testing.T) {
	records := func(h *harness, name string) []changelog.RoleChange {
		rs, _ := h.net.nodes[name].m.History(0)
		return rs
	}
	h := newHarness(t)
	for _, cmd := range []string{"net masters=1,2 cs=1,2,3,4 sites=2 witness=w-1", "run +1.5s", "store down", "run +3s",
		"kill CS3", "kill CS4", "run +4s", "store up", "run +3s"} {
		h.run(cmd)
	}
	type part struct {
		from, to, reason, witness string
		leaseEpoch, epoch         uint64
	}
	var got []part
	for _, r := range records(h, "M2") {
		if r.From == roles.Follower.String() {
			if r.Witness != "" || r.LeaseEpoch != 0 {
				t.Errorf("a record without a tally has a witness part: %v", r)
			}
			continue
		}
		got = append(got, part{r.From, r.To, r.Reason, r.Witness, r.LeaseEpoch, r.Epoch})
	}
	want := []part{
		{"ELECT", "LEADER", roles.ReasonWon, changelog.WitnessUnused, 0, 1},
		{"LEADER", "FOLLOWER", roles.ReasonQuorumLost, changelog.WitnessNoLease, 0, 1},
		{"ELECT", "LEADER", roles.ReasonWon, changelog.WitnessRelied, 2, 2},
	}
	if len(got) != len(want) {
		t.Fatalf("records with a tally %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, r := range records(h, "M2") {
		if bad := changelog.CheckRoleChange(&r); bad != "" {
			t.Errorf("%v: its own check says %s", r, bad)
		}
	}

	// No witness: the same loss of a LEADER leaves no witness part.
	h = newHarness(t)
	for _, cmd := range []string{"net masters=1,2,3 cs=1,2,3", "run +1.5s", "cut M1", "run +3s", "heal", "run +1s"} {
		h.run(cmd)
	}
	rs := records(h, "M2")
	if len(rs) < 4 {
		t.Fatalf("only %d records without a witness", len(rs))
	}
	for _, r := range rs {
		if r.Witness != "" || r.LeaseEpoch != 0 {
			t.Errorf("a witness part without a witness: %v", r)
		}
	}
}

// TestCheckRoleChangeWitness: a peer's record may carry only a known
// witness part, a lease_epoch only with the lease relied on, and never one
// above the record's epoch.
func TestCheckRoleChangeWitness(t *testing.T) {
	base := changelog.RoleChange{Master: 1, Seq: 1, From: "ELECT", To: "LEADER", Epoch: 7}
	for _, c := range []struct {
		name    string
		witness string
		lease   uint64
		want    string
	}{
		{"none", "", 0, ""},
		{"relied", changelog.WitnessRelied, 7, ""},
		{"relied on an older lease_epoch", changelog.WitnessRelied, 6, ""},
		{"no lease", changelog.WitnessNoLease, 0, ""},
		{"unused", changelog.WitnessUnused, 0, ""},
		{"unknown part", "maybe", 0, "malformed-history-witness"},
		{"relied without lease_epoch", changelog.WitnessRelied, 0, "malformed-history-witness"},
		{"lease_epoch without relying", changelog.WitnessNoLease, 7, "malformed-history-witness"},
		{"lease_epoch without a part", "", 7, "malformed-history-witness"},
		{"lease_epoch above the epoch", changelog.WitnessRelied, 8, "malformed-history-witness"},
		{"long text", string(make([]byte, 65)), 0, "malformed-history-text"},
	} {
		r := base
		r.Witness, r.LeaseEpoch = c.witness, c.lease
		if got := changelog.CheckRoleChange(&r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
