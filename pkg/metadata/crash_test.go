package metadata

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// coreConfig is a config for the real core over a store of initStore
// (genesis founder 7).
func coreConfig() master.Config { return master.DefaultConfig(7, []wire.MasterID{7, 8, 9}) }

// startCore is a master's start: Load, master.New, and the Persists of its
// first batch applied in one Apply, as the driver does.
func startCore(t *testing.T, s *MasterStore) (*master.Master, []roles.Persist) {
	t.Helper()
	st, err := s.Load()
	must(t, err)
	m, b := master.New(coreConfig(), st, 0)
	must(t, s.Apply(b.Persist...))
	return m, b.Persist
}

// repairs reports whether ps trims or truncates the log.
func repairs(ps []roles.Persist) bool {
	for _, p := range ps {
		if p.Trim != nil || p.TruncateAfter != nil {
			return true
		}
	}
	return false
}

// installCase is a store's state when a snapshot at 15@4 is installed.
type installCase struct {
	name string
	// prepare fills the store of cluster c1 (genesis founder 7); the hard
	// state's commit is 10@2 or below.
	prepare func(t *testing.T, s *MasterStore)
	// continues: the stored log holds 15@4, so the install only trims.
	continues bool
}

func entries(from, to, epoch uint64) []changelog.Entry {
	var es []changelog.Entry
	for v := from; v <= to; v++ {
		es = append(es, entry(v, epoch, fmt.Sprint("k", v)))
	}
	return es
}

var installCases = []installCase{
	{name: "log ends below the snapshot", prepare: func(t *testing.T, s *MasterStore) {
		must(t, s.Init("c1", changelog.Genesis(7)))
		hard := roles.HardState{Epoch: 2, MaxEpoch: 2, LeaderEpoch: 2, Commit: changelog.Pos{Version: 10, Epoch: 2}}
		must(t, s.Apply(roles.Persist{Hard: &hard, Append: entries(2, 10, 2)}))
	}},
	{name: "log runs past the snapshot at an older epoch", prepare: func(t *testing.T, s *MasterStore) {
		must(t, s.Init("c1", changelog.Genesis(7)))
		hard := roles.HardState{Epoch: 2, MaxEpoch: 2, LeaderEpoch: 2, Commit: changelog.Pos{Version: 10, Epoch: 2}}
		must(t, s.Apply(roles.Persist{Hard: &hard, Append: entries(2, 20, 2)}))
	}},
	{name: "log holds the snapshot's position", continues: true, prepare: func(t *testing.T, s *MasterStore) {
		must(t, s.Init("c1", changelog.Genesis(7)))
		hard := roles.HardState{Epoch: 4, MaxEpoch: 4, LeaderEpoch: 4, Commit: changelog.Pos{Version: 10, Epoch: 2}}
		must(t, s.Apply(roles.Persist{Hard: &hard, Append: append(entries(2, 12, 2), entries(13, 20, 4)...)}))
	}},
	{name: "log trimmed to an older snapshot", prepare: func(t *testing.T, s *MasterStore) {
		must(t, s.Init("c1", changelog.Genesis(7)))
		hard := roles.HardState{Epoch: 2, MaxEpoch: 2, LeaderEpoch: 2, Commit: changelog.Pos{Version: 10, Epoch: 2}}
		must(t, s.Apply(roles.Persist{Hard: &hard, Append: entries(2, 10, 2)}))
		old := snapshotAt(t, 5, 2, 3, 1)
		b := changelog.LogBase{Pos: old.Pos, Latest: old.Latest, Previous: old.Previous}
		must(t, s.Apply(roles.Persist{Snapshot: old, Trim: &b}))
	}},
	{name: "empty store of a master started with -e", prepare: func(t *testing.T, s *MasterStore) {
		must(t, s.AdoptCluster("c1"))
	}},
}

// TestCrashDuringInstall (issue 10, M5): a snapshot install stopped after
// each of its steps, as a kill -9 there would, then a restart: the store
// loads, the core's first Persists bring the log in line with the snapshot
// (trimmed to it, what follows dropped), the next entry after the newest
// held position appends, and a second restart loads the same consistent
// log with nothing left to repair.
func TestCrashDuringInstall(t *testing.T) {
	t.Cleanup(func() { crashAfter = nil })
	snapPos := changelog.Pos{Version: 15, Epoch: 4}
	for _, c := range installCases {
		for step := stepTempWritten; step <= stepCommitted; step++ {
			t.Run(fmt.Sprintf("%s/crash after %v", c.name, step), func(t *testing.T) {
				dir := t.TempDir()
				s := openMaster(t, dir)
				c.prepare(t, s)
				before, err := s.Load()
				must(t, err)

				// The install as the core asks for it (roles: install).
				snap := snapshotAt(t, snapPos.Version, snapPos.Epoch, 20, 3)
				b := changelog.LogBase{Pos: snap.Pos, Latest: snap.Latest, Previous: snap.Previous}
				p := roles.Persist{Snapshot: snap, Trim: &b}
				if !c.continues {
					v := snap.Pos.Version
					p.TruncateAfter = &v
				}
				hard := before.Hard
				hard.Commit = snap.Pos
				crashAfter = func(w writeStep) bool { return w == step }
				if err := s.Apply(p, roles.Persist{Hard: &hard}); !errors.Is(err, errCrashed) {
					t.Fatalf("the install was not stopped after %v: %v", step, err)
				}
				crashAfter = nil
				must(t, s.Close())

				// Restart.
				s = openMaster(t, dir)
				m, first := startCore(t, s)
				st, err := s.Load()
				must(t, err)
				survived := st.Snapshot != nil && st.Snapshot.Pos == snapPos
				if survived != (step >= stepRenamed) {
					t.Fatalf("after a crash after %v the snapshot is %v", step, st.Snapshot)
				}
				if repairs(first) != (step < stepCommitted && survived && !c.continues) {
					t.Fatalf("the core's first Persists %+v: a repair where none was due, or none where one was", first)
				}
				last := m.Log().Last()
				if survived && !c.continues && last != snapPos {
					t.Fatalf("the core's log ends at %v, want the snapshot's %v", last, snapPos)
				}
				next := entry(last.Version+1, max(last.Epoch, 4), "next")
				must(t, s.Apply(roles.Persist{Append: []changelog.Entry{next}}))
				must(t, s.Close())

				// A second restart: the same log, nothing to repair.
				s = openMaster(t, dir)
				defer s.Close()
				st, err = s.Load()
				must(t, err)
				if n := len(st.Entries); n == 0 || !reflect.DeepEqual(st.Entries[n-1], next) {
					t.Fatalf("after the restart the log (base %v) ends with %v, want %v", st.Base.Pos, st.Entries, next)
				}
				if _, again := startCore(t, s); repairs(again) {
					t.Fatalf("a second restart repairs again: %+v", again)
				}
			})
		}
	}
}

