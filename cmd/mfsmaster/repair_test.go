package main

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// TestRepairRemovesDeadMembers: `mfsmaster repair` lists the registry,
// records a forced removal in the stored hard state, and refuses ids that
// are not registered or a removal that would leave nobody to count.
func TestRepairRemovesDeadMembers(t *testing.T) {
	dir := t.TempDir()
	st, err := metadata.OpenMaster(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := changelog.Genesis(1)
	cfg := &registry.ClusterConfig{Version: 2, Founder: 1, Locations: g[0].Config.Locations}
	for i := 1; i <= 4; i++ {
		cfg.Members = append(cfg.Members, registry.Chunkserver{ID: wire.CSID(i), Addr: netip.AddrFrom4([4]byte{10, 7, 0, byte(i)}), Port: 9422})
	}
	if err := st.Init("ABCD", g); err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(roles.Persist{Append: []changelog.Entry{{Pos: changelog.Pos{Version: 2}, Kind: changelog.EntryConfig, Config: cfg}}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	lock := filepath.Join(dir, ".mfsmaster.lock")

	var out strings.Builder
	if err := repairMetadata(&out, dir, lock, ""); err != nil || !strings.Contains(out.String(), "10.7.0.3:9422") {
		t.Fatalf("listing: %v\n%s", err, out.String())
	}
	for _, bad := range []string{"9", "1,2,3,4", "x"} {
		if err := repairMetadata(&out, dir, lock, bad); err == nil {
			t.Fatalf("--remove-chunkservers %s was accepted", bad)
		}
	}
	out.Reset()
	if err := repairMetadata(&out, dir, lock, "CS3, 2"); err != nil {
		t.Fatal(err)
	}
	if err := repairMetadata(&out, dir, lock, "4"); err != nil {
		t.Fatal(err)
	}
	st, err = metadata.OpenMaster(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	if f := got.Hard.ForcedOut; len(f) != 3 || f[0] != 2 || f[1] != 3 || f[2] != 4 {
		t.Fatalf("stored forced removal %v, want [2 3 4]", f)
	}
	// A master that starts from it counts CS1 alone.
	m, _ := master.New(master.DefaultConfig(1, []wire.MasterID{1}), got, 0)
	if ids := m.TempRemoved(); len(ids) != 3 {
		t.Fatalf("the master counts without %v, want CS2-CS4", ids)
	}
}
