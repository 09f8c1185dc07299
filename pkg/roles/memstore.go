package roles

import (
	"fmt"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
)

// MemStore is a Store in memory: the simulator's disk, and the twin that
// rolestest.TestStore holds to the same contract as the bbolt store. Its
// crash semantics are a real disk's at its best: an Apply is durable the
// moment it returns and wholly absent before; a process killed while its
// batch waits for the disk simply never called Apply. It is not safe for
// concurrent use.
type MemStore struct{ st Stored }

// NewMemStore is a store that holds st, as if its Applies had left it so.
func NewMemStore(st Stored) *MemStore { return &MemStore{st: cloneStored(st)} }

// Load returns what the store holds. The result shares nothing the store
// will change: a master may append to it freely.
func (s *MemStore) Load() (Stored, error) { return cloneStored(s.st), nil }

// Copy is a copy of the store as it is now, e.g. a data directory copied
// aside to be restored later.
func (s *MemStore) Copy() *MemStore { return NewMemStore(s.st) }

// Hard is the stored hard state.
func (s *MemStore) Hard() HardState { return s.st.Hard }

// Base is the stored log's base.
func (s *MemStore) Base() changelog.LogBase { return s.st.Base }

// Last is the position of the newest stored entry (the base when none).
func (s *MemStore) Last() changelog.Pos {
	if n := len(s.st.Entries); n > 0 {
		return s.st.Entries[n-1].Pos
	}
	return s.st.Base.Pos
}

// Holds reports whether the stored log holds the entry at pos (the same
// version and epoch); a trimmed one is not held.
func (s *MemStore) Holds(pos changelog.Pos) bool {
	if pos.Version <= s.st.Base.Pos.Version {
		return false
	}
	j := pos.Version - s.st.Base.Pos.Version - 1
	return j < uint64(len(s.st.Entries)) && s.st.Entries[j].Pos == pos
}

// Apply makes ps durable in order, each Persist as the Store contract
// says, or returns an error and changes nothing (the bbolt store's one
// transaction).
func (s *MemStore) Apply(ps ...Persist) error {
	// next shares s.st's entries: an append writes past their end, which
	// s.st does not see (an error leaves it as it was), and a trim or a
	// truncation clips before anything is appended (applyLog), so nothing
	// is ever written over an entry s.st holds. Load and Copy hand out
	// copies. Clipping here instead copied the whole log at every Apply:
	// the simulator's time grew with the length of its logs.
	next := s.st
	for i, p := range ps {
		if p.Snapshot != nil {
			keepNewer(&next, p.Snapshot)
		}
		if err := applyLog(&next, p); err != nil {
			return fmt.Errorf("in-memory store: persist %d of %d: %w", i+1, len(ps), err)
		}
		if p.Hard != nil {
			next.Hard = *p.Hard
		}
	}
	s.st = next
	return nil
}

// SaveSnapshot makes a snapshot of the master's own making durable (a
// background write, SaveSnapshot), unless the stored one is newer: a
// write of an older snapshot may finish after a newer one was installed.
func (s *MemStore) SaveSnapshot(snap *namespace.Snapshot) { keepNewer(&s.st, snap) }

func keepNewer(st *Stored, snap *namespace.Snapshot) {
	if st.Snapshot == nil || snap.Pos.Version > st.Snapshot.Pos.Version {
		st.Snapshot = snap
	}
}

// applyLog carries out one Persist's Trim, TruncateAfter and Append on st,
// refusing what would leave a log that does not hold together: what the
// bbolt store refuses, for the same reasons.
func applyLog(st *Stored, p Persist) error {
	base := st.Base.Pos.Version
	conflict := false
	if t := p.Trim; t != nil {
		if t.Pos.Version < base {
			return fmt.Errorf("trimming to %v, below the log base %v", t.Pos, st.Base.Pos)
		}
		drop := min(int(t.Pos.Version-base), len(st.Entries))
		if at := int(t.Pos.Version - base); at > 0 && at <= len(st.Entries) {
			conflict = st.Entries[at-1].Pos != t.Pos
		}
		st.Entries = slices.Clip(st.Entries[drop:])
		st.Base = *t
		base = t.Pos.Version
	}
	if v := p.TruncateAfter; v != nil {
		if *v < base {
			return fmt.Errorf("truncating after %d, below the log base %d", *v, base)
		}
		if keep := int(*v - base); keep < len(st.Entries) {
			st.Entries = slices.Clip(st.Entries[:keep])
		}
	}
	if conflict && len(st.Entries) > 0 {
		return fmt.Errorf("the log held another entry than the new base %v at its version, and kept entries up to %d after it",
			p.Trim.Pos, base+uint64(len(st.Entries)))
	}
	last := st.Base.Pos
	if n := len(st.Entries); n > 0 {
		last = st.Entries[n-1].Pos
	}
	for _, e := range p.Append {
		if e.Version != last.Version+1 || e.Epoch < last.Epoch {
			return fmt.Errorf("appending %v after %v", e.Pos, last)
		}
		st.Entries = append(st.Entries, e)
		last = e.Pos
	}
	return nil
}

func cloneStored(st Stored) Stored {
	st.Entries = slices.Clone(st.Entries)
	st.Hard.ForcedOut = slices.Clone(st.Hard.ForcedOut)
	return st
}
