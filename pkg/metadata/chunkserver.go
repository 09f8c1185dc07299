package metadata

import (
	"fmt"
	"net/netip"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	bolt "go.etcd.io/bbolt"
)

// ChunkserverFile is the chunkserver's store, in its DATA_PATH.
const ChunkserverFile = "chunkserver.mfs"

// Identity is what a chunkserver got when it registered: its id, the
// cluster that gave it, and the address it registered with.
type Identity struct {
	CS        wire.CSID
	ClusterID string
	Addr      netip.AddrPort
}

var chunkserverSpec = spec{kind: "chunkserver", daemon: "mfschunkserver", records: func(tx *bolt.Tx, schema uint64) error {
	if _, err := getAs(tx, keyIdentity, &Identity{}, schema); err != nil {
		return err
	}
	_, err := getAs(tx, keyVoter, &roles.VoterHardState{}, schema)
	return err
}}

// ChunkserverStore is an open chunkserver.mfs: identity and VoterHardState.
// Its methods are safe for concurrent use.
type ChunkserverStore struct{ store }

// OpenChunkserver opens DATA_PATH/chunkserver.mfs, creating it empty when
// absent (a chunkserver that has not registered yet).
func OpenChunkserver(dir string) (*ChunkserverStore, error) {
	st, err := open(dir, ChunkserverFile, chunkserverSpec)
	if err != nil {
		return nil, err
	}
	return &ChunkserverStore{st}, nil
}

// Identity returns the stored identity; false before registration. The
// record was checked to decode at open, so reading it cannot fail later.
func (s *ChunkserverStore) Identity() (id Identity, ok bool) {
	err := s.db.View(func(tx *bolt.Tx) (err error) { ok, err = get(tx, keyIdentity, &id); return })
	return id, ok && err == nil
}

// SetIdentity stores the identity from a registration. Another id or
// cluster is refused, so that a chunkserver never silently becomes another
// member (ForgetIdentity clears it deliberately); the address may change.
func (s *ChunkserverStore) SetIdentity(id Identity) error {
	if id.CS == wire.NoCS || id.ClusterID == "" {
		return fmt.Errorf("metadata file %s: an identity needs an id and a cluster id", s.path)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		var old Identity
		if ok, err := get(tx, keyIdentity, &old); err != nil {
			return err
		} else if ok && (old.CS != id.CS || old.ClusterID != id.ClusterID) {
			return fmt.Errorf("metadata file %s already holds identity %v of cluster %q, refusing %v of %q",
				s.path, old.CS, old.ClusterID, id.CS, id.ClusterID)
		}
		return put(tx, keyIdentity, &id)
	})
}

// ForgetIdentity clears the identity, when the master says the id belongs
// to another chunkserver; the next registration gets a new one.
func (s *ChunkserverStore) ForgetIdentity() error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyIdentity) })
}

// VoterHard returns the voter's hard state, zero if never written.
func (s *ChunkserverStore) VoterHard() (h roles.VoterHardState, err error) {
	if err = s.db.View(func(tx *bolt.Tx) error { _, err := get(tx, keyVoter, &h); return err }); err != nil {
		return roles.VoterHardState{}, fmt.Errorf("metadata file %s: %w", s.path, err)
	}
	return h, nil
}

// Apply makes a chunkserver's Persists durable (roles.Persister): the
// newest voter record among them, the one that counts, in one fsync. The
// master's fields are ignored.
func (s *ChunkserverStore) Apply(ps ...roles.Persist) error {
	last := roles.NewestVoter(ps)
	if last == nil {
		return nil
	}
	return s.update(func(tx *bolt.Tx) error { return put(tx, keyVoter, last) })
}
