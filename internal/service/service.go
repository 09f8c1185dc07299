package service

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Lock is a held lock file.
type Lock struct {
	f *os.File
}

// Acquire checks the lock file's directory (DATA_PATH: CheckDataDir),
// creates or opens the lock file at path, takes an exclusive flock without
// waiting and writes our pid into it.
//
// The file is truncated, so it must be ours: a symbolic link is refused
// (O_NOFOLLOW), and so is anything but a regular file with one link owned
// by this process's user, since a link planted in the directory would
// otherwise make the daemon (often root) truncate the file it points to.
// It is created 0600, and an existing one is set to 0600.
func Acquire(path string) (*Lock, error) {
	if err := CheckDataDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("lock file %s is a symbolic link: refusing to follow it (the daemon creates its lock file itself; remove the link)", path)
	} else if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := ownFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock file %s %v: refusing to use it (remove it; the daemon creates its lock file itself)", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another process"
			if pid := readPid(path); pid > 0 {
				who = "process " + strconv.Itoa(pid)
			}
			return nil, fmt.Errorf("data directory is in use by %s (lock file %s)", who, path)
		}
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	if err := writePid(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// writePid replaces the lock file's content with this process's pid (what
// "in use by process N" reads back). A failed truncate or write is an
// error: a lock file that names no pid, or a stale one, would send the
// operator after the wrong process.
func writePid(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// ownFile checks that f is a regular file with a single link, owned by this
// process's user, and makes it 0600.
func ownFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("is not a regular file (%v)", fi.Mode().Type())
	case !ok:
		return errors.New("cannot be checked")
	case st.Nlink != 1:
		return fmt.Errorf("has %d hard links", st.Nlink)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("is owned by uid %d, not by this daemon's uid %d", st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o600 {
		return f.Chmod(0o600)
	}
	return nil
}

// warnings is where CheckDataDir's warnings go (a test replaces it). The
// daemon's stderr is its terminal or journal in the foreground and its log
// file in the background.
var warnings io.Writer = os.Stderr

// CheckDataDir checks the owner and mode of a daemon's data directory
// before the daemon writes anything in it, following no symbolic link at
// its last step (os.Lstat). A directory that another local user can change
// lets that user replace or plant the metadata and its lock and log files
// under the daemon's feet, so:
//
//   - writable by others (o+w, with the sticky bit or not): refused. No
//     deployment needs it, and any local user could plant files in it.
//   - owned by another user than the daemon's, root excepted: refused.
//     That user can chmod it and replace anything in it at will. A root
//     owned directory is kept: only root can change it, and packaging often
//     gives a service such a directory through its group.
//   - writable by its group: a loud warning on stderr, not a refusal. A
//     group of trusted operators (root:mfs 0770) is a common and legitimate
//     setup; an untrusted member can still replace the metadata.
//   - not a directory (or a symbolic link to one): refused.
func CheckDataDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("DATA_PATH %s: %w", dir, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		// The target may be fine, but who controls the link is another
		// question: judge the directory it points to.
		target, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return fmt.Errorf("DATA_PATH %s: %w", dir, err)
		}
		if fi, err = os.Lstat(target); err != nil {
			return fmt.Errorf("DATA_PATH %s: %w", dir, err)
		}
		dir = fmt.Sprintf("%s (-> %s)", dir, target)
	}
	if !fi.IsDir() {
		return fmt.Errorf("DATA_PATH %s is not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("DATA_PATH %s: cannot read its owner", dir)
	}
	perm, me := fi.Mode().Perm(), os.Geteuid()
	switch {
	case perm&0o002 != 0:
		return fmt.Errorf("DATA_PATH %s is writable by every user (mode %04o): any local user could replace the metadata or plant links in it; chmod o-w %s",
			dir, fi.Mode().Perm()|stickyBits(fi.Mode()), dir)
	case int(st.Uid) != me && st.Uid != 0:
		return fmt.Errorf("DATA_PATH %s is owned by uid %d, not by this daemon's uid %d (or root): that user could replace the metadata; chown it to the daemon's user",
			dir, st.Uid, me)
	case perm&0o020 != 0:
		fmt.Fprintf(warnings, "WARNING: DATA_PATH %s is writable by its group (gid %d, mode %04o): every member can replace the metadata; chmod g-w %s unless that group is trusted\n",
			dir, st.Gid, perm, dir)
	}
	return nil
}

// stickyBits is the sticky, setuid and setgid bits of m as octal bits.
func stickyBits(m os.FileMode) os.FileMode {
	var b os.FileMode
	if m&os.ModeSticky != 0 {
		b |= 0o1000
	}
	if m&os.ModeSetgid != 0 {
		b |= 0o2000
	}
	if m&os.ModeSetuid != 0 {
		b |= 0o4000
	}
	return b
}

// Release empties the lock file and drops the lock. Releasing twice is a
// no-op.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	err := f.Truncate(0)
	return errors.Join(err, syscall.Flock(int(f.Fd()), syscall.LOCK_UN), f.Close())
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// Running reports whether some process holds the lock on path, and its pid
// as written in the file (0 if unreadable). It probes with a non-blocking
// shared flock, so it sees a holder in this process too.
func Running(path string) (pid int, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return readPid(path), errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return 0, false
}

func sendSignal(path string, sig syscall.Signal) (int, error) {
	pid, ok := Running(path)
	if !ok {
		return 0, fmt.Errorf("not running (lock file %s is free)", path)
	}
	if pid <= 0 {
		return 0, fmt.Errorf("lock file %s is held but holds no pid", path)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return pid, fmt.Errorf("signal process %d: %w", pid, err)
	}
	return pid, nil
}

// Stop sends SIGTERM to the lock holder and waits up to timeout for the
// lock to be free.
func Stop(path string, timeout time.Duration) error {
	pid, err := sendSignal(path, syscall.SIGTERM)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		if _, ok := Running(path); !ok {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return fmt.Errorf("process %d still running %v after SIGTERM (lock file %s)", pid, timeout, path)
}

// Reload sends SIGHUP to the lock holder.
func Reload(path string) error {
	_, err := sendSignal(path, syscall.SIGHUP)
	return err
}

// Background re-executes this binary with args (which should make it run in
// the foreground) in a new session, stdin from /dev/null and output
// appended to logPath (created 0600, never through a symbolic link), then polls ready every 50ms for up to wait. If the
// child exits first or is not ready in time, the error carries the tail of
// what it logged; a child that is merely slow is left running, and its pid
// is returned with the error.
func Background(logPath string, args []string, ready func() bool, wait time.Duration) (pid int, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	// The log lives in DATA_PATH too: the same checks as the lock file's,
	// before anything is created there.
	if err := CheckDataDir(filepath.Dir(logPath)); err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return 0, fmt.Errorf("log file %s is a symbolic link: refusing to follow it (remove the link)", logPath)
	} else if err != nil {
		return 0, fmt.Errorf("log file: %w", err)
	}
	defer logf.Close()
	if err := ownFile(logf); err != nil {
		return 0, fmt.Errorf("log file %s %v: refusing to append to it (move it aside)", logPath, err)
	}
	start, _ := logf.Seek(0, io.SeekEnd)
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, logf, logf
	cmd.Env = append(os.Environ(), logFileEnv+"="+logPath) // ReopenLog, on reload
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid = cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // also reaps the child if we outlive it
	for deadline := time.Now().Add(wait); ; {
		select {
		case werr := <-exited:
			return 0, fmt.Errorf("background process %d exited before it was ready (%v); %s", pid, werr, tail(logPath, start))
		case <-time.After(50 * time.Millisecond):
		}
		if ready() {
			return pid, nil
		}
		if time.Now().After(deadline) {
			return pid, fmt.Errorf("background process %d not ready after %v (left running); %s", pid, wait, tail(logPath, start))
		}
	}
}

// tail returns the last lines (at most 4 KiB) logged after offset start.
func tail(path string, start int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "cannot read " + path
	}
	defer f.Close()
	if end, err := f.Seek(0, io.SeekEnd); err == nil && end-4096 > start {
		start = end - 4096
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, start, 4096))
	text := strings.TrimSpace(string(b))
	if text == "" {
		return "it logged nothing to " + path
	}
	return "end of " + path + ":\n  " + strings.ReplaceAll(text, "\n", "\n  ")
}

// Action is what the daemon was asked to do.
type Action string

const (
	ActionStart   Action = "start"
	ActionStop    Action = "stop"
	ActionRestart Action = "restart"
	ActionReload  Action = "reload"
	ActionTest    Action = "test"
	ActionInit    Action = "init"   // handled by mfsmaster itself
	ActionRepair  Action = "repair" // mfsmaster: offline repair of the stored metadata
)

var actions = []Action{ActionStart, ActionStop, ActionRestart, ActionReload, ActionTest, ActionInit, ActionRepair}

// ParseAction reads the action from the positional arguments: none means
// start; more than one, or an unknown one, is an error.
func ParseAction(args []string) (Action, error) {
	if len(args) == 0 || args[0] == "" {
		return ActionStart, nil
	}
	names := make([]string, len(actions))
	for i, a := range actions {
		names[i] = string(a)
		if string(a) == args[0] && len(args) == 1 {
			return a, nil
		}
	}
	if len(args) > 1 {
		return "", fmt.Errorf("one action expected, got %q", args)
	}
	return "", fmt.Errorf("unknown action %q; valid: %s", args[0], strings.Join(names, ", "))
}
