package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	bolt "go.etcd.io/bbolt"
)

// damageStore returns the bytes of a master store of about 256 KiB: the
// genesis entry, 400 entries with values of a few hundred bytes, and a
// hard state.
func damageStore(t *testing.T) []byte {
	t.Helper()
	s := openMaster(t, t.TempDir())
	must(t, s.Init("c1", changelog.Genesis(1)))
	for v := uint64(2); v <= 401; v += 50 {
		var es []changelog.Entry
		for w := v; w < v+50 && w <= 401; w++ {
			e := entry(w, 2, fmt.Sprintf("dir/%04d", w))
			e.Value = strings.Repeat(string(rune('a'+w%26)), 100+int(w%150))
			es = append(es, e)
		}
		hard := roles.HardState{Incarnation: 1, Epoch: 2, MaxEpoch: 2, LeaderEpoch: 2, Commit: es[len(es)-1].Pos}
		must(t, s.Apply(roles.Persist{Hard: &hard, Append: es}))
	}
	must(t, s.Close())
	b, err := os.ReadFile(s.Path())
	must(t, err)
	return b
}

// openAndLoad is what a master does at start, with memory faults turned
// into panics so that one escaping OpenMaster or Load is counted here
// instead of killing the test binary.
func openAndLoad(dir string) (st roles.Stored, escaped any, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { escaped = recover() }()
	s, err := OpenMaster(dir)
	if err != nil {
		return st, nil, err
	}
	defer s.Close()
	st, err = s.Load()
	return st, nil, err
}

// TestDamagedStore (the review's T4): one byte of a 256 KiB store set to
// 0xff, 0x00 or 0x5a every 97 bytes from 8 KiB on (a sample of them unless
// MFS_DAMAGE_FULL is set). Every case ends in a
// clean load or an error that names the file; never a panic or a memory
// fault escaping OpenMaster or Load. The damaged file is never written.
func TestDamagedStore(t *testing.T) {
	good := damageStore(t)
	if len(good) < 200<<10 {
		t.Fatalf("the store is %d bytes, want about 256 KiB", len(good))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, MasterFile)
	must(t, os.WriteFile(path, good, 0o600))
	want, _, err := openAndLoad(dir)
	must(t, err)
	// make test samples every 13th position (still three or four in every
	// 4 KiB page); MFS_DAMAGE_FULL=1 runs the review's whole sweep.
	step := 13 * 97
	if os.Getenv("MFS_DAMAGE_FULL") != "" {
		step = 97
	}
	var clean, refused, panicked, modified, wrong int
	why, example := map[string]int{}, map[string]string{}
	start := time.Now()
	for off := 8 << 10; off < len(good); off += step {
		for _, val := range []byte{0xff, 0x00, 0x5a} {
			if good[off] == val {
				continue // not a change
			}
			bad := bytes.Clone(good)
			bad[off] = val
			// A new file each time: a lock leaked by a panic stays on
			// the old one.
			_ = os.Remove(path)
			must(t, os.WriteFile(path, bad, 0o600))
			st, escaped, err := openAndLoad(dir)
			switch {
			case escaped != nil:
				panicked++
				if panicked <= 3 {
					t.Errorf("byte %d set to %#02x: a panic escaped: %v", off, val, escaped)
				}
			case err != nil:
				refused++
				why[refusal(err)]++
				if _, ok := example[refusal(err)]; !ok {
					example[refusal(err)] = fmt.Sprintf("byte %d set to %#02x: %v", off, val, err)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("byte %d set to %#02x: the error does not name the file: %v", off, val, err)
				}
			case !reflect.DeepEqual(st, want):
				// Damage read back as data: the failure checksums exist for.
				wrong++
				if wrong <= 3 {
					t.Errorf("byte %d set to %#02x: loaded without an error but not what was stored", off, val)
				}
			default:
				clean++ // the byte was in free or unused space
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, bad) && err != nil {
				modified++
				if modified <= 3 {
					t.Errorf("byte %d set to %#02x: the file was modified although it was refused (%v)", off, val, err)
				}
			}
		}
	}
	t.Logf("%d bytes, %d corruptions in %v: %d refused with an error, %d loaded what was stored, %d loaded something else without an error, %d panics escaped, %d refused files modified",
		len(good), clean+refused+panicked+wrong, time.Since(start).Round(time.Millisecond), refused, clean, wrong, panicked, modified)
	t.Logf("refusals: %v", why)
	for _, k := range slices.Sorted(maps.Keys(example)) {
		t.Logf("first %s: %s", k, example[k])
	}
}

// refusal classifies a refusal for TestDamagedStore's report: which check
// caught the damage.
func refusal(err error) string {
	for _, c := range []struct{ says, is string }{
		{"reading it failed", "fault or panic recovered"},
		{"not a readable bbolt file", "page structure (meta)"},
		{"is damaged: page", "page structure"},
		{"is damaged: freelist", "page structure"},
		{"is damaged: the tree", "page structure"},
		{"consistency check", "bbolt Check"},
		{"checksum mismatch", "value checksum"},
		{"too short to hold its checksum", "value checksum"},
	} {
		if strings.Contains(err.Error(), c.says) {
			return c.is
		}
	}
	return "other"
}

