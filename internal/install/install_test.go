package install

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMakeInstall installs into a directory of its own, twice, and checks
// what landed where; an operator's config already there is never
// overwritten. The units are checked by systemd-analyze verify where it
// exists (any complaint fails: it exits 0 on unknown keys).
func TestMakeInstall(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not found: `make install` cannot be run here")
	}
	// The go command of the toolchain running this test: go test puts
	// its GOROOT/bin first in the test's PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not found in PATH: `make install` cannot build here")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prefix, sysconf := filepath.Join(dir, "usr"), filepath.Join(dir, "etc")
	mine := []byte("# the operator's own config\nMASTER_HOST = 10.0.0.1\n")
	if err := os.MkdirAll(filepath.Join(sysconf, "mfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sysconf, "mfs", "mfsmaster.cfg"), mine, 0o640); err != nil {
		t.Fatal(err)
	}
	install := func() {
		t.Helper()
		cmd := exec.Command(makeBin, "-C", root, "install", "PREFIX="+prefix, "SYSCONFDIR="+sysconf,
			"GO="+goBin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make install: %v\n%s", err, out)
		}
	}
	install()
	install() // again: nothing the first one placed is in the way

	exe := func(p string) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s: not an executable (%v)", p, err)
		}
	}
	exe(filepath.Join(prefix, "sbin", "mfsmaster"))
	exe(filepath.Join(prefix, "sbin", "mfschunkserver"))
	exe(filepath.Join(prefix, "bin", "mfscli"))
	same := func(p string, want []byte) {
		t.Helper()
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: not what it should hold (%v)", p, err)
		}
	}
	same(filepath.Join(sysconf, "mfs", "mfsmaster.cfg"), mine) // never overwritten
	for _, f := range []string{"mfsmaster.cfg", "mfschunkserver.cfg", "mfshdd.cfg"} {
		shipped, err := os.ReadFile(filepath.Join(root, "etc", f))
		if err != nil {
			t.Fatal(err)
		}
		same(filepath.Join(sysconf, "mfs", f+".sample"), shipped)
		if f != "mfsmaster.cfg" {
			same(filepath.Join(sysconf, "mfs", f), shipped)
		}
	}
	for _, f := range []string{"mfsmaster", "mfschunkserver"} {
		if _, err := os.Stat(filepath.Join(sysconf, "default", f)); err != nil {
			t.Error(err)
		}
		unit, err := os.ReadFile(filepath.Join(prefix, "lib", "systemd", "system", f+".service"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"ExecStart=" + filepath.Join(prefix, "sbin", f) + " -c " + filepath.Join(sysconf, "mfs", f+".cfg") + " -f",
			"User=mfs", "StateDirectory=mfs", "Restart=on-failure", "KillSignal=SIGTERM",
		} {
			if !strings.Contains(string(unit), want) {
				t.Errorf("%s.service lacks %q", f, want)
			}
		}
		if strings.Contains(string(unit), "@") {
			t.Errorf("%s.service: a placeholder was left: %s", f, unit)
		}
	}
	for _, p := range []string{
		filepath.Join(prefix, "lib", "sysusers.d", "mfs.conf"),
		filepath.Join(prefix, "share", "bash-completion", "completions", "mfscli"),
		filepath.Join(prefix, "share", "zsh", "site-functions", "_mfscli"),
		filepath.Join(prefix, "share", "doc", "mfs-election", "LICENSE"),
		filepath.Join(prefix, "share", "doc", "mfs-election", "operations.md"),
		filepath.Join(prefix, "share", "man", "man1", "mfscli.1"),
		filepath.Join(prefix, "share", "man", "man5", "mfsmaster.cfg.5"),
		filepath.Join(prefix, "share", "man", "man5", "mfschunkserver.cfg.5"),
		filepath.Join(prefix, "share", "man", "man8", "mfsmaster.8"),
		filepath.Join(prefix, "share", "man", "man8", "mfschunkserver.8"),
	} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", p, err)
		}
	}
	if out, err := exec.Command(filepath.Join(prefix, "bin", "mfscli"), "--version").CombinedOutput(); err != nil {
		t.Errorf("the installed mfscli: %v: %s", err, out)
	}
	checkManPages(t, filepath.Join(prefix, "share", "man"))

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not found: the units were checked for their keys only")
		return
	}
	units := []string{
		filepath.Join(prefix, "lib", "systemd", "system", "mfsmaster.service"),
		filepath.Join(prefix, "lib", "systemd", "system", "mfschunkserver.service"),
	}
	cmd := exec.Command(analyze, append([]string{"verify"}, units...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("systemd-analyze verify did not finish within 30 s")
	}
	if err != nil || strings.TrimSpace(out.String()) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out.String())
	}
}

// checkManPages: every installed page has its title line, every key of
// mfsmaster.cfg is in its page (the pages come from the binaries' own
// tables), and groff, where there is one, formats each without a warning.
func checkManPages(t *testing.T, dir string) {
	t.Helper()
	pages, _ := filepath.Glob(filepath.Join(dir, "man*", "*"))
	groff, _ := exec.LookPath("groff")
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil || !strings.HasPrefix(string(b), ".TH ") {
			t.Errorf("%s: not a man page (%v)", p, err)
			continue
		}
		if groff == "" {
			continue
		}
		if out, err := exec.Command(groff, "-man", "-ww", "-z", p).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("groff on %s: %v\n%s", p, err, out)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "man5", "mfsmaster.cfg.5"))
	for _, key := range []string{"DATA_PATH", "VOTE_LEASE", "LOG_FORMAT", "AUTH_CODE"} {
		if !strings.Contains(string(b), ".B "+key+" (") {
			t.Errorf("mfsmaster.cfg(5) has no entry for %s", key)
		}
	}
}
