package namespace

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
)

// TestKVCompareAndSetAndList: the namespace the changelog produces keeps a
// version per key; a compare-and-set applies only at the expected version
// (0: absent), and its failure is remembered in the session table for its
// answer; List returns a prefix in key order.
func TestKVCompareAndSetAndList(t *testing.T) {
	var l changelog.Log
	l.Append(changelog.Genesis(1)...)
	add := func(e changelog.Entry) uint64 {
		e.Pos = changelog.Pos{Version: l.Len() + 1, Epoch: 1}
		e.Client, e.Seq = changelog.ClientID(e.Version), 1 // a session per change
		l.Append(e)
		return e.Version
	}
	put := add(changelog.Entry{Kind: changelog.EntryPut, Key: "dir/a", Value: "1"})
	casOK := add(changelog.Entry{Kind: changelog.EntryCAS, Key: "dir/a", Value: "2", Expect: put})
	casStale := add(changelog.Entry{Kind: changelog.EntryCAS, Key: "dir/a", Value: "3", Expect: put})
	casNew := add(changelog.Entry{Kind: changelog.EntryCAS, Key: "dir/b", Value: "b", Expect: 0})
	casExists := add(changelog.Entry{Kind: changelog.EntryCAS, Key: "dir/b", Value: "x", Expect: 0})
	add(changelog.Entry{Kind: changelog.EntryPut, Key: "other", Value: "o"})
	del := add(changelog.Entry{Kind: changelog.EntryDelete, Key: "dir/b"})
	var kv KV
	kv.ApplyUpTo(&l, del-1)
	if it := kv.Data["dir/a"]; it.Value != "2" || it.Version != casOK {
		t.Fatalf("dir/a = %+v, want 2 at version %d", it, casOK)
	}
	for v, failed := range map[uint64]bool{casOK: false, casStale: true, casNew: false, casExists: true} {
		if s := kv.Sessions[changelog.ClientID(v)]; s.Failed != failed || s.Version != v {
			t.Errorf("entry %d: session %+v, want failed=%v", v, s, failed)
		}
	}
	got, _ := kv.List("dir/", "", 0, 0)
	if len(got) != 2 || got[0].Key != "dir/a" || got[1].Key != "dir/b" || got[1].Version != casNew {
		t.Fatalf("List(dir/) = %+v", got)
	}
	if got, more := kv.List("dir/", "", 1, 0); len(got) != 1 || !more {
		t.Fatalf("List with max 1 returned %d entries", len(got))
	}
	kv.ApplyUpTo(&l, del)
	if got, more := kv.List("", "", 0, 0); more || len(got) != 2 || got[1].Key != "other" {
		t.Fatalf("after the delete: %+v", got)
	}
}

// checkIndex fails unless x is a well-formed B-tree holding exactly want
// (sorted): node sizes within bounds, leaves at one depth, keys in order.
func checkIndex(t *testing.T, x *keyIndex, want []string) {
	t.Helper()
	var got []string
	leafDepth := -1
	var walk func(n *keyNode, depth int, root bool)
	walk = func(n *keyNode, depth int, root bool) {
		if len(n.keys) > keyMaxItems || (!root && len(n.keys) < keyMinItems) || len(n.keys) == 0 {
			t.Fatalf("a node at depth %d holds %d keys", depth, len(n.keys))
		}
		if n.leaf() {
			if leafDepth >= 0 && leafDepth != depth {
				t.Fatalf("leaves at depths %d and %d", leafDepth, depth)
			}
			leafDepth = depth
			got = append(got, n.keys...)
			return
		}
		if len(n.kids) != len(n.keys)+1 {
			t.Fatalf("%d keys and %d children", len(n.keys), len(n.kids))
		}
		for i, c := range n.kids {
			walk(c, depth+1, false)
			if i < len(n.keys) {
				got = append(got, n.keys[i])
			}
		}
	}
	if x.root != nil {
		walk(x.root, 0, true)
	}
	if !slices.Equal(got, want) || x.Len() != len(want) {
		t.Fatalf("the index holds %d keys (Len %d), want %d", len(got), x.Len(), len(want))
	}
}

// TestKeyIndexAgainstASortedSlice: inserts, removals and ascents of the
// B-tree agree with a sorted slice, through growth to several levels and
// shrinking back to nothing.
func TestKeyIndexAgainstASortedSlice(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var x keyIndex
	var set []string
	key := func() string { return fmt.Sprintf("%05d", rnd.IntN(20000)) }
	for round, ops := range []struct{ n, insertPct int }{{30000, 80}, {30000, 50}, {40000, 10}} {
		for i := 0; i < ops.n; i++ {
			k := key()
			pos, in := slices.BinarySearch(set, k)
			if rnd.IntN(100) < ops.insertPct {
				if x.insert(k) == in {
					t.Fatalf("insert(%s) with the key present=%v", k, in)
				}
				if !in {
					set = slices.Insert(set, pos, k)
				}
			} else {
				if x.remove(k) != in {
					t.Fatalf("remove(%s) with the key present=%v", k, in)
				}
				if in {
					set = slices.Delete(set, pos, pos+1)
				}
			}
			if i%5000 == 0 {
				checkIndex(t, &x, set)
			}
		}
		checkIndex(t, &x, set)
		for i := 0; i < 200; i++ {
			from, inclusive, n := key(), rnd.IntN(2) == 0, rnd.IntN(300)
			start, found := slices.BinarySearch(set, from)
			if found && !inclusive {
				start++
			}
			want := set[start:min(start+n, len(set))]
			var got []string
			x.ascend(from, inclusive, func(k string) bool {
				if len(got) == n {
					return false
				}
				got = append(got, k)
				return true
			})
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: ascend(%s, %v) for %d: got %v, want %v", round, from, inclusive, n, got, want)
			}
		}
	}
	for _, k := range slices.Clone(set) {
		x.remove(k)
	}
	checkIndex(t, &x, nil)
	if x.root != nil {
		t.Fatal("an empty index kept a root")
	}
}

