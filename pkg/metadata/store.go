package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout this build writes. Version 2 seals every
// value but the schema and kind with a CRC-32C of its key and bytes
// (seal), so that a damaged record or changelog entry is an error rather
// than data. A version 1 store (no checksums) is upgraded in place when a
// daemon of this build first opens it read-write, under the file's
// exclusive lock, in one transaction, and only after all of it was read and
// checked; a newer version is refused: reading it as this one would be
// guessing.
const SchemaVersion uint64 = 2

// schemaUnsealed is the first layout: values stored without a checksum.
const schemaUnsealed uint64 = 1

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
	// records decodes the small records of a store of the given schema,
	// so that a damaged one is found at open rather than by whichever
	// later call first reads it. For an unsealed (version 1) store it
	// decodes everything, since the upgrade rewrites everything.
	records func(tx *bolt.Tx, schema uint64) error
	// remedy ends the error about a damaged file: what the operator can do.
	remedy string
}

// store is what both kinds of store file share.
type store struct {
	db   *bolt.DB
	path string
	// commits counts the durable writes of Apply, each one bbolt commit
	// (two fdatasyncs: the pages, then the meta page): what a change or a
	// heartbeat costs the disk, for the metrics.
	commits *atomic.Uint64
	// warning: what was found wrong but survivable at open (one of the
	// two meta pages damaged), for the daemon to log; empty: nothing.
	warning string
}

// Warning is what open found wrong in the file without refusing it (one
// of bbolt's two meta pages damaged: opened at the other), to be logged;
// empty when nothing was.
func (s store) Warning() string { return s.warning }

// Commits is how many durable writes Apply has made since the store was
// opened.
func (s *store) Commits() uint64 { return s.commits.Load() }

// update is one durable bbolt transaction of Apply, counted.
func (s *store) update(fn func(tx *bolt.Tx) error) error {
	err := s.db.Update(fn)
	if err == nil {
		s.commits.Add(1)
	}
	return err
}

// Path is the file's path, for messages.
func (s *store) Path() string { return s.path }

// Close releases the file and its lock.
func (s *store) Close() error { return s.db.Close() }

// open opens the store file in dir, creating it when absent. An existing
// file is checked first through a read-only open, which cannot write to it
// (a read-write bbolt open initialises an empty file and may commit a
// freelist). An unsealed (version 1) store passing every check is then
// upgraded under the exclusive lock.
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
	db, schema, err := openChecked(path, dir, sp, false)
	if err == nil && schema == 0 {
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
	} else if err == nil && schema == schemaUnsealed {
		if err = guard(path, sp, func() error { return upgrade(db, sp) }); err != nil {
			db.Close()
			err = fmt.Errorf("metadata file %s: upgrading it from schema version %d to %d: %w (nothing was changed)",
				path, schemaUnsealed, SchemaVersion, err)
		}
	}
	if err != nil {
		return store{}, err
	}
	return store{db: db, path: path, commits: new(atomic.Uint64), warning: metaWarning(path)}, nil
}

// guard runs fn, which reads path through bbolt's memory map, with memory
// faults turned into panics, and turns a panic into an error naming the
// file. A damaged page can send bbolt to an address outside the mapping (an
// unrecoverable SIGSEGV otherwise) or trip one of its assertions. The
// caller's fault setting is restored. Nothing is written by the readers it
// wraps, and a write transaction that panics is rolled back by bbolt.
func guard(path string, sp spec, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("metadata file %s is damaged: reading it failed (%v); the file was not modified%s", path, r, sp.remedy)
		}
	}()
	return fn()
}

