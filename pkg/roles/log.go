package roles

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Pos names one changelog entry: its version and the epoch of the LEADER
// that wrote it. Two logs that hold the same Pos hold the same entries up to
// it (each epoch has one writer, and followers append only onto a matching
// predecessor).
type Pos struct {
	Version uint64
	Epoch   uint64
}

// NewerThan orders logs by how up to date their last entry is: a higher
// epoch wins, then a higher version.
func (p Pos) NewerThan(q Pos) bool {
	if p.Epoch != q.Epoch {
		return p.Epoch > q.Epoch
	}
	return p.Version > q.Version
}

func (p Pos) String() string { return fmt.Sprintf("%d@%d", p.Version, p.Epoch) }

// ClientID names a client session. Clients draw it at random from 64 bits,
// so that ids never need to be handed out (and cannot collide in practice)
// across failovers; with the sequence number it makes a retried change
// apply once.
type ClientID uint64

// EntryKind says what a changelog entry does.
type EntryKind uint8

// Entry kinds.
const (
	EntryNoop   EntryKind = 1 + iota // written by each new LEADER at its epoch
	EntryPut                         // Key = Value
	EntryDelete                      // remove Key
	EntryConfig                      // Config replaces the registry and location map
	EntryCAS                         // Key = Value if Key is at version Expect (0: absent)
)

// Entry is one metadata change.
type Entry struct {
	Pos
	Kind   EntryKind
	Client ClientID // with Seq: makes a retried change apply once
	Seq    uint64
	Key    string
	Value  string
	Expect uint64         `msgpack:",omitempty"` // EntryCAS: the version Key must be at
	Config *ClusterConfig `msgpack:",omitempty"`
}

// Chunkserver is one registered member of the registry.
type Chunkserver struct {
	ID        wire.CSID
	Addr      netip.Addr
	Port      uint16 `msgpack:",omitempty"` // CSSERV port: ip:port is the identity an operator sees
	VoterOnly bool
}

// Is reports whether a vote session opened from addr:port comes from this
// member. An id handed out by a LEADER that died before registering it can
// be handed out again; the address tells the two holders apart.
func (c Chunkserver) Is(addr netip.Addr, port uint16) bool { return c.Addr == addr && c.Port == port }

// ClusterConfig is the registry and location map as of one config version.
// It is the quorum's denominator (SPEC section 2).
type ClusterConfig struct {
	Version uint64 // rises by one with every registry or location change
	Founder wire.MasterID
	// Bootstrap is true from `mfsmaster init` until the first chunkserver
	// registers; while it holds (and the registry is empty) the founder alone
	// wins every tally. It never becomes true again.
	Bootstrap bool
	Members   []Chunkserver // sorted by ID
	Locations locations.Map
}

// Electorate is who counts under this config.
func (c *ClusterConfig) Electorate() quorum.Electorate {
	ms := make([]locations.Member, len(c.Members))
	for i, m := range c.Members {
		ms[i] = locations.Member{ID: m.ID, Addr: m.Addr}
	}
	return quorum.NewElectorate(c.Locations, ms)
}

