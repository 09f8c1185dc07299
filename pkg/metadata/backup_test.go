package metadata

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
)

// writeBackupFile writes snap, of cluster, as a backup file and returns
// its path.
func writeBackupFile(t *testing.T, cluster string, snap *namespace.Snapshot) string {
	t.Helper()
	var buf bytes.Buffer
	n, err := WriteBackup(context.Background(), &buf, cluster, snap)
	must(t, err)
	if n != int64(buf.Len()) {
		t.Fatalf("WriteBackup said %d bytes, wrote %d", n, buf.Len())
	}
	path := filepath.Join(t.TempDir(), "mfs.backup")
	must(t, os.WriteFile(path, buf.Bytes(), 0o600))
	return path
}

// TestBackupRoundTrip: a backup reads back as written, with the cluster it
// names; one damaged anywhere, cut short or not a backup at all is refused
// with the file named and what is wrong, and is left as it was.
func TestBackupRoundTrip(t *testing.T) {
	snap := snapshotAt(t, 500, 4, 300, 20)
	path := writeBackupFile(t, "OLD1", snap)
	b, err := ReadBackup(path)
	must(t, err)
	if b.Cluster != "OLD1" {
		t.Fatalf("cluster %q", b.Cluster)
	}
	sameSnapshot(t, b.Snap, snap)

	raw, err := os.ReadFile(path)
	must(t, err)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"flipped", flip(raw, len(raw)/2), "checksum mismatch"},
		{"short", raw[:len(raw)-100], "checksum mismatch"},
		{"other", []byte("AUTH_CODE = x\n"), "no snapshot magic"},
	} {
		p := filepath.Join(t.TempDir(), c.name)
		must(t, os.WriteFile(p, c.data, 0o600))
		_, err := ReadBackup(p)
		if err == nil || !strings.Contains(err.Error(), "backup file "+p+" is unusable") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it named and %q", c.name, err, c.want)
		}
		after, _ := os.ReadFile(p)
		if !bytes.Equal(after, c.data) {
			t.Errorf("%s: the file was changed", c.name)
		}
	}
	if _, err := ReadBackup(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing file: %v", err)
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x40
	return c
}

// TestRestore: a backup refounded and restored into an empty DATA_PATH
// loads as a master's store of the new cluster: the snapshot at the
// backup's version at epoch 0, the log's base there, the founder's
// bootstrap config with the old locations and no member; the old
// cluster's id is nowhere. A DATA_PATH with metadata, or with a snapshot
// file, is refused and left as it was.
func TestRestore(t *testing.T) {
	snap := snapshotAt(t, 500, 4, 300, 20)
	b, err := ReadBackup(writeBackupFile(t, "OLD1", snap))
	must(t, err)
	re := b.Snap.Refound(9)

	dir := t.TempDir()
	st, err := OpenMaster(dir)
	must(t, err)
	must(t, st.Restore("NEW2", re))
	got, err := st.Load()
	must(t, err)
	must(t, st.Close())
	switch {
	case got.Snapshot == nil || got.Snapshot.Pos != (changelog.Pos{Version: 500}):
		t.Fatalf("restored snapshot %+v", got.Snapshot)
	case got.Base.Pos != got.Snapshot.Pos || len(got.Entries) != 0:
		t.Fatalf("base %v with %d entries", got.Base.Pos, len(got.Entries))
	case got.Snapshot.Latest.Founder != 9 || !got.Snapshot.Latest.Bootstrap || len(got.Snapshot.Latest.Members) != 0 || got.Snapshot.Previous != nil:
		t.Fatalf("restored config %+v (previous %+v)", got.Snapshot.Latest, got.Snapshot.Previous)
	case !got.Snapshot.Latest.Locations.Equal(snap.Latest.Locations):
		t.Fatalf("locations %v, want %v", got.Snapshot.Latest.Locations, snap.Latest.Locations)
	case len(got.Snapshot.Data) != 300 || len(got.Snapshot.Sessions) != 20:
		t.Fatalf("%d keys and %d sessions", len(got.Snapshot.Data), len(got.Snapshot.Sessions))
	}
	for k, it := range snap.Data {
		if got.Snapshot.Data[k] != it {
			t.Fatalf("%s = %+v, want %+v", k, got.Snapshot.Data[k], it)
		}
	}
	st, err = OpenMaster(dir)
	must(t, err)
	if id := st.ClusterID(); id != "NEW2" {
		t.Fatalf("cluster id %q", id)
	}
	if err := st.Restore("NEW3", re); err == nil || !strings.Contains(err.Error(), "refusing to restore") {
		t.Fatalf("a restore over metadata: %v", err)
	}
	must(t, st.Close())

	initd := t.TempDir()
	st, err = OpenMaster(initd)
	must(t, err)
	must(t, st.Init("C1", changelog.Genesis(1)))
	if err := st.Restore("NEW4", re); err == nil || !strings.Contains(err.Error(), `already holds metadata (cluster id "C1")`) {
		t.Fatalf("a restore over an initialised store: %v", err)
	}
	if id := st.ClusterID(); id != "C1" {
		t.Fatalf("the refused restore changed the cluster id to %q", id)
	}
	must(t, st.Close())
}

