package metadata

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	bolt "go.etcd.io/bbolt"
)

// MasterFile is the master's store, in its DATA_PATH.
const MasterFile = "metadata.mfs"

var masterSpec = spec{kind: "master", daemon: "mfsmaster", buckets: [][]byte{bucketLog},
	records: func(tx *bolt.Tx, schema uint64) error {
		var b changelog.LogBase
		if _, err := getAs(tx, keyHard, &roles.HardState{}, schema); err != nil {
			return err
		}
		if _, err := getAs(tx, keyBase, &b, schema); err != nil {
			return err
		}
		if _, err := getBytes(tx, keyCluster, schema); err != nil {
			return err
		}
		if schema == schemaUnsealed {
			// The upgrade seals what it finds: all of it must read first.
			_, err := readLog(tx, b.Pos, schema)
			return err
		}
		return nil
	},
	remedy: "; to rebuild this master from the LEADER, move metadata.mfs and snapshot.mfs aside and start it with -e"}

// MasterStore is an open metadata.mfs (cluster id, HardState, log base and
// the changelog after it) and the snapshot.mfs beside it. Its methods are
// safe for concurrent use (bbolt serialises its transactions; a mutex the
// snapshot's compare-and-rename).
type MasterStore struct {
	store
	dir      string
	snapPath string

	snapMu    sync.Mutex
	snapKnown bool   // the snapshot file has been read (or found absent)
	snapHave  bool   // there is one
	snapVer   uint64 // its version
}

// OpenMaster opens DATA_PATH/metadata.mfs, creating it empty when absent:
// a master without metadata is one started with -e, which learns the
// changelog from the LEADER. Temporary files of a snapshot write cut short
// are removed; snapshot.mfs itself is read by Load.
func OpenMaster(dir string) (*MasterStore, error) {
	st, err := open(dir, MasterFile, masterSpec)
	if err != nil {
		return nil, err
	}
	removeSnapshotTemps(dir)
	return &MasterStore{store: st, dir: dir, snapPath: filepath.Join(dir, SnapshotFile)}, nil
}

// SnapshotPath is the snapshot file's path, for messages.
func (s *MasterStore) SnapshotPath() string { return s.snapPath }

// ClusterID is the id of the cluster this metadata belongs to, "" when the
// master has not learnt one yet.
func (s *MasterStore) ClusterID() (id string) {
	// The record was checked at open: an error here is not expected, and
	// "" makes a snapshot write refuse.
	_ = s.db.View(func(tx *bolt.Tx) (err error) { id, err = clusterIDOf(tx); return err })
	return id
}

// HasMetadata reports whether the master holds any metadata: a changelog
// entry, a trimmed log's base, or a snapshot file (even one that cannot be
// read: Load says what is wrong with it).
func (s *MasterStore) HasMetadata() (has bool) {
	_ = s.db.View(func(tx *bolt.Tx) error {
		end, err := logEnd(tx)
		has = end > 0 || err != nil
		return nil
	})
	if _, err := os.Lstat(s.snapPath); err == nil || !errors.Is(err, os.ErrNotExist) {
		has = true
	}
	return has
}

// Init writes a new cluster's id and genesis entries (`mfsmaster init`) in
// one transaction. It refuses when any metadata exists: re-initialising
// would fork the cluster's history.
func (s *MasterStore) Init(clusterID string, genesis []changelog.Entry) error {
	if clusterID == "" || len(genesis) == 0 {
		return fmt.Errorf("metadata file %s: init needs a cluster id and genesis entries", s.path)
	}
	if _, err := os.Lstat(s.snapPath); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("snapshot file %s exists: DATA_PATH holds metadata, refusing to init", s.snapPath)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		old, err := clusterIDOf(tx)
		if err != nil {
			return err
		}
		if end := lastKey(tx); old != "" || end > 0 || tx.Bucket(bucketMeta).Get(keyBase) != nil {
			return fmt.Errorf("metadata file %s already holds metadata (cluster id %q): refusing to init", s.path, old)
		}
		if err := putBytes(tx, keyCluster, []byte(clusterID)); err != nil {
			return err
		}
		return appendEntries(tx, genesis)
	})
}

