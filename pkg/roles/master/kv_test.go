package master

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// kvOf applies puts of n keys spread over a few directories.
func kvOf(n int) (*changelog.Log, *namespace.KV) {
	var l changelog.Log
	l.Append(changelog.Genesis(1)...)
	for i := 0; i < n; i++ {
		l.Append(changelog.Entry{Pos: changelog.Pos{Version: l.Len() + 1, Epoch: 1}, Kind: changelog.EntryPut,
			Key: fmt.Sprintf("d%d/%06d", i%4, i*7919%1000003), Value: strings.Repeat("v", i%50)})
	}
	var kv namespace.KV
	kv.ApplyUpTo(&l, l.Len())
	return &l, &kv
}

// TestListIndexThroughSnapshots: the key index is derived state. A
// namespace rebuilt from a snapshot (at start, or installed from a
// LEADER's chunks) lists exactly what the original does, and stays in step
// as both apply the same entries after it.
func TestListIndexThroughSnapshots(t *testing.T) {
	l, kv := kvOf(2000)
	s := namespace.SnapshotOf(kv, l)
	restored := s.KV()
	restored.ApplyUpTo(l, l.Len())
	if !restored.Indexed() {
		t.Fatal("applying after a snapshot left the index unbuilt")
	}
	same := func(what string, a, b *namespace.KV) {
		t.Helper()
		for _, p := range []string{"", "d1/", "d3/9"} {
			x, xm := a.List(p, "", 0, 0)
			y, ym := b.List(p, "", 0, 0)
			if !slices.Equal(x, y) || xm != ym || len(x) != len(a.Data) && p == "" {
				t.Fatalf("%s: List(%q) gives %d and %d entries", what, p, len(x), len(y))
			}
		}
		for _, kv := range []*namespace.KV{a, b} {
			if err := kv.CheckIndex(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	same("restored from a snapshot", kv, &restored)

	// The same deletes and puts applied to both.
	for i, k := range slices.Sorted(maps.Keys(kv.Data))[:500] {
		e := changelog.Entry{Pos: changelog.Pos{Version: l.Len() + 1, Epoch: 1}, Kind: changelog.EntryDelete, Key: k}
		if i%3 == 0 {
			e.Kind, e.Key, e.Value = changelog.EntryPut, k+"/new", "n"
		}
		l.Append(e)
	}
	kv.ApplyUpTo(l, l.Len())
	restored.ApplyUpTo(l, l.Len())
	same("after deletes and puts", kv, &restored)

	// Installed from chunks on a follower, which then applies more.
	s2 := namespace.SnapshotOf(kv, l)
	m, _ := New(DefaultConfig(2, []wire.MasterID{1, 2}), roles.Stored{}, 0)
	m.hard.LeaderEpoch = 1
	for off := uint64(0); off < s2.Records(); {
		c := chunkOf(s2, 1, 1, off, 4096)
		c.Commit = s2.Pos
		m.Step(0, c)
		off += uint64(len(c.Items) + len(c.Sessions))
	}
	if m.SnapshotAt() != s2.Pos {
		t.Fatalf("the follower did not install the snapshot: at %v", m.SnapshotAt())
	}
	same("installed from chunks", kv, &m.kv)
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
		r.step(roles.ClientWrite{Client: 1, Seq: seq, Key: key, Value: "v", Delete: del})
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
		r.step(roles.ClientRead{Client: 2, Seq: uint64(pages + 1), Key: "p/", Prefix: true, After: after, Limit: 7})
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
