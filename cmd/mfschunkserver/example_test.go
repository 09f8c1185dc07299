package main

import (
	"flag"
	"net/netip"
	"os"
	"strings"
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

// TestOperationsDoc: the key table in docs/operations.md is this spec's
// (go test ./cmd/mfschunkserver -update rewrites it).
func TestOperationsDoc(t *testing.T) {
	const path = "../../docs/operations.md"
	begin, end := "<!-- keys:mfschunkserver -->\n", "<!-- /keys:mfschunkserver -->"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q ... %q", path, begin, end)
	}
	want := doc[:i+len(begin)] + spec.Table() + doc[j:]
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Fatalf("the mfschunkserver key table in %s differs from the spec; run go test ./cmd/mfschunkserver -update", path)
	}
}
