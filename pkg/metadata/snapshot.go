package metadata

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// SnapshotFile is a master's newest snapshot, beside metadata.mfs in its
// DATA_PATH. metadata.mfs keeps the hard state, the log base and the
// entries after it; the entries up to the base are only in the snapshot.
const SnapshotFile = "snapshot.mfs"

// SnapshotSchema is the snapshot layout this build reads and writes.
const SnapshotSchema uint64 = 1

// snapshotMagic opens every snapshot file.
var snapshotMagic = [8]byte{'M', 'F', 'S', 'S', 'N', 'A', 'P', 0}

// A snapshot file:
//
//	magic "MFSSNAP\0" | schema: uint64 BE | header | items | sessions | CRC-32C: uint32 BE
//
// header, each item and each session is one msgpack value (the frame
// codec); header says how many items and sessions follow, items come in key
// order and sessions in id order, so two masters' snapshots at one position
// are byte for byte the same. The checksum (Castagnoli) covers every byte
// before it.

// snapPrefixLen is the magic and the schema version.
const snapPrefixLen = 16

// snapHeader is the first value of a snapshot file.
type snapHeader struct {
	Cluster  string // the metadata id: a snapshot of another cluster is refused
	Pos      changelog.Pos
	Latest   *registry.ClusterConfig
	Previous *registry.ClusterConfig
	Items    uint64
	Sessions uint64
}

// snapItem is one key of the namespace (an array, not a map: millions of
// them need no field names).
type snapItem struct {
	//lint:ignore U1000 the codec reads this field's tag (toarray), never its value
	_struct struct{} `codec:",toarray"` // the codec reads its tag
	Key     string
	Value   string
	Version uint64
}

// snapSession is one session of the session table.
type snapSession struct {
	//lint:ignore U1000 the codec reads this field's tag (toarray), never its value
	_struct struct{} `codec:",toarray"` // the codec reads its tag
	Client  changelog.ClientID
	Seq     uint64
	Version uint64
	Failed  bool
}

// snapTmpPattern names the temporary files a write goes through; leftovers
// of a crash are removed when the store is opened.
const snapTmpPattern = SnapshotFile + ".tmp-*"

// checkEvery is how many records a write encodes between looks at its
// context.
const checkEvery = 4096

// SnapshotWrite says what SaveSnapshot did.
type SnapshotWrite struct {
	Replaced bool  // false: the stored snapshot was as new or newer, nothing changed
	Bytes    int64 // the file's size (when Replaced)
}

// SaveSnapshot makes snap DATA_PATH/snapshot.mfs, durably, unless the one
// stored there is as new or newer: an older snapshot never replaces a newer
// one, whatever order concurrent writes finish in. The file is written
// under a unique temporary name and fsynced, then renamed over the old one
// and the directory fsynced. Only the compare and rename are serialised,
// so a background save does not hold up a snapshot installed meanwhile.
// ctx stops a write in progress (the temporary file is removed). Safe for
// concurrent use, and for use beside Apply.
func (s *MasterStore) SaveSnapshot(ctx context.Context, snap *namespace.Snapshot) (SnapshotWrite, error) {
	if snap == nil || snap.Latest == nil {
		return SnapshotWrite{}, fmt.Errorf("snapshot file %s: refusing a snapshot without a config", s.snapPath)
	}
	if v, known := s.storedSnapshot(); known && v >= snap.Pos.Version {
		return SnapshotWrite{}, nil // not worth writing
	}
	cluster := s.ClusterID()
	if cluster == "" {
		return SnapshotWrite{}, fmt.Errorf("snapshot file %s: the store has no cluster id yet", s.snapPath)
	}
	return s.saveSnapshot(ctx, cluster, snap)
}

