package cluster_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/cluster/clustertest"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestDisasterRecovery is the drill of docs/operations.md, "Disaster
// recovery", on live daemons: a backup taken with mfscli --backup from a
// running cluster; every master killed and its DATA_PATH wiped; a new
// cluster founded on the backup (mfsmaster init --from-backup), the other
// masters started empty with -e; the old chunkservers refused by it until
// each is told to join (its record moved aside); then a LEADER counting
// them all, with every change up to the backup and none after it, and new
// changes numbered after it. A client pinned to the old cluster never
// uses the new one.
func TestDisasterRecovery(t *testing.T) {
	c, _ := start(t, snapshotsEvery(40, 10))
	old := newClient(t, c, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	want := writeKeys(ctx, t, old, 150, 60, 25)
	// Large values make a backup of several chunks, more than the window
	// the LEADER may send ahead of mfscli's acknowledgements.
	big := map[string]string{}
	for i := range 24 {
		k, v := fmt.Sprintf("big/k%02d", i), strings.Repeat(string(rune('a'+i)), 200<<10)
		if _, err := old.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
		big[k] = v
	}
	oldID := old.Cluster()

	file := filepath.Join(t.TempDir(), "mfs.backup")
	version := backupStep(t, c, file)
	after, err := old.Put(ctx, "dir/after-the-backup", "lost")
	if err != nil || after <= version {
		t.Fatalf("a change after the backup: version %d (%v), want above %d", after, err, version)
	}

	newID := restoreStep(t, c, file)
	if newID == oldID {
		t.Fatalf("the restored cluster kept the old id %s", oldID)
	}
	rejoinStep(t, c)

	cl := newClient(t, c, 0)
	checkAll(ctx, t, cl, want)
	for k, v := range big {
		if got, found, err := cl.Get(ctx, k); err != nil || !found || got != v {
			t.Fatalf("%s: %d bytes (found %v, %v), want %d", k, len(got), found, err, len(v))
		}
	}
	if _, found, err := cl.Get(ctx, "dir/after-the-backup"); err != nil || found {
		t.Fatalf("the change made after the backup: found %v (%v); a restore holds what the backup held, no more", found, err)
	}
	if cl.Cluster() != newID {
		t.Fatalf("the client is pinned to %q, want the new cluster %q", cl.Cluster(), newID)
	}
	v, err := cl.Put(ctx, "dir/after-the-restore", "kept")
	if err != nil || v <= version {
		t.Fatalf("a change after the restore: version %d (%v), want above the backup's %d", v, err, version)
	}

	// The client pinned to the old cluster refuses every master now.
	short, stop := context.WithTimeout(ctx, 3*time.Second)
	defer stop()
	if _, _, err := old.Get(short, "dir/after-the-restore"); err == nil {
		t.Fatal("a client pinned to the old cluster read from the new one")
	}
}

// backupStep takes the backup with mfscli and checks what it wrote: the
// file (which a restore reads), its .sha256 and the summary line. It
// returns the backup's version.
func backupStep(t *testing.T, c *cluster.Cluster, file string) uint64 {
	t.Helper()
	out, err := mfscli(t, c, "--backup", file)
	if err != nil {
		t.Fatalf("mfscli --backup: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	b, err := metadata.ReadBackup(file)
	if err != nil {
		t.Fatal(err)
	}
	if b.Bytes <= protocol.BackupWindow {
		t.Fatalf("the backup is %d bytes: no more than the window, so the window was never waited for", b.Bytes)
	}
	if !strings.Contains(out, fmt.Sprintf("at version %d", b.Snap.Pos.Version)) || !strings.Contains(out, "written to "+file) {
		t.Fatalf("the summary does not name the version %d and the file:\n%s", b.Snap.Pos.Version, out)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	line, err := os.ReadFile(file + ".sha256")
	if want := fmt.Sprintf("%x  %s\n", sha256.Sum256(raw), filepath.Base(file)); err != nil || string(line) != want {
		t.Fatalf("%s.sha256 holds %q (%v), want %q", file, line, err, want)
	}
	if out, err := mfscli(t, c, "--backup", file); err == nil || !strings.Contains(out, "exists") {
		t.Fatalf("a second backup to the same file was not refused: %v\n%s", err, out)
	}
	return b.Snap.Pos.Version
}

// restoreStep loses every master with its disk and founds the new cluster
// on the backup at the first master's address. Started while one master
// of the old cluster still runs (the runbook's step 1 skipped), the
// founder must not lead: it says why. Once that one is gone too, the
// founder is restarted and the others started empty, with -e. The old
// chunkservers, still running, must not join: the founder leads alone,
// bootstrapping, with no chunkserver. It returns the new cluster id.
func restoreStep(t *testing.T, c *cluster.Cluster, file string) string {
	t.Helper()
	wipe := func(p *cluster.Proc) {
		p.Kill()
		for _, name := range []string{metadata.MasterFile, metadata.SnapshotFile} {
			if err := os.Remove(filepath.Join(filepath.Dir(p.Cfg), name)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	last := len(c.Masters) - 1
	for _, p := range c.Masters[:last] {
		wipe(p)
	}
	founder := c.Masters[0]
	mfsmaster := func(args ...string) ([]byte, error) {
		return exec.Command(filepath.Join(bin, "mfsmaster"), append([]string{"-c", founder.Cfg}, args...)...).CombinedOutput()
	}
	// A damaged backup is refused by name, and nothing is written.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cut := file + ".cut"
	if err := os.WriteFile(cut, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := mfsmaster("--from-backup", cut, "init"); err == nil || !strings.Contains(string(out), "backup file "+cut+" is unusable") {
		t.Fatalf("a truncated backup: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(founder.Cfg), metadata.SnapshotFile)); !os.IsNotExist(err) {
		t.Fatalf("a refused restore left a snapshot file: %v", err)
	}
	if out, err := mfsmaster("--from-backup", file, "start"); err == nil || !strings.Contains(string(out), "--from-backup goes with init") {
		t.Fatalf("--from-backup with start: %v\n%s", err, out)
	}
	out, err := mfsmaster("--from-backup", file, "init")
	if err != nil {
		t.Fatalf("mfsmaster --from-backup init: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	m := regexp.MustCompile(`new metadata ([0-9A-F]+) in `).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no new metadata id in:\n%s", out)
	}
	again, err := mfsmaster("--from-backup", file, "init")
	if err == nil || !strings.Contains(string(again), "refusing") {
		t.Fatalf("a second restore into the same DATA_PATH was not refused: %v\n%s", err, again)
	}

	// The old cluster's last master still runs: the founder stays out.
	if err := founder.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, 100*time.Millisecond, "the founder to see the old cluster's master", func() error {
		st, errs := c.Statuses(time.Second)
		if errs[0] != nil || !strings.Contains(st[0].NotEligible, "another cluster") {
			return fmt.Errorf("%+v %v", st[0], errs[0])
		}
		return nil
	})
	if err := throughout(2*time.Second, 100*time.Millisecond, func() error {
		if st, errs := c.Statuses(time.Second); errs[0] == nil && st[0].Role == roles.Leader {
			return fmt.Errorf("the founder leads beside a master of the old cluster: %+v", st[0])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustLog(t, founder.Log, "if it was founded on a backup to replace that cluster, that cluster's masters must be gone first")

	wipe(c.Masters[last])
	founder.Term(5 * time.Second)
	for _, p := range c.Masters {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	id := string(m[1])
	eventually(t, 30*time.Second, 100*time.Millisecond, "the restored founder to lead alone", func() error {
		i, st, err := c.WaitLeader(time.Second, 100*time.Millisecond)
		switch {
		case err != nil:
			return err
		case i != 0 || st.ClusterID != id:
			return fmt.Errorf("LEADER %s of cluster %s", st.Addr, st.ClusterID)
		}
		return nil
	})
	// The old chunkservers keep trying: they must stay out.
	time.Sleep(2 * time.Second)
	if st, errs := c.Statuses(time.Second); errs[0] != nil || st[0].Registered != 0 {
		t.Fatalf("chunkservers of the old cluster registered with the new one: %+v %v", st[0], errs[0])
	}
	// Each says why and what to do, once per master (not at every redial).
	for _, p := range c.CS {
		raw, _ := os.ReadFile(p.Log)
		n := strings.Count(string(raw), "master of another cluster refused: if that cluster was founded on a backup")
		if n == 0 || n > len(c.Masters) {
			t.Fatalf("%s logged the refusal of the new cluster's masters %d times, want 1 to %d", p.Name, n, len(c.Masters))
		}
	}
	return id
}

// rejoinStep tells each chunkserver to join the new cluster, as the
// runbook does: stop it, move its voter record aside, start it.
func rejoinStep(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	for _, p := range c.CS {
		p.Term(5 * time.Second)
		rec := filepath.Join(filepath.Dir(p.Cfg), metadata.ChunkserverFile)
		if err := os.Rename(rec, rec+".old-cluster"); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	clustertest.WaitAllCounted(t, c, 40*time.Second)
}