// TestDamagedEntry (the review's T5): one byte changed inside a stored
// changelog entry is an error naming the file and the entry.
func TestDamagedEntry(t *testing.T) {
	s, dir := initStore(t)
	must(t, s.Apply(roles.Persist{Append: []changelog.Entry{entry(2, 2, "alpha"), entry(3, 2, "beta")}}))
	must(t, s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLog)
		v := bytes.Clone(b.Get(u64key(2)))
		i := bytes.Index(v, []byte("valpha"))
		if i < 0 {
			return fmt.Errorf("the value of entry 2 does not hold its text: %x", v)
		}
		v[i+1] ^= 0x01 // "alpha" -> "`lpha": still valid msgpack
		return b.Put(u64key(2), v)
	}))
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), s.Path()) || !strings.Contains(err.Error(), "changelog entry 2 is damaged: checksum mismatch") {
		t.Fatalf("load of a damaged entry: %v; want an error naming %s and entry 2", err, s.Path())
	}
	must(t, s.Close())
	// Opening the file finds it too, and leaves it alone.
	before, err := os.ReadFile(s.Path())
	must(t, err)
	if _, err := OpenMaster(dir); err == nil || !strings.Contains(err.Error(), s.Path()) || !strings.Contains(err.Error(), "changelog entry 2 is damaged: checksum mismatch") {
		t.Fatalf("open of a store with a damaged entry: %v; want an error naming %s and entry 2", err, s.Path())
	}
	if after, _ := os.ReadFile(s.Path()); !bytes.Equal(after, before) {
		t.Fatal("the damaged file was modified")
	}
}

// TestDamagedStructure: page damage that would make bbolt loop for ever
// or allocate without bound, rather than fault, is refused at open and in
// bounded time: a branch that leads back to itself, a page claiming 4
// billion overflow pages (bbolt's Check then fills a map with them: what
// TestDamagedStore's full sweep ran into), a freelist claiming 2^40 pages.
func TestDamagedStructure(t *testing.T) {
	good := damageStore(t)
	const ps = 4096
	page := func(b []byte, id int) []byte { return b[id*ps : (id+1)*ps] }
	// The changelog's root is a branch page (400 entries); its first
	// child a leaf.
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, MasterFile), good, 0o600))
	db, err := bolt.Open(filepath.Join(dir, MasterFile), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	must(t, err)
	var root int
	must(t, db.View(func(tx *bolt.Tx) error { root = int(tx.Bucket(bucketLog).Root()); return nil }))
	must(t, db.Close())
	if ne.Uint16(page(good, root)[8:]) != flagBranch {
		t.Fatalf("the changelog's root page %d is not a branch", root)
	}
	leaf := int(ne.Uint64(page(good, root)[pageHeaderSize+8:]))
	for _, c := range []struct {
		name, want string
		edit       func(b []byte)
	}{
		{"branch leading to itself", "is reached twice", func(b []byte) {
			ne.PutUint64(page(b, root)[pageHeaderSize+8:], uint64(root))
		}},
		{"overflow count", "overflow pages", func(b []byte) {
			ne.PutUint32(page(b, leaf)[12:], 0xffff0000)
		}},
		{"freelist count", "free pages, more than it holds", func(b []byte) {
			// The newest meta page names the freelist: damage whichever
			// freelist page holds the 0xFFFF form, then both candidates.
			for id := 2; id < len(b)/ps; id++ {
				if p := page(b, id); ne.Uint64(p) == uint64(id) && ne.Uint16(p[8:]) == flagFreelist {
					ne.PutUint16(p[10:], 0xFFFF)
					ne.PutUint64(p[pageHeaderSize:], 1<<40)
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := bytes.Clone(good)
			c.edit(bad)
			dir := t.TempDir()
			path := filepath.Join(dir, MasterFile)
			must(t, os.WriteFile(path, bad, 0o600))
			done := make(chan error, 1)
			go func() {
				_, escaped, err := openAndLoad(dir)
				done <- errors.Join(err, fmt.Errorf("panic: %v", escaped))
			}()
			select {
			case err := <-done:
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "panic: <nil>") {
					t.Fatalf("open: %v; want an error naming %s and saying %q", err, path, c.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the open of a damaged store has not returned after 20 s")
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, bad) {
				t.Fatal("the damaged file was modified")
			}
		})
	}
}

// TestOneMetaPageDamaged (issue 37): with one of bbolt's two meta pages
// damaged, the store opens at the other, and says so (Warning) for the
// daemon to log, instead of nothing; with both intact it says nothing.
func TestOneMetaPageDamaged(t *testing.T) {
	good := damageStore(t)
	const ps = 4096
	for _, c := range []struct {
		name string
		page int // which meta page to damage (-1: none)
		want string
	}{
		{"both intact", -1, ""},
		{"first damaged", 0, "its first meta page is not valid (meta checksum mismatch)"},
		{"second damaged", 1, "its second meta page is not valid (meta checksum mismatch)"},
	} {
		dir := t.TempDir()
		b := slices.Clone(good)
		if c.page >= 0 {
			b[c.page*ps+pageHeaderSize+60] ^= 0xff // inside the checksummed part of the meta
		}
		must(t, os.WriteFile(filepath.Join(dir, MasterFile), b, 0o600))
		s, err := OpenMaster(dir)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w := s.Warning()
		must(t, s.Close())
		if c.want == "" && w != "" || c.want != "" && !strings.Contains(w, c.want) {
			t.Errorf("%s: warning %q, want %q", c.name, w, c.want)
		}
	}
}
