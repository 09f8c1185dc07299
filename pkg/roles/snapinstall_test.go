package roles

import (
	"testing"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// A snapshot is installed only whole, in order, from a LEADER this master
// may follow (or, with epoch 0, as a catch-up answer to an ELECT), and
// never over a newer commit point: each guard of onSnapshotChunk, seen.
func TestSnapshotInstallGuards(t *testing.T) {
	l := testLog(t, 300, 30)
	var kv KV
	kv.applyUpTo(l, 250)
	s := snapshotOf(&kv, l)
	const size = 200
	chunks := func(epoch uint64) []SnapshotChunk {
		var cs []SnapshotChunk
		for off := uint64(0); off < s.records(); {
			c := s.chunk(1, epoch, off, size)
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
		m, _ := NewMaster(DefaultConfig(2, []wire.MasterID{1, 2}), Stored{}, 0)
		m.hard.LeaderEpoch = leaderEpoch
		return m
	}
	installed := func(m *Master) bool { return m.SnapshotAt() == s.Pos && m.Hard().Commit == s.Pos }
	feed := func(m *Master, cs []SnapshotChunk) (acks []AppendAck, ignored []string) {
		for _, c := range cs {
			for _, a := range m.Step(0, c) {
				switch a := a.(type) {
				case Send:
					if ack, ok := a.Msg.(AppendAck); ok {
						acks = append(acks, ack)
					}
				case Ignored:
					ignored = append(ignored, a.Reason)
				}
			}
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
		if installed(m) || m.SnapshotAt() != (Pos{}) {
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
		acks, _ := feed(m, []SnapshotChunk{cs[0], cs[2]})
		if len(acks) != 2 || acks[1].SnapNext != acks[0].SnapNext {
			t.Fatalf("acks %+v; want the second to ask again for offset %d", acks, acks[0].SnapNext)
		}
		// Starting again from the middle, with nothing begun: back to 0.
		m2 := follower(1)
		acks, _ = feed(m2, []SnapshotChunk{cs[1]})
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
		acks, _ := feed(m, []SnapshotChunk{cs[0], bad})
		if len(acks) != 2 || acks[1].SnapNext != acks[0].SnapNext {
			t.Fatalf("acks %+v; want the changed chunk refused", acks)
		}
	})
	t.Run("older than the commit point: not installed, acknowledged as held", func(t *testing.T) {
		m := follower(1)
		feed(m, chunks(1))
		newer := testLog(t, 300, 30)
		var kv2 KV
		kv2.applyUpTo(newer, 200)
		old := snapshotOf(&kv2, newer)
		c := old.chunk(1, 1, 0, 1<<20)
		acks, ign := feed(m, []SnapshotChunk{c})
		if m.SnapshotAt() != s.Pos || m.Hard().Commit != s.Pos {
			t.Fatalf("an older snapshot (%v) replaced the installed one (%v)", old.Pos, m.SnapshotAt())
		}
		if len(ign) == 0 || ign[0] != "snapshot-not-needed" || len(acks) != 1 || acks[0].Match != s.Pos {
			t.Fatalf("ignored %v, acks %+v; want snapshot-not-needed and an ack of %v", ign, acks, s.Pos)
		}
	})
}