// saveSnapshot is SaveSnapshot for the cluster id given.
func (s *MasterStore) saveSnapshot(ctx context.Context, cluster string, snap *namespace.Snapshot) (SnapshotWrite, error) {
	tmp, err := os.CreateTemp(s.dir, snapTmpPattern)
	if err != nil {
		return SnapshotWrite{}, fmt.Errorf("snapshot file %s: %w", s.snapPath, err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	size, err := writeSnapshot(ctx, tmp, cluster, snap)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.Close()
	}
	if err != nil {
		return SnapshotWrite{}, fmt.Errorf("snapshot file %s: writing %s: %w", s.snapPath, tmp.Name(), err)
	}
	if crashAfter != nil && crashAfter(stepTempWritten) {
		keep = true // a crash cleans nothing up
		return SnapshotWrite{}, errCrashed
	}
	if err := ctx.Err(); err != nil {
		return SnapshotWrite{}, err
	}

	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if err := s.learnStoredLocked(); err != nil {
		return SnapshotWrite{}, err
	}
	if s.snapHave && s.snapVer >= snap.Pos.Version {
		return SnapshotWrite{}, nil // a newer one landed meanwhile
	}
	if err := os.Rename(tmp.Name(), s.snapPath); err != nil {
		return SnapshotWrite{}, fmt.Errorf("snapshot file %s: %w", s.snapPath, err)
	}
	keep = true
	s.snapHave, s.snapVer = true, snap.Pos.Version
	if crashAfter != nil && crashAfter(stepRenamed) {
		return SnapshotWrite{}, errCrashed
	}
	if err := syncDir(s.dir); err != nil {
		return SnapshotWrite{}, fmt.Errorf("snapshot file %s: %w", s.snapPath, err)
	}
	if crashAfter != nil && crashAfter(stepDirSynced) {
		return SnapshotWrite{}, errCrashed
	}
	return SnapshotWrite{Replaced: true, Bytes: size}, nil
}

// storedSnapshot is the version of the snapshot file as this store last
// knew it (known false: not read yet).
func (s *MasterStore) storedSnapshot() (version uint64, known bool) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if !s.snapKnown {
		return 0, false
	}
	return s.snapVer, true
}

// learnStoredLocked reads the snapshot file, if this store has not yet, so
// that a write knows what it would replace. A file that cannot be read is
// an error: it is never replaced unread (the operator decides).
func (s *MasterStore) learnStoredLocked() error {
	if s.snapKnown {
		return nil
	}
	snap, err := readSnapshot(s.snapPath, s.ClusterID())
	if err != nil {
		return err
	}
	s.snapKnown = true
	if snap != nil {
		s.snapHave, s.snapVer = true, snap.Pos.Version
	}
	return nil
}

