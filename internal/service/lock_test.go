package service

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// victim is a file outside the data directory that a planted link points
// to; the test checks it is never truncated or written.
func victim(t *testing.T) (path string, check func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(path, []byte("precious data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		t.Helper()
		if b, err := os.ReadFile(path); err != nil || string(b) != "precious data\n" {
			t.Fatalf("the file a link pointed to was changed: %q %v", b, err)
		}
	}
}

// TestAcquireRefusesLinks (review L8): a lock path that is a symbolic link
// (to a file or to nothing) or a hard link to another file is refused with
// an error saying so, and the file it leads to is left alone.
func TestAcquireRefusesLinks(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(lock, target string) error
		want  string
	}{
		{"symbolic link", func(lock, target string) error { return os.Symlink(target, lock) }, "is a symbolic link: refusing to follow it"},
		{"dangling symbolic link", func(lock, target string) error { return os.Symlink(target+".none", lock) }, "is a symbolic link"},
		{"hard link", func(lock, target string) error { return os.Link(target, lock) }, "has 2 hard links"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target, check := victim(t)
			lock := filepath.Join(t.TempDir(), ".mfstest.lock")
			if err := c.plant(lock, target); err != nil {
				t.Fatal(err)
			}
			l, err := Acquire(lock)
			if err == nil {
				l.Release()
			}
			if err == nil || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Acquire over a %s: %v; want an error naming %s and saying %q", c.name, err, lock, c.want)
			}
			check()
			if _, err := os.Stat(target + ".none"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a dangling link's target was created: %v", err)
			}
		})
	}
}

// TestLockFileMode: the lock file is created 0600, and an existing one of
// an older build (0644) is set to 0600.
func TestLockFileMode(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, ".mfstest.lock")
	mode := func() os.FileMode {
		t.Helper()
		fi, err := os.Stat(lock)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	l, err := Acquire(lock)
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(); m != 0o600 {
		t.Fatalf("a new lock file has mode %04o, want 0600", m)
	}
	l.Release()
	if err := os.Chmod(lock, 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err = Acquire(lock); err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if m := mode(); m != 0o600 {
		t.Fatalf("an old lock file has mode %04o after Acquire, want 0600", m)
	}
}

// TestAcquireRefusesForeignFile: a lock file owned by another user is not
// truncated (as root, which can make one).
func TestAcquireRefusesForeignFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	lock := filepath.Join(t.TempDir(), ".mfstest.lock")
	if err := os.WriteFile(lock, []byte("theirs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(lock, 54321, 54321); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(lock); err == nil || !strings.Contains(err.Error(), "is owned by uid 54321") {
		t.Fatalf("Acquire of another user's lock file: %v", err)
	}
	if b, _ := os.ReadFile(lock); string(b) != "theirs\n" {
		t.Fatalf("another user's lock file was changed: %q", b)
	}
}

// TestAcquireChecksDataDir: a data directory every user can write to is
// refused before the lock file is created in it.
func TestAcquireChecksDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, ".mfstest.lock")
	if _, err := Acquire(lock); err == nil || !strings.Contains(err.Error(), "writable by every user") {
		t.Fatalf("Acquire in a world-writable data directory: %v", err)
	}
	if _, err := os.Lstat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock file was created in a refused directory: %v", err)
	}
}

// TestCheckDataDir: the owner and mode rules of CheckDataDir.
func TestCheckDataDir(t *testing.T) {
	var warned bytes.Buffer
	warnings = &warned
	t.Cleanup(func() { warnings = os.Stderr })
	root := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	open, private := mk("open", 0o777), mk("private", 0o750)
	for _, c := range []struct {
		name, dir, refused, warning string
	}{
		{"private", mk("p", 0o700), "", ""},
		{"readable by the group", private, "", ""},
		{"writable by the group", mk("g", 0o770|os.ModeSetgid), "", "is writable by its group"},
		{"writable by all", open, "writable by every user (mode 0777)", ""},
		{"writable by all, sticky", mk("s", 0o777|os.ModeSticky), "writable by every user (mode 1777)", ""},
		{"a link to a private directory", link(t, private, filepath.Join(root, "lp")), "", ""},
		{"a link to an open directory", link(t, open, filepath.Join(root, "lo")), "writable by every user", ""},
		{"a file", file, "is not a directory", ""},
		{"missing", filepath.Join(root, "none"), "no such file", ""},
	} {
		warned.Reset()
		err := CheckDataDir(c.dir)
		if c.refused == "" && err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
		} else if c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), c.dir)) {
			t.Errorf("%s: %v; want an error naming %s and saying %q", c.name, err, c.dir, c.refused)
		}
		if got := warned.String(); (c.warning == "") != (got == "") || !strings.Contains(got, c.warning) {
			t.Errorf("%s: warned %q, want %q", c.name, got, c.warning)
		}
	}

	if os.Geteuid() == 0 {
		theirs := mk("theirs", 0o755)
		if err := os.Chown(theirs, 54321, 54321); err != nil {
			t.Fatal(err)
		}
		if err := CheckDataDir(theirs); err == nil || !strings.Contains(err.Error(), "is owned by uid 54321") {
			t.Errorf("a directory of another user: %v", err)
		}
	}
}

func link(t *testing.T, target, name string) string {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestBackgroundRefusesLinkedLog: start does not append to a log path
// that is a symbolic link, and starts nothing.
func TestBackgroundRefusesLinkedLog(t *testing.T) {
	target, check := victim(t)
	logp := filepath.Join(t.TempDir(), "mfstest.log")
	if err := os.Symlink(target, logp); err != nil {
		t.Fatal(err)
	}
	pid, err := Background(logp, []string{"-f"}, func() bool { return true }, time.Second)
	if err == nil || pid != 0 || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("Background with a linked log: pid %d, %v", pid, err)
	}
	check()
}

// TestWritePidReportsFailure: a lock file whose truncate or pid write
// fails is an error, not a lock that names no pid (Acquire once shadowed
// the write's error and went on). A file opened read-only fails the
// truncate; one opened for appending truncates but refuses WriteAt, the
// write failure the shadowed err used to hide.
func TestWritePidReportsFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		flag int
	}{
		{"read-only: the truncate fails", os.O_RDONLY},
		{"append-only: the write fails", os.O_WRONLY | os.O_APPEND},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "lock")
			if err := os.WriteFile(path, []byte("12345\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, c.flag, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := writePid(f); err == nil {
				b, _ := os.ReadFile(path)
				t.Fatalf("writePid on a file opened %s: no error, file holds %q", c.name, b)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := writePid(f); err != nil {
		t.Fatalf("writePid on a writable file: %v", err)
	}
	if got := readPid(path); got != os.Getpid() {
		t.Fatalf("lock file names pid %d, want %d", got, os.Getpid())
	}
}
