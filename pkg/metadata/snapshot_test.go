package metadata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// configs returns two configs: the genesis one with a location mapped, and
// a later one with members.
func configs(t *testing.T) (latest, previous *registry.ClusterConfig) {
	t.Helper()
	g := changelog.Genesis(7)[0].Config
	west, err := g.Locations.MapRange(netip.MustParsePrefix("10.1.0.0/16"), "west")
	must(t, err)
	prev := *g
	prev.Locations = west
	next := prev
	next.Version, next.Bootstrap = 2, false
	next.Members = []registry.Chunkserver{
		{ID: 1, Addr: netip.MustParseAddr("10.1.0.1"), Port: 9422},
		{ID: 2, Addr: netip.MustParseAddr("10.2.0.1"), Port: 9422, VoterOnly: true},
	}
	return &next, &prev
}

// snapshotAt builds a snapshot at version v with items items and sessions
// sessions.
func snapshotAt(t *testing.T, v, epoch uint64, items, sessions int) *namespace.Snapshot {
	t.Helper()
	latest, prev := configs(t)
	s := &namespace.Snapshot{Pos: changelog.Pos{Version: v, Epoch: epoch}, Latest: latest, Previous: prev,
		Data: map[string]namespace.Item{}, Sessions: map[changelog.ClientID]namespace.Session{}}
	for i := range items {
		s.Data[fmt.Sprintf("dir/%06d", i)] = namespace.Item{Value: strings.Repeat("x", i%50), Version: uint64(i%int(v)) + 1}
	}
	for i := range sessions {
		s.Sessions[changelog.ClientID(i*7919+1)] = namespace.Session{Seq: uint64(i), Version: uint64(i%int(v)) + 1, Failed: i%3 == 0}
	}
	return s
}

func sameSnapshot(t *testing.T, got, want *namespace.Snapshot) {
	t.Helper()
	if got == nil || want == nil {
		if got != want {
			t.Fatalf("snapshot %v, want %v", got, want)
		}
		return
	}
	if got.Pos != want.Pos || !reflect.DeepEqual(got.Data, want.Data) || !reflect.DeepEqual(got.Sessions, want.Sessions) {
		t.Fatalf("snapshot at %v (%d items, %d sessions), want %v (%d, %d), or their records differ",
			got.Pos, len(got.Data), len(got.Sessions), want.Pos, len(want.Data), len(want.Sessions))
	}
	sameConfig(t, got.Latest, want.Latest)
	sameConfig(t, got.Previous, want.Previous)
}

func sameConfig(t *testing.T, got, want *registry.ClusterConfig) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("config %v, want %v", got, want)
	}
	if got == nil {
		return
	}
	if got.Version != want.Version || got.Founder != want.Founder || got.Bootstrap != want.Bootstrap ||
		!reflect.DeepEqual(got.Members, want.Members) || !got.Locations.Equal(want.Locations) {
		t.Fatalf("config %+v, want %+v", got, want)
	}
}

