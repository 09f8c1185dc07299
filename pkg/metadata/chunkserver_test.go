package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
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
// it was writing; the file opens with the state before it, and says so
// (Damage names the file and the copy): a torn write and a slot that rotted
// after it was acted on look alike, so the voter must start uncertain.
// Both slots damaged is an error naming the file, advising only what is
// safe, and the file is left as it was.
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
	if d := s.Damage(); !strings.Contains(d, path) || !strings.Contains(d, fmt.Sprintf("copy %d of 2", newest%2+1)) || !strings.Contains(d, "uncertain") {
		t.Fatalf("a torn newest copy is not reported: %q", d)
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
	if d := s.Damage(); d != "" {
		t.Fatalf("both copies whole again, yet: %q", d)
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
	_, err = OpenChunkserver(dir)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "neither of its two copies") {
		t.Fatalf("both copies damaged: %v", err)
	}
	// The advice is what is safe: the id comes back uncertain. Never the
	// old "remove it to start as a chunkserver that never registered".
	if msg := err.Error(); !strings.Contains(msg, "Safe:") || !strings.Contains(msg, "uncertain") || !strings.Contains(msg, "Not safe:") || strings.Contains(msg, "never registered") {
		t.Fatalf("the advice: %v", err)
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
	writeBolt(t, dir, id, voter)
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

// tearAt writes junk over n bytes at off of the file at path, as a write
// cut short by a power loss may leave them.
func tearAt(t *testing.T, path string, off, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte{0xA5}, n), int64(off))
	must(t, errors.Join(err, f.Close()))
}

// TestChunkserverFirstWriteTorn (security review N2): the first write after
// a fresh creation, and after the conversion of a bbolt file, goes to the
// slot that does not hold the newest record: torn at any of several byte
// offsets, the file opens from a record that is safe to use (the state
// before the write, reported as damage so that the voter starts uncertain),
// never with an error that would leave the chunkserver unable to start.
func TestChunkserverFirstWriteTorn(t *testing.T) {
	id := Identity{CS: 7, ClusterID: "c9", Addr: netip.MustParseAddrPort("10.0.0.7:9422")}
	for _, off := range []int{0, 7, 8, 16, 19, 20, 64, 300, csSlot - 5, csSlot - 1} {
		for _, from := range []string{"fresh", "bolt"} {
			t.Run(fmt.Sprintf("%s/%d", from, off), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, ChunkserverFile)
				var before csState
				if from == "bolt" {
					voter := voterAt(9)
					writeBolt(t, dir, id, voter)
					before = csState{HasIdentity: true, Identity: id, Voter: voter}
				}
				s, err := OpenChunkserver(dir)
				must(t, err)
				img, err := os.ReadFile(path)
				must(t, err)
				at := 1 - s.at // where the first write goes
				if from == "fresh" {
					must(t, s.SetIdentity(id))
				} else {
					v := voterAt(10)
					must(t, s.Apply(roles.Persist{Voter: &v}))
				}
				must(t, s.Close())
				after, err := os.ReadFile(path)
				must(t, err)
				if bytes.Equal(after[s.at*csSlot:(s.at+1)*csSlot], img[s.at*csSlot:(s.at+1)*csSlot]) || !bytes.Equal(after[(1-at)*csSlot:(2-at)*csSlot], img[(1-at)*csSlot:(2-at)*csSlot]) {
					t.Fatal("the first write did not go to the other slot alone")
				}
				// Tear it: the slot it wrote, from off on, as it was before
				// the write over a part and junk over the rest.
				must(t, os.WriteFile(path, img, 0o600))
				copy(img[at*csSlot:], after[at*csSlot:at*csSlot+off])
				must(t, os.WriteFile(path, img, 0o600))
				tearAt(t, path, at*csSlot+off, min(200, csSlot-off))
				s, err = OpenChunkserver(dir)
				if err != nil {
					t.Fatalf("a torn first write leaves a chunkserver that cannot start: %v", err)
				}
				defer s.Close()
				got := csState{}
				got.Identity, got.HasIdentity = s.Identity()
				got.Voter, _ = s.VoterHard()
				if end := csHeader + int(binary.BigEndian.Uint32(after[at*csSlot+16:])) + 4; off >= end {
					// The record was whole before the tear began: it is
					// the newest, and nothing is damaged.
					if got.Identity != id || s.Damage() != "" {
						t.Fatalf("torn past the record's end: %+v %q", got, s.Damage())
					}
					return
				}
				if got != before {
					t.Fatalf("opened with %+v, want the state before the write %+v", got, before)
				}
				if !strings.Contains(s.Damage(), path) {
					t.Fatalf("the torn copy is not reported: %q", s.Damage())
				}
			})
		}
	}
}

// writeBolt makes a chunkserver.mfs of the earlier bbolt layout.
func writeBolt(t *testing.T, dir string, id Identity, voter roles.VoterHardState) {
	t.Helper()
	old, err := open(dir, ChunkserverFile, chunkserverSpec)
	must(t, err)
	must(t, old.db.Update(func(tx *bolt.Tx) error {
		if err := put(tx, keyIdentity, &id); err != nil {
			return err
		}
		return put(tx, keyVoter, &voter)
	}))
	must(t, old.Close())
}

// TestChunkserverVerify: a slot that rots while the daemon runs is found by
// Verify (read past the page cache), named, and both slots are rewritten
// from the state in memory: a restart then opens whole and newest.
func TestChunkserverVerify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ChunkserverFile)
	s, err := OpenChunkserver(dir)
	must(t, err)
	defer s.Close()
	for v := uint64(1); v <= 3; v++ {
		v := voterAt(v)
		must(t, s.Apply(roles.Persist{Voter: &v}))
	}
	if d, err := s.Verify(); d != "" || err != nil {
		t.Fatalf("a whole file: %q %v", d, err)
	}
	for _, at := range []int{s.at, 1 - s.at} { // the newest copy, then the older
		tearAt(t, path, at*csSlot+40, 1)
		d, err := s.Verify()
		must(t, err)
		if !strings.Contains(d, path) || !strings.Contains(d, fmt.Sprintf("copy %d of 2", at+1)) {
			t.Fatalf("rot in copy %d: %q", at+1, d)
		}
		if d, err := s.Verify(); d != "" || err != nil {
			t.Fatalf("after the rewrite: %q %v", d, err)
		}
	}
	must(t, s.Close())
	s, err = OpenChunkserver(dir)
	must(t, err)
	if h, _ := s.VoterHard(); h != voterAt(3) || s.Damage() != "" {
		t.Fatalf("reopened: %+v %q", h, s.Damage())
	}
}

// TestChunkserverEarlierBuild: a record file of the build before this one
// (one copy, in slot 0, the other all zeros) is no damage, and gets its
// second copy at once.
func TestChunkserverEarlierBuild(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ChunkserverFile)
	img := make([]byte, 2*csSlot)
	st := csState{Voter: voterAt(5)}
	must(t, encodeSlot(img[:csSlot], 1, st))
	must(t, os.WriteFile(path, img, 0o600))
	s, err := OpenChunkserver(dir)
	must(t, err)
	if h, _ := s.VoterHard(); h != voterAt(5) || s.Damage() != "" {
		t.Fatalf("opened: %+v %q", h, s.Damage())
	}
	must(t, s.Close())
	b, err := os.ReadFile(path)
	must(t, err)
	for i := range 2 {
		if _, got, err := decodeSlot(b[i*csSlot : (i+1)*csSlot]); err != nil || got.Voter != voterAt(5) {
			t.Fatalf("copy %d: %+v %v", i+1, got, err)
		}
	}
}
