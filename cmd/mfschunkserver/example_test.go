package main

import (
	"flag"
	"net/netip"
	"os"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/roles"
)

var update = flag.Bool("update", false, "rewrite etc/mfschunkserver.cfg from the key table")

// TestShippedExample: etc/mfschunkserver.cfg is the key table's example, every key
// commented out at its default (go test ./cmd/mfschunkserver -update rewrites it).
func TestShippedExample(t *testing.T) {
	const path = "../../etc/mfschunkserver.cfg"
	want := spec.Example()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from the key table; run go test ./cmd/mfschunkserver -update", path)
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
