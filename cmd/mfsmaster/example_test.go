package main

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

var update = flag.Bool("update", false, "rewrite etc/mfsmaster.cfg from the key table")

// TestShippedExample: etc/mfsmaster.cfg is the key table's example, every key
// commented out at its default (go test ./cmd/mfsmaster -update rewrites it).
func TestShippedExample(t *testing.T) {
	if err := settings.SyncFile("../../etc/mfsmaster.cfg", spec.Example(), *update); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultsMatchCore: the shipped defaults (timings, snapshot interval,
// changelog retention) are the core's.
func TestDefaultsMatchCore(t *testing.T) {
	v, err := spec.Resolve("", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := coreConfig(v, nil, netip.MustParseAddr("10.0.0.1"))
	want := roles.DefaultConfig(got.ID, nil)
	got.Masters, want.Masters = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mfsmaster.cfg defaults %+v differ from roles.DefaultConfig %+v", got, want)
	}
}

// TestSnapshotKeys: SNAPSHOT_CHANGES and CHANGELOG_RETAIN reach the core
// (0 included: no snapshots), and out-of-range values are refused.
func TestSnapshotKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mfsmaster.cfg")
	if err := os.WriteFile(cfg, []byte("SNAPSHOT_CHANGES = 0\nCHANGELOG_RETAIN = 25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := spec.Resolve(cfg, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := coreConfig(v, nil, netip.MustParseAddr("10.0.0.1")); got.SnapshotEvery != 0 || got.LogRetain != 25 {
		t.Fatalf("SnapshotEvery %d, LogRetain %d", got.SnapshotEvery, got.LogRetain)
	}
	if err := os.WriteFile(cfg, []byte("SNAPSHOT_CHANGES = -1\nCHANGELOG_RETAIN = lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := spec.Resolve(cfg, true, nil); err == nil || !strings.Contains(err.Error(), "SNAPSHOT_CHANGES") || !strings.Contains(err.Error(), "CHANGELOG_RETAIN") {
		t.Fatalf("bad values: %v", err)
	}
}

// TestOperationsDoc: the key table in docs/operations.md is this spec's
// (go test ./cmd/mfsmaster -update rewrites it).
func TestOperationsDoc(t *testing.T) {
	if err := settings.SyncSection("../../docs/operations.md", "mfsmaster", spec.Table(), *update); err != nil {
		t.Fatal(err)
	}
}
