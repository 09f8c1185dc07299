package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
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
	c, lead := start(t, func(s *cluster.Spec) {
		s.MasterCfg["SNAPSHOT_CHANGES"] = "20"
		s.MasterCfg["CHANGELOG_RETAIN"] = "10"
	})
	cl, err := client.New(client.Config{MasterHost: c.Spec.MasterHost()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	want := map[string]string{}
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("dir/k%03d", i%150) // 50 keys written twice
		if i%40 == 39 {
			if _, err := cl.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
			delete(want, k)
			continue
		}
		v := fmt.Sprintf("v%d", i)
		if _, err := cl.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}

	// Every master saves snapshots; the LEADER trims to a few entries.
	var st []protocol.StatusResp
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var errs []error
		st, errs = c.Statuses(time.Second)
		l := st[lead]
		if errs[lead] == nil && l.SnapshotVersion > 150 && l.ChangelogEntries < 50 && l.MetaVersion > 200 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the LEADER did not snapshot and trim: %+v %v", l, errs[lead])
		}
	}
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
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, errs := c.Statuses(time.Second)
		if errs[i] == nil && errs[l] == nil && st[i].Role == roles.Follower && st[i].Sync == roles.Synced &&
			st[i].MetaVersion == st[l].MetaVersion && st[i].SnapshotVersion > 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("master %s not in sync with the LEADER: %+v %v", c.Masters[i].Addr, st[i], errs[i])
		}
	}
}

// checkAll reads every key through the client (at the LEADER).
func checkAll(ctx context.Context, t *testing.T, cl *client.Client, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, found, err := cl.Get(ctx, k)
		if err != nil || !found || got != v {
			t.Fatalf("%s = %q (found %v, %v), want %q", k, got, found, err, v)
		}
	}
	es, _, err := cl.List(ctx, "dir/")
	if err != nil || len(es) != len(want) {
		t.Fatalf("listing dir/: %d keys (%v), want %d", len(es), err, len(want))
	}
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
		case roles.EntryPut:
			ns[e.Key] = e.Value
		case roles.EntryDelete:
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
