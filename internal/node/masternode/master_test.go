package masternode

import (
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// startSolo starts a single master on loopback over dir with snapshots
// every 20 changes and at most 10 entries kept below them.
func startSolo(t *testing.T, dir string, self netip.Addr) (*MasterNode, *metadata.MasterStore, *prometheus.Registry) {
	t.Helper()
	return startSoloWith(t, dir, self, nil)
}

// startSoloWith is startSolo with the options changed by mod first.
func startSoloWith(t *testing.T, dir string, self netip.Addr, mod func(*MasterOptions)) (*MasterNode, *metadata.MasterStore, *prometheus.Registry) {
	t.Helper()
	st, err := metadata.OpenMaster(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := masterhost.IDOf(self)
	core := master.DefaultConfig(id, []wire.MasterID{id})
	core.SnapshotEvery, core.LogRetain = 20, 10
	core.SelfNominateAfter = 20 * time.Millisecond
	reg := prometheus.NewRegistry()
	opt := MasterOptions{
		Core: core, Self: self, Masters: []masterhost.Master{{ID: id, Addr: netip.AddrPortFrom(self, 9419)}},
		ListenML: "127.0.0.1:0", ListenCS: "127.0.0.1:0", ListenCL: "127.0.0.1:0",
		Log: zerolog.New(zerolog.NewTestWriter(t)), Metrics: reg,
	}
	if mod != nil {
		mod(&opt)
	}
	n, err := StartMaster(opt, st)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(5 * time.Second); st.Close() })
	return n, st, reg
}

// status asks n on its client port, as mfscli does: a status built now,
// not the one /healthz keeps (rebuilt at most every 100 ms, after a batch).
func status(t *testing.T, n *MasterNode) protocol.StatusResp {
	t.Helper()
	_, _, cl := n.Addrs()
	st, err := client.Status(netip.MustParseAddrPort(cl.String()), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestMasterSavesSnapshot: a master with more committed changes than
// SnapshotEvery writes a snapshot in the background, trims its changelog
// once it is durable, and reports both in its status and metrics; after a
// restart it starts from the snapshot with the same namespace. Nothing of
// the background write outlives Stop.
func TestMasterSavesSnapshot(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")
	dir := nodetest.StoreWithChanges(t, self, 100)
	n, st, reg := startSolo(t, dir, self)
	// Trimmed to the snapshot: only what came after it (the LEADER's
	// first entry, uncommitted without chunkservers) is held.
	var got protocol.StatusResp
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got = status(t, n); got.SnapshotVersion == 100 && uint64(got.ChangelogEntries) == got.MetaVersion-100 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no snapshot at 100 with the changelog trimmed to it: %+v", got)
		}
	}
	if err := n.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if v := gauge(t, reg, "mfs_master_snapshot_version"); v != 100 {
		t.Errorf("mfs_master_snapshot_version %v", v)
	}
	if v := gauge(t, reg, "mfs_master_changelog_entries"); v != float64(got.ChangelogEntries) {
		t.Errorf("mfs_master_changelog_entries %v, status %d", v, got.ChangelogEntries)
	}
	before, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if before.Snapshot == nil || before.Snapshot.Pos.Version != 100 || before.Base.Pos.Version != 100 || len(before.Entries) > 1 {
		t.Fatalf("stored: snapshot %v, base %v, %d entries", before.Snapshot, before.Base.Pos, len(before.Entries))
	}
	if len(before.Snapshot.Data) != 50 || before.Snapshot.Data["k7"].Value != "v57" {
		t.Fatalf("the snapshot's namespace: %d keys, k7 = %+v", len(before.Snapshot.Data), before.Snapshot.Data["k7"])
	}

	n, _, _ = startSolo(t, dir, self)
	if got = status(t, n); got.SnapshotVersion != 100 || got.MetaVersion < 100 {
		t.Fatalf("after the restart: %+v", got)
	}
	if err := n.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestMasterSnapshotFailureRetried: a snapshot that cannot be written (the
// directory is gone, as with a full disk) does not end the daemon: the
// failure is logged and counted, the master goes on leading, and the write
// is tried again until it succeeds (security review L6).
func TestMasterSnapshotFailureRetried(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")
	dir := nodetest.StoreWithChanges(t, self, 30)
	n, _, reg := startSolo(t, dir, self)
	// The open bbolt file goes on working; a new file cannot be made.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); counter(t, reg, "mfs_master_snapshot_failures_total") < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no failed snapshot write counted")
		}
	}
	select {
	case <-n.Done():
		t.Fatalf("the master stopped on a failed snapshot: %v", n.Err())
	case <-time.After(200 * time.Millisecond):
	}
	if st := status(t, n); st.Role != roles.Leader || st.SnapshotVersion != 0 {
		t.Fatalf("after the failure: %v, snapshot %d", st.Role, st.SnapshotVersion)
	}
	// Space again: the next attempt succeeds and the changelog is trimmed.
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); status(t, n).SnapshotVersion != 30; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the snapshot was not written once the directory was back")
		}
	}
	if err := n.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// counter reads one unlabelled counter from reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return unlabelled(t, reg, name, true)
}

// gauge reads one unlabelled gauge from reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return unlabelled(t, reg, name, false)
}

// unlabelled is the value of the one sample of metric name in reg, a
// counter or a gauge.
func unlabelled(t *testing.T, reg *prometheus.Registry, name string, isCounter bool) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if isCounter {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestPing: the watchdog's ping is answered by a running loop, and not by
// a held one (service.Pinger).
func TestPing(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")
	n, _, _ := startSolo(t, nodetest.StoreWithChanges(t, self, 10), self)
	if err := n.Ping(2 * time.Second); err != nil {
		t.Fatalf("a running loop: %v", err)
	}
	n.Pause()
	if err := n.Ping(200 * time.Millisecond); !errors.Is(err, node.ErrPing) {
		t.Fatalf("a held loop: %v, want %v", err, node.ErrPing)
	}
	n.Resume()
	if err := n.Ping(2 * time.Second); err != nil {
		t.Fatalf("the loop let go: %v", err)
	}
}

// TestIgnoredExportedFromStart (issue 37): mfs_master_ignored_total has a
// series for every reason the machine can give, at 0, before anything was
// ignored, so that an alert on its rate sees the first rise.
func TestIgnoredExportedFromStart(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")
	_, _, reg := startSolo(t, nodetest.StoreWithChanges(t, self, 10), self)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() == "mfs_master_ignored_total" {
			for _, m := range mf.GetMetric() {
				have[m.GetLabel()[0].GetValue()] = true
			}
		}
	}
	for _, r := range master.IgnoreReasons {
		if !have[r] {
			t.Errorf("no mfs_master_ignored_total{reason=%q} at start", r)
		}
	}
}
