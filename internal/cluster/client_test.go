package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
)

// snapshotsEvery is a start option: every master snapshots after each
// changes applied changes (SNAPSHOT_CHANGES) and keeps at most retain
// changelog entries below its snapshot (CHANGELOG_RETAIN), so that tests
// see trimmed changelogs and snapshot transfers within seconds.
func snapshotsEvery(changes, retain int) func(*cluster.Spec) {
	return func(s *cluster.Spec) {
		s.MasterCfg["SNAPSHOT_CHANGES"] = strconv.Itoa(changes)
		s.MasterCfg["CHANGELOG_RETAIN"] = strconv.Itoa(retain)
	}
}

// newClient opens a pkg/client session with the cluster's masters, one
// attempt at a master taking at most attempt (0: the client's default),
// closed when the test ends.
func newClient(t *testing.T, c *cluster.Cluster, attempt time.Duration) *client.Client {
	t.Helper()
	cl, err := client.New(client.Config{MasterHost: c.Spec.MasterHost(), Attempt: attempt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// writeKeys makes n changes through cl: change i sets dir/kNNN, NNN being
// i mod keys, to "v<i>", except that every deleteEvery-th change (0: none)
// deletes that key instead. It returns what dir/ then holds.
func writeKeys(ctx context.Context, t *testing.T, cl *client.Client, n, keys, deleteEvery int) map[string]string {
	t.Helper()
	want := map[string]string{}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("dir/k%03d", i%keys)
		if deleteEvery > 0 && i%deleteEvery == deleteEvery-1 {
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
	return want
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