// initStore returns an initialised store of cluster c1 in a new directory.
func initStore(t *testing.T) (*MasterStore, string) {
	t.Helper()
	dir := t.TempDir()
	s := openMaster(t, dir)
	must(t, s.Init("c1", changelog.Genesis(7)))
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// TestSnapshotRoundTrip: a snapshot with many items and sessions and both
// configs comes back whole after a reopen, and the write leaves no
// temporary file.
func TestSnapshotRoundTrip(t *testing.T) {
	s, dir := initStore(t)
	want := snapshotAt(t, 900, 3, 20_000, 5_000)
	w, err := s.SaveSnapshot(context.Background(), want)
	must(t, err)
	if !w.Replaced || w.Bytes <= 0 {
		t.Fatalf("first save: %+v", w)
	}
	if fi, err := os.Stat(s.SnapshotPath()); err != nil || fi.Size() != w.Bytes {
		t.Fatalf("file %v %v, reported %d bytes", fi, err, w.Bytes)
	}
	must(t, s.Close())
	s = openMaster(t, dir)
	defer s.Close()
	st, err := s.Load()
	must(t, err)
	sameSnapshot(t, st.Snapshot, want)
	if tmps, _ := filepath.Glob(filepath.Join(dir, snapTmpPattern)); len(tmps) > 0 {
		t.Fatalf("temporary files left: %v", tmps)
	}

	// Two writes of one snapshot are byte for byte the same file.
	first, _ := os.ReadFile(s.SnapshotPath())
	other, _ := initStore(t)
	_, err = other.SaveSnapshot(context.Background(), want)
	must(t, err)
	if second, _ := os.ReadFile(other.SnapshotPath()); !bytes.Equal(first, second) {
		t.Fatal("two writes of one snapshot differ")
	}

	// An empty namespace is a snapshot too.
	empty := snapshotAt(t, 950, 3, 0, 0)
	empty.Previous = nil
	_, err = s.SaveSnapshot(context.Background(), empty)
	must(t, err)
	st, err = s.Load()
	must(t, err)
	sameSnapshot(t, st.Snapshot, empty)
}

// TestSnapshotUnreadable: a damaged, truncated, foreign or unknown
// snapshot file stops Load with an error naming the file and the fault;
// the file is never changed, not even by a later save.
func TestSnapshotUnreadable(t *testing.T) {
	good := func() []byte {
		s, _ := initStore(t)
		_, err := s.SaveSnapshot(context.Background(), snapshotAt(t, 50, 2, 3000, 100))
		must(t, err)
		b, err := os.ReadFile(s.SnapshotPath())
		must(t, err)
		return b
	}()
	foreign := func() []byte {
		dir := t.TempDir()
		s := openMaster(t, dir)
		defer s.Close()
		must(t, s.Init("c2", changelog.Genesis(7)))
		_, err := s.SaveSnapshot(context.Background(), snapshotAt(t, 50, 2, 10, 1))
		must(t, err)
		b, err := os.ReadFile(s.SnapshotPath())
		must(t, err)
		return b
	}()
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 0x20; return b }
	schema := bytes.Clone(good)
	schema[15] = 9
	for _, c := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"bit flip in the records", flip(len(good) / 2), "checksum mismatch"},
		{"bit flip in the header", flip(20), "checksum mismatch"},
		{"bit flip in the checksum", flip(len(good) - 1), "checksum mismatch"},
		{"truncated", good[:len(good)-100], "checksum mismatch"},
		{"truncated to the prefix", good[:snapPrefixLen], "truncated"},
		{"extended", append(bytes.Clone(good), 0), "checksum mismatch"},
		{"other cluster", foreign, `belongs to cluster "c2", metadata.mfs to "c1"`},
		{"not a snapshot", []byte("GARBAGE GARBAGE GARBAGE GARBAGE"), "not a snapshot file"},
		{"empty", nil, "not a snapshot file"},
		{"newer schema", schema, "snapshot schema version 9, this build reads version 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := initStore(t)
			path := s.SnapshotPath()
			must(t, os.WriteFile(path, c.content, 0o600))
			_, err := s.Load()
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("load: %v\nwant an error naming %s and saying %q", err, path, c.want)
			}
			// Neither a background save nor an installed snapshot may
			// replace a file that could not be read.
			if _, err := s.SaveSnapshot(context.Background(), snapshotAt(t, 999, 9, 1, 1)); err == nil {
				t.Fatal("a save replaced an unreadable snapshot file")
			}
			if err := s.Apply(roles.Persist{Snapshot: snapshotAt(t, 999, 9, 1, 1)}); err == nil {
				t.Fatal("an install replaced an unreadable snapshot file")
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, c.content) {
				t.Fatal("the unreadable snapshot file was modified")
			}
			if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), snapTmpPattern)); len(tmps) > 0 {
				t.Fatalf("temporary files left: %v", tmps)
			}
			if !s.HasMetadata() {
				t.Fatal("a store with a snapshot file claims no metadata")
			}
		})
	}
}

// TestSnapshotNeverOlder: an older snapshot never replaces a newer one,
// whether it is saved after it or at the same time.
func TestSnapshotNeverOlder(t *testing.T) {
	s, dir := initStore(t)
	_, err := s.Load()
	must(t, err)
	w, err := s.SaveSnapshot(context.Background(), snapshotAt(t, 20, 2, 10, 1))
	must(t, err)
	if !w.Replaced {
		t.Fatal("the first snapshot was not written")
	}
	for _, v := range []uint64{10, 20} {
		if w, err := s.SaveSnapshot(context.Background(), snapshotAt(t, v, 2, 10, 1)); err != nil || w.Replaced {
			t.Fatalf("saving %d over 20: %+v %v", v, w, err)
		}
	}
	// An install through Persist obeys the same rule.
	must(t, s.Apply(roles.Persist{Snapshot: snapshotAt(t, 15, 2, 10, 1)}))

	// Concurrent writers (a background save racing an install): the
	// newest wins, whatever order they finish in.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for v := uint64(21); v <= 36; v++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.SaveSnapshot(context.Background(), snapshotAt(t, v, 2, 2000, 10)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st, err := s.Load()
	must(t, err)
	if st.Snapshot.Pos.Version != 36 {
		t.Fatalf("after concurrent saves the file holds version %d, want 36", st.Snapshot.Pos.Version)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, snapTmpPattern)); len(tmps) > 0 {
		t.Fatalf("temporary files left: %v", tmps)
	}

	// A cancelled save leaves nothing behind and changes nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.SaveSnapshot(ctx, snapshotAt(t, 99, 2, 10_000, 10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled save: %v", err)
	}
	if st, _ := s.Load(); st.Snapshot.Pos.Version != 36 {
		t.Fatalf("a cancelled save replaced the snapshot (%v)", st.Snapshot.Pos)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, snapTmpPattern)); len(tmps) > 0 {
		t.Fatalf("temporary files left: %v", tmps)
	}
}