// openChecked opens path and checks it in a read transaction, so that a
// refusal writes nothing. schema is the file's version; 0: the file holds
// no bucket at all, which is only a creation cut short before its first
// Update, safe to initialise.
func openChecked(path, dir string, sp spec, readOnly bool) (db *bolt.DB, schema uint64, err error) {
	var file *os.File // to release its lock if bolt.Open panics
	returned := false // bolt.Open closes the file itself when it returns an error
	err = guard(path, sp, func() error {
		var err error
		if err = verifyPages(path); errors.Is(err, fs.ErrPermission) {
			return denied(path, sp, err)
		} else if errors.Is(err, errNotBolt) {
			return fmt.Errorf("metadata file %s is not a readable bbolt file: %w", path, err)
		} else if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, errLocked) {
			// A locked file is the lock timeout's error below.
			return fmt.Errorf("metadata file %s is damaged: %w; the file was not modified%s", path, err, sp.remedy)
		}
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly,
			// The freelist is read here, under guard, rather than by
			// Check's own goroutine, where a fault would kill the process.
			PreLoadFreelist: true,
			OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
				f, err := os.OpenFile(name, flag, mode)
				file = f
				return f, err
			}})
		returned = true
		if errors.Is(err, bolterrors.ErrTimeout) {
			return fmt.Errorf("metadata file %s is locked by another process: is another %s using DATA_PATH %s? (%w)",
				path, sp.daemon, dir, err)
		} else if errors.Is(err, fs.ErrPermission) {
			return denied(path, sp, err)
		} else if err != nil {
			return fmt.Errorf("metadata file %s is not a readable bbolt file: %w", path, err)
		}
		// verifyPages vouched for the page structure, so that neither
		// the walk nor bbolt's Check can fault, loop or blow up.
		if err := db.View(func(tx *bolt.Tx) (err error) { schema, err = check(tx, sp); return err }); err != nil {
			return fmt.Errorf("metadata file %s is unusable: %w (the file was left as it is%s)", path, err, sp.remedy)
		}
		return nil
	})
	if err != nil {
		if db != nil {
			db.Close()
		} else if file != nil && !returned {
			file.Close() // bolt.Open panicked: its file is still open and locked
		}
		return nil, 0, err
	}
	return db, schema, nil
}

// denied is the error for a file the process may not open as it must
// (read and write, for its lock and its changes): not damage, so the
// remedy for damage (move it aside) would throw good metadata away.
func denied(path string, sp spec, err error) error {
	return fmt.Errorf("metadata file %s cannot be opened for reading and writing: %w; the file is not damaged and was not modified: "+
		"give the user %s runs as read and write access to it and to its directory (chown/chmod), and do not move it aside", path, err, sp.daemon)
}

// check reads everything in tx, checksums included, then runs bbolt's own
// consistency check, then decodes the records; it returns the schema
// version, 0 for a file without buckets.
func check(tx *bolt.Tx, sp spec) (uint64, error) {
	if k, _ := tx.Cursor().First(); k == nil {
		return 0, nil
	}
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, fmt.Errorf("no %q bucket: not an mfs-election store", bucketMeta)
	}
	var schema uint64
	if v := meta.Get(keySchema); len(v) != 8 {
		return 0, errors.New("no valid schema version")
	} else if schema = binary.BigEndian.Uint64(v); schema != SchemaVersion && schema != schemaUnsealed {
		return 0, fmt.Errorf("schema version %d, this build reads version %d (and upgrades version %d)", schema, SchemaVersion, schemaUnsealed)
	}
	if got := string(meta.Get(keyKind)); got != sp.kind {
		return 0, fmt.Errorf("a %q store, expected a %q store", got, sp.kind)
	}
	for _, b := range sp.buckets {
		if tx.Bucket(b) == nil {
			return 0, fmt.Errorf("missing its %q bucket", b)
		}
	}
	if err := readAll(tx, schema); err != nil {
		return 0, err
	}
	// Check runs in a goroutine of its own, where a fault or a runaway
	// loop would be past guard's reach; verifyPages checked the page
	// structure it walks, and every page the tree reaches was just read
	// here. What Check adds: key order, and pages both free and in use
	// or reached by nothing, which a later write would turn into silent
	// damage.
	var problems []error
	n := 0
	for err := range tx.Check() {
		if n++; len(problems) < 3 {
			problems = append(problems, err)
		}
	}
	if n > 0 {
		return 0, fmt.Errorf("bbolt's consistency check found %d problems: %w", n, errors.Join(problems...))
	}
	return schema, sp.records(tx, schema)
}

// readAll reads every value of every bucket, which touches every page the
// tree reaches, and checks each sealed value's checksum.
func readAll(tx *bolt.Tx, schema uint64) error {
	return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				return fmt.Errorf("bucket %q holds a bucket %q: not an mfs-election store", name, k)
			}
			if !sealed(name, k) || schema == schemaUnsealed {
				_ = crc32.Checksum(v, castagnoli) // read it all the same
				continue
			}
			if err := verify(k, v); err != nil {
				return fmt.Errorf("%s is damaged: %w", what(name, k), err)
			}
		}
		return nil
	})
}

