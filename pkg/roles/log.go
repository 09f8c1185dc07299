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
	// Maintenance: the operator expects it to go away for a while (MooseFS's
	// maintenance mode). It still counts towards quorum like any member;
	// the listings say its absence is planned.
	Maintenance bool `msgpack:",omitempty"`
}

// Is reports whether a vote session opened from addr:port comes from this
// member. An id handed out by a LEADER that died before registering it can
// be handed out again; the address tells the two holders apart.
func (c Chunkserver) Is(addr netip.Addr, port uint16) bool { return c.Addr == addr && c.Port == port }

// ClusterConfig is the registry and location map as of one config version.
// It is the quorum's denominator (docs/architecture.md §2).
type ClusterConfig struct {
	Version uint64 // rises by one with every registry or location change
	Founder wire.MasterID
	// Bootstrap is true from `mfsmaster init` until the first chunkserver
	// registers; while it holds (and the registry is empty) the founder alone
	// wins every tally. It never becomes true again.
	Bootstrap bool
	Members   []Chunkserver // sorted by ID
	Locations locations.Map
	// TopID is the highest chunkserver id ever registered under this
	// config's history (removed members included), so that a LEADER never
	// hands a newcomer the id of a removed chunkserver: a promise made
	// under that id may still stand, and the newcomer, having never
	// promised, votes at once (docs/architecture.md §3, Restart). 0 in
	// configs written before it was kept: the members' highest id then.
	TopID wire.CSID `msgpack:",omitempty"`
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
	baseCfg [2]*ClusterConfig // the newest config and the one before it, as of base
	entries []Entry
	configs []uint64 // versions of the config entries held, ascending
}

// LogBase is where a trimmed log starts: the position of the last entry
// dropped, and the two configs as of it (which the dropped entries held).
type LogBase struct {
	Pos      Pos
	Latest   *ClusterConfig `msgpack:",omitempty"`
	Previous *ClusterConfig `msgpack:",omitempty"`
}

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
func (e *Entry) size() int { return 64 + len(e.Key) + len(e.Value) + 64*entryConfigMembers(e) }

func entryConfigMembers(e *Entry) int {
	if e.Config == nil {
		return 0
	}
	return len(e.Config.Members) + 1
}

