// Package rolestest holds what tests of the role machines' surroundings
// share: the conformance suite every roles.Store implementation must pass.
package rolestest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// Opener makes the stores TestStore tries.
type Opener struct {
	// New returns a store that holds genesis as its whole log (what
	// `mfsmaster init` leaves) and nothing else.
	New func(t *testing.T, genesis []changelog.Entry) roles.Store
	// Reopen is a restart after a crash: the process that had s open is
	// gone (whatever it had not made durable with it), and the same disk
	// is opened again.
	Reopen func(t *testing.T, s roles.Store) roles.Store
}

// TestStore holds a Store implementation to the contract of roles.Store:
// a master's whole life on disk (appends, a new LEADER's overwrite, a
// trim under a snapshot, a received snapshot's install, refused batches),
// each step checked through Load, then again after a crash and reopen,
// against what the step must have left, written out here by hand.
func TestStore(t *testing.T, o Opener) {
	genesis := changelog.Genesis(1)
	reg := &registry.ClusterConfig{Version: 2, Founder: 1, Locations: locations.New(),
		Members: []registry.Chunkserver{{ID: 1}, {ID: 2}, {ID: 3}}}
	c := &conformance{t: t, o: o, s: o.New(t, genesis)}
	c.want.Entries = genesis
	c.check("a new store")

	// Appends, each with a hard state: the newest hard state of a batch wins.
	c.apply(persist{Append: []changelog.Entry{{Pos: changelog.Pos{Version: 2}, Kind: changelog.EntryConfig, Config: reg}}},
		persist{Append: puts(3, 10, 2), Hard: hard(2, 5)}, persist{Hard: hard(2, 8)})
	c.want.Entries = append(c.want.Entries, changelog.Entry{Pos: changelog.Pos{Version: 2}, Kind: changelog.EntryConfig, Config: reg})
	c.want.Entries = append(c.want.Entries, puts(3, 10, 2)...)
	c.want.Hard = *hard(2, 8)
	c.check("appends")

	// A new LEADER's overwrite of what was never committed: truncate, then
	// append in the same Persist.
	cut := uint64(8)
	c.apply(persist{TruncateAfter: &cut, Append: puts(9, 11, 3)})
	c.want.Entries = append(c.want.Entries[:8], puts(9, 11, 3)...)
	c.check("truncate and append")

	// A trim under a snapshot of its own, snapshot first (the log's base
	// must never be above the stored snapshot).
	s6 := snapshot(changelog.Pos{Version: 6, Epoch: 2}, reg, 3)
	b6 := changelog.LogBase{Pos: s6.Pos, Latest: reg, Previous: genesis[0].Config}
	c.apply(persist{Snapshot: s6}, persist{Trim: &b6, Hard: hard(3, 9)})
	c.want.Snapshot, c.want.Base, c.want.Entries = s6, b6, c.want.Entries[6:]
	c.want.Hard = *hard(3, 9)
	c.check("a trim under a snapshot")

	// An install of a received snapshot beyond the whole log: snapshot,
	// trim to it and drop everything after, in one Persist.
	s15 := snapshot(changelog.Pos{Version: 15, Epoch: 4}, reg, 5)
	b15 := changelog.LogBase{Pos: s15.Pos, Latest: reg, Previous: genesis[0].Config}
	v15 := uint64(15)
	c.apply(persist{Snapshot: s15, Trim: &b15, TruncateAfter: &v15}, persist{Hard: hard(4, 15)})
	c.want.Snapshot, c.want.Base, c.want.Entries, c.want.Hard = s15, b15, nil, *hard(4, 15)
	c.check("a snapshot installed beyond the log")

	c.apply(persist{Append: puts(16, 18, 4)})
	c.want.Entries = puts(16, 18, 4)
	c.check("appends after the install")

	// An older snapshot never replaces a newer one.
	c.apply(persist{Snapshot: snapshot(changelog.Pos{Version: 10, Epoch: 3}, reg, 1)})
	c.check("an older snapshot")

	// Refusals: nothing of the batch is kept, not even its good part.
	v12, v17 := uint64(12), uint64(17)
	b12 := changelog.LogBase{Pos: changelog.Pos{Version: 12, Epoch: 4}, Latest: reg}
	// 17@5 while 17@4 and 18@4 are held: kept alone, 18@4 would follow a
	// base it does not continue.
	b17 := changelog.LogBase{Pos: changelog.Pos{Version: 17, Epoch: 5}, Latest: reg}
	for _, bad := range []struct {
		name string
		ps   []persist
	}{
		{"an append with a gap", []persist{{Append: puts(20, 20, 4)}}},
		{"an append whose epoch falls", []persist{{Append: puts(19, 19, 3)}}},
		{"an append of a version held", []persist{{Append: puts(18, 18, 4)}}},
		{"a cut below the base", []persist{{TruncateAfter: &v12}}},
		{"a trim below the base", []persist{{Trim: &b12}}},
		{"a trim to another entry that keeps entries after it", []persist{{Trim: &b17}}},
		{"a good Persist, then a bad one", []persist{{Append: puts(19, 19, 4), Hard: hard(5, 19)}, {Append: puts(21, 21, 5)}}},
		{"a rewrite, then a bad one", []persist{{TruncateAfter: &v17, Append: puts(18, 18, 5)}, {Append: puts(21, 21, 5)}}},
	} {
		c.refused(bad.name, bad.ps...)
	}

	// A trim to a position held with another epoch is fine when the same
	// Persist drops what follows (a received snapshot's install).
	s17 := snapshot(changelog.Pos{Version: 17, Epoch: 5}, reg, 2)
	c.apply(persist{Snapshot: s17, Trim: &b17, TruncateAfter: &v17})
	c.want.Snapshot, c.want.Base, c.want.Entries = s17, b17, nil
	c.check("an install over a divergent entry")
}