// writeSnapshot encodes the file into f, streaming, and returns its size.
func writeSnapshot(ctx context.Context, f io.Writer, cluster string, snap *namespace.Snapshot) (int64, error) {
	crc := crc32.New(castagnoli)
	cw := &countWriter{w: io.MultiWriter(f, crc)}
	bw := bufio.NewWriterSize(cw, 256<<10)
	if _, err := bw.Write(snapshotMagic[:]); err != nil {
		return 0, err
	}
	if _, err := bw.Write(u64key(SnapshotSchema)); err != nil {
		return 0, err
	}
	enc := frame.NewEncoder(bw)
	h := snapHeader{Cluster: cluster, Pos: snap.Pos, Latest: snap.Latest, Previous: snap.Previous,
		Items: uint64(len(snap.Data)), Sessions: uint64(len(snap.Sessions))}
	if err := enc.Encode(&h); err != nil {
		return 0, err
	}
	n := 0
	step := func() error {
		if n++; n%checkEvery == 0 {
			return ctx.Err()
		}
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(snap.Data)) {
		it := snap.Data[k]
		if err := enc.Encode(&snapItem{Key: k, Value: it.Value, Version: it.Version}); err != nil {
			return 0, err
		}
		if err := step(); err != nil {
			return 0, err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(snap.Sessions)) {
		ss := snap.Sessions[id]
		if err := enc.Encode(&snapSession{Client: id, Seq: ss.Seq, Version: ss.Version, Failed: ss.Failed}); err != nil {
			return 0, err
		}
		if err := step(); err != nil {
			return 0, err
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := f.Write(sum[:]); err != nil {
		return 0, err
	}
	return cw.n + 4, nil
}

// readSnapshot reads and checks the snapshot file at path: nil when there
// is none. Every fault is an error naming the file and saying what is
// wrong; the file is only read.
func readSnapshot(path, cluster string) (*namespace.Snapshot, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("snapshot file %s: %w", path, err)
	}
	defer f.Close()
	snap, of, err := decodeSnapshot(f)
	if err == nil && of != cluster {
		err = fmt.Errorf("it belongs to cluster %q, metadata.mfs to %q", of, cluster)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot file %s is unusable: %w (the file was left as it is; to rebuild this master from the LEADER, move metadata.mfs and snapshot.mfs aside and start it with -e)", path, err)
	}
	return snap, nil
}

// decodeSnapshot checks the prefix, then the checksum over the whole file,
// and only then decodes what it vouches for; cluster is the id its header
// names.
func decodeSnapshot(f *os.File) (*namespace.Snapshot, string, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	size := fi.Size()
	var prefix [snapPrefixLen]byte
	if n, _ := io.ReadFull(f, prefix[:]); n < len(prefix) || !bytes.Equal(prefix[:8], snapshotMagic[:]) {
		return nil, "", errors.New("not a snapshot file (no snapshot magic)")
	}
	if v := binary.BigEndian.Uint64(prefix[8:]); v != SnapshotSchema {
		return nil, "", fmt.Errorf("snapshot schema version %d, this build reads version %d", v, SnapshotSchema)
	}
	if size < snapPrefixLen+4 {
		return nil, "", fmt.Errorf("truncated: %d bytes", size)
	}
	body := size - 4
	crc := crc32.New(castagnoli)
	if _, err := crc.Write(prefix[:]); err != nil {
		return nil, "", err
	}
	if _, err := io.CopyN(crc, f, body-snapPrefixLen); err != nil {
		return nil, "", fmt.Errorf("reading: %w", err)
	}
	var sum [4]byte
	if _, err := io.ReadFull(f, sum[:]); err != nil {
		return nil, "", fmt.Errorf("reading the checksum: %w", err)
	}
	if got, want := crc.Sum32(), binary.BigEndian.Uint32(sum[:]); got != want {
		return nil, "", fmt.Errorf("checksum mismatch (computed %08x, stored %08x): damaged or truncated", got, want)
	}

	if _, err := f.Seek(snapPrefixLen, io.SeekStart); err != nil {
		return nil, "", err
	}
	br := bufio.NewReaderSize(io.LimitReader(f, body-snapPrefixLen), 256<<10)
	dec := frame.NewCheckedDecoder(br)
	var h snapHeader
	if err := dec.Decode(&h); err != nil {
		return nil, "", fmt.Errorf("header does not decode: %w", err)
	}
	if h.Latest == nil {
		return nil, "", fmt.Errorf("the snapshot at %v holds no config", h.Pos)
	}
	// The counts are vouched for by the checksum; the bound only keeps a
	// writer's bug from becoming a huge allocation.
	snap := &namespace.Snapshot{Pos: h.Pos, Latest: h.Latest, Previous: h.Previous,
		Data: make(map[string]namespace.Item, min(h.Items, 1<<20)), Sessions: make(map[changelog.ClientID]namespace.Session, min(h.Sessions, 1<<20))}
	for i := uint64(0); i < h.Items; i++ {
		var it snapItem
		if err := dec.Decode(&it); err != nil {
			return nil, "", fmt.Errorf("item %d of %d does not decode: %w", i+1, h.Items, err)
		}
		snap.Data[it.Key] = namespace.Item{Value: it.Value, Version: it.Version}
	}
	for i := uint64(0); i < h.Sessions; i++ {
		var ss snapSession
		if err := dec.Decode(&ss); err != nil {
			return nil, "", fmt.Errorf("session %d of %d does not decode: %w", i+1, h.Sessions, err)
		}
		snap.Sessions[ss.Client] = namespace.Session{Seq: ss.Seq, Version: ss.Version, Failed: ss.Failed}
	}
	if uint64(len(snap.Data)) != h.Items || uint64(len(snap.Sessions)) != h.Sessions {
		return nil, "", fmt.Errorf("duplicate records (%d items, %d sessions, the header says %d and %d)",
			len(snap.Data), len(snap.Sessions), h.Items, h.Sessions)
	}
	if n, _ := io.Copy(io.Discard, br); n > 0 {
		return nil, "", fmt.Errorf("%d bytes after the last record", n)
	}
	return snap, h.Cluster, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// countWriter counts what passes through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeStep names a point in a snapshot write or install after which a
// test can stop it as a crash would (crashAfter).
type writeStep int

// The steps, in the order an install through Apply takes them.
const (
	stepTempWritten writeStep = 1 + iota // the temporary file written and fsynced
	stepRenamed                          // renamed over snapshot.mfs
	stepDirSynced                        // the directory fsynced: the snapshot is durable
	stepCommitted                        // Apply's bbolt transaction (trim, truncate, append) committed
)

func (w writeStep) String() string {
	switch w {
	case stepTempWritten:
		return "temp-written"
	case stepRenamed:
		return "renamed"
	case stepDirSynced:
		return "dir-synced"
	case stepCommitted:
		return "committed"
	}
	return "step?"
}

// crashAfter is nil but in tests, which set it to stop a write right after
// a step (it returns true), as if the process died there: the write
// returns errCrashed at once, and nothing after the step runs or is
// cleaned up. The test then closes and reopens the store, as a restart.
var crashAfter func(writeStep) bool

// errCrashed is what a write stopped by crashAfter returns.
var errCrashed = errors.New("stopped by the test as if the process died here")

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// removeSnapshotTemps removes temporary files a crashed write left behind.
// The store's lock is held: no write of another process is in progress.
func removeSnapshotTemps(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, snapTmpPattern))
	for _, t := range tmps {
		_ = os.Remove(t)
	}
}