// TestTrimTruncateAppend: a trim, a truncation and an append in one
// Apply, then a load after the trim, before and after a reopen; the
// install case (trim past the end); and the refusals.
func TestTrimTruncateAppend(t *testing.T) {
	s, dir := initStore(t)
	g := changelog.Genesis(7)
	var es []changelog.Entry
	for v := uint64(2); v <= 10; v++ {
		es = append(es, entry(v, 2, fmt.Sprint("k", v)))
	}
	must(t, s.Apply(roles.Persist{Append: es}))

	latest, prev := configs(t)
	snap := snapshotAt(t, 5, 2, 4, 1)
	b := changelog.LogBase{Pos: changelog.Pos{Version: 5, Epoch: 2}, Latest: latest, Previous: prev}
	cut := uint64(8)
	hard := roles.HardState{Incarnation: 3, Epoch: 3, MaxEpoch: 3, LeaderEpoch: 3, Commit: changelog.Pos{Version: 8, Epoch: 2}}
	must(t, s.Apply([]roles.Persist{
		{Snapshot: snap, Trim: &b},
		{TruncateAfter: &cut, Append: []changelog.Entry{entry(9, 3, "n9"), entry(10, 3, "n10")}},
		{Hard: &hard},
	}...))
	want := []changelog.Entry{es[4], es[5], es[6], entry(9, 3, "n9"), entry(10, 3, "n10")} // 6, 7, 8, 9, 10
	check := func() {
		t.Helper()
		st, err := s.Load()
		must(t, err)
		if !reflect.DeepEqual(st.Hard, hard) || !reflect.DeepEqual(st.Entries, want) || st.Base.Pos != b.Pos {
			t.Fatalf("loaded hard %+v base %v entries %v\nwant %+v %v %v", st.Hard, st.Base.Pos, st.Entries, hard, b.Pos, want)
		}
		sameConfig(t, st.Base.Latest, latest)
		sameConfig(t, st.Base.Previous, prev)
		sameSnapshot(t, st.Snapshot, snap)
	}
	check()
	must(t, s.Close())
	s = openMaster(t, dir)
	defer s.Close()
	check()

	// Refusals roll the whole transaction back.
	low := uint64(4)
	if err := s.Apply(roles.Persist{TruncateAfter: &low}); err == nil || !strings.Contains(err.Error(), "below the log base 5") {
		t.Fatalf("truncating below the base: %v", err)
	}
	back := changelog.LogBase{Pos: changelog.Pos{Version: 3, Epoch: 2}, Latest: g[0].Config}
	if err := s.Apply(roles.Persist{Trim: &back, Hard: &roles.HardState{Incarnation: 99}}); err == nil || !strings.Contains(err.Error(), "below the log base 5@2") {
		t.Fatalf("trimming backwards: %v", err)
	}
	if err := s.Apply(roles.Persist{Append: []changelog.Entry{entry(12, 3, "gap")}}); err == nil {
		t.Fatal("a gap was appended")
	}
	// A base at a version the log holds with another epoch, with entries
	// kept after it, does not continue.
	other := changelog.LogBase{Pos: changelog.Pos{Version: 8, Epoch: 3}, Latest: latest, Previous: prev}
	if err := s.Apply(roles.Persist{Trim: &other}); err == nil || !strings.Contains(err.Error(), "kept entries up to 10") {
		t.Fatalf("a trim to a conflicting base with entries after it: %v", err)
	}
	check()

	// An installed snapshot past the end: the log restarts after it,
	// empty, and goes on from there.
	snap2 := snapshotAt(t, 15, 4, 6, 2)
	b2 := changelog.LogBase{Pos: snap2.Pos, Latest: latest, Previous: prev}
	v := snap2.Pos.Version
	must(t, s.Apply(roles.Persist{Snapshot: snap2, Trim: &b2, TruncateAfter: &v}))
	st, err := s.Load()
	must(t, err)
	if len(st.Entries) != 0 || st.Base.Pos != snap2.Pos || !s.HasMetadata() {
		t.Fatalf("after the install: base %v, %d entries, metadata %v", st.Base.Pos, len(st.Entries), s.HasMetadata())
	}
	sameSnapshot(t, st.Snapshot, snap2)
	if err := s.Apply(roles.Persist{Append: []changelog.Entry{entry(16, 3, "old")}}); err == nil {
		t.Fatal("an entry of an older epoch than the base was appended")
	}
	must(t, s.Apply(roles.Persist{Append: []changelog.Entry{entry(16, 4, "a"), entry(17, 4, "b")}}))
	if st, err := s.Load(); err != nil || len(st.Entries) != 2 || st.Entries[0].Version != 16 {
		t.Fatalf("after appending on an empty trimmed log: %v %v", st.Entries, err)
	}
	if err := s.Init("c9", g); err == nil {
		t.Fatal("init over a trimmed log was accepted")
	}
}