// naiveList is List as it was: every matching key, sorted, then cut.
func naiveList(kv *KV, prefix, after string, max, maxBytes int) ([]KVEntry, bool) {
	var all []KVEntry
	for k, it := range kv.Data {
		if strings.HasPrefix(k, prefix) && k > after {
			all = append(all, KVEntry{Key: k, Value: it.Value, Version: it.Version})
		}
	}
	slices.SortFunc(all, func(a, b KVEntry) int { return strings.Compare(a.Key, b.Key) })
	n := len(all)
	if max > 0 && n > max {
		n = max
	}
	size := 0
	for i := 0; i < n && maxBytes > 0; i++ {
		size += len(all[i].Key) + len(all[i].Value)
		if i > 0 && size > maxBytes {
			n = i
		}
	}
	return all[:n], n < len(all)
}

// kvOf applies puts of n keys spread over a few directories.
func kvOf(n int) (*changelog.Log, *KV) {
	var l changelog.Log
	l.Append(changelog.Genesis(1)...)
	for i := 0; i < n; i++ {
		l.Append(changelog.Entry{Pos: changelog.Pos{Version: l.Len() + 1, Epoch: 1}, Kind: changelog.EntryPut,
			Key: fmt.Sprintf("d%d/%06d", i%4, i*7919%1000003), Value: strings.Repeat("v", i%50)})
	}
	var kv KV
	kv.ApplyUpTo(&l, l.Len())
	return &l, &kv
}

// TestListAgainstNaive: a page is what the old List (sort everything, then
// cut) gives for the same prefix, start key and bounds.
func TestListAgainstNaive(t *testing.T) {
	_, kv := kvOf(3000)
	rnd := rand.New(rand.NewPCG(3, 4))
	keys := slices.Sorted(maps.Keys(kv.Data))
	for i := 0; i < 500; i++ {
		prefix := []string{"", "d1/", "d2/00", "d3/5", "d", "e", "d0/999999"}[rnd.IntN(7)]
		after := ""
		switch rnd.IntN(4) {
		case 1:
			after = keys[rnd.IntN(len(keys))]
		case 2:
			after = keys[rnd.IntN(len(keys))] + "x" // not a key
		case 3:
			after = "d2" // below every d2/ key
		}
		max, maxBytes := rnd.IntN(100), []int{0, 1, 200, 5000}[rnd.IntN(4)]
		got, more := kv.List(prefix, after, max, maxBytes)
		want, wantMore := naiveList(kv, prefix, after, max, maxBytes)
		if !slices.Equal(got, want) || more != wantMore {
			t.Fatalf("List(%q, %q, %d, %d): %d entries more=%v, want %d more=%v", prefix, after, max, maxBytes, len(got), more, len(want), wantMore)
		}
	}
}

// BenchmarkList: one page of ListMax entries (the most one answer holds),
// and a page of 100 from the middle, on 10k and 100k keys. Before the key
// index, List copied and sorted every matching key on each call (5.9 ms
// and 67 ms for the full page on this machine).
func BenchmarkList(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		var l changelog.Log
		l.Append(changelog.Genesis(1)...)
		for i := 0; i < n; i++ {
			l.Append(changelog.Entry{Pos: changelog.Pos{Version: l.Len() + 1, Epoch: 1}, Kind: changelog.EntryPut, Key: fmt.Sprintf("k/%08d", i), Value: "some value of thirty bytes...."})
		}
		var kv KV
		kv.ApplyUpTo(&l, l.Len())
		mid := fmt.Sprintf("k/%08d", n/2)
		b.Run(fmt.Sprintf("keys=%d/page=%d", n, ListMax), func(b *testing.B) {
			for b.Loop() {
				kv.List("", "", ListMax, ListMaxBytes)
			}
		})
		b.Run(fmt.Sprintf("keys=%d/page=100", n), func(b *testing.B) {
			for b.Loop() {
				kv.List("k/", mid, 100, ListMaxBytes)
			}
		})
		b.Run(fmt.Sprintf("keys=%d/all-in-pages-of-1000", n), func(b *testing.B) {
			for b.Loop() {
				after := ""
				for more := true; more; {
					var es []KVEntry
					es, more = kv.List("k/", after, 1000, ListMaxBytes)
					after = es[len(es)-1].Key
				}
			}
		})
	}
}
