package master

import (
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// A snapshot is installed only whole, in order, from a LEADER this master
// may follow (or, with epoch 0, as a catch-up answer to an ELECT), and
// never over a newer commit point: each guard of onSnapshotChunk, seen.
func TestSnapshotInstallGuards(t *testing.T) {
	l := testLog(t, 300, 30)
	var kv namespace.KV
	kv.ApplyUpTo(l, 250)
	s := namespace.SnapshotOf(&kv, l)
	const size = 200
	chunks := func(epoch uint64) []roles.SnapshotChunk {
		var cs []roles.SnapshotChunk
		for off := uint64(0); off < s.Records(); {
			c := chunkOf(s, 1, epoch, off, size)
			c.Commit = s.Pos
			cs = append(cs, c)
			off += uint64(len(c.Items) + len(c.Sessions))
		}
		return cs
	}
	if len(chunks(1)) < 3 {
		t.Fatal("the snapshot must take several chunks")
	}
	follower := func(leaderEpoch uint64) *Master {
		m, _ := New(DefaultConfig(2, []wire.MasterID{1, 2}), roles.Stored{}, 0)
		m.hard.LeaderEpoch = leaderEpoch
		return m
	}
	installed := func(m *Master) bool { return m.SnapshotAt() == s.Pos && m.Hard().Commit == s.Pos }
	feed := func(m *Master, cs []roles.SnapshotChunk) (acks []roles.AppendAck, ignored []string) {
		for _, c := range cs {
			b := m.Step(0, c)
			for _, s := range b.Sends {
				if ack, ok := s.Msg.(roles.AppendAck); ok {
					acks = append(acks, ack)
				}
			}
			ignored = append(ignored, b.Ignored...)
		}
		return acks, ignored
	}

	t.Run("in order from the LEADER: installed", func(t *testing.T) {
		m := follower(1)
		feed(m, chunks(1))
		if !installed(m) {
			t.Fatalf("not installed: snapshot %v commit %v", m.SnapshotAt(), m.Hard().Commit)
		}
	})
	t.Run("from an older LEADER than the one followed: refused", func(t *testing.T) {
		m := follower(3)
		feed(m, chunks(1))
		if installed(m) || m.SnapshotAt() != (changelog.Pos{}) {
			t.Fatalf("a snapshot of epoch-1 LEADER installed at a follower of epoch 3")
		}
	})
	t.Run("a catch-up answer (epoch 0) to a FOLLOWER: refused", func(t *testing.T) {
		m := follower(1)
		_, ign := feed(m, chunks(0))
		if installed(m) || len(ign) == 0 || ign[0] != "not-elect" {
			t.Fatalf("installed %v, ignored %v; want nothing installed, not-elect", installed(m), ign)
		}
	})
	t.Run("a chunk out of order: the LEADER is asked for the right offset", func(t *testing.T) {
		m := follower(1)
		cs := chunks(1)
		acks, _ := feed(m, []roles.SnapshotChunk{cs[0], cs[2]})
		if len(acks) != 2 || acks[1].SnapNext != acks[0].SnapNext {
			t.Fatalf("acks %+v; want the second to ask again for offset %d", acks, acks[0].SnapNext)
		}
		// Starting again from the middle, with nothing begun: back to 0.
		m2 := follower(1)
		acks, _ = feed(m2, []roles.SnapshotChunk{cs[1]})
		if len(acks) != 1 || acks[0].SnapNext != 0 {
			t.Fatalf("a first chunk at offset %d answered %+v; want a request for offset 0", cs[1].Offset, acks)
		}
		feed(m, cs[1:])
		if !installed(m) {
			t.Fatal("after the missing chunk came, the snapshot was not installed")
		}
	})
	t.Run("a chunk whose total changed: not mixed in", func(t *testing.T) {
		m := follower(1)
		cs := chunks(1)
		bad := cs[1]
		bad.Total++
		acks, _ := feed(m, []roles.SnapshotChunk{cs[0], bad})
		if len(acks) != 2 || acks[1].SnapNext != acks[0].SnapNext {
			t.Fatalf("acks %+v; want the changed chunk refused", acks)
		}
	})
	t.Run("older than the commit point: not installed, acknowledged as held", func(t *testing.T) {
		m := follower(1)
		feed(m, chunks(1))
		newer := testLog(t, 300, 30)
		var kv2 namespace.KV
		kv2.ApplyUpTo(newer, 200)
		old := namespace.SnapshotOf(&kv2, newer)
		c := chunkOf(old, 1, 1, 0, 1<<20)
		acks, ign := feed(m, []roles.SnapshotChunk{c})
		if m.SnapshotAt() != s.Pos || m.Hard().Commit != s.Pos {
			t.Fatalf("an older snapshot (%v) replaced the installed one (%v)", old.Pos, m.SnapshotAt())
		}
		if len(ign) == 0 || ign[0] != "snapshot-not-needed" || len(acks) != 1 || acks[0].Match != s.Pos {
			t.Fatalf("ignored %v, acks %+v; want snapshot-not-needed and an ack of %v", ign, acks, s.Pos)
		}
	})
}

// A master asks for a snapshot every SnapshotEvery applied changes, never
// with SnapshotEvery 0, one save at a time; a save reported for another
// position than the one asked for is not taken as done, and an older
// snapshot never replaces a newer one.
func TestSnapshotTaking(t *testing.T) {
	run := func(every uint64) (m *Master, step func(ev roles.Event) []*namespace.Snapshot) {
		cfg := DefaultConfig(2, []wire.MasterID{1, 2})
		cfg.SnapshotEvery, cfg.LogRetain = every, 1000
		m, _ = New(cfg, rigStored(), 0)
		return m, func(ev roles.Event) (saves []*namespace.Snapshot) {
			if s := m.Step(0, ev).SaveSnapshot; s != nil {
				saves = append(saves, s)
			}
			return saves
		}
	}
	appendOne := func(v uint64) roles.Append {
		p := changelog.Pos{Version: v, Epoch: 1}
		prev := changelog.Pos{Version: v - 1, Epoch: 1}
		if v == 3 {
			prev = changelog.Pos{Version: 2}
		}
		return roles.Append{From: 1, Epoch: 1, Prev: prev, Entries: []changelog.Entry{{Pos: p, Kind: changelog.EntryNoop}}, Commit: p, InForce: 2}
	}

	_, step := run(0)
	for v := uint64(3); v <= 12; v++ {
		if saves := step(appendOne(v)); len(saves) > 0 {
			t.Fatalf("SNAPSHOT_CHANGES off, and a snapshot was asked for at %v", saves[0].Pos)
		}
	}

	m, step := run(3)
	var asked []*namespace.Snapshot
	for v := uint64(3); v <= 8; v++ {
		asked = append(asked, step(appendOne(v))...)
	}
	if len(asked) != 1 {
		t.Fatalf("%d saves asked for while the first was not done; want 1", len(asked))
	}
	first := asked[0]
	step(roles.SnapshotSaved{Pos: changelog.Pos{Version: first.Pos.Version + 1, Epoch: 1}})
	if m.SnapshotAt() != (changelog.Pos{}) {
		t.Fatalf("a save reported at another position was taken: snapshot at %v", m.SnapshotAt())
	}
	next := step(roles.SnapshotSaved{Pos: first.Pos})
	if m.SnapshotAt() != first.Pos {
		t.Fatalf("snapshot at %v after its save, want %v", m.SnapshotAt(), first.Pos)
	}
	// Applied is at 8 by now, SnapshotEvery past the first: the next save
	// is asked for at once.
	if len(next) != 1 || next[0].Pos.Version != 8 {
		t.Fatalf("after the first save (at %v), with 8 applied: saves %v, want one at 8", first.Pos, next)
	}
	// A newer snapshot is installed meanwhile (as from a LEADER); the save
	// of the older one then finishes and must not replace it.
	newer := &namespace.Snapshot{Pos: changelog.Pos{Version: 10, Epoch: 1}}
	m.snap = newer
	step(roles.SnapshotSaved{Pos: next[0].Pos})
	if m.SnapshotAt() != newer.Pos {
		t.Fatalf("the older save replaced the newer snapshot: at %v, want %v", m.SnapshotAt(), newer.Pos)
	}
}
