package namespace

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/changelog"
)

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
	Sessions map[changelog.ClientID]Session

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

// ApplyUpTo applies entries of l up to version v.
func (kv *KV) ApplyUpTo(l *changelog.Log, v uint64) {
	if kv.Data == nil {
		kv.Data = map[string]Item{}
	}
	if kv.Sessions == nil {
		kv.Sessions = map[changelog.ClientID]Session{}
	}
	kv.index()
	for kv.Applied < v {
		e, ok := l.At(kv.Applied + 1)
		if !ok {
			return
		}
		failed := false
		switch e.Kind {
		case changelog.EntryPut:
			kv.put(e.Key, Item{e.Value, e.Version})
		case changelog.EntryDelete:
			if _, ok := kv.Data[e.Key]; ok {
				delete(kv.Data, e.Key)
				kv.keys.remove(e.Key)
			}
		case changelog.EntryCAS:
			if kv.Data[e.Key].Version == e.Expect {
				kv.put(e.Key, Item{e.Value, e.Version})
			} else {
				failed = true
			}
		}
		for i := range e.History {
			kv.applyHistory(e.Version, i, &e.History[i])
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
// The cluster's own keys (Reserved) are never listed. It costs O(log n + the entries returned).
func (kv *KV) List(prefix, after string, max, maxBytes int) (out []KVEntry, more bool) {
	kv.index()
	if !Client(prefix) {
		return nil, false
	}
	size := 0
	from, inclusive := prefix, true
	if after >= prefix {
		from, inclusive = after, false
	}
	if from < "\x01" {
		// The cluster's own keys (Reserved) sort first: a client's
		// listing starts after them.
		from, inclusive = "\x01", true
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

// ListMax and ListMaxBytes bound the entries one list answer carries (a
// frame holds 4 MiB).
const (
	ListMax      = 10000
	ListMaxBytes = 2 << 20
)

// KVEntry is one key of a list answer.
type KVEntry struct {
	Key     string
	Value   string
	Version uint64
}

// Indexed reports whether the key index is built (it is built on first
// use, and kept up to date from then on).
func (kv *KV) Indexed() bool { return kv.indexed }

// CheckIndex checks the index invariant: once built, the index is a
// well-formed B-tree (node sizes within bounds, leaves at one depth, keys
// in order) holding exactly the keys of Data. Tests and tools call it; the
// hot path never does.
func (kv *KV) CheckIndex() error {
	if !kv.indexed {
		return nil
	}
	var got []string
	leafDepth := -1
	var bad error
	var walk func(n *keyNode, depth int, root bool)
	walk = func(n *keyNode, depth int, root bool) {
		switch {
		case bad != nil:
			return
		case len(n.keys) > keyMaxItems || (!root && len(n.keys) < keyMinItems) || len(n.keys) == 0:
			bad = fmt.Errorf("key index: a node at depth %d holds %d keys", depth, len(n.keys))
			return
		case n.leaf():
			if leafDepth >= 0 && leafDepth != depth {
				bad = fmt.Errorf("key index: leaves at depths %d and %d", leafDepth, depth)
			}
			leafDepth = depth
			got = append(got, n.keys...)
			return
		case len(n.kids) != len(n.keys)+1:
			bad = fmt.Errorf("key index: %d keys and %d children", len(n.keys), len(n.kids))
			return
		}
		for i, c := range n.kids {
			walk(c, depth+1, false)
			if i < len(n.keys) {
				got = append(got, n.keys[i])
			}
		}
	}
	if kv.keys.root != nil {
		walk(kv.keys.root, 0, true)
	}
	if bad != nil {
		return bad
	}
	if want := slices.Sorted(maps.Keys(kv.Data)); !slices.Equal(got, want) || kv.keys.Len() != len(want) {
		return fmt.Errorf("key index: holds %d keys (Len %d), the data %d", len(got), kv.keys.Len(), len(want))
	}
	return nil
}
