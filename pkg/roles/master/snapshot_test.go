package master

import (
	"fmt"
	"maps"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// testLog builds a log: genesis, then n puts at epoch 1 with a config
// change (a new founder) at version cfgAt.
func testLog(t *testing.T, n int, cfgAt uint64) *changelog.Log {
	t.Helper()
	var l changelog.Log
	l.Append(changelog.Genesis(1)...)
	for i := 0; i < n; i++ {
		e := changelog.Entry{Pos: changelog.Pos{Version: l.Len() + 1, Epoch: 1}, Kind: changelog.EntryPut,
			Client: changelog.ClientID(i%7 + 1), Seq: uint64(i + 1), Key: fmt.Sprintf("k%03d", i%50), Value: fmt.Sprint(i)}
		if e.Version == cfgAt {
			c, _ := l.Configs(l.Len())
			next := c.Clone()
			next.Version++
			next.Founder = 2
			e = changelog.Entry{Pos: e.Pos, Kind: changelog.EntryConfig, Config: next}
		}
		l.Append(e)
	}
	return &l
}

// TestLogTrim: a trimmed log answers for its base and what follows as the
// whole log did, keeps the two configs as of the base, refuses to truncate
// below it, and From returns nothing that would need trimmed entries.
func TestLogTrim(t *testing.T) {
	full := testLog(t, 100, 30)
	l := testLog(t, 100, 30)
	b := l.Trim(60)
	if b.Pos != full.PosAt(60) || l.Base().Pos != b.Pos || l.Len() != full.Len() || l.Held() != 41 {
		t.Fatalf("base %v len %d held %d", b.Pos, l.Len(), l.Held())
	}
	if b.Latest == nil || b.Latest.Version != 2 || b.Previous == nil || b.Previous.Version != 1 {
		t.Fatalf("configs as of the base: %+v %+v", b.Latest, b.Previous)
	}
	for _, v := range []uint64{60, 61, 101} {
		a, b := l.Configs(v)
		fa, fb := full.Configs(v)
		if a.Version != fa.Version || b.Version != fb.Version {
			t.Errorf("Configs(%d) differ after the trim", v)
		}
		if l.PosAt(v) != full.PosAt(v) || !l.Has(full.PosAt(v)) {
			t.Errorf("position %d differs after the trim", v)
		}
	}
	if _, ok := l.At(60); ok {
		t.Error("At(60) answered for a trimmed entry")
	}
	if l.Has(changelog.Pos{Version: 60, Epoch: 9}) {
		t.Error("Has accepted another epoch at the base")
	}
	if got := l.From(59, 0, 0); got != nil {
		t.Errorf("From(59) returned %d entries reaching below the base", len(got))
	}
	if got := l.From(60, 5, 0); len(got) != 5 || got[0].Version != 61 {
		t.Errorf("From(60, 5) = %d entries", len(got))
	}
	if got := l.From(60, 0, 1); len(got) != 1 {
		t.Errorf("From with a byte bound below one entry returned %d, want 1", len(got))
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("truncating below the base did not panic")
			}
		}()
		l.Truncate(59)
	}()
	l.Truncate(70)
	if l.Len() != 70 || l.Held() != 10 {
		t.Errorf("after truncate(70): len %d held %d", l.Len(), l.Held())
	}
}

