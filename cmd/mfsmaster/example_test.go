package main

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
)

var update = flag.Bool("update", false, "rewrite etc/mfsmaster.cfg and the key table of docs/operations.md from the key table")

// TestShippedExample: etc/mfsmaster.cfg is the key table's example, every key
// commented out at its default (go test ./cmd/mfsmaster -update rewrites it).
func TestShippedExample(t *testing.T) {
	if err := settings.SyncFile("../../etc/mfsmaster.cfg", spec.Example(), *update); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultsMatchCore: with no file and no flag, the core config is
// master.DefaultConfig exactly: every default is inside its own range and
// survives being written as a cfg value and read back.
func TestDefaultsMatchCore(t *testing.T) {
	cfg, _, err := spec.Resolve("", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := master.DefaultConfig(0, nil); !reflect.DeepEqual(cfg.Node.Core, want) {
		t.Fatalf("mfsmaster.cfg defaults %+v differ from roles.DefaultConfig %+v", cfg.Node.Core, want)
	}
}

// TestKeysBindCore: each key sets one field of its own, every field of
// master.Config but the two MASTER_HOST gives (ID, Masters), the binary's
// own protocol version and the simulator's CheckCaches has a key, and
// each core key takes exactly the range master.Config.Ranges gives its
// field, which Validate checks too.
func TestKeysBindCore(t *testing.T) {
	bind, err := spec.Bindings()
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, f := range bind {
		// A key of a nested field (Node.Core.Witness.Delay) sets its
		// struct (Node.Core.Witness) too.
		for p := f; p != ""; p = p[:max(strings.LastIndex(p, "."), 0)] {
			set[p] = true
		}
	}
	ct := reflect.TypeOf(master.Config{})
	for i := 0; i < ct.NumField(); i++ {
		if f := ct.Field(i).Name; f != "ID" && f != "Masters" && f != "Protocol" && f != "CheckCaches" && !set["Node.Core."+f] {
			t.Errorf("no mfsmaster.cfg key sets roles.Config.%s", f)
		}
	}
	if err := spec.CheckRanges("Node.Core.", master.Config{}.Ranges()); err != nil {
		t.Error(err)
	}
}

// TestSnapshotKeys: SNAPSHOT_CHANGES and CHANGELOG_RETAIN reach the core
// (0 included: no snapshots), and out-of-range values are refused.
func TestSnapshotKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mfsmaster.cfg")
	if err := os.WriteFile(path, []byte("SNAPSHOT_CHANGES = 0\nCHANGELOG_RETAIN = 25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := spec.Resolve(path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Node.Core; got.SnapshotEvery != 0 || got.LogRetain != 25 {
		t.Fatalf("SnapshotEvery %d, LogRetain %d", got.SnapshotEvery, got.LogRetain)
	}
	if err := os.WriteFile(path, []byte("SNAPSHOT_CHANGES = -1\nCHANGELOG_RETAIN = lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := spec.Resolve(path, true, nil); err == nil || !strings.Contains(err.Error(), "SNAPSHOT_CHANGES") || !strings.Contains(err.Error(), "CHANGELOG_RETAIN") {
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

// TestCrossKeyRules (issue 37): a rule between keys that the values break
// names every key involved, with its value and its file:line (or
// "default"), not the core's field names.
func TestCrossKeyRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mfsmaster.cfg")
	for _, c := range []struct{ cfg, want string }{
		{"VOTE_LEASE = 400ms\nHEARTBEAT_INTERVAL = 300ms\n",
			"VOTE_LEASE = 400ms (" + path + ":1), HEARTBEAT_INTERVAL = 300ms (" + path + ":2): vote lease 400ms must be at least twice the heartbeat interval 300ms"},
		{"PEER_TIMEOUT = 1s\nPEER_INTERVAL = 600ms\n",
			"PEER_TIMEOUT = 1s (" + path + ":1), PEER_INTERVAL = 600ms (" + path + ":2): peer timeout"},
		{"VOTE_LEASE = 2s\nELECT_TIMEOUT = 1s\n", "ELECT_TIMEOUT = 1s (" + path + ":2), VOTE_LEASE = 2s (" + path + ":1): elect timeout"},
		{"LOG_FORMAT = xml\n", "LOG_FORMAT = xml (" + path + ":1): want auto, json, console"},
	} {
		if err := os.WriteFile(path, []byte(c.cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := spec.Resolve(path, true, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.cfg, err, c.want)
		}
	}
}
