package master

import (
	"fmt"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Forced removal (`mfsmaster repair --remove-chunkservers`): the way out of
// a registry holding members that will never vote again (made-up
// chunkservers that registered and left, machines gone for good) when too
// many of them are missing for any master to win, so that no LEADER can
// remove them. An operator stops every master, runs the same repair on each,
// and starts them again. Each then counts every config without those
// members (HardState.ForcedOut), with none of -CTR's restrictions: all
// masters count alike, so any two of their counts still intersect. The
// LEADER this leads to writes the removals as ordinary registry changes
// first thing; once they are in force the record is cleared
// (docs/architecture.md §5.2).
//
// The operator's part of the argument: every master is repaired alike
// before any is started. A master left out still counts the removed
// members, so it can win only with their votes: with members that are
// gone, never.

// ForcedOutOf checks a forced removal of ids against the newest config cfg
// and returns the sorted ids, or an error naming what is wrong.
func ForcedOutOf(cfg *registry.ClusterConfig, ids []wire.CSID) ([]wire.CSID, error) {
	if cfg == nil {
		return nil, fmt.Errorf("this master holds no metadata: repair a master that does")
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	out = slices.Compact(out)
	for _, id := range out {
		if _, ok := cfg.Member(id); !ok {
			return nil, fmt.Errorf("chunkserver %v is not registered (registry version %d)", id, cfg.Version)
		}
	}
	if len(out) >= len(cfg.Members) {
		return nil, fmt.Errorf("that would leave no registered chunkserver to count (%d registered)", len(cfg.Members))
	}
	return out, nil
}

// withoutForced is c without the members forced out.
func (m *Master) withoutForced(c *registry.ClusterConfig) *registry.ClusterConfig {
	if len(m.hard.ForcedOut) == 0 {
		return c
	}
	gone := false
	for _, id := range m.hard.ForcedOut {
		if _, ok := c.Member(id); ok {
			gone = true
		}
	}
	if !gone {
		return c
	}
	n := c.Clone()
	n.Members = slices.DeleteFunc(n.Members, func(mem registry.Chunkserver) bool { return slices.Contains(m.hard.ForcedOut, mem.ID) })
	return n
}

// removeForced, at a LEADER, writes the next forced removal as a registry
// change. It reports whether it proposed one.
func (m *Master) removeForced() bool {
	cfg := m.Registry()
	for _, id := range m.hard.ForcedOut {
		if _, ok := cfg.Member(id); !ok {
			continue
		}
		if err := m.proposeChange(registry.Change{Kind: registry.ChangeRemove, ID: uint32(id)}); err != nil {
			m.ignore("forced-removal-refused") // a stable reason: it is a metric label
			continue
		}
		return true
	}
	return false
}

// clearForced forgets the forced removals once the registry no longer
// holds any of them and that registry is in force: from then on every
// master counts without them anyway.
func (m *Master) clearForced() {
	if len(m.hard.ForcedOut) == 0 || !m.HasMetadata() {
		return
	}
	cfg := m.Registry()
	if m.hard.InForce < cfg.Version {
		return
	}
	for _, id := range m.hard.ForcedOut {
		if _, ok := cfg.Member(id); ok {
			return
		}
	}
	m.hard.ForcedOut = nil
	m.dropElectorates()
	m.persistHard()
	m.ignore("forced-removal-done")
}

// NewestConfig is the newest registry and location map in what a master
// found on its disk (nil: no metadata): what an offline repair checks
// against.
func NewestConfig(st roles.Stored) *registry.ClusterConfig {
	last := st.Base.Pos.Version + uint64(len(st.Entries))
	if s := st.Snapshot; s != nil && s.Pos.Version >= last {
		return s.Latest // the log restarts after it (see New)
	}
	for i := len(st.Entries) - 1; i >= 0; i-- {
		if st.Entries[i].Kind == changelog.EntryConfig {
			return st.Entries[i].Config
		}
	}
	return st.Base.Latest
}