// truncate drops every entry after version v. v is never below Base: the
// base is committed, and committed entries are never dropped.
func (l *Log) truncate(v uint64) {
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

// trim drops the entries up to version v (held, at most Len) and returns
// the new base.
func (l *Log) trim(v uint64) LogBase {
	if v <= l.base.Version {
		return l.Base()
	}
	if v > l.Len() {
		panic(fmt.Sprintf("invariant log-trim: trimming to %d past the newest version %d", v, l.Len()))
	}
	latest, prev := l.Configs(v)
	drop := v - l.base.Version
	l.base, l.baseCfg = l.PosAt(v), [2]*ClusterConfig{latest, prev}
	// A fresh array, so the trimmed entries can be collected.
	l.entries = slices.Clone(l.entries[drop:])
	i := 0
	for i < len(l.configs) && l.configs[i] <= v {
		i++
	}
	l.configs = slices.Clone(l.configs[i:])
	return l.Base()
}

// reset makes the log start after b, holding nothing.
func (l *Log) reset(b LogBase) {
	l.base, l.baseCfg = b.Pos, [2]*ClusterConfig{b.Latest, b.Previous}
	l.entries, l.configs = nil, nil
}

// Configs returns the newest config entry and the one before it (nil when
// absent), looking no further than version upto (at or above Base).
func (l *Log) Configs(upto uint64) (latest, previous *ClusterConfig) {
	i, found := slices.BinarySearch(l.configs, upto)
	if found {
		i++
	}
	// l.configs[:i] are the config entries held at or below upto; the
	// base's two come before them.
	var two [2]*ClusterConfig
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

// findClientSeq returns the version of the entry written for (client,
// seq): from the session table for applied entries, by a scan of the
// entries not yet applied (a few, bounded by what is in flight) for the
// rest.
func (l *Log) findClientSeq(kv *KV, c ClientID, seq uint64) uint64 {
	if c == 0 {
		return 0
	}
	for v := l.Len(); v > kv.Applied && v > l.base.Version; v-- {
		if e, _ := l.At(v); e.Client == c && e.Seq == seq {
			return v
		}
	}
	if s, ok := kv.Sessions[c]; ok && s.Seq == seq {
		return s.Version
	}
	return 0
}

// MaxSessions bounds the session table. Past it the sessions whose last
// change is oldest are forgotten (a quarter at a time, the same way on
// every master since they apply the same entries); a client that retries a
// change after that many other sessions have written since may see it
// applied twice.
const MaxSessions = 100_000

// Session is what the namespace remembers of one client session: its
// newest change, so that a retry of it is answered, not applied again.
type Session struct {
	Seq     uint64
	Version uint64
	Failed  bool `msgpack:",omitempty"` // a compare-and-set that did not apply
}

// KV is the namespace the changelog produces, applied up to Applied.
type KV struct {
	Applied  uint64
	Data     map[string]Item
	Sessions map[ClientID]Session

	// keys orders the keys of Data for List. It is derived state, never
	// replicated or stored: built by the first applyUpTo (a KV made from a
	// snapshot is always applied right after, so the build happens when a
	// master starts or installs a snapshot, not in a client's request), then
	// kept in step by applyUpTo, the only writer of Data once it is built.
	// Invariant: once indexed, keys holds exactly the keys of Data.
	keys    keyIndex
	indexed bool
}

// Item is one key's value and the version of the entry that wrote it.
type Item struct {
	Value   string
	Version uint64
}

// applyUpTo applies entries of l up to version v.
func (kv *KV) applyUpTo(l *Log, v uint64) {
	if kv.Data == nil {
		kv.Data = map[string]Item{}
	}
	if kv.Sessions == nil {
		kv.Sessions = map[ClientID]Session{}
	}
	kv.index()
	for kv.Applied < v {
		e, ok := l.At(kv.Applied + 1)
		if !ok {
			return
		}
		failed := false
		switch e.Kind {
		case EntryPut:
			kv.put(e.Key, Item{e.Value, e.Version})
		case EntryDelete:
			if _, ok := kv.Data[e.Key]; ok {
				delete(kv.Data, e.Key)
				kv.keys.remove(e.Key)
			}
		case EntryCAS:
			if kv.Data[e.Key].Version == e.Expect {
				kv.put(e.Key, Item{e.Value, e.Version})
			} else {
				failed = true
			}
		}
		if e.Client != 0 {
			kv.Sessions[e.Client] = Session{Seq: e.Seq, Version: e.Version, Failed: failed}
			if len(kv.Sessions) > MaxSessions {
				kv.forgetOldSessions()
			}
		}
		kv.Applied++
	}
}

// forgetOldSessions drops the quarter of the sessions whose last change is
// oldest.
func (kv *KV) forgetOldSessions() {
	vs := make([]uint64, 0, len(kv.Sessions))
	for _, s := range kv.Sessions {
		vs = append(vs, s.Version)
	}
	slices.Sort(vs)
	cut := vs[len(vs)/4]
	for c, s := range kv.Sessions {
		if s.Version < cut {
			delete(kv.Sessions, c)
		}
	}
}

// put sets key, adding it to the index when it is new.
func (kv *KV) put(key string, it Item) {
	if _, ok := kv.Data[key]; !ok {
		kv.keys.insert(key)
	}
	kv.Data[key] = it
}

// index builds the key index from Data, once.
func (kv *KV) index() {
	if kv.indexed {
		return
	}
	kv.keys = keyIndex{}
	// Sorted first: each insert then goes to the right edge of the tree.
	keys := make([]string, 0, len(kv.Data))
	for k := range kv.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		kv.keys.insert(k)
	}
	kv.indexed = true
}

// List returns the first entries whose keys start with prefix and come
// after the key after (any, when after is ""), sorted by key: at most max
// of them (none: no bound) and, past the first, at most maxBytes of keys
// and values (none: no bound); more says some were left out. A client
// pages through a prefix by asking again after the last key it received.
// It costs O(log n + the entries returned).
func (kv *KV) List(prefix, after string, max, maxBytes int) (out []KVEntry, more bool) {
	kv.index()
	size := 0
	from, inclusive := prefix, true
	if after >= prefix {
		from, inclusive = after, false
	}
	kv.keys.ascend(from, inclusive, func(k string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false // sorted: no key further on has the prefix either
		}
		it := kv.Data[k]
		size += len(k) + len(it.Value)
		if (max > 0 && len(out) >= max) || (maxBytes > 0 && len(out) > 0 && size > maxBytes) {
			more = true
			return false
		}
		out = append(out, KVEntry{Key: k, Value: it.Value, Version: it.Version})
		return true
	})
	return out, more
}