// AdoptCluster records the cluster id a -e master learnt from the LEADER.
// Adopting the id it already has is a no-op; a different one is an error,
// since the metadata here belongs to another cluster.
func (s *MasterStore) AdoptCluster(clusterID string) error {
	if clusterID == "" {
		return fmt.Errorf("metadata file %s: cannot adopt an empty cluster id", s.path)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		old, err := clusterIDOf(tx)
		if err != nil {
			return fmt.Errorf("metadata file %s: %w", s.path, err)
		}
		switch old {
		case clusterID:
			return errUnchanged
		case "":
			return putBytes(tx, keyCluster, []byte(clusterID))
		default:
			return fmt.Errorf("metadata file %s belongs to cluster %q, not %q", s.path, old, clusterID)
		}
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// Load returns what the master's disk holds: the hard state (zero if never
// written), the snapshot (nil if none), the log base and the entries after
// it, checking that they fit together: every value's checksum holds, the
// entries run contiguously from the base with epochs that never fall, a
// trimmed log has a snapshot at or above its base, and the snapshot is of
// this cluster. Any fault is an error naming the file; nothing is changed.
// A damaged page that makes bbolt fault or panic is such an error too.
func (s *MasterStore) Load() (st roles.Stored, err error) {
	cluster := ""
	err = guard(s.path, masterSpec, func() error {
		err := s.db.View(func(tx *bolt.Tx) (err error) {
			if cluster, err = clusterIDOf(tx); err != nil {
				return err
			}
			if _, err := get(tx, keyHard, &st.Hard); err != nil {
				return err
			}
			if _, err := get(tx, keyBase, &st.Base); err != nil {
				return err
			}
			st.Entries, err = readLog(tx, st.Base.Pos, SchemaVersion)
			return err
		})
		if err != nil {
			return fmt.Errorf("metadata file %s: %w (the file was left as it is%s)", s.path, err, masterSpec.remedy)
		}
		return nil
	})
	if err != nil {
		return roles.Stored{}, err
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	snap, err := readSnapshot(s.snapPath, cluster)
	if err != nil {
		return roles.Stored{}, err
	}
	s.snapKnown, s.snapHave = true, snap != nil
	switch {
	case snap == nil && st.Base.Pos.Version > 0:
		return roles.Stored{}, fmt.Errorf("metadata file %s: the changelog is trimmed to %v but there is no snapshot file %s holding what was trimmed",
			s.path, st.Base.Pos, s.snapPath)
	case snap != nil && snap.Pos.Version < st.Base.Pos.Version:
		return roles.Stored{}, fmt.Errorf("snapshot file %s is at %v, below the changelog's base %v in %s: entries between are missing",
			s.snapPath, snap.Pos, st.Base.Pos, s.path)
	case snap != nil:
		s.snapVer = snap.Pos.Version
	}
	st.Snapshot = snap
	return st, nil
}

// readLog reads the changelog after base from a store of the given schema
// version, checking each entry: its checksum, its key, that it decodes, and
// that it continues the one before.
func readLog(tx *bolt.Tx, base changelog.Pos, schema uint64) (es []changelog.Entry, err error) {
	last := base
	c := tx.Bucket(bucketLog).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		want := last.Version + 1
		if len(k) != 8 || binary.BigEndian.Uint64(k) != want {
			return nil, fmt.Errorf("changelog key %x where version %d was expected (log base %v)", k, want, base)
		}
		e, err := decodeEntry(k, v, schema)
		if err != nil {
			return nil, err
		} else if e.Version != want {
			return nil, fmt.Errorf("changelog entry under key %d says version %d", want, e.Version)
		} else if e.Epoch < last.Epoch {
			return nil, fmt.Errorf("changelog entry %v follows %v: epochs never fall", e.Pos, last)
		}
		es = append(es, e)
		last = e.Pos
	}
	return es, nil
}

// decodeEntry checks and decodes the changelog value v stored under key k.
func decodeEntry(k, v []byte, schema uint64) (e changelog.Entry, err error) {
	b, err := unseal(k, v, schema)
	if err != nil {
		return e, fmt.Errorf("changelog entry %d is damaged: %w", binary.BigEndian.Uint64(k), err)
	}
	if err := frame.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("changelog entry %d does not decode: %w", binary.BigEndian.Uint64(k), err)
	}
	return e, nil
}

// Apply makes Persists durable (roles.Store): several, in order, in one
// transaction: one fsync for a group of steps (the driver's group
// commit). p.Voter is a chunkserver's and is ignored. The newest
// Snapshot among them is written first, durably (SaveSnapshot: never over
// a newer one); then, in one bbolt transaction, each Persist's Trim,
// TruncateAfter and Append in turn, and the newest Hard. Either the whole
// transaction is durable or none of it: anything inconsistent (an entry
// that does not continue the log, a cut below the base) rolls it back and
// is returned.
func (s *MasterStore) Apply(ps ...roles.Persist) error {
	var snap *namespace.Snapshot
	for _, p := range ps {
		if p.Snapshot != nil && (snap == nil || p.Snapshot.Pos.Version > snap.Pos.Version) {
			snap = p.Snapshot
		}
	}
	if snap != nil {
		// Durable before the log that relies on it: a crash between the
		// two leaves a snapshot the log may not continue. The core then
		// starts with a Persist that trims the stored log to the snapshot
		// and truncates what follows (master.New), which this store
		// applies like an install's: TestCrashDuringInstall stops an
		// install after each step and restarts.
		if _, err := s.SaveSnapshot(context.Background(), snap); err != nil {
			return err
		}
	}
	err := s.update(func(tx *bolt.Tx) error {
		var hard *roles.HardState
		for _, p := range ps {
			if p.Hard != nil {
				hard = p.Hard // the newest record wins
			}
			conflict := false
			if p.Trim != nil {
				var err error
				if conflict, err = trim(tx, *p.Trim); err != nil {
					return err
				}
			}
			if p.TruncateAfter != nil {
				if err := truncateAfter(tx, *p.TruncateAfter); err != nil {
					return err
				}
			}
			if k := lastKey(tx); conflict && k > 0 {
				return fmt.Errorf("the log held another entry than the new base %v at its version, and kept entries up to %d after it",
					p.Trim.Pos, k)
			}
			if err := appendEntries(tx, p.Append); err != nil {
				return err
			}
		}
		if hard != nil {
			return put(tx, keyHard, hard)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("metadata file %s: %w", s.path, err)
	}
	if snap != nil && crashAfter != nil && crashAfter(stepCommitted) {
		return errCrashed
	}
	return nil
}

// trim drops every entry at or below b.Pos and makes b the log's base.
// conflict: an entry at b.Pos's version was held with another epoch, so the
// entries after it do not continue the new base; the same Persist must drop
// them (TruncateAfter), which Apply checks.
func trim(tx *bolt.Tx, b changelog.LogBase) (conflict bool, err error) {
	cur, err := base(tx)
	if err != nil {
		return false, err
	}
	if b.Pos.Version < cur.Pos.Version {
		return false, fmt.Errorf("trimming to %v, below the log base %v", b.Pos, cur.Pos)
	}
	bucket := tx.Bucket(bucketLog)
	if k := u64key(b.Pos.Version); b.Pos.Version > cur.Pos.Version {
		if raw := bucket.Get(k); raw != nil {
			e, err := decodeEntry(k, raw, SchemaVersion)
			if err != nil {
				return false, err
			}
			conflict = e.Pos != b.Pos
		}
	}
	last := lastKey(tx)
	for v := cur.Pos.Version + 1; v <= min(b.Pos.Version, last); v++ {
		if err := bucket.Delete(u64key(v)); err != nil {
			return false, err
		}
	}
	return conflict, put(tx, keyBase, &b)
}

// truncateAfter drops every entry after version v; v is never below the
// base (the base is committed, and committed entries are never dropped).
func truncateAfter(tx *bolt.Tx, v uint64) error {
	end, err := logEnd(tx)
	if err != nil {
		return err
	}
	if first := firstKey(tx); first > 0 && v+1 < first {
		return fmt.Errorf("truncating after %d, below the log base %d", v, first-1)
	} else if first == 0 && v < end {
		return fmt.Errorf("truncating after %d, below the log base %d", v, end)
	}
	// The log is contiguous: the keys past the cut are exactly v+1 .. end.
	for k := end; k > v; k-- {
		if err := tx.Bucket(bucketLog).Delete(u64key(k)); err != nil {
			return err
		}
	}
	return nil
}

// appendEntries adds es after the last entry (or the base); each must be
// exactly the next version, with an epoch that does not fall, so that
// Load's checks hold by construction: an entry that broke them would be
// refused only at the next start, leaving a master that cannot start.
// (One entry is decoded per batch for it, beside the batch's fsync.)
func appendEntries(tx *bolt.Tx, es []changelog.Entry) error {
	if len(es) == 0 {
		return nil
	}
	var last changelog.Pos
	if k := lastKey(tx); k > 0 {
		e, err := decodeEntry(u64key(k), tx.Bucket(bucketLog).Get(u64key(k)), SchemaVersion)
		if err != nil {
			return err
		}
		last = e.Pos
	} else {
		b, err := base(tx)
		if err != nil {
			return err
		}
		last = b.Pos
	}
	for _, e := range es {
		if e.Version != last.Version+1 || e.Epoch < last.Epoch {
			return fmt.Errorf("appending %v after %v", e.Pos, last)
		}
		v, err := frame.Marshal(&e)
		if err != nil {
			return err
		}
		k := u64key(e.Version)
		if err := tx.Bucket(bucketLog).Put(k, seal(k, v)); err != nil {
			return err
		}
		last = e.Pos
	}
	return nil
}

// base is the stored log base (zero when the log was never trimmed).
func base(tx *bolt.Tx) (b changelog.LogBase, err error) {
	_, err = get(tx, keyBase, &b)
	return b, err
}

// logEnd is the newest version: the last key, or the base when the log is
// empty (the base is decoded only then).
func logEnd(tx *bolt.Tx) (uint64, error) {
	if v := lastKey(tx); v > 0 {
		return v, nil
	}
	b, err := base(tx)
	return b.Pos.Version, err
}

// lastKey and firstKey are the newest and oldest versions held, 0 when the
// log bucket is empty.
func lastKey(tx *bolt.Tx) uint64 {
	c := tx.Bucket(bucketLog).Cursor()
	// First before Last: bbolt 1.5.0's Cursor.Last never returns on a
	// bucket of several pages whose every key was deleted in this
	// transaction (a trim of the whole log); First sees it is empty.
	if k, _ := c.First(); k == nil {
		return 0
	}
	if k, _ := c.Last(); len(k) == 8 {
		return binary.BigEndian.Uint64(k)
	}
	return 0
}

func firstKey(tx *bolt.Tx) uint64 {
	if k, _ := tx.Bucket(bucketLog).Cursor().First(); len(k) == 8 {
		return binary.BigEndian.Uint64(k)
	}
	return 0
}

// clusterIDOf reads the cluster id ("" when there is none yet).
func clusterIDOf(tx *bolt.Tx) (string, error) {
	b, err := getBytes(tx, keyCluster, SchemaVersion)
	return string(b), err
}