// what names a value for messages.
func what(bucket, key []byte) string {
	if bytes.Equal(bucket, bucketLog) && len(key) == 8 {
		return fmt.Sprintf("changelog entry %d", binary.BigEndian.Uint64(key))
	}
	return fmt.Sprintf("record %q of bucket %q", key, bucket)
}

// upgrade seals every value of an unsealed (version 1) store, all in one
// transaction with the new schema version: a crash leaves the old file or
// the new one. The caller has read and checked all of it.
func upgrade(db *bolt.DB, sp spec) error {
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range append([][]byte{bucketMeta}, sp.buckets...) {
			b := tx.Bucket(name)
			var kvs [][2][]byte // copied first: no Put while a cursor walks the bucket
			if err := b.ForEach(func(k, v []byte) error {
				if sealed(name, k) {
					kvs = append(kvs, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
				}
				return nil
			}); err != nil {
				return err
			}
			for _, kv := range kvs {
				if err := b.Put(kv[0], seal(kv[0], kv[1])); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchema, u64key(SchemaVersion))
	})
}

// sealed reports whether the value under key in bucket carries a checksum:
// all but the schema version (read before the layout is known) and the
// kind (compared whole).
func sealed(bucket, key []byte) bool {
	return !bytes.Equal(bucket, bucketMeta) || !(bytes.Equal(key, keySchema) || bytes.Equal(key, keyKind))
}

// seal is body followed by the CRC-32C (Castagnoli) of key and body, as
// stored: the key is covered so that a value under the wrong key is caught.
func seal(key, body []byte) []byte {
	sum := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, body)
	return binary.BigEndian.AppendUint32(body[:len(body):len(body)], sum)
}

// verify checks a sealed value's checksum.
func verify(key, v []byte) error {
	if len(v) < 4 {
		return fmt.Errorf("%d bytes, too short to hold its checksum", len(v))
	}
	n := len(v) - 4
	if got, want := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, v[:n]), binary.BigEndian.Uint32(v[n:]); got != want {
		return fmt.Errorf("checksum mismatch (computed %08x, stored %08x)", got, want)
	}
	return nil
}

// unseal checks the value stored under key (in a store of schema version
// schema) and returns its bytes, copied: bbolt's memory is valid only
// inside the transaction.
func unseal(key, v []byte, schema uint64) ([]byte, error) {
	if schema == schemaUnsealed {
		return bytes.Clone(v), nil
	}
	if err := verify(key, v); err != nil {
		return nil, err
	}
	return bytes.Clone(v[:len(v)-4]), nil
}

// u64key encodes a version so that bbolt's byte order is numeric order.
func u64key(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// get decodes meta[key] into v, reporting whether it was present.
func get(tx *bolt.Tx, key []byte, v any) (bool, error) { return getAs(tx, key, v, SchemaVersion) }

// getAs is get from a store of the given schema version.
func getAs(tx *bolt.Tx, key []byte, v any, schema uint64) (bool, error) {
	b, err := getBytes(tx, key, schema)
	if b == nil || err != nil {
		return b != nil, err
	}
	if err := frame.Unmarshal(b, v); err != nil {
		return true, fmt.Errorf("record %q does not decode: %w", key, err)
	}
	return true, nil
}

// getBytes returns the bytes stored under meta[key], checked and copied;
// nil when absent.
func getBytes(tx *bolt.Tx, key []byte, schema uint64) ([]byte, error) {
	raw := tx.Bucket(bucketMeta).Get(key)
	if raw == nil {
		return nil, nil
	}
	b, err := unseal(key, raw, schema)
	if err != nil {
		return nil, fmt.Errorf("record %q is damaged: %w", key, err)
	}
	return b, nil
}

// put encodes v into meta[key].
func put(tx *bolt.Tx, key []byte, v any) error {
	b, err := frame.Marshal(v)
	if err != nil {
		return err
	}
	return putBytes(tx, key, b)
}

// putBytes stores b, sealed, under meta[key].
func putBytes(tx *bolt.Tx, key, b []byte) error {
	return tx.Bucket(bucketMeta).Put(key, seal(key, b))
}
