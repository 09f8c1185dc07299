package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout this build reads and writes. A file with
// another version is refused: reading it as this one would be guessing.
const SchemaVersion uint64 = 1

// Buckets and keys, named once so that every reader and writer agrees.
var (
	bucketMeta = []byte("meta") // schema, kind and the small records
	bucketLog  = []byte("log")  // master changelog: version -> Entry

	keySchema   = []byte("schema")
	keyKind     = []byte("kind")
	keyCluster  = []byte("cluster")  // master: the cluster id, raw string
	keyHard     = []byte("hard")     // master: roles.HardState
	keyBase     = []byte("base")     // master: roles.LogBase, the log's trim point (absent: never trimmed)
	keyIdentity = []byte("identity") // chunkserver: Identity
	keyVoter    = []byte("voter")    // chunkserver: roles.VoterHardState
)

// lockTimeout bounds the wait for bbolt's file lock: its holder is another
// live daemon, so waiting longer only delays the operator's error.
const lockTimeout = 200 * time.Millisecond

// errUnchanged rolls back an Update that has nothing to write, so that a
// no-op costs no commit.
var errUnchanged = errors.New("unchanged")

// spec describes one kind of store file.
type spec struct {
	kind    string   // stored under keyKind: a master file is not a chunkserver's
	daemon  string   // for the "in use" error
	buckets [][]byte // besides bucketMeta
	// records decodes the small records, so that a damaged one is found
	// at open rather than by whichever later call first reads it.
	records func(tx *bolt.Tx) error
}

// store is what both kinds of store file share.
type store struct {
	db   *bolt.DB
	path string
}

// Path is the file's path, for messages.
func (s *store) Path() string { return s.path }

// Close releases the file and its lock.
func (s *store) Close() error { return s.db.Close() }

// open opens the store file in dir, creating it when absent. An existing
// file is checked first through a read-only open, which cannot write to it
// (a read-write bbolt open initialises an empty file and may commit a
// freelist).
func open(dir, name string, sp spec) (store, error) {
	path := filepath.Join(dir, name)
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
		// bbolt would initialise it; it may be a file truncated by a fault.
		return store{}, fmt.Errorf("metadata file %s is empty, not a bbolt file: remove it to start without metadata", path)
	} else if err == nil {
		db, _, err := openChecked(path, dir, sp, true)
		if err != nil {
			return store{}, err
		}
		db.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		return store{}, fmt.Errorf("metadata file %s: %w", path, err)
	}
	// Checked again under the exclusive lock: the file may have changed.
	db, fresh, err := openChecked(path, dir, sp, false)
	if err == nil && fresh {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range append([][]byte{bucketMeta}, sp.buckets...) {
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
			meta := tx.Bucket(bucketMeta)
			return errors.Join(meta.Put(keySchema, u64key(SchemaVersion)), meta.Put(keyKind, []byte(sp.kind)))
		})
		if err != nil {
			db.Close()
			err = fmt.Errorf("metadata file %s: creating: %w", path, err)
		}
	}
	if err != nil {
		return store{}, err
	}
	return store{db, path}, nil
}

// openChecked opens path and checks it in a read transaction, so that a
// refusal writes nothing. fresh: the file holds no bucket at all, which is
// only a creation cut short before its first Update, safe to initialise.
func openChecked(path, dir string, sp spec, readOnly bool) (db *bolt.DB, fresh bool, err error) {
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, false, fmt.Errorf("metadata file %s is locked by another process: is another %s using DATA_PATH %s? (%w)",
			path, sp.daemon, dir, err)
	} else if err != nil {
		return nil, false, fmt.Errorf("metadata file %s is not a readable bbolt file: %w", path, err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Cursor().First(); k == nil {
			fresh = true
			return nil
		}
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return fmt.Errorf("no %q bucket: not an mfs-election store", bucketMeta)
		}
		if v := meta.Get(keySchema); len(v) != 8 {
			return errors.New("no valid schema version")
		} else if got := binary.BigEndian.Uint64(v); got != SchemaVersion {
			return fmt.Errorf("schema version %d, this build reads version %d", got, SchemaVersion)
		}
		if got := string(meta.Get(keyKind)); got != sp.kind {
			return fmt.Errorf("a %q store, expected a %q store", got, sp.kind)
		}
		for _, b := range sp.buckets {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("missing its %q bucket", b)
			}
		}
		return sp.records(tx)
	})
	if err != nil {
		db.Close()
		return nil, false, fmt.Errorf("metadata file %s is unusable: %w", path, err)
	}
	return db, fresh, nil
}

// u64key encodes a version so that bbolt's byte order is numeric order.
func u64key(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// get decodes meta[key] into v, reporting whether it was present. The bytes
// are copied first: bbolt's memory is valid only inside the transaction.
func get(tx *bolt.Tx, key []byte, v any) (bool, error) {
	b := tx.Bucket(bucketMeta).Get(key)
	if b == nil {
		return false, nil
	}
	if err := frame.Unmarshal(bytes.Clone(b), v); err != nil {
		return true, fmt.Errorf("record %q does not decode: %w", key, err)
	}
	return true, nil
}

// put encodes v into meta[key].
func put(tx *bolt.Tx, key []byte, v any) error {
	b, err := frame.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(key, b)
}
