package registry_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

func TestChanges(t *testing.T) {
	log := changelog.Genesis(1)
	cfg := log[0].Config
	reg := func(id wire.CSID, a string) registry.Change {
		return registry.Change{Kind: registry.ChangeRegister, CS: registry.Chunkserver{ID: id, Addr: netip.MustParseAddr(a)}}
	}
	c2, err := reg(2, "10.0.1.2").Apply(cfg)
	if err != nil || c2.Version != 2 || c2.Bootstrap || len(cfg.Members) != 0 {
		t.Fatalf("register: %v %+v (original %+v)", err, c2, cfg)
	}
	c3, _ := reg(1, "10.0.2.1").Apply(c2)
	if c3.Members[0].ID != 1 || c3.Members[1].ID != 2 {
		t.Errorf("members not sorted: %+v", c3.Members)
	}
	if _, err := reg(1, "10.0.2.9").Apply(c3); err == nil {
		t.Error("a second registration of the same id was accepted")
	}
	if _, err := (registry.Change{Kind: registry.ChangeRemove, ID: 7}).Apply(c3); err == nil || !strings.Contains(err.Error(), "CS7") {
		t.Errorf("removing an unknown chunkserver: %v", err)
	}
	c4, err := (registry.Change{Kind: registry.ChangeRemove, ID: 1}).Apply(c3)
	if err != nil || len(c4.Members) != 1 {
		t.Fatalf("remove: %v", err)
	}
	if _, err := (registry.Change{Kind: registry.ChangeRemove, ID: 2}).Apply(c4); err == nil || !strings.Contains(err.Error(), "last registered") {
		t.Errorf("removing the last chunkserver: %v", err)
	}
	c5, err := (registry.Change{Kind: registry.ChangeMapRange, Prefix: netip.MustParsePrefix("10.0.2.0/24"), Name: "west"}).Apply(c3)
	if err != nil {
		t.Fatal(err)
	}
	e := c5.Electorate()
	if !e.Divided() {
		t.Error("two locations with members should make a divided electorate")
	}
	if _, err := (registry.Change{Kind: registry.ChangeMapRange, Prefix: netip.MustParsePrefix("10.0.2.0/25"), Name: "east"}).Apply(c5); err == nil {
		t.Error("an overlapping range was accepted")
	}
}

// TestWitnessChange: a witness is set and removed by config entries, never
// replaced by another in one step, and its id is checked; with one, the
// electorate's ties go to the witness.
func TestWitnessChange(t *testing.T) {
	cfg := changelog.Genesis(1)[0].Config
	w := func(id string) registry.Change { return registry.Change{Kind: registry.ChangeWitness, Name: id} }
	on, err := w("w-1").Apply(cfg)
	if err != nil || on.Witness != "w-1" || !on.Electorate().Witness() || cfg.Witness != "" {
		t.Fatalf("witness on: %v %+v", err, on)
	}
	for _, tt := range []struct {
		from *registry.ClusterConfig
		id   string
		want string
	}{
		{on, "w-2", "turn it off before"},
		{on, "w-1", "already configured"},
		{cfg, "", "no witness"},
		{cfg, "bad id", "printable"},
		{cfg, strings.Repeat("x", registry.MaxWitnessID+1), "up to"},
	} {
		if _, err := w(tt.id).Apply(tt.from); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q from %q: %v, want %q", tt.id, tt.from.Witness, err, tt.want)
		}
	}
	off, err := w("").Apply(on)
	if err != nil || off.Witness != "" || off.Electorate().Witness() || w("").String() != "witness off" {
		t.Fatalf("witness off: %v %+v", err, off)
	}
}