// ---- the key index -----------------------------------------------------------------

// keyIndex is a set of strings kept in order: a B-tree, so that adding or
// removing a key costs O(log n) and a listing starts at any key in
// O(log n). Every node holds at most keyMaxItems keys and every node but
// the root at least keyMinItems; an inner node with k keys has k+1
// children, all leaves are at the same depth, and the keys of kids[i] lie
// between keys[i-1] and keys[i].
type keyIndex struct {
	root *keyNode
	n    int
}

type keyNode struct {
	keys []string
	kids []*keyNode // nil in a leaf
}

const (
	keyDegree   = 32
	keyMaxItems = 2*keyDegree - 1
	keyMinItems = keyDegree - 1
)

// Len is the number of keys held.
func (x *keyIndex) Len() int { return x.n }

// insert adds k; false when it was already there.
func (x *keyIndex) insert(k string) bool {
	if x.root == nil {
		x.root = &keyNode{keys: []string{k}}
		x.n = 1
		return true
	}
	if len(x.root.keys) >= keyMaxItems {
		old := x.root
		x.root = &keyNode{kids: []*keyNode{old}}
		x.root.split(0)
	}
	if !x.root.insert(k) {
		return false
	}
	x.n++
	return true
}

// remove deletes k; false when it was not there.
func (x *keyIndex) remove(k string) bool {
	if x.root == nil || !x.root.remove(k, false) {
		return false
	}
	x.n--
	if len(x.root.keys) == 0 {
		if len(x.root.kids) > 0 {
			x.root = x.root.kids[0]
		} else {
			x.root = nil
		}
	}
	return true
}

// ascend calls fn on the keys from from on (from itself only when
// inclusive), in order, until fn returns false.
func (x *keyIndex) ascend(from string, inclusive bool, fn func(string) bool) {
	if x.root != nil {
		x.root.ascend(from, inclusive, true, fn)
	}
}

func (n *keyNode) leaf() bool { return len(n.kids) == 0 }

// split moves the upper half of the full child i into a new sibling after
// it, and its middle key up into n.
func (n *keyNode) split(i int) {
	c := n.kids[i]
	mid := len(c.keys) / 2
	up := c.keys[mid]
	right := &keyNode{keys: slices.Clone(c.keys[mid+1:])}
	clear(c.keys[mid:])
	c.keys = c.keys[:mid]
	if !c.leaf() {
		right.kids = slices.Clone(c.kids[mid+1:])
		clear(c.kids[mid+1:])
		c.kids = c.kids[:mid+1]
	}
	n.keys = slices.Insert(n.keys, i, up)
	n.kids = slices.Insert(n.kids, i+1, right)
}

