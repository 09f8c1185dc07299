package main

import (
	"flag"
	"net/netip"
	"reflect"
	"testing"

	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
)

var update = flag.Bool("update", false, "rewrite etc/mfschunkserver.cfg and the key table of docs/operations.md from the key table")

// TestShippedExample: etc/mfschunkserver.cfg is the key table's example, every key
// commented out at its default (go test ./cmd/mfschunkserver -update rewrites it).
func TestShippedExample(t *testing.T) {
	if err := settings.SyncFile("../../etc/mfschunkserver.cfg", spec.Example(), *update); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultsMatchCore: with no file and no flag, the voter config is
// voter.DefaultConfig exactly: every default is inside its own range
// and survives being written as a cfg value and read back.
func TestDefaultsMatchCore(t *testing.T) {
	cfg, _, err := spec.Resolve("", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := voter.DefaultConfig(0, netip.Addr{}, nil); !reflect.DeepEqual(cfg.Node.Voter, want) {
		t.Fatalf("mfschunkserver.cfg defaults %+v differ from roles.DefaultVoterConfig %+v", cfg.Node.Voter, want)
	}
}

// TestKeysBindVoter: each key sets one field of its own, and each voter
// key takes exactly the range voter.Config.Ranges gives its field,
// which Validate checks too (MAX_PROMISE: VOTE_LEASE's).
func TestKeysBindVoter(t *testing.T) {
	if err := spec.CheckRanges("Node.Voter.", voter.Config{}.Ranges()); err != nil {
		t.Error(err)
	}
}

// TestOperationsDoc: the key table in docs/operations.md is this spec's
// (go test ./cmd/mfschunkserver -update rewrites it).
func TestOperationsDoc(t *testing.T) {
	if err := settings.SyncSection("../../docs/operations.md", "mfschunkserver", spec.Table(), *update); err != nil {
		t.Fatal(err)
	}
}
