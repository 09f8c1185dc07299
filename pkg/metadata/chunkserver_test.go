package metadata

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	bolt "go.etcd.io/bbolt"
)

func voterAt(v uint64) roles.VoterHardState {
	return roles.VoterHardState{Boot: 1, MaxEpoch: v, EpochOwner: 2, Commit: changelog.Pos{Version: v, Epoch: v}, CommitTag: v, MaxGranted: time.Second}
}

// TestChunkserverTornWrite: a write torn by a crash damages only the slot
// it was writing; the file opens with the state before it. Both slots
// damaged is an error naming the file, and the file is left as it was.
func TestChunkserverTornWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ChunkserverFile)
	s, err := OpenChunkserver(dir)
	must(t, err)
	id := Identity{CS: 4, ClusterID: "c1", Addr: netip.MustParseAddrPort("10.0.0.4:9422")}
	must(t, s.SetIdentity(id))
	for v := uint64(1); v <= 5; v++ {
		v := voterAt(v)
		must(t, s.Apply(roles.Persist{Voter: &v}))
	}
	if c := s.Commits(); c != 6 {
		t.Fatalf("%d durable writes for an identity and five records, want 6", c)
	}
	newest := s.seq
	must(t, s.Close())

	// The newest record (voter 5) is in slot newest%2: tear it.
	b, err := os.ReadFile(path)
	must(t, err)
	torn := bytes.Clone(b)
	off := int(newest%2) * csSlot
	copy(torn[off+100:], bytes.Repeat([]byte{0xAA}, 200))
	must(t, os.WriteFile(path, torn, 0o600))
	s, err = OpenChunkserver(dir)
	must(t, err)
	if h, _ := s.VoterHard(); h != voterAt(4) {
		t.Fatalf("after a torn write: %+v, want the record before it", h)
	}
	if got, ok := s.Identity(); !ok || got != id {
		t.Fatalf("identity %+v %v", got, ok)
	}
	// Writing again replaces the torn slot, not the good one.
	v6 := voterAt(6)
	must(t, s.Apply(roles.Persist{Voter: &v6}))
	must(t, s.Close())
	s, err = OpenChunkserver(dir)
	must(t, err)
	if h, _ := s.VoterHard(); h != v6 {
		t.Fatalf("after a write over the torn slot: %+v", h)
	}
	must(t, s.Close())

	// Both copies damaged: refused, named, not modified.
	b, err = os.ReadFile(path)
	must(t, err)
	bad := bytes.Clone(b)
	for i := range 2 {
		bad[i*csSlot+40] ^= 0xFF
	}
	must(t, os.WriteFile(path, bad, 0o600))
	if _, err := OpenChunkserver(dir); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "neither of its two copies") {
		t.Fatalf("both copies damaged: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, bad) {
		t.Fatal("a damaged file was modified")
	}
	// A short file likewise.
	must(t, os.WriteFile(path, b[:csSlot+10], 0o600))
	if _, err := OpenChunkserver(dir); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a short file: %v", err)
	}
}

// TestChunkserverLocked: a second open of the same file is refused while
// the first holds it.
func TestChunkserverLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenChunkserver(dir)
	must(t, err)
	defer s.Close()
	if _, err := OpenChunkserver(dir); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("a second open: %v", err)
	}
}

// TestChunkserverFromBolt: a chunkserver.mfs of the bbolt layout (schema
// 2) is read and replaced by a record file with the same state; a damaged
// one is refused and left as it is.
func TestChunkserverFromBolt(t *testing.T) {
	dir := t.TempDir()
	id := Identity{CS: 7, ClusterID: "c9", Addr: netip.MustParseAddrPort("10.0.0.7:9422")}
	voter := voterAt(9)
	old, err := open(dir, ChunkserverFile, chunkserverSpec)
	must(t, err)
	must(t, old.db.Update(func(tx *bolt.Tx) error {
		if err := put(tx, keyIdentity, &id); err != nil {
			return err
		}
		return put(tx, keyVoter, &voter)
	}))
	must(t, old.Close())
	path := filepath.Join(dir, ChunkserverFile)
	boltBytes, err := os.ReadFile(path)
	must(t, err)

	s, err := OpenChunkserver(dir)
	must(t, err)
	if got, ok := s.Identity(); !ok || got != id {
		t.Fatalf("identity %+v %v", got, ok)
	}
	if h, _ := s.VoterHard(); h != voter {
		t.Fatalf("voter %+v, want %+v", h, voter)
	}
	must(t, s.Close())
	if b, _ := os.ReadFile(path); !isRecordFile(b) || len(b) != 2*csSlot {
		t.Fatal("not converted to a record file")
	}
	if _, err := os.Stat(path + ".new"); !os.IsNotExist(err) {
		t.Fatalf("the converted file's temporary is left: %v", err)
	}

	// A damaged bbolt file is refused, and not converted.
	bad := bytes.Clone(boltBytes)
	copy(bad[2*4096:], bytes.Repeat([]byte{0x5A}, 4096))
	must(t, os.WriteFile(path, bad, 0o600))
	if _, err := OpenChunkserver(dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a damaged bbolt file: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, bad) {
		t.Fatal("a damaged bbolt file was modified")
	}
}