type persist = roles.Persist

type conformance struct {
	t    *testing.T
	o    Opener
	s    roles.Store
	want roles.Stored
	step int
}

func (c *conformance) apply(ps ...persist) {
	c.t.Helper()
	if err := c.s.Apply(ps...); err != nil {
		c.t.Fatalf("step %d: Apply: %v", c.step+1, err)
	}
}

// refused applies a batch the contract refuses, and checks that nothing
// of it was kept.
func (c *conformance) refused(what string, ps ...persist) {
	c.t.Helper()
	if err := c.s.Apply(ps...); err == nil {
		c.t.Fatalf("%s: Apply accepted it", what)
	}
	c.check(what + ", refused")
}

// check compares Load with what the steps so far must have left, then
// crashes, reopens and compares again.
func (c *conformance) check(what string) {
	c.t.Helper()
	c.step++
	for _, when := range []string{"", " after a crash and reopen"} {
		if when != "" {
			c.s = c.o.Reopen(c.t, c.s)
		}
		got, err := c.s.Load()
		if err != nil {
			c.t.Fatalf("step %d (%s)%s: Load: %v", c.step, what, when, err)
		}
		if d := diff(got, c.want); d != "" {
			c.t.Fatalf("step %d (%s)%s: the store holds %s", c.step, what, when, d)
		}
	}
}

// diff says how got differs from want, "" if it does not: entries by
// position, kind and content, the snapshot by position and records.
func diff(got, want roles.Stored) string {
	var d []string
	if !reflect.DeepEqual(got.Hard, want.Hard) {
		d = append(d, fmt.Sprintf("hard state %+v, want %+v", got.Hard, want.Hard))
	}
	if got.Base.Pos != want.Base.Pos || cfgVersion(got.Base.Latest) != cfgVersion(want.Base.Latest) ||
		cfgVersion(got.Base.Previous) != cfgVersion(want.Base.Previous) {
		d = append(d, fmt.Sprintf("base %v (configs %d, %d), want %v (%d, %d)", got.Base.Pos, cfgVersion(got.Base.Latest),
			cfgVersion(got.Base.Previous), want.Base.Pos, cfgVersion(want.Base.Latest), cfgVersion(want.Base.Previous)))
	}
	if g, w := entriesText(got.Entries), entriesText(want.Entries); g != w {
		d = append(d, fmt.Sprintf("entries [%s], want [%s]", g, w))
	}
	switch gs, ws := got.Snapshot, want.Snapshot; {
	case gs == nil && ws == nil:
	case gs == nil || ws == nil:
		d = append(d, fmt.Sprintf("snapshot %v, want %v", snapPos(gs), snapPos(ws)))
	case gs.Pos != ws.Pos || !reflect.DeepEqual(gs.Data, ws.Data) || cfgVersion(gs.Latest) != cfgVersion(ws.Latest):
		d = append(d, fmt.Sprintf("snapshot at %v with %d items, want %v with %d", gs.Pos, len(gs.Data), ws.Pos, len(ws.Data)))
	}
	return strings.Join(d, "; ")
}

func cfgVersion(c *registry.ClusterConfig) uint64 {
	if c == nil {
		return 0
	}
	return c.Version
}

func snapPos(s *namespace.Snapshot) string {
	if s == nil {
		return "none"
	}
	return s.Pos.String()
}

func entriesText(es []changelog.Entry) string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%v:%d", e.Pos, e.Kind)
		if e.Config != nil {
			fmt.Fprintf(&b, ":config-v%d/%d", e.Config.Version, len(e.Config.Members))
		}
		if e.Key != "" {
			fmt.Fprintf(&b, ":%s=%s", e.Key, e.Value)
		}
	}
	return b.String()
}

// puts are changes from..to of one epoch.
func puts(from, to, epoch uint64) []changelog.Entry {
	var es []changelog.Entry
	for v := from; v <= to; v++ {
		es = append(es, changelog.Entry{Pos: changelog.Pos{Version: v, Epoch: epoch}, Kind: changelog.EntryPut,
			Client: 1, Seq: v, Key: fmt.Sprintf("k%d", v), Value: fmt.Sprintf("v%d@%d", v, epoch)})
	}
	return es
}

func hard(epoch, commit uint64) *roles.HardState {
	return &roles.HardState{Incarnation: 1, Epoch: epoch, MaxEpoch: epoch, LeaderEpoch: epoch,
		Commit: changelog.Pos{Version: commit, Epoch: epoch}, InForce: 2}
}

func snapshot(at changelog.Pos, cfg *registry.ClusterConfig, items int) *namespace.Snapshot {
	s := &namespace.Snapshot{Pos: at, Latest: cfg, Data: map[string]namespace.Item{}, Sessions: map[changelog.ClientID]namespace.Session{}}
	for i := range items {
		s.Data[fmt.Sprintf("k%d", i)] = namespace.Item{Value: fmt.Sprintf("at %v", at), Version: uint64(i) + 1}
	}
	return s
}
