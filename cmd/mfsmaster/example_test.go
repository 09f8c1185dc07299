package main

import (
	"flag"
	"net/netip"
	"reflect"
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

// TestDefaultsMatchCore: the shipped timing defaults are the core's.
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

// TestOperationsDoc: the key table in docs/operations.md is this spec's
// (go test ./cmd/mfsmaster -update rewrites it).
func TestOperationsDoc(t *testing.T) {
	if err := settings.SyncSection("../../docs/operations.md", "mfsmaster", spec.Table(), *update); err != nil {
		t.Fatal(err)
	}
}
