package namespace

import (
	"maps"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Snapshot is the namespace the changelog produced up to one committed
// position, with what else a master needs to go on from there without the
// entries: the two newest configs and the session table.
//
// Invariants: Pos is committed (a snapshot is taken only of applied state,
// and only committed entries are applied); a master's log base is never
// above its durable snapshot, so the entries after the snapshot are always
// held.
type Snapshot struct {
	Pos      changelog.Pos
	Latest   *registry.ClusterConfig
	Previous *registry.ClusterConfig `msgpack:",omitempty"`
	Data     map[string]Item
	Sessions map[changelog.ClientID]Session

	// keys and ids order the records for transfer in chunks (built on
	// first use; a snapshot is never edited after it is made).
	keys []string
	ids  []changelog.ClientID
}

// Base is the log base of a log that starts right after the snapshot.
func (s *Snapshot) Base() changelog.LogBase {
	return changelog.LogBase{Pos: s.Pos, Latest: s.Latest, Previous: s.Previous}
}

// KV is a namespace to go on from, sharing nothing with the snapshot.
func (s *Snapshot) KV() KV {
	return KV{Applied: s.Pos.Version, Data: maps.Clone(s.Data), Sessions: maps.Clone(s.Sessions)}
}

// Records is the number of records a transfer carries: items, then
// sessions.
func (s *Snapshot) Records() uint64 { return uint64(len(s.Data) + len(s.Sessions)) }

func (s *Snapshot) order() {
	if s.keys == nil && len(s.Data) > 0 {
		s.keys = slices.Sorted(maps.Keys(s.Data))
	}
	if s.ids == nil && len(s.Sessions) > 0 {
		s.ids = slices.Sorted(maps.Keys(s.Sessions))
	}
}

// SnapshotOf copies the namespace as applied, with the configs as of it.
func SnapshotOf(kv *KV, l *changelog.Log) *Snapshot {
	latest, prev := l.Configs(kv.Applied)
	return &Snapshot{
		Pos: l.PosAt(kv.Applied), Latest: latest, Previous: prev,
		Data: maps.Clone(kv.Data), Sessions: maps.Clone(kv.Sessions),
	}
}

// Slice returns the records from offset on in transfer order (items by
// key, then sessions by client), at most maxBytes of them (at least one).
func (s *Snapshot) Slice(offset uint64, maxBytes int) (items []KVEntry, sessions []SessionEntry) {
	s.order()
	size, total := 0, s.Records()
	for i := offset; i < total && (size < maxBytes || i == offset); i++ {
		if i < uint64(len(s.keys)) {
			k := s.keys[i]
			it := s.Data[k]
			items = append(items, KVEntry{Key: k, Value: it.Value, Version: it.Version})
			size += 32 + len(k) + len(it.Value)
		} else {
			id := s.ids[i-uint64(len(s.keys))]
			sessions = append(sessions, SessionEntry{Client: id, Session: s.Sessions[id]})
			size += 32
		}
	}
	return items, sessions
}

// SessionEntry is one session of a snapshot in transfer.
type SessionEntry struct {
	Client changelog.ClientID
	Session
}

// Refound is s as the first snapshot of a new cluster that founder founds
// from a backup (mfsmaster init --from-backup): the same items and
// sessions at the same version, under the config `mfsmaster init` gives a
// founder (changelog.Genesis: no chunkserver, the bootstrap mark) with s's
// location map kept, at epoch 0, so that the new cluster's first LEADER
// writes after it at epoch 1. The old registry's chunkservers and its
// witness belong to the old cluster: they join the new one anew.
func (s *Snapshot) Refound(founder wire.MasterID) *Snapshot {
	cfg := changelog.Genesis(founder)[0].Config
	cfg.Locations = s.Latest.Locations
	return &Snapshot{
		Pos:    changelog.Pos{Version: s.Pos.Version},
		Latest: cfg, Data: maps.Clone(s.Data), Sessions: maps.Clone(s.Sessions),
	}
}