// bigSnapshot is 200 values of 200 KiB (40 MB), as large values make it.
func bigSnapshot() *namespace.Snapshot {
	s := &namespace.Snapshot{Pos: changelog.Pos{Version: 201, Epoch: 1}, Latest: changelog.Genesis(7)[0].Config,
		Data: map[string]namespace.Item{}, Sessions: map[changelog.ClientID]namespace.Session{}}
	for i := range 200 {
		s.Data[fmt.Sprintf("k%03d", i)] = namespace.Item{Value: strings.Repeat("x", 200<<10), Version: uint64(i + 2)}
	}
	return s
}

// BenchmarkReadBackup reads and checks a 40 MB backup of large values.
func BenchmarkReadBackup(b *testing.B) {
	snap := bigSnapshot()
	path := filepath.Join(b.TempDir(), "mfs.backup")
	var buf bytes.Buffer
	if _, err := WriteBackup(context.Background(), &buf, "C1", snap); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for range b.N {
		if _, err := ReadBackup(path); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSaveBackupFile: a backup is kept only whole and checked, beside its
// .sha256; a fill that fails or hands back something that is not a backup
// leaves nothing behind, and an existing file is never replaced.
func TestSaveBackupFile(t *testing.T) {
	snap := snapshotAt(t, 50, 2, 30, 3)
	dir := t.TempDir()
	path := filepath.Join(dir, "b1")
	b, sum, err := SaveBackupFile(path, func(w io.Writer) error {
		_, err := WriteBackup(context.Background(), w, "C9", snap)
		return err
	})
	must(t, err)
	raw, err := os.ReadFile(path)
	must(t, err)
	line, err := os.ReadFile(path + ".sha256")
	must(t, err)
	if want := fmt.Sprintf("%x  b1\n", sha256.Sum256(raw)); string(line) != want || fmt.Sprintf("%x  b1\n", sum) != want || b.Cluster != "C9" {
		t.Fatalf("sha256 file %q, sum %x, cluster %q; want %q", line, sum, b.Cluster, want)
	}
	sameSnapshot(t, b.Snap, snap)

	for _, c := range []struct {
		name string
		fill func(io.Writer) error
		want string
	}{
		{"b1", func(w io.Writer) error { return nil }, "exists: refusing to overwrite it"},
		{"b2", func(w io.Writer) error { _, _ = w.Write(raw[:10]); return errors.New("the master went away") }, "the master went away"},
		{"b3", func(w io.Writer) error { _, err := w.Write([]byte("not a backup")); return err }, "does not read back, nothing was kept"},
	} {
		_, _, err := SaveBackupFile(filepath.Join(dir, c.name), c.fill)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 2 {
		t.Fatalf("left behind: %v, want only b1 and b1.sha256", left)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, raw) {
		t.Fatal("the existing backup was changed")
	}
}