// TestTrimWholeLog: a trim that empties a changelog of many pages in one
// transaction (an installed snapshot past the end), then appends after it.
// bbolt's Cursor.Last does not return on such a bucket: the store must not
// ask it.
func TestTrimWholeLog(t *testing.T) {
	s, _ := initStore(t)
	var es []changelog.Entry
	for v := uint64(2); v <= 300; v++ {
		e := entry(v, 2, fmt.Sprint("k", v))
		e.Value = strings.Repeat("v", 200)
		es = append(es, e)
	}
	must(t, s.Apply(roles.Persist{Append: es}))
	latest, prev := configs(t)
	snap := snapshotAt(t, 400, 3, 5, 1)
	b := changelog.LogBase{Pos: snap.Pos, Latest: latest, Previous: prev}
	v := snap.Pos.Version
	must(t, s.Apply(roles.Persist{Snapshot: snap, Trim: &b, TruncateAfter: &v, Append: []changelog.Entry{entry(401, 3, "a")}}))
	st, err := s.Load()
	must(t, err)
	if st.Base.Pos != snap.Pos || len(st.Entries) != 1 || st.Entries[0].Version != 401 {
		t.Fatalf("after trimming the whole log: base %v, entries %v", st.Base.Pos, st.Entries)
	}
}

// TestTrimInconsistent: a log trimmed without a snapshot, or past its
// snapshot, is refused at load with both files named.
func TestTrimInconsistent(t *testing.T) {
	s, _ := initStore(t)
	latest, prev := configs(t)
	var es []changelog.Entry
	for v := uint64(2); v <= 6; v++ {
		es = append(es, entry(v, 2, "k"))
	}
	b := changelog.LogBase{Pos: changelog.Pos{Version: 4, Epoch: 2}, Latest: latest, Previous: prev}
	must(t, s.Apply(roles.Persist{Append: es}, roles.Persist{Trim: &b}))
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "trimmed to 4@2 but there is no snapshot file "+s.SnapshotPath()) {
		t.Fatalf("load of a trimmed log without a snapshot: %v", err)
	}
	_, err := s.SaveSnapshot(context.Background(), snapshotAt(t, 3, 2, 1, 1))
	must(t, err)
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "below the changelog's base 4@2") {
		t.Fatalf("load of a snapshot below the base: %v", err)
	}
}

// TestSnapshotFilesAtOpen: temporary files of a write cut short are
// removed when the store is opened; init refuses a directory holding a
// snapshot.
func TestSnapshotFilesAtOpen(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, SnapshotFile+".tmp-123")
	must(t, os.WriteFile(tmp, []byte("half"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, SnapshotFile), []byte("x"), 0o600))
	s := openMaster(t, dir)
	defer s.Close()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the leftover temporary file is still there: %v", err)
	}
	if !s.HasMetadata() {
		t.Fatal("a directory with a snapshot file claims no metadata")
	}
	if err := s.Init("c1", changelog.Genesis(1)); err == nil || !strings.Contains(err.Error(), "refusing to init") {
		t.Fatalf("init beside a snapshot file: %v", err)
	}
}
