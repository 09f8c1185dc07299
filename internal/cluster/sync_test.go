package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestEmptyFollowerSyncs: a master whose data directory is wiped and which
// is started with -e is FOLLOWER (INIT), syncs from the LEADER, becomes
// eligible, and once made LEADER (USURPER) serves every acknowledged change.
func TestEmptyFollowerSyncs(t *testing.T) {
	c, lead := start(t, nil)
	cl := newClient(t, c, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := writeKeys(ctx, t, cl, 50, 50, 0)
	f := (lead + 2) % 3
	p := c.Masters[f]
	emptyAndRejoin(t, c, f, lead, nil)
	if out, err := mfscli(t, c, "-CLU/"+p.Addr.String()); err != nil {
		t.Fatalf("-CLU: %v\n%s", err, out)
	}
	next, _, err := c.WaitLeader(10*time.Second, 50*time.Millisecond, lead)
	if err != nil || next != f {
		t.Fatalf("the synced master did not become LEADER: %d %v", next, err)
	}
	for k, v := range want {
		got, found, err := cl.Get(ctx, k)
		if err != nil || !found || got != v {
			t.Fatalf("after the handover %s = %q (found %v, %v), want %q", k, got, found, err, v)
		}
	}
	if cl.Leader() != p.Addr {
		t.Fatalf("reads were served by %s, not the new LEADER %s", cl.Leader(), p.Addr)
	}
}

// emptyAndRejoin stops master f, empties its data directory (metadata and
// snapshot), starts it again (its args carry -e) and waits until it is a
// synced FOLLOWER holding what LEADER lead holds, and done (if given) says
// so too.
func emptyAndRejoin(t *testing.T, c *cluster.Cluster, f, lead int, done func(protocol.StatusResp) bool) protocol.StatusResp {
	t.Helper()
	p := c.Masters[f]
	p.Term(5 * time.Second)
	for _, name := range []string{metadata.MasterFile, metadata.SnapshotFile} {
		if err := os.Remove(filepath.Join(filepath.Dir(p.Cfg), name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	sawInit := false
	var synced protocol.StatusResp
	eventually(t, 15*time.Second, 20*time.Millisecond, "the emptied master to sync", func() error {
		st, errs := c.Statuses(time.Second)
		if errs[f] == nil {
			s := st[f]
			sawInit = sawInit || s.Sync == roles.Init
			if s.Role == roles.Follower && s.Sync == roles.Synced && s.MetaVersion == st[lead].MetaVersion &&
				s.ClusterID == st[lead].ClusterID && (done == nil || done(s)) {
				synced = s
				return nil
			}
		}
		return fmt.Errorf("%+v %v", st[f], errs[f])
	})
	t.Logf("emptied master %s synced at version %d (seen in INIT first: %v)", p.Addr, synced.MetaVersion, sawInit)
	return synced
}
