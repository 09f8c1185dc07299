package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	bolt "go.etcd.io/bbolt"
)

// MasterFile is the master's store, in its DATA_PATH.
const MasterFile = "metadata.mfs"

var masterSpec = spec{kind: "master", daemon: "mfsmaster", buckets: [][]byte{bucketLog},
	records: func(tx *bolt.Tx) error { _, err := get(tx, keyHard, &roles.HardState{}); return err }}

// MasterStore is an open metadata.mfs: cluster id, HardState and changelog.
// Its methods are safe for concurrent use (bbolt serialises them).
type MasterStore struct{ store }

// OpenMaster opens DATA_PATH/metadata.mfs, creating it empty when absent:
// a master without metadata is one started with -e, which learns the
// changelog from the LEADER.
func OpenMaster(dir string) (*MasterStore, error) {
	st, err := open(dir, MasterFile, masterSpec)
	if err != nil {
		return nil, err
	}
	return &MasterStore{st}, nil
}

// ClusterID is the id of the cluster this metadata belongs to, "" when the
// master has not learnt one yet.
func (s *MasterStore) ClusterID() (id string) {
	_ = s.db.View(func(tx *bolt.Tx) error { id = clusterIDOf(tx); return nil })
	return id
}

// HasMetadata reports whether the changelog holds at least one entry.
func (s *MasterStore) HasMetadata() (has bool) {
	_ = s.db.View(func(tx *bolt.Tx) error { has = lastVersion(tx) > 0; return nil })
	return has
}

// Init writes a new cluster's id and genesis entries (`mfsmaster init`) in
// one transaction. It refuses when any metadata exists: re-initialising
// would fork the cluster's history.
func (s *MasterStore) Init(clusterID string, genesis []roles.Entry) error {
	if clusterID == "" || len(genesis) == 0 {
		return fmt.Errorf("metadata file %s: init needs a cluster id and genesis entries", s.path)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if old := clusterIDOf(tx); old != "" || lastVersion(tx) > 0 {
			return fmt.Errorf("metadata file %s already holds metadata (cluster id %q): refusing to init", s.path, old)
		}
		if err := tx.Bucket(bucketMeta).Put(keyCluster, []byte(clusterID)); err != nil {
			return err
		}
		return s.appendEntries(tx, genesis)
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
		switch old := clusterIDOf(tx); old {
		case clusterID:
			return errUnchanged
		case "":
			return tx.Bucket(bucketMeta).Put(keyCluster, []byte(clusterID))
		default:
			return fmt.Errorf("metadata file %s belongs to cluster %q, not %q", s.path, old, clusterID)
		}
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// Load returns the hard state (zero if never written) and every entry in
// version order, checking that they run contiguously from version 1.
func (s *MasterStore) Load() (st roles.Stored, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if _, err := get(tx, keyHard, &st.Hard); err != nil {
			return err
		}
		c := tx.Bucket(bucketLog).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			want := uint64(len(st.Entries)) + 1
			var e roles.Entry
			if len(k) != 8 || binary.BigEndian.Uint64(k) != want {
				return fmt.Errorf("changelog key %x where version %d was expected", k, want)
			} else if err := frame.Unmarshal(bytes.Clone(v), &e); err != nil {
				return fmt.Errorf("changelog entry %d does not decode: %w", want, err)
			} else if e.Version != want {
				return fmt.Errorf("changelog entry under key %d says version %d", want, e.Version)
			}
			st.Entries = append(st.Entries, e)
		}
		return nil
	})
	if err != nil {
		return roles.Stored{}, fmt.Errorf("metadata file %s: %w", s.path, err)
	}
	return st, nil
}

// Apply makes a master's Persist durable in one transaction: the hard
// state, then the truncation, then the appended entries. If any appended
// entry does not continue the log exactly, nothing is written. p.Voter is
// a chunkserver's and is ignored.
func (s *MasterStore) Apply(p roles.Persist) error {
	return s.ApplyAll([]roles.Persist{p})
}

// ApplyAll carries out several Persists, in order, in one transaction: one
// fsync for a group of steps (the driver's group commit). Either all of
// them are durable or none is.
func (s *MasterStore) ApplyAll(ps []roles.Persist) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		var hard *roles.HardState
		for _, p := range ps {
			if p.Hard != nil {
				hard = p.Hard // the newest record wins
			}
			if p.TruncateAfter != nil {
				// The log is contiguous: the keys past the cut are exactly
				// TruncateAfter+1 .. last.
				for v := lastVersion(tx); v > *p.TruncateAfter; v-- {
					if err := tx.Bucket(bucketLog).Delete(u64key(v)); err != nil {
						return err
					}
				}
			}
			if err := s.appendEntries(tx, p.Append); err != nil {
				return err
			}
		}
		if hard != nil {
			return put(tx, keyHard, hard)
		}
		return nil
	})
}

// appendEntries adds es after the last entry; each must be exactly the
// next version, so that Load's contiguity holds by construction.
func (s *MasterStore) appendEntries(tx *bolt.Tx, es []roles.Entry) error {
	last := lastVersion(tx)
	for _, e := range es {
		if e.Version != last+1 {
			return fmt.Errorf("metadata file %s: appending version %d after %d", s.path, e.Version, last)
		}
		v, err := frame.Marshal(&e)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketLog).Put(u64key(e.Version), v); err != nil {
			return err
		}
		last = e.Version
	}
	return nil
}

// lastVersion is the newest version in the changelog, 0 when empty.
func lastVersion(tx *bolt.Tx) uint64 {
	if k, _ := tx.Bucket(bucketLog).Cursor().Last(); len(k) == 8 {
		return binary.BigEndian.Uint64(k)
	}
	return 0
}

// clusterIDOf reads the cluster id; string() copies it out of bbolt.
func clusterIDOf(tx *bolt.Tx) string { return string(tx.Bucket(bucketMeta).Get(keyCluster)) }
