package metadata

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	bolt "go.etcd.io/bbolt"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func openMaster(t *testing.T, dir string) *MasterStore {
	t.Helper()
	s, err := OpenMaster(dir)
	must(t, err)
	return s
}

func entry(v, epoch uint64, key string) changelog.Entry {
	return changelog.Entry{Pos: changelog.Pos{Version: v, Epoch: epoch}, Kind: changelog.EntryPut, Client: 3, Seq: v, Key: key, Value: "v" + key}
}

func TestMasterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := openMaster(t, dir)
	check := func(want roles.Stored) {
		t.Helper()
		if st, err := s.Load(); err != nil || !reflect.DeepEqual(st, want) {
			t.Fatalf("loaded %v\n%+v\nwant\n%+v", err, st, want)
		}
	}
	if check(roles.Stored{}); s.HasMetadata() || s.ClusterID() != "" {
		t.Fatal("a new store claims metadata")
	}
	g := changelog.Genesis(1)
	must(t, s.Init("c1", g))
	if err := s.Init("c2", g); err == nil || !strings.Contains(err.Error(), `already holds metadata (cluster id "c1")`) {
		t.Fatalf("second init: %v", err)
	}
	hard := roles.HardState{Incarnation: 2, Epoch: 5, MaxEpoch: 6, LeaderEpoch: 5, Commit: changelog.Pos{Version: 2, Epoch: 5}, InForce: 1, Yielded: true}
	must(t, s.Apply(roles.Persist{Hard: &hard, Append: []changelog.Entry{entry(2, 5, "a"), entry(3, 5, "b"), entry(4, 5, "c")}}))
	c2 := *g[0].Config
	c2.Version, c2.Bootstrap = 2, false
	c2.Members = []registry.Chunkserver{{ID: 4, Addr: netip.MustParseAddr("10.0.0.4"), VoterOnly: true}}
	cfg := changelog.Entry{Pos: changelog.Pos{Version: 4, Epoch: 7}, Kind: changelog.EntryConfig, Config: &c2}
	cut := uint64(2)
	must(t, s.Apply(roles.Persist{TruncateAfter: &cut, Append: []changelog.Entry{entry(3, 7, "d"), cfg}}))
	want := roles.Stored{Hard: hard, Entries: []changelog.Entry{g[0], entry(2, 5, "a"), entry(3, 7, "d"), cfg}}
	check(want)

	// A gap is refused and nothing of that Persist is written, hard state included.
	other := roles.HardState{Incarnation: 9}
	if err := s.Apply(roles.Persist{Hard: &other, Append: []changelog.Entry{entry(5, 7, "e"), entry(7, 7, "f")}}); err == nil {
		t.Fatal("a gap was accepted")
	}
	check(want)

	must(t, s.Close())
	s = openMaster(t, dir)
	defer s.Close()
	if check(want); !s.HasMetadata() || s.ClusterID() != "c1" {
		t.Fatal("the reopened store lost its metadata or cluster id")
	}
}

func TestAdoptClusterAndInUse(t *testing.T) {
	dir := t.TempDir()
	s := openMaster(t, dir)
	defer s.Close()
	must(t, s.AdoptCluster("c1"))
	must(t, s.AdoptCluster("c1"))
	if err := s.AdoptCluster("c2"); err == nil || s.ClusterID() != "c1" {
		t.Fatalf("adopting another cluster: %v, id %q", err, s.ClusterID())
	}
	if err := s.Init("c1", changelog.Genesis(1)); err == nil {
		t.Fatal("init over an adopted cluster id was accepted")
	}
	start := time.Now()
	if _, err := OpenMaster(dir); err == nil || !strings.Contains(err.Error(), "is another mfsmaster using DATA_PATH "+dir) {
		t.Fatalf("second open: %v", err)
	} else if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the second open took %v", d)
	}
}

// unreadable writes content as metadata.mfs and checks that opening fails
// with an error naming the file and saying want, and leaves the file alone.
func unreadable(t *testing.T, content []byte, want string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, MasterFile)
	must(t, os.WriteFile(path, content, 0o600))
	if _, err := OpenMaster(dir); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
		t.Errorf("opening: %v; want an error naming %s and saying %q", err, path, want)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, content) {
		t.Error("the unreadable file was modified")
	}
}

func TestGarbageFile(t *testing.T) {
	junk := make([]byte, 64<<10)
	rand.Read(junk)
	unreadable(t, junk, "not a readable bbolt file")
	unreadable(t, []byte(rand.Text()), "not a readable bbolt file")
	unreadable(t, nil, "is empty")
}

// storeWith returns the bytes of an initialised master store that edit has
// changed behind the API.
func storeWith(t *testing.T, edit func(tx *bolt.Tx) error) []byte {
	t.Helper()
	s := openMaster(t, t.TempDir())
	must(t, s.Init("c1", changelog.Genesis(1)))
	must(t, s.db.Update(edit))
	must(t, s.Close())
	b, err := os.ReadFile(s.Path())
	must(t, err)
	return b
}