// insert adds k under n, which is not full.
func (n *keyNode) insert(k string) bool {
	for {
		i, found := slices.BinarySearch(n.keys, k)
		if found {
			return false
		}
		if n.leaf() {
			n.keys = slices.Insert(n.keys, i, k)
			return true
		}
		if len(n.kids[i].keys) >= keyMaxItems {
			n.split(i)
			switch c := strings.Compare(k, n.keys[i]); {
			case c == 0:
				return false
			case c > 0:
				i++
			}
		}
		n = n.kids[i]
	}
}

// remove deletes k under n (the greatest key when max is set), making
// sure first that every child it descends into can lose a key.
func (n *keyNode) remove(k string, max bool) bool {
	for {
		var i int
		var found bool
		if max {
			i = len(n.keys)
			if n.leaf() {
				i--
				found = true
			}
		} else {
			i, found = slices.BinarySearch(n.keys, k)
		}
		if n.leaf() {
			if !found {
				return false
			}
			n.keys = slices.Delete(n.keys, i, i+1)
			return true
		}
		if len(n.kids[i].keys) <= keyMinItems {
			n.grow(i)
			continue // the keys moved: search n again
		}
		if found {
			// Replace k by its predecessor, the greatest key of kids[i].
			c := n.kids[i]
			pred := c.max()
			n.keys[i] = pred
			return c.remove(pred, true)
		}
		n = n.kids[i]
	}
}

// max is the greatest key under n.
func (n *keyNode) max() string {
	for !n.leaf() {
		n = n.kids[len(n.kids)-1]
	}
	return n.keys[len(n.keys)-1]
}

// grow gives child i more than keyMinItems keys: borrowed through n from a
// sibling that can spare one, or by merging it with a sibling and the key
// between them.
func (n *keyNode) grow(i int) {
	c := n.kids[i]
	switch {
	case i > 0 && len(n.kids[i-1].keys) > keyMinItems:
		l := n.kids[i-1]
		c.keys = slices.Insert(c.keys, 0, n.keys[i-1])
		n.keys[i-1] = l.keys[len(l.keys)-1]
		l.keys[len(l.keys)-1] = ""
		l.keys = l.keys[:len(l.keys)-1]
		if !l.leaf() {
			c.kids = slices.Insert(c.kids, 0, l.kids[len(l.kids)-1])
			l.kids[len(l.kids)-1] = nil
			l.kids = l.kids[:len(l.kids)-1]
		}
	case i < len(n.keys) && len(n.kids[i+1].keys) > keyMinItems:
		r := n.kids[i+1]
		c.keys = append(c.keys, n.keys[i])
		n.keys[i] = r.keys[0]
		r.keys = slices.Delete(r.keys, 0, 1)
		if !r.leaf() {
			c.kids = append(c.kids, r.kids[0])
			r.kids = slices.Delete(r.kids, 0, 1)
		}
	default:
		if i == len(n.keys) {
			i--
			c = n.kids[i]
		}
		r := n.kids[i+1]
		c.keys = append(append(c.keys, n.keys[i]), r.keys...)
		c.kids = append(c.kids, r.kids...)
		n.keys = slices.Delete(n.keys, i, i+1)
		n.kids = slices.Delete(n.kids, i+1, i+2)
	}
}

// ascend walks n in order from from on (bounded: only the first path down
// needs the search; everything after it is past from).
func (n *keyNode) ascend(from string, inclusive, bounded bool, fn func(string) bool) bool {
	i := 0
	if bounded {
		var found bool
		i, found = slices.BinarySearch(n.keys, from)
		if found {
			// kids[i] lies below from; keys[i] is from itself.
			if inclusive && !fn(n.keys[i]) {
				return false
			}
			i++
			bounded = false
		}
	}
	for ; i <= len(n.keys); i++ {
		if !n.leaf() && !n.kids[i].ascend(from, inclusive, bounded, fn) {
			return false
		}
		bounded = false
		if i < len(n.keys) && !fn(n.keys[i]) {
			return false
		}
	}
	return true
}
