package csnode

import (
	"fmt"
	"sync"

	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// ChunkserverStore is a chunkserver's disk as its driver uses it: the
// identity a registration gave it and the voter's hard state
// (roles.VoterHardState), which Apply makes durable before anything the
// same batches ask for leaves (roles.Carry). Two implementations:
// metadata.ChunkserverStore (bbolt, chunkserver.mfs) for mfschunkserver,
// and MemChunkserverStore for the swarm of internal/cluster/swarm.
type ChunkserverStore interface {
	roles.Persister
	// Identity is the stored identity; false before registration.
	Identity() (metadata.Identity, bool)
	// SetIdentity stores the identity from a registration; another id or
	// cluster than the stored one is refused (ForgetIdentity first).
	SetIdentity(metadata.Identity) error
	// ForgetIdentity clears it (the id is another chunkserver's).
	ForgetIdentity() error
	// VoterHard is the voter's stored hard state, zero if never written.
	VoterHard() (roles.VoterHardState, error)
}

var (
	_ ChunkserverStore = (*metadata.ChunkserverStore)(nil)
	_ ChunkserverStore = (*MemChunkserverStore)(nil)
)

// MemChunkserverStore is a ChunkserverStore in memory, with the bbolt
// store's rules: Apply keeps the newest voter record of its Persists (the
// master's fields are ignored), SetIdentity refuses another id or cluster
// than the one held. What it holds lasts as long as the process: a swarm
// voter restarted within its process finds its record as a chunkserver
// finds its chunkserver.mfs, and a new process starts from nothing (a
// wiped data directory). It is safe for concurrent use.
type MemChunkserverStore struct {
	mu    sync.Mutex
	id    metadata.Identity
	hasID bool
	hard  roles.VoterHardState
}

// NewMemChunkserverStore is an empty store: a chunkserver that never
// registered.
func NewMemChunkserverStore() *MemChunkserverStore { return &MemChunkserverStore{} }

// Identity returns the held identity; false before registration.
func (s *MemChunkserverStore) Identity() (metadata.Identity, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id, s.hasID
}

// SetIdentity holds the identity from a registration, refusing another id
// or cluster than the one held (the address may change).
func (s *MemChunkserverStore) SetIdentity(id metadata.Identity) error {
	if id.CS == wire.NoCS || id.ClusterID == "" {
		return fmt.Errorf("in-memory chunkserver store: an identity needs an id and a cluster id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hasID && (s.id.CS != id.CS || s.id.ClusterID != id.ClusterID) {
		return fmt.Errorf("in-memory chunkserver store already holds identity %v of cluster %q, refusing %v of %q",
			s.id.CS, s.id.ClusterID, id.CS, id.ClusterID)
	}
	s.id, s.hasID = id, true
	return nil
}

// ForgetIdentity clears the identity; the voter's record stays, as on disk.
func (s *MemChunkserverStore) ForgetIdentity() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.hasID = metadata.Identity{}, false
	return nil
}

// VoterHard returns the voter's hard state, zero if never written.
func (s *MemChunkserverStore) VoterHard() (roles.VoterHardState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hard, nil
}

// Apply keeps the newest voter record among ps (roles.Persister).
func (s *MemChunkserverStore) Apply(ps ...roles.Persist) error {
	last := roles.NewestVoter(ps)
	if last == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hard = *last
	return nil
}
