package masternode

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// backupOf asks n for a backup as mfscli does and returns the file's bytes.
func backupOf(t *testing.T, n *MasterNode, password string) ([]byte, error) {
	t.Helper()
	_, _, cl := n.Addrs()
	var buf bytes.Buffer
	size, sum, err := client.Backup(netip.MustParseAddrPort(cl.String()), password, 5*time.Second, &buf)
	if err == nil && (size != uint64(buf.Len()) || len(sum) != 32) {
		t.Fatalf("Backup said %d bytes, sha256 %x; %d were written", size, sum, buf.Len())
	}
	return buf.Bytes(), err
}

// refusedWith checks that err is a master's refusal coded code whose text
// holds want.
func refusedWith(t *testing.T, err error, code wire.Code, want string) {
	t.Helper()
	var r *client.BackupRefused
	if !errors.As(err, &r) || r.Resp.Code != code || !strings.Contains(r.Resp.Text, want) {
		t.Fatalf("got %v (%T), want a refusal coded %v saying %q", err, err, code, want)
	}
}

// TestBackup: the LEADER streams a backup that reads back as the file a
// restore takes (every check of snapshot.mfs), holding the namespace it
// committed, under its cluster id; with ADMIN_PASSWORD set, only with the
// password's proof.
func TestBackup(t *testing.T) {
	nodetest.NoLeaks(t)
	n, reg, _ := leaderWithVoter(t, "127.0.0.2", 40001, func(o *MasterOptions) { o.AdminPassword = testPassword })
	_, err := backupOf(t, n, "")
	refusedWith(t, err, wire.CodeDenied, "ADMIN_PASSWORD")

	raw, err := backupOf(t, n, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "backup")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := metadata.ReadBackup(file)
	if err != nil {
		t.Fatal(err)
	}
	// The master counts it once the last chunk is sent: mfscli may have
	// it a moment before.
	sent := func() float64 {
		return nodetest.Labelled(t, reg, "mfs_master_backups_total", map[string]string{"result": "sent"})
	}
	if !nodetest.Until(5*time.Second, func() bool { return sent() == 1 }) {
		t.Errorf("mfs_master_backups_total{result=sent} %v", sent())
	}
	if at := gauge(t, reg, "mfs_master_backup_last_success_timestamp_seconds"); time.Since(time.Unix(int64(at), 0)) > time.Minute {
		t.Errorf("mfs_master_backup_last_success_timestamp_seconds %v", at)
	}
	if size := gauge(t, reg, "mfs_master_backup_last_bytes"); size != float64(len(raw)) {
		t.Errorf("mfs_master_backup_last_bytes %v, the file is %d", size, len(raw))
	}
	// StoreWithChanges committed versions 2..10: k2..k10 (v%50).
	if b.Cluster != "C1" || b.Snap.Pos.Version < 10 || b.Snap.Data["k7"].Value != "v7" || b.Snap.Data["k10"].Value != "v10" {
		t.Fatalf("backup of cluster %q at %v: k7 = %+v, k10 = %+v", b.Cluster, b.Snap.Pos, b.Snap.Data["k7"], b.Snap.Data["k10"])
	}
}

// TestBackupRefusals: a backup is refused, with a code and words that say
// why, by a master that is not LEADER, by mfsexports.cfg when it would not
// let the asker list every key (and no ADMIN_PASSWORD stands instead), and
// when the LEADER cannot confirm its commit point in time. None leaves
// the next backup blocked.
func TestBackupRefusals(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")

	empty, _, _ := startSolo(t, t.TempDir(), self)
	_, err := backupOf(t, empty, "")
	refusedWith(t, err, wire.CodeNotLeader, "not LEADER")

	exp := filepath.Join(t.TempDir(), "mfsexports.cfg")
	if err := os.WriteFile(exp, []byte("127.0.0.1 /app rw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, _, _ := leaderWithVoter(t, "127.0.0.2", 40002, func(o *MasterOptions) { o.ExportsFile = exp })
	_, err = backupOf(t, n, "")
	refusedWith(t, err, wire.CodeDenied, "mfsexports.cfg")

	// A LEADER without a voter commits nothing, so confirms nothing.
	alone, _, reg := startSoloWith(t, nodetest.StoreWithChanges(t, self, 10), self, func(o *MasterOptions) { o.backupConfirmOverride = 300 * time.Millisecond })
	if !nodetest.Until(5*time.Second, func() bool { return status(t, alone).Role.String() == "LEADER" }) {
		t.Fatal("the master did not lead")
	}
	for range 2 { // the second finds the slot free again
		_, err = backupOf(t, alone, "")
		refusedWith(t, err, wire.CodeState, "could not confirm its commit point")
	}
	if got := nodetest.Labelled(t, reg, "mfs_master_backups_total", map[string]string{"result": "refused"}); got != 2 {
		t.Errorf("mfs_master_backups_total{result=refused} %v, want 2", got)
	}
}
