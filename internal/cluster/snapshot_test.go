package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestSnapshotSync: with a snapshot every 20 changes and at most 10
// entries kept below it, the LEADER trims its changelog; a follower whose
// data directory is wiped and which is started with -e syncs through the
// LEADER's snapshot (INIT -> synced), becomes eligible and, once made
// LEADER, serves every acknowledged change; a master killed with -9 comes
// back from its snapshot and entries with the same namespace.
func TestSnapshotSync(t *testing.T) {
	c, lead := start(t, snapshotsEvery(20, 10))
	cl := newClient(t, c, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	want := writeKeys(ctx, t, cl, 200, 150, 40) // 50 keys written twice, every 40th change a delete

	// Every master saves snapshots; the LEADER trims to a few entries.
	var st []protocol.StatusResp
	eventually(t, 10*time.Second, 50*time.Millisecond, "the LEADER to snapshot and trim", func() error {
		var errs []error
		st, errs = c.Statuses(time.Second)
		l := st[lead]
		if errs[lead] == nil && l.SnapshotVersion > 150 && l.ChangelogEntries < 50 && l.MetaVersion > 200 {
			return nil
		}
		return fmt.Errorf("%+v %v", l, errs[lead])
	})
	t.Logf("LEADER %s: version %d, snapshot %d, %d entries held", st[lead].Addr, st[lead].MetaVersion,
		st[lead].SnapshotVersion, st[lead].ChangelogEntries)

	// A follower emptied and restarted with -e gets the snapshot. It was
	// restarted once before: its new incarnation must still be above the
	// one its peers and voters last saw, or they would ignore it.
	f := (lead + 1) % 3
	p := c.Masters[f]
	p.Term(5 * time.Second)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, c, f, lead)
	synced := emptyAndRejoin(t, c, f, lead, func(st protocol.StatusResp) bool { return st.SnapshotVersion > 0 })
	t.Logf("snapshot %d, %d entries held", synced.SnapshotVersion, synced.ChangelogEntries)
	mustLog(t, p.Log, `"message":"snapshot installed"`)

	// Made LEADER (USURPER), it serves every acknowledged change.
	if out, err := mfscli(t, c, "-CLU/"+p.Addr.String()); err != nil {
		t.Fatalf("-CLU: %v\n%s", err, out)
	}
	if next, _, err := c.WaitLeader(10*time.Second, 50*time.Millisecond, lead); err != nil || next != f {
		t.Fatalf("the synced master did not become LEADER: %d %v", next, err)
	}
	checkAll(ctx, t, cl, want)
	if cl.Leader() != p.Addr {
		t.Fatalf("reads were served by %s, not the new LEADER %s", cl.Leader(), p.Addr)
	}

	// The old LEADER, now a FOLLOWER holding a snapshot and a trimmed
	// changelog, is killed once in sync; it comes back from them.
	old := c.Masters[lead]
	waitSynced(t, c, lead, f)
	old.Kill()
	stored := loadNamespace(t, filepath.Dir(old.Cfg))
	for k, v := range want {
		if stored[k] != v {
			t.Fatalf("the killed master's disk has %s = %q, want %q", k, stored[k], v)
		}
	}
	if len(stored) != len(want) {
		t.Fatalf("the killed master's disk has %d keys, want %d", len(stored), len(want))
	}
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, c, lead, f)
	if out, err := mfscli(t, c, "-CLU/"+old.Addr.String()); err != nil {
		t.Fatalf("-CLU: %v\n%s", err, out)
	}
	if next, _, err := c.WaitLeader(10*time.Second, 50*time.Millisecond, f); err != nil || next != lead {
		t.Fatalf("the restarted master did not become LEADER: %d %v", next, err)
	}
	checkAll(ctx, t, cl, want)
}

// waitSynced waits until master i is a synced FOLLOWER at the version of
// the LEADER l, with a snapshot.
func waitSynced(t *testing.T, c *cluster.Cluster, i, l int) {
	t.Helper()
	eventually(t, 10*time.Second, 20*time.Millisecond, fmt.Sprintf("master %s in sync with the LEADER", c.Masters[i].Addr), func() error {
		st, errs := c.Statuses(time.Second)
		if errs[i] == nil && errs[l] == nil && st[i].Role == roles.Follower && st[i].Sync == roles.Synced &&
			st[i].MetaVersion == st[l].MetaVersion && st[i].SnapshotVersion > 0 {
			return nil
		}
		return fmt.Errorf("%+v %v", st[i], errs[i])
	})
}

// loadNamespace opens a stopped master's store and returns the "dir/" keys
// its snapshot and changelog make together.
func loadNamespace(t *testing.T, dir string) map[string]string {
	t.Helper()
	s, err := metadata.OpenMaster(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if st.Snapshot == nil || st.Base.Pos.Version == 0 {
		t.Fatalf("the killed master holds no snapshot or an untrimmed log (base %v)", st.Base.Pos)
	}
	t.Logf("killed master's disk: snapshot at %v, log base %v, %d entries after it", st.Snapshot.Pos, st.Base.Pos, len(st.Entries))
	ns := map[string]string{}
	for k, it := range st.Snapshot.Data {
		ns[k] = it.Value
	}
	for _, e := range st.Entries {
		if e.Version <= st.Snapshot.Pos.Version {
			continue
		}
		switch e.Kind {
		case changelog.EntryPut:
			ns[e.Key] = e.Value
		case changelog.EntryDelete:
			delete(ns, e.Key)
		}
	}
	for k := range ns {
		if !strings.HasPrefix(k, "dir/") {
			delete(ns, k)
		}
	}
	return ns
}
