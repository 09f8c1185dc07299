package main

import (
	"flag"
	"net/netip"
	"testing"

	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

var update = flag.Bool("update", false, "rewrite etc/mfschunkserver.cfg from the key table")

// TestShippedExample: etc/mfschunkserver.cfg is the key table's example, every key
// commented out at its default (go test ./cmd/mfschunkserver -update rewrites it).
func TestShippedExample(t *testing.T) {
	if err := settings.SyncFile("../../etc/mfschunkserver.cfg", spec.Example(), *update); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultsMatchCore: the shipped timing defaults are the core's.
func TestDefaultsMatchCore(t *testing.T) {
	v, err := spec.Resolve("", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := roles.DefaultVoterConfig(0, netip.Addr{}, nil)
	if v.Duration("MAX_PROMISE") != want.MaxPromise || v.Duration("PROBE_INTERVAL") != want.ProbeInterval || v.Duration("NOMINATE_SLOT") != want.NominateSlot {
		t.Fatalf("mfschunkserver.cfg timing defaults differ from roles.DefaultVoterConfig %+v", want)
	}
}

// TestOperationsDoc: the key table in docs/operations.md is this spec's
// (go test ./cmd/mfschunkserver -update rewrites it).
func TestOperationsDoc(t *testing.T) {
	if err := settings.SyncSection("../../docs/operations.md", "mfschunkserver", spec.Table(), *update); err != nil {
		t.Fatal(err)
	}
}
