package cluster_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDaemonHabits: the MooseFS daemon actions on a real mfsmaster: no start
// without metadata, init once, start in the background, test, a second
// instance refused by the lock, reload, stop; a bad config value named with
// its line.
func TestDaemonHabits(t *testing.T) {
	dir := t.TempDir()
	a := fmt.Sprintf("127.%d.0.11", base())
	cfg := filepath.Join(dir, "mfsmaster.cfg")
	write := func(extra string) {
		body := fmt.Sprintf("DATA_PATH = %s\nMASTER_HOST = %s\nMATOML_LISTEN_HOST = %s\nMATOCS_LISTEN_HOST = %s\nMATOCL_LISTEN_HOST = %s\nHTTP_LISTEN_HOST = %s\n%s",
			filepath.Join(dir, "data"), a, a, a, a, a, extra)
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "mfsmaster"), append([]string{"-c", cfg}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	expect := func(ok bool, want string, args ...string) string {
		t.Helper()
		out, err := run(args...)
		if (err == nil) != ok || !strings.Contains(out, want) {
			t.Fatalf("mfsmaster %v: err=%v, want ok=%v and %q in:\n%s", args, err, ok, want, out)
		}
		return out
	}
	write("")
	t.Cleanup(func() { _, _ = run("stop") })

	expect(false, "no metadata", "-f")
	expect(true, "new metadata", "init")
	expect(false, "metadata", "init")
	expect(true, "started (pid", "start")
	expect(true, "mfsmaster pid:", "test")
	expect(false, "already running", "start")
	expect(false, "in use by process", "-f")
	expect(true, "reload requested", "reload")
	logPath := filepath.Join(dir, "data", "mfsmaster.log")
	eventually(t, 5*time.Second, 50*time.Millisecond, "the log to show the reload", func() error {
		if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "reload") {
			return errors.New("no reload logged")
		}
		return nil
	})
	// Rotation (issue 37): the log moved aside, as logrotate does, and a
	// reload begins a new one at the same path.
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	expect(true, "reload requested", "reload")
	eventually(t, 5*time.Second, 50*time.Millisecond, "a new log file after the reload", func() error {
		if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "log file reopened") {
			return errors.New("no new log file, or nothing in it")
		}
		return nil
	})
	expect(true, "stopped", "stop")
	expect(false, "not running", "test")
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), `"to":"DUMMY"`) {
		t.Fatal("stop did not go through DUMMY")
	}

	// A mistake in the config does not keep a running daemon from being
	// tested and stopped, which need only DATA_PATH (issue 37); start
	// still refuses it.
	expect(true, "started (pid", "start")
	write("VOTE_LEASE = 10m\nNO_SUCH_KEY = 1\n")
	expect(false, "VOTE_LEASE", "start")
	expect(true, "mfsmaster pid:", "test")
	expect(true, "stopped", "stop")
	out := expect(false, "VOTE_LEASE", "test")
	if !strings.Contains(out, "mfsmaster.cfg:7") || !strings.Contains(out, "unknown key NO_SUCH_KEY at") {
		t.Fatalf("the config errors do not name their lines:\n%s", out)
	}
	expect(false, "unknown action", "frobnicate")
	expect(false, "DATA_PATH is empty (flag --data-path)", "--data-path", "", "test")
}
