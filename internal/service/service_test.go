package service

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("SERVICE_HELPER") == "1" {
		helper()
		return
	}
	os.Exit(m.Run())
}

// helper is a tiny daemon: it holds SERVICE_LOCK, appends "hup" to
// SERVICE_MARKER on SIGHUP, releases and exits on SIGTERM, and gives up
// after 30s in case the test died.
func helper() {
	if os.Getenv("SERVICE_FAIL") != "" {
		fmt.Fprintln(os.Stderr, "boom: cannot start")
		os.Exit(3)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP) // before the lock: a reload may follow at once
	lock, err := Acquire(os.Getenv("SERVICE_LOCK"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("helper ready")
	giveUp := time.After(30 * time.Second)
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM {
				lock.Release()
				os.Exit(0)
			}
			f, err := os.OpenFile(os.Getenv("SERVICE_MARKER"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err == nil {
				f.WriteString("hup\n")
				f.Close()
			}
		case <-giveUp:
			os.Exit(4)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ { // 10s at most
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func isRunning(path string) func() bool {
	return func() bool { _, ok := Running(path); return ok }
}

func TestLockInProcess(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".mfstest.lock")
	l, err := Acquire(p)
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	if _, err := Acquire(p); err == nil || !strings.Contains(err.Error(), "in use by process "+me) {
		t.Fatalf("second Acquire: %v", err)
	}
	if pid, ok := Running(p); !ok || pid != os.Getpid() {
		t.Fatalf("Running = %d, %v", pid, ok)
	}
	if err := l.Release(); err != nil || l.Release() != nil {
		t.Fatal("Release:", err)
	}
	if _, ok := Running(p); ok {
		t.Fatal("still running after Release")
	}
	l, err = Acquire(p)
	if err != nil {
		t.Fatal("re-Acquire:", err)
	}
	l.Release()
}

func TestStopReload(t *testing.T) {
	dir := t.TempDir()
	lockp, marker := filepath.Join(dir, ".mfstest.lock"), filepath.Join(dir, "hup")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SERVICE_HELPER=1", "SERVICE_LOCK="+lockp, "SERVICE_MARKER="+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	waitFor(t, "helper to lock", isRunning(lockp))
	if pid, _ := Running(lockp); pid != cmd.Process.Pid {
		t.Fatalf("Running pid %d, want %d", pid, cmd.Process.Pid)
	}
	if _, err := Acquire(lockp); err == nil || !strings.Contains(err.Error(), strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("Acquire of a held lock: %v", err)
	}
	if err := Reload(lockp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "SIGHUP marker", func() bool { b, _ := os.ReadFile(marker); return string(b) == "hup\n" })
	start := time.Now()
	if err := Stop(lockp, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("helper exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("helper did not exit")
	}
	t.Logf("stopped in %v", time.Since(start))
	for _, err := range []error{Stop(lockp, time.Second), Reload(lockp)} {
		if err == nil || !strings.Contains(err.Error(), "not running") {
			t.Errorf("on a stopped daemon: %v", err)
		}
	}
}

func TestBackground(t *testing.T) {
	dir := t.TempDir()
	lockp, logp := filepath.Join(dir, ".mfstest.lock"), filepath.Join(dir, "mfstest.log")
	t.Setenv("SERVICE_HELPER", "1")
	t.Setenv("SERVICE_LOCK", lockp)
	t.Setenv("SERVICE_MARKER", filepath.Join(dir, "hup"))

	pid, err := Background(logp, []string{"-f"}, isRunning(lockp), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if held, _ := Running(lockp); held != pid {
		t.Fatalf("lock held by %d, Background returned %d", held, pid)
	}
	if sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0); errno != 0 || int(sid) != pid {
		t.Errorf("child session %d (errno %v), want its own %d", sid, errno, pid)
	}
	waitFor(t, "child output in log", func() bool { b, _ := os.ReadFile(logp); return strings.Contains(string(b), "helper ready") })
	if err := Stop(lockp, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	// Never ready: left running, error says so.
	pid, err = Background(logp, []string{"-f"}, func() bool { return false }, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "not ready") || pid == 0 {
		t.Fatalf("never-ready child: pid %d, %v", pid, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	waitFor(t, "slow child to lock", isRunning(lockp))
	if err := Stop(lockp, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	// Exits at once: the error shows what it logged.
	t.Setenv("SERVICE_FAIL", "1")
	if _, err := Background(logp, []string{"-f"}, isRunning(lockp), 10*time.Second); err == nil ||
		!strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "boom: cannot start") {
		t.Fatalf("failing child: %v", err)
	}
}

func TestParseAction(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Action
	}{{nil, ActionStart}, {[]string{"start"}, ActionStart}, {[]string{"stop"}, ActionStop},
		{[]string{"restart"}, ActionRestart}, {[]string{"reload"}, ActionReload},
		{[]string{"test"}, ActionTest}, {[]string{"init"}, ActionInit}} {
		if got, err := ParseAction(tc.args); got != tc.want || err != nil {
			t.Errorf("ParseAction(%q) = %q, %v", tc.args, got, err)
		}
	}
	if _, err := ParseAction([]string{"kill"}); err == nil || !strings.Contains(err.Error(), "start, stop, restart, reload, test, init") {
		t.Errorf("unknown action: %v", err)
	}
	if _, err := ParseAction([]string{"stop", "now"}); err == nil {
		t.Error("extra argument accepted")
	}
}