// TestSnapshotWithoutTrim (the review's T1): a durable snapshot at 15@4
// beside a stored log that does not continue it (2..10 at epoch 2, or
// 2..20 at epoch 2) is what a crash between an install's rename and its
// commit leaves. After a restart the core's first Persists repair the
// store, and the Append of 16@4 a LEADER then sends is stored.
func TestSnapshotWithoutTrim(t *testing.T) {
	for _, last := range []uint64{10, 20} {
		t.Run(fmt.Sprintf("log 2..%d@2", last), func(t *testing.T) {
			s, dir := initStore(t)
			hard := roles.HardState{Epoch: 2, MaxEpoch: 2, LeaderEpoch: 2, Commit: changelog.Pos{Version: 10, Epoch: 2}}
			must(t, s.Apply(roles.Persist{Hard: &hard, Append: entries(2, last, 2)}))
			_, err := s.SaveSnapshot(t.Context(), snapshotAt(t, 15, 4, 6, 2))
			must(t, err)
			must(t, s.Close())

			s = openMaster(t, dir)
			defer s.Close()
			m, _ := startCore(t, s)
			next := changelog.Entry{Pos: changelog.Pos{Version: 16, Epoch: 4}, Kind: changelog.EntryPut, Client: 3, Seq: 1, Key: "k", Value: "v"}
			out := m.Step(1, roles.Append{From: 8, Epoch: 4, Prev: changelog.Pos{Version: 15, Epoch: 4},
				Entries: []changelog.Entry{next}, Commit: changelog.Pos{Version: 15, Epoch: 4}})
			ps := out.Persist
			appended := false
			for _, p := range ps {
				appended = appended || len(p.Append) > 0
			}
			if !appended {
				t.Fatalf("the core did not append 16@4: %+v", out)
			}
			must(t, s.Apply(ps...))
			st, err := s.Load()
			must(t, err)
			if st.Base.Pos != (changelog.Pos{Version: 15, Epoch: 4}) || len(st.Entries) != 1 || st.Entries[0].Pos != next.Pos {
				t.Fatalf("stored: base %v, entries %v", st.Base.Pos, st.Entries)
			}
		})
	}
}

// TestRepairPersist: the Persist master.New starts with when the
// stored log does not continue the stored snapshot (Trim to the snapshot's
// base and TruncateAfter its version, with the hard state in the same
// batch) is applied whatever the log holds: a base above its last entry, a
// cut above what is stored, an entry at the snapshot's version with
// another epoch, with or without entries after it.
func TestRepairPersist(t *testing.T) {
	snap := changelog.Pos{Version: 15, Epoch: 4}
	for _, c := range []struct {
		name string
		es   []changelog.Entry
		base uint64 // trimmed to an older snapshot at base@2 first
	}{
		{"log ends below", entries(2, 10, 2), 0},
		{"log ends at the version with another epoch", entries(2, 15, 2), 0},
		{"log runs past at another epoch", entries(2, 20, 2), 0},
		{"log runs past at mixed epochs", append(entries(2, 14, 2), entries(15, 20, 3)...), 0},
		{"trimmed log ends below", entries(2, 10, 2), 5},
		{"trimmed log runs past", entries(2, 20, 2), 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, dir := initStore(t)
			must(t, s.Apply(roles.Persist{Append: c.es}))
			if c.base > 0 {
				old := snapshotAt(t, c.base, 2, 2, 1)
				b := changelog.LogBase{Pos: old.Pos, Latest: old.Latest, Previous: old.Previous}
				must(t, s.Apply(roles.Persist{Snapshot: old, Trim: &b}))
			}
			ss := snapshotAt(t, snap.Version, snap.Epoch, 2, 1)
			_, err := s.SaveSnapshot(t.Context(), ss)
			must(t, err)
			b := changelog.LogBase{Pos: snap, Latest: ss.Latest, Previous: ss.Previous}
			v := snap.Version
			hard := roles.HardState{Incarnation: 2, Commit: snap}
			must(t, s.Apply(roles.Persist{Trim: &b, TruncateAfter: &v}, roles.Persist{Hard: &hard}))
			must(t, s.Apply(roles.Persist{Append: entries(16, 17, 4)}))
			must(t, s.Close())
			s = openMaster(t, dir)
			defer s.Close()
			st, err := s.Load()
			must(t, err)
			if st.Base.Pos != snap || len(st.Entries) != 2 || st.Entries[0].Version != 16 || !reflect.DeepEqual(st.Hard, hard) {
				t.Fatalf("after the repair and an append: base %v, entries %v, hard %+v", st.Base.Pos, st.Entries, st.Hard)
			}
		})
	}
}
