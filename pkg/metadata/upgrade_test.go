package metadata

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	bolt "go.etcd.io/bbolt"
)

// schema1Dir copies testdata/schema1 (stores written by the build before
// checksums, commit 5e6e761: a master's metadata.mfs trimmed to 5@2 with
// entries 6..10, its snapshot.mfs, and a chunkserver.mfs) into a new
// directory.
func schema1Dir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{MasterFile, SnapshotFile, ChunkserverFile} {
		f, err := os.Open(filepath.Join("testdata", "schema1", name+".gz"))
		must(t, err)
		zr, err := gzip.NewReader(f)
		must(t, err)
		b, err := io.ReadAll(zr)
		must(t, err)
		f.Close()
		must(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	return dir
}

// schemaOf reads the schema version of the bbolt file at path.
func schemaOf(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	must(t, err)
	defer db.Close()
	var v uint64
	must(t, db.View(func(tx *bolt.Tx) error {
		v = binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(keySchema))
		return nil
	}))
	return v
}

// TestUpgradeSchema1: a store of schema version 1 (no checksums) is
// upgraded in place at the first open, and then reads as it did: the same
// hard state, base, entries, identity and voter record; every value is
// sealed.
func TestUpgradeSchema1(t *testing.T) {
	dir := schema1Dir(t)
	path := filepath.Join(dir, MasterFile)
	if v := schemaOf(t, path); v != 1 {
		t.Fatalf("the test file has schema %d, want 1", v)
	}
	latest, prev := configs(t)
	wantHard := roles.HardState{Incarnation: 3, Epoch: 2, MaxEpoch: 2, LeaderEpoch: 2, Commit: changelog.Pos{Version: 10, Epoch: 2}, InForce: 1}
	var wantEntries []changelog.Entry
	for v := uint64(6); v <= 10; v++ {
		wantEntries = append(wantEntries, entry(v, 2, fmt.Sprint("k", v)))
	}
	check := func(s *MasterStore) {
		t.Helper()
		st, err := s.Load()
		must(t, err)
		if !reflect.DeepEqual(st.Hard, wantHard) || st.Base.Pos != (changelog.Pos{Version: 5, Epoch: 2}) || !reflect.DeepEqual(st.Entries, wantEntries) {
			t.Fatalf("loaded hard %+v base %v entries %v", st.Hard, st.Base.Pos, st.Entries)
		}
		sameConfig(t, st.Base.Latest, latest)
		sameConfig(t, st.Base.Previous, prev)
		sameSnapshot(t, st.Snapshot, snapshotAt(t, 5, 2, 4, 1))
		if s.ClusterID() != "c1" {
			t.Fatalf("cluster id %q", s.ClusterID())
		}
	}
	s := openMaster(t, dir)
	check(s)
	must(t, s.db.View(func(tx *bolt.Tx) error { return readAll(tx, SchemaVersion) })) // every value sealed
	must(t, s.Apply(roles.Persist{Append: []changelog.Entry{entry(11, 3, "after")}}))
	wantEntries = append(wantEntries, entry(11, 3, "after"))
	must(t, s.Close())
	if v := schemaOf(t, path); v != SchemaVersion {
		t.Fatalf("after the upgrade the file has schema %d, want %d", v, SchemaVersion)
	}
	s = openMaster(t, dir)
	check(s)
	must(t, s.Close())

	c, err := OpenChunkserver(dir)
	must(t, err)
	if id, ok := c.Identity(); !ok || id != (Identity{CS: 4, ClusterID: "c1", Addr: netip.MustParseAddrPort("10.0.0.4:9422")}) {
		t.Fatalf("identity %+v %v", id, ok)
	}
	voter := roles.VoterHardState{Boot: 3, MaxEpoch: 8, EpochOwner: 2, KnownReg: 4, InForce: 4, Commit: changelog.Pos{Version: 9, Epoch: 8}, CommitTag: 8}
	if got, err := c.VoterHard(); err != nil || got != voter {
		t.Fatalf("voter %+v %v, want %+v", got, err, voter)
	}
	must(t, c.Close())
	if b, err := os.ReadFile(filepath.Join(dir, ChunkserverFile)); err != nil || !isRecordFile(b) {
		t.Fatalf("after the upgrade the chunkserver file is not a record file (%v)", err)
	}
}

// TestUpgradeRefusesUnreadable: a schema 1 store with an entry or a record
// that does not decode is refused, naming the file and the value, and is
// not upgraded or otherwise written.
func TestUpgradeRefusesUnreadable(t *testing.T) {
	for _, c := range []struct {
		name string
		key  []byte
		in   []byte // bucket
		want string
	}{
		{"entry", u64key(8), bucketLog, "changelog entry 8 does not decode"},
		{"hard state", keyHard, bucketMeta, `record "hard" does not decode`},
		{"base", keyBase, bucketMeta, `record "base" does not decode`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := schema1Dir(t)
			path := filepath.Join(dir, MasterFile)
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			must(t, err)
			must(t, db.Update(func(tx *bolt.Tx) error { return tx.Bucket(c.in).Put(c.key, []byte{0xc1}) }))
			must(t, db.Close())
			before, err := os.ReadFile(path)
			must(t, err)
			if _, err := OpenMaster(dir); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("open: %v; want an error naming %s and saying %q", err, path, c.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Fatal("the unreadable schema 1 file was modified")
			}
		})
	}
}

// TestSealedValues: what the store writes is frame-encoded and sealed
// under its key: the checksum covers the key, so a value copied under
// another key is damaged.
func TestSealedValues(t *testing.T) {
	s, _ := initStore(t)
	must(t, s.Apply(roles.Persist{Append: []changelog.Entry{entry(2, 2, "a"), entry(3, 2, "b")}}))
	must(t, s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLog)
		body, err := unseal(u64key(2), b.Get(u64key(2)), SchemaVersion)
		if err != nil {
			return err
		}
		var e changelog.Entry
		if err := frame.Unmarshal(body, &e); err != nil || e.Pos != (changelog.Pos{Version: 2, Epoch: 2}) {
			return fmt.Errorf("entry 2 reads as %v, %v", e.Pos, err)
		}
		return b.Put(u64key(3), bytes.Clone(b.Get(u64key(2))))
	}))
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "changelog entry 3 is damaged: checksum mismatch") {
		t.Fatalf("an entry copied under another key: %v", err)
	}
}