func TestUnreadableStores(t *testing.T) {
	unreadable(t, storeWith(t, func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, u64key(7)) }),
		"schema version 7, this build reads version 2 (and upgrades version 1)")
	unreadable(t, storeWith(t, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketLog) }), `missing its "log" bucket`)
	unreadable(t, storeWith(t, func(tx *bolt.Tx) error { return putBytes(tx, keyHard, []byte{0xc1}) }),
		`record "hard" does not decode`)
	unreadable(t, storeWith(t, func(tx *bolt.Tx) error { return putBytes(tx, keyBase, []byte{0xc1}) }),
		`record "base" does not decode`)
	// A record whose checksum does not hold is damaged, whatever it holds.
	unreadable(t, storeWith(t, func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyHard, []byte{0x80, 0, 0, 0, 0}) }),
		`record "hard" of bucket "meta" is damaged: checksum mismatch`)
	unreadable(t, storeWith(t, func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyCluster, []byte("c1")) }),
		`record "cluster" of bucket "meta" is damaged: 2 bytes, too short to hold its checksum`)

	// A changelog entry that does not decode is found by Load, which
	// names its version.
	s := openMaster(t, t.TempDir())
	must(t, s.Init("c1", changelog.Genesis(1)))
	must(t, s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketLog).Put(u64key(1), seal(u64key(1), []byte{0xc1})) }))
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "entry 1 does not decode") {
		t.Fatalf("load of a damaged entry: %v", err)
	}
	s.Close()

	unreadable(t, storeWith(t, func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyKind, []byte("chunkserver")) }),
		`a "chunkserver" store, expected a "master" store`)
}

func TestChunkserverStore(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenChunkserver(dir)
	must(t, err)
	if _, ok := s.Identity(); ok {
		t.Fatal("an identity before registration")
	}
	if h, err := s.VoterHard(); err != nil || h != (roles.VoterHardState{}) {
		t.Fatalf("voter hard state before any write: %+v %v", h, err)
	}
	id := Identity{CS: 4, ClusterID: "c1", Addr: netip.MustParseAddrPort("10.0.0.4:9422")}
	must(t, s.SetIdentity(id))
	id.Addr = netip.MustParseAddrPort("[fd00::4]:9422")
	must(t, s.SetIdentity(id)) // only the address changed
	if err := s.SetIdentity(Identity{CS: 5, ClusterID: "c1"}); err == nil {
		t.Fatal("a different identity was accepted")
	}
	// Every field survives a restart, MaxGranted included: a voter
	// restarted with a lower MAX_PROMISE keeps quiet for the longest
	// promise it ever made (review L2).
	voter := roles.VoterHardState{Boot: 3, MaxEpoch: 8, EpochOwner: 2, KnownReg: 4, InForce: 4, Commit: changelog.Pos{Version: 9, Epoch: 8}, CommitTag: 8,
		EpochInc: 6, MaxGranted: 10 * time.Second}
	must(t, s.Apply(roles.Persist{Voter: &voter, Hard: &roles.HardState{Epoch: 1}}))
	must(t, s.Close())
	openMaster(t, dir).Close() // a master's file beside it is a separate store
	s, err = OpenChunkserver(dir)
	must(t, err)
	defer s.Close()
	if got, ok := s.Identity(); !ok || got != id {
		t.Fatalf("identity %+v %v, want %+v", got, ok, id)
	}
	if got, err := s.VoterHard(); err != nil || got != voter {
		t.Fatalf("voter %+v %v, want %+v", got, err, voter)
	}
	must(t, s.ForgetIdentity())
	if _, ok := s.Identity(); ok {
		t.Fatal("the identity survived ForgetIdentity")
	}
	must(t, s.SetIdentity(Identity{CS: 5, ClusterID: "c1"}))
}

// fill sets every field of the struct v points to to a value other than
// its zero, recursively, so that a field added later is covered too.
func fill(t *testing.T, v reflect.Value, n *uint64) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(*n)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString(fmt.Sprint("s", *n))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), n)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(t, v.Index(0), n)
		fill(t, v.Index(1), n)
	default:
		t.Fatalf("fill: a field of kind %v: teach fill about it", v.Kind())
	}
}

// TestHardStatesWhole: every field of a master's HardState and a
// chunkserver's VoterHardState comes back after a reopen, whatever fields
// the core adds (VoterHardState.MaxGranted, review L2; HardState.ForcedOut).
func TestHardStatesWhole(t *testing.T) {
	var n uint64
	var hard roles.HardState
	var voter roles.VoterHardState
	fill(t, reflect.ValueOf(&hard).Elem(), &n)
	fill(t, reflect.ValueOf(&voter).Elem(), &n)
	if voter.MaxGranted == 0 {
		t.Fatal("fill left MaxGranted zero")
	}

	dir := t.TempDir()
	m := openMaster(t, dir)
	must(t, m.Apply(roles.Persist{Hard: &hard}))
	must(t, m.Close())
	m = openMaster(t, dir)
	defer m.Close()
	if st, err := m.Load(); err != nil || !reflect.DeepEqual(st.Hard, hard) {
		t.Fatalf("hard state %+v %v\nwant %+v", st.Hard, err, hard)
	}

	c, err := OpenChunkserver(dir)
	must(t, err)
	must(t, c.Apply(roles.Persist{Voter: &voter}))
	must(t, c.Close())
	c, err = OpenChunkserver(dir)
	must(t, err)
	defer c.Close()
	if got, err := c.VoterHard(); err != nil || got != voter {
		t.Fatalf("voter hard state %+v %v\nwant %+v", got, err, voter)
	}
}