// Member returns the registered chunkserver with this id.
func (c *ClusterConfig) Member(id wire.CSID) (Chunkserver, bool) {
	i, ok := slices.BinarySearchFunc(c.Members, id, func(m Chunkserver, id wire.CSID) int {
		switch {
		case m.ID < id:
			return -1
		case m.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return Chunkserver{}, false
	}
	return c.Members[i], true
}

// Rank is the chunkserver's place in the sorted registry, for nomination
// turns, and the number of places.
func (c *ClusterConfig) Rank(id wire.CSID) (rank, of int, ok bool) {
	for i, m := range c.Members {
		if m.ID == id {
			return i, len(c.Members), true
		}
	}
	return 0, len(c.Members), false
}

// clone returns a deep copy that a change may edit.
func (c *ClusterConfig) clone() *ClusterConfig {
	n := *c
	n.Members = slices.Clone(c.Members)
	return &n
}

// Genesis is the metadata `mfsmaster init` creates: one config entry with an
// empty registry, whose founder alone may bootstrap (docs/architecture.md).
func Genesis(founder wire.MasterID) []Entry {
	return []Entry{{
		Pos:    Pos{Version: 1, Epoch: 0},
		Kind:   EntryConfig,
		Config: &ClusterConfig{Version: 1, Founder: founder, Bootstrap: true, Locations: locations.New()},
	}}
}

// Log is a master's changelog: versions 1..len, contiguous.
// Invariant: entries[i].Version == i+1 and epochs never decrease.
type Log struct {
	entries []Entry
	configs []uint64 // versions of the config entries, ascending
}

// Last is the position of the newest entry (zero when empty).
func (l *Log) Last() Pos {
	if len(l.entries) == 0 {
		return Pos{}
	}
	return l.entries[len(l.entries)-1].Pos
}

// Len is the number of entries.
func (l *Log) Len() uint64 { return uint64(len(l.entries)) }

// At returns the entry at version v.
func (l *Log) At(v uint64) (Entry, bool) {
	if v == 0 || v > uint64(len(l.entries)) {
		return Entry{}, false
	}
	return l.entries[v-1], true
}

// Has reports whether the log holds exactly this position.
func (l *Log) Has(p Pos) bool {
	if p.Version == 0 {
		return true
	}
	e, ok := l.At(p.Version)
	return ok && e.Epoch == p.Epoch
}

// PosAt returns the position of version v (zero Pos for 0).
func (l *Log) PosAt(v uint64) Pos {
	e, _ := l.At(v)
	return e.Pos
}

// From returns a copy of the entries after version v, at most max of them.
func (l *Log) From(v uint64, max int) []Entry {
	if v >= uint64(len(l.entries)) {
		return nil
	}
	out := l.entries[v:]
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return slices.Clone(out)
}

// truncate drops every entry after version v.
func (l *Log) truncate(v uint64) {
	if v < uint64(len(l.entries)) {
		// Clip so that a later append cannot write into an array a caller
		// still holds (From returns copies, the simulator's store does not).
		l.entries = slices.Clip(l.entries[:v])
		for len(l.configs) > 0 && l.configs[len(l.configs)-1] > v {
			l.configs = l.configs[:len(l.configs)-1]
		}
	}
}

// append adds entries that must continue the log exactly.
func (l *Log) append(es ...Entry) {
	for _, e := range es {
		last := l.Last()
		if e.Version != last.Version+1 || e.Epoch < last.Epoch {
			panic(fmt.Sprintf("invariant log-contiguous: appending %v after %v", e.Pos, last))
		}
		l.entries = append(l.entries, e)
		if e.Kind == EntryConfig {
			l.configs = append(l.configs, e.Version)
		}
	}
}

// Configs returns the newest config entry and the one before it (nil when
// absent), looking no further than version upto.
func (l *Log) Configs(upto uint64) (latest, previous *ClusterConfig) {
	i, found := slices.BinarySearch(l.configs, upto)
	if found {
		i++
	}
	// l.configs[:i] are the config entries at or below upto.
	if i >= 1 {
		latest = l.entries[l.configs[i-1]-1].Config
	}
	if i >= 2 {
		previous = l.entries[l.configs[i-2]-1].Config
	}
	return latest, previous
}

// findClientSeq returns the version of the entry written for (client, seq).
func (l *Log) findClientSeq(c ClientID, seq uint64) uint64 {
	if c == 0 {
		return 0
	}
	for i := len(l.entries) - 1; i >= 0; i-- {
		if l.entries[i].Client == c && l.entries[i].Seq == seq {
			return l.entries[i].Version
		}
	}
	return 0
}

// KV is the namespace the changelog produces, applied up to Applied.
type KV struct {
	Applied uint64
	Data    map[string]Item
	// Failed holds the versions of the compare-and-set entries that did not
	// apply, so that the answer to one (or to its retry) says so.
	Failed map[uint64]bool
}

// Item is one key's value and the version of the entry that wrote it.
type Item struct {
	Value   string
	Version uint64
}

// applyUpTo applies entries of l up to version v.
func (kv *KV) applyUpTo(l *Log, v uint64) {
	if kv.Data == nil {
		kv.Data, kv.Failed = map[string]Item{}, map[uint64]bool{}
	}
	for kv.Applied < v {
		e, ok := l.At(kv.Applied + 1)
		if !ok {
			return
		}
		switch e.Kind {
		case EntryPut:
			kv.Data[e.Key] = Item{e.Value, e.Version}
		case EntryDelete:
			delete(kv.Data, e.Key)
		case EntryCAS:
			if kv.Data[e.Key].Version == e.Expect {
				kv.Data[e.Key] = Item{e.Value, e.Version}
			} else {
				kv.Failed[e.Version] = true
			}
		}
		kv.Applied++
	}
}

// List returns the entries whose keys start with prefix, sorted by key.
func (kv *KV) List(prefix string, max int) []KVEntry {
	var out []KVEntry
	for k, it := range kv.Data {
		if strings.HasPrefix(k, prefix) {
			out = append(out, KVEntry{Key: k, Value: it.Value, Version: it.Version})
		}
	}
	slices.SortFunc(out, func(a, b KVEntry) int { return strings.Compare(a.Key, b.Key) })
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return out
}
