package roles

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// TestKVCompareAndSetAndList: the namespace the changelog produces keeps a
// version per key; a compare-and-set applies only at the expected version
// (0: absent), and its failure is remembered in the session table for its
// answer; List returns a prefix in key order.
func TestKVCompareAndSetAndList(t *testing.T) {
	var l Log
	l.append(Genesis(1)...)
	add := func(e Entry) uint64 {
		e.Pos = Pos{Version: l.Len() + 1, Epoch: 1}
		e.Client, e.Seq = ClientID(e.Version), 1 // a session per change
		l.append(e)
		return e.Version
	}
	put := add(Entry{Kind: EntryPut, Key: "dir/a", Value: "1"})
	casOK := add(Entry{Kind: EntryCAS, Key: "dir/a", Value: "2", Expect: put})
	casStale := add(Entry{Kind: EntryCAS, Key: "dir/a", Value: "3", Expect: put})
	casNew := add(Entry{Kind: EntryCAS, Key: "dir/b", Value: "b", Expect: 0})
	casExists := add(Entry{Kind: EntryCAS, Key: "dir/b", Value: "x", Expect: 0})
	add(Entry{Kind: EntryPut, Key: "other", Value: "o"})
	del := add(Entry{Kind: EntryDelete, Key: "dir/b"})
	var kv KV
	kv.applyUpTo(&l, del-1)
	if it := kv.Data["dir/a"]; it.Value != "2" || it.Version != casOK {
		t.Fatalf("dir/a = %+v, want 2 at version %d", it, casOK)
	}
	for v, failed := range map[uint64]bool{casOK: false, casStale: true, casNew: false, casExists: true} {
		if s := kv.Sessions[ClientID(v)]; s.Failed != failed || s.Version != v {
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
	kv.applyUpTo(&l, del)
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

// namespace applies puts of n keys spread over a few directories.
func namespace(n int) (*Log, *KV) {
	var l Log
	l.append(Genesis(1)...)
	for i := 0; i < n; i++ {
		l.append(Entry{Pos: Pos{Version: l.Len() + 1, Epoch: 1}, Kind: EntryPut,
			Key: fmt.Sprintf("d%d/%06d", i%4, i*7919%1000003), Value: strings.Repeat("v", i%50)})
	}
	var kv KV
	kv.applyUpTo(&l, l.Len())
	return &l, &kv
}

// TestListAgainstNaive: a page is what the old List (sort everything, then
// cut) gives for the same prefix, start key and bounds.
func TestListAgainstNaive(t *testing.T) {
	_, kv := namespace(3000)
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

// TestListPagesUnderChurn: a client paging through a prefix at a LEADER,
// with keys written and deleted between its pages (the key it continues
// after among them), sees every key that lived throughout exactly once,
// in order, and nothing from outside the prefix.
func TestListPagesUnderChurn(t *testing.T) {
	r := newLeaderRig(t)
	seq := uint64(0)
	write := func(key string, del bool) {
		seq++
		r.step(ClientWrite{Client: 1, Seq: seq, Key: key, Value: "v", Delete: del})
	}
	for i := 0; i < 400; i += 2 {
		write(fmt.Sprintf("p/%04d", i), false)
		write(fmt.Sprintf("q/%04d", i), false)
	}
	stable := map[string]bool{}
	for i := 0; i < 400; i += 2 {
		if i%10 != 0 {
			stable[fmt.Sprintf("p/%04d", i)] = true // never deleted below
		}
	}
	seen := map[string]int{}
	after, pages := "", 0
	for more := true; more; pages++ {
		if pages > 200 {
			t.Fatal("paging did not end")
		}
		r.replies = nil
		r.step(ClientRead{Client: 2, Seq: uint64(pages + 1), Key: "p/", Prefix: true, After: after, Limit: 7})
		if len(r.replies) != 1 || !r.replies[0].OK {
			t.Fatalf("page %d: replies %+v", pages, r.replies)
		}
		rep := r.replies[0]
		for _, e := range rep.Entries {
			if !strings.HasPrefix(e.Key, "p/") || e.Key <= after {
				t.Fatalf("page %d after %q returned %q", pages, after, e.Key)
			}
			seen[e.Key]++
			after = e.Key
		}
		if len(rep.Entries) > 7 || (rep.More && len(rep.Entries) == 0) {
			t.Fatalf("page %d: %d entries, more=%v", pages, len(rep.Entries), rep.More)
		}
		more = rep.More
		// Churn: new odd keys behind and ahead of the cursor, deletes of
		// multiples of ten (the cursor's own key among them when it is one).
		n := pages * 13 % 400
		write(fmt.Sprintf("p/%04d", n|1), false)
		write(fmt.Sprintf("p/%04d", (n+200)%400|1), false)
		write(fmt.Sprintf("p/%04d", n/10*10), true)
		write(after, after[len(after)-1] == '0')
	}
	for k := range stable {
		if seen[k] != 1 {
			t.Errorf("%s listed %d times", k, seen[k])
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", k, n)
		}
	}
	if pages < 30 {
		t.Fatalf("only %d pages", pages)
	}
}

// TestListIndexThroughSnapshots: the key index is derived state. A
// namespace rebuilt from a snapshot (at start, or installed from a
// LEADER's chunks) lists exactly what the original does, and stays in step
// as both apply the same entries after it.
func TestListIndexThroughSnapshots(t *testing.T) {
	l, kv := namespace(2000)
	s := snapshotOf(kv, l)
	restored := s.kv()
	restored.applyUpTo(l, l.Len())
	if !restored.indexed {
		t.Fatal("applying after a snapshot left the index unbuilt")
	}
	same := func(what string, a, b *KV) {
		t.Helper()
		for _, p := range []string{"", "d1/", "d3/9"} {
			x, xm := a.List(p, "", 0, 0)
			y, ym := b.List(p, "", 0, 0)
			if !slices.Equal(x, y) || xm != ym || len(x) != len(a.Data) && p == "" {
				t.Fatalf("%s: List(%q) gives %d and %d entries", what, p, len(x), len(y))
			}
		}
		checkIndex(t, &a.keys, slices.Sorted(maps.Keys(a.Data)))
		checkIndex(t, &b.keys, slices.Sorted(maps.Keys(b.Data)))
	}
	same("restored from a snapshot", kv, &restored)

	// The same deletes and puts applied to both.
	for i, k := range slices.Sorted(maps.Keys(kv.Data))[:500] {
		e := Entry{Pos: Pos{Version: l.Len() + 1, Epoch: 1}, Kind: EntryDelete, Key: k}
		if i%3 == 0 {
			e.Kind, e.Key, e.Value = EntryPut, k+"/new", "n"
		}
		l.append(e)
	}
	kv.applyUpTo(l, l.Len())
	restored.applyUpTo(l, l.Len())
	same("after deletes and puts", kv, &restored)

	// Installed from chunks on a follower, which then applies more.
	s2 := snapshotOf(kv, l)
	m, _ := NewMaster(DefaultConfig(2, []wire.MasterID{1, 2}), Stored{}, 0)
	m.hard.LeaderEpoch = 1
	for off := uint64(0); off < s2.records(); {
		c := s2.chunk(1, 1, off, 4096)
		c.Commit = s2.Pos
		m.Step(0, c)
		off += uint64(len(c.Items) + len(c.Sessions))
	}
	if m.SnapshotAt() != s2.Pos {
		t.Fatalf("the follower did not install the snapshot: at %v", m.SnapshotAt())
	}
	same("installed from chunks", kv, &m.kv)
}

// BenchmarkList: one page of ListMax entries (the most one answer holds),
// and a page of 100 from the middle, on 10k and 100k keys. Before the key
// index, List copied and sorted every matching key on each call (5.9 ms
// and 67 ms for the full page on this machine).
func BenchmarkList(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		var l Log
		l.append(Genesis(1)...)
		for i := 0; i < n; i++ {
			l.append(Entry{Pos: Pos{Version: l.Len() + 1, Epoch: 1}, Kind: EntryPut, Key: fmt.Sprintf("k/%08d", i), Value: "some value of thirty bytes...."})
		}
		var kv KV
		kv.applyUpTo(&l, l.Len())
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
