package changelog

import (
	"fmt"
	"slices"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/registry"
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

// Covers reports whether a log whose last entry is p holds the commit
// point c: log matching makes the same position and epoch the same entry,
// and a log at least as new as c holds every committed entry up to it.
func (p Pos) Covers(c Pos) bool {
	return p.Version >= c.Version && !c.NewerThan(p)
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
	EntryNoop    EntryKind = 1 + iota // written by each new LEADER at its epoch (History: its own role changes)
	EntryPut                          // Key = Value
	EntryDelete                       // remove Key
	EntryConfig                       // Config replaces the registry and location map
	EntryCAS                          // Key = Value if Key is at version Expect (0: absent)
	EntryHistory                      // History: role changes of one master, for the election history
)

// Entry is one metadata change.
type Entry struct {
	Pos
	Kind    EntryKind
	Client  ClientID // with Seq: makes a retried change apply once
	Seq     uint64
	Key     string
	Value   string
	Expect  uint64                  `msgpack:",omitempty"` // EntryCAS: the version Key must be at
	Config  *registry.ClusterConfig `msgpack:",omitempty"`
	History []RoleChange            `msgpack:",omitempty"` // EntryHistory, EntryNoop
}

// Genesis is the metadata `mfsmaster init` creates: one config entry with an
// empty registry, whose founder alone may bootstrap (docs/architecture.md).
func Genesis(founder wire.MasterID) []Entry {
	return []Entry{{
		Pos:    Pos{Version: 1, Epoch: 0},
		Kind:   EntryConfig,
		Config: &registry.ClusterConfig{Version: 1, Founder: founder, Bootstrap: true, Locations: locations.New()},
	}}
}

// Log is a master's changelog: the entries after Base, contiguous.
//
// Everything at or below Base has been trimmed: it is committed history,
// held by the master's snapshot (base <= snapshot <= commit, always). A
// position below Base that a live peer names is taken to be on that history
// (Has): a LEADER holds every committed entry (the catch-up rule), and the
// only positions below a master's commit that reach it come from LEADERs
// of its own or a newer epoch, or from voters reporting what a LEADER
// committed.
// Invariant: entries[i].Version == base.Version+i+1 and epochs never
// decrease.
type Log struct {
	base    Pos
	baseCfg [2]*registry.ClusterConfig // the newest config and the one before it, as of base
	entries []Entry
	configs []uint64 // versions of the config entries held, ascending
}

// LogBase is where a trimmed log starts: the position of the last entry
// dropped, and the two configs as of it (which the dropped entries held).
type LogBase struct {
	Pos      Pos
	Latest   *registry.ClusterConfig `msgpack:",omitempty"`
	Previous *registry.ClusterConfig `msgpack:",omitempty"`
}

// BasePos is the position of the last entry trimmed (zero if none): every
// entry held comes after it.
func (l *Log) BasePos() Pos { return l.base }

// Base is the position just before the first entry held.
func (l *Log) Base() LogBase {
	return LogBase{Pos: l.base, Latest: l.baseCfg[0], Previous: l.baseCfg[1]}
}

// Last is the position of the newest entry (Base when none is held).
func (l *Log) Last() Pos {
	if len(l.entries) == 0 {
		return l.base
	}
	return l.entries[len(l.entries)-1].Pos
}

// Len is the newest version (trimmed entries included).
func (l *Log) Len() uint64 { return l.base.Version + uint64(len(l.entries)) }

// Held is the number of entries held (not trimmed).
func (l *Log) Held() int { return len(l.entries) }

// At returns the entry at version v, if it is held.
func (l *Log) At(v uint64) (Entry, bool) {
	if v <= l.base.Version || v > l.Len() {
		return Entry{}, false
	}
	return l.entries[v-l.base.Version-1], true
}

// Has reports whether the log holds exactly this position; a position
// below Base is committed history the log has trimmed (see Log).
func (l *Log) Has(p Pos) bool {
	switch {
	case p.Version == 0 || p.Version < l.base.Version:
		return true
	case p.Version == l.base.Version:
		return p == l.base
	}
	e, ok := l.At(p.Version)
	return ok && e.Epoch == p.Epoch
}

// PosAt returns the position of version v (zero Pos for 0 and for a
// version trimmed below Base).
func (l *Log) PosAt(v uint64) Pos {
	if v == l.base.Version {
		return l.base
	}
	e, _ := l.At(v)
	return e.Pos
}

// From returns a copy of the entries after version v, at most max of them
// and (past the first) at most maxBytes of keys and values. Nothing when v
// is below Base: those entries are only in the snapshot.
func (l *Log) From(v uint64, max, maxBytes int) []Entry {
	if v < l.base.Version || v >= l.Len() {
		return nil
	}
	out := l.entries[v-l.base.Version:]
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	if maxBytes > 0 {
		size := 0
		for i, e := range out {
			size += e.size()
			if i > 0 && size > maxBytes {
				out = out[:i]
				break
			}
		}
	}
	return slices.Clone(out)
}

// size approximates an entry's encoded size, for bounding batches.
func (e *Entry) size() int {
	n := 64 + len(e.Key) + len(e.Value) + 64*entryConfigMembers(e)
	for _, r := range e.History {
		n += 5*MaxHistoryText + 64*len(r.Votes)
	}
	return n
}

func entryConfigMembers(e *Entry) int {
	if e.Config == nil {
		return 0
	}
	return len(e.Config.Members) + 1
}

// Truncate drops every entry after version v. v is never below Base: the
// base is committed, and committed entries are never dropped.
func (l *Log) Truncate(v uint64) {
	if v < l.base.Version {
		panic(fmt.Sprintf("invariant log-base: truncating after %d, below the trimmed base %v", v, l.base))
	}
	if v < l.Len() {
		// Clip so that a later append cannot write into an array a caller
		// still holds (From returns copies, the simulator's store does not).
		l.entries = slices.Clip(l.entries[:v-l.base.Version])
		for len(l.configs) > 0 && l.configs[len(l.configs)-1] > v {
			l.configs = l.configs[:len(l.configs)-1]
		}
	}
}

// Append adds entries that must continue the log exactly.
func (l *Log) Append(es ...Entry) {
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

// Trim drops the entries up to version v (held, at most Len) and returns
// the new base.
func (l *Log) Trim(v uint64) LogBase {
	if v <= l.base.Version {
		return l.Base()
	}
	if v > l.Len() {
		panic(fmt.Sprintf("invariant log-trim: trimming to %d past the newest version %d", v, l.Len()))
	}
	latest, prev := l.Configs(v)
	drop := v - l.base.Version
	l.base, l.baseCfg = l.PosAt(v), [2]*registry.ClusterConfig{latest, prev}
	// A fresh array, so the trimmed entries can be collected.
	l.entries = slices.Clone(l.entries[drop:])
	i := 0
	for i < len(l.configs) && l.configs[i] <= v {
		i++
	}
	l.configs = slices.Clone(l.configs[i:])
	return l.Base()
}

// Reset makes the log start after b, holding nothing.
func (l *Log) Reset(b LogBase) {
	l.base, l.baseCfg = b.Pos, [2]*registry.ClusterConfig{b.Latest, b.Previous}
	l.entries, l.configs = nil, nil
}

// Configs returns the newest config entry and the one before it (nil when
// absent), looking no further than version upto (at or above Base).
func (l *Log) Configs(upto uint64) (latest, previous *registry.ClusterConfig) {
	i, found := slices.BinarySearch(l.configs, upto)
	if found {
		i++
	}
	// l.configs[:i] are the config entries held at or below upto; the
	// base's two come before them.
	var two [2]*registry.ClusterConfig
	n := 0
	for j := i - 1; j >= 0 && n < 2; j-- {
		two[n] = l.entries[l.configs[j]-l.base.Version-1].Config
		n++
	}
	for _, c := range l.baseCfg {
		if n < 2 && c != nil {
			two[n] = c
			n++
		}
	}
	return two[0], two[1]
}

// ---- the key index -----------------------------------------------------------------
