package roles

import (
	"testing"
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
	got, _ := kv.List("dir/", 0, 0)
	if len(got) != 2 || got[0].Key != "dir/a" || got[1].Key != "dir/b" || got[1].Version != casNew {
		t.Fatalf("List(dir/) = %+v", got)
	}
	if got, more := kv.List("dir/", 1, 0); len(got) != 1 || !more {
		t.Fatalf("List with max 1 returned %d entries", len(got))
	}
	kv.applyUpTo(&l, del)
	if got, more := kv.List("", 0, 0); more || len(got) != 2 || got[1].Key != "other" {
		t.Fatalf("after the delete: %+v", got)
	}
}