// TestSnapshotChunksRoundTrip: a snapshot sent in chunks small enough to
// need several is rebuilt exactly, and the master that receives it goes
// on from it.
func TestSnapshotChunksRoundTrip(t *testing.T) {
	l := testLog(t, 300, 30)
	var kv namespace.KV
	kv.ApplyUpTo(l, 250)
	s := namespace.SnapshotOf(&kv, l)
	if s.Pos != l.PosAt(250) || s.Latest.Version != 2 {
		t.Fatalf("snapshot at %v with config %d", s.Pos, s.Latest.Version)
	}
	got := &namespace.Snapshot{Data: map[string]namespace.Item{}, Sessions: map[changelog.ClientID]namespace.Session{}}
	chunks := 0
	for off := uint64(0); off < s.Records(); chunks++ {
		c := chunkOf(s, 1, 1, off, 100)
		if off == 0 {
			got.Pos, got.Latest, got.Previous = c.Pos, c.Latest, c.Previous
		} else if c.Latest != nil {
			t.Fatal("configs repeated after the first chunk")
		}
		for _, it := range c.Items {
			got.Data[it.Key] = namespace.Item{Value: it.Value, Version: it.Version}
		}
		for _, se := range c.Sessions {
			got.Sessions[se.Client] = se.Session
		}
		off += uint64(len(c.Items) + len(c.Sessions))
	}
	if chunks < 3 {
		t.Fatalf("only %d chunks", chunks)
	}
	if !maps.Equal(got.Data, s.Data) || !maps.Equal(got.Sessions, s.Sessions) || got.Pos != s.Pos {
		t.Fatal("rebuilt snapshot differs")
	}

	// A follower that is sent it (in its own chunks) ends with the same
	// namespace and a log that starts right after it.
	cfg := DefaultConfig(2, []wire.MasterID{1, 2})
	m, _ := New(cfg, roles.Stored{Hard: roles.HardState{}}, 0)
	m.hard.LeaderEpoch = 1
	var acks []roles.AppendAck
	for off := uint64(0); off < s.Records(); {
		c := chunkOf(s, 1, 1, off, 200)
		c.Commit = s.Pos
		for _, snd := range m.Step(0, c).Sends {
			if ack, ok := snd.Msg.(roles.AppendAck); ok {
				acks = append(acks, ack)
			}
		}
		off += uint64(len(c.Items) + len(c.Sessions))
	}
	last := acks[len(acks)-1]
	if last.Match != s.Pos || last.SnapNext != s.Records() {
		t.Fatalf("last ack %+v", last)
	}
	if !maps.Equal(m.kv.Data, s.Data) || m.Hard().Commit != s.Pos || m.Log().Base().Pos != s.Pos || m.SnapshotAt() != s.Pos {
		t.Fatalf("installed: commit %v base %v", m.Hard().Commit, m.Log().Base().Pos)
	}
	if c := m.Registry(); c.Version != 2 {
		t.Fatalf("config after install: %d", c.Version)
	}
}

// TestSessionTableBounded: past MaxSessions the oldest quarter is
// forgotten, the same on every master (it depends on the entries only).
func TestSessionTableBounded(t *testing.T) {
	var l changelog.Log
	l.Append(changelog.Genesis(1)...)
	for i := 0; i < namespace.MaxSessions+10; i++ {
		l.Append(changelog.Entry{Pos: changelog.Pos{Version: l.Len() + 1, Epoch: 1}, Kind: changelog.EntryPut, Client: changelog.ClientID(i + 1), Seq: 1, Key: "k"})
	}
	var a, b namespace.KV
	a.ApplyUpTo(&l, l.Len())
	b.ApplyUpTo(&l, l.Len())
	if len(a.Sessions) > namespace.MaxSessions || len(a.Sessions) < namespace.MaxSessions*3/4 {
		t.Fatalf("%d sessions kept", len(a.Sessions))
	}
	if !maps.Equal(a.Sessions, b.Sessions) {
		t.Fatal("two appliers kept different sessions")
	}
	if _, ok := a.Sessions[changelog.ClientID(namespace.MaxSessions+10)]; !ok {
		t.Fatal("the newest session was forgotten")
	}
	if _, ok := a.Sessions[1]; ok {
		t.Fatal("the oldest session was kept")
	}
}

// BenchmarkSnapshotCopy measures the one part of a snapshot made on the
// master's loop: copying the namespace (1M keys, 100k sessions).
func BenchmarkSnapshotCopy(b *testing.B) {
	var l changelog.Log
	l.Append(changelog.Genesis(1)...)
	l.Append(changelog.Entry{Pos: changelog.Pos{Version: 2, Epoch: 1}, Kind: changelog.EntryNoop})
	kv := namespace.KV{Applied: 2, Data: map[string]namespace.Item{}, Sessions: map[changelog.ClientID]namespace.Session{}}
	for i := 0; i < 1_000_000; i++ {
		kv.Data[fmt.Sprintf("dir%04d/file%06d", i%1000, i)] = namespace.Item{Value: "some value of thirty bytes....", Version: uint64(i + 3)}
	}
	for i := 0; i < 100_000; i++ {
		kv.Sessions[changelog.ClientID(i+1)] = namespace.Session{Seq: 1, Version: uint64(i + 3)}
	}
	b.ResetTimer()
	for b.Loop() {
		if s := namespace.SnapshotOf(&kv, &l); len(s.Data) != len(kv.Data) {
			b.Fatal("short copy")
		}
	}
}
