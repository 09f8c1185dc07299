// Package versitytest finds and runs versitygw, the real S3 server the
// witness's tests use (installed by `make versitygw` into .bin/; make test
// sets MFS_VERSITYGW). For tests only.
package versitytest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The root account the tests start the server with.
const (
	Access = "mfswitnesstest"
	Secret = "mfs-witness-test-secret"
)

// Binary finds the versitygw binary: $MFS_VERSITYGW (set by make test,
// which installs it first, so a missing file is a failure), else
// <repo>/.bin/versitygw, else the test skips.
func Binary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("MFS_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("MFS_VERSITYGW=%s: %v (make versitygw installs it)", p, err)
		}
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for range 10 { // up to the module root
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, ".bin", "versitygw")
			if _, err := os.Stat(p); err != nil {
				tb.Skipf("no %s: run `make versitygw` (or set MFS_VERSITYGW) for the real-server tests", p)
			}
			return p
		}
		dir = filepath.Dir(dir)
	}
	tb.Skip("no go.mod above the test's directory: run `make versitygw` and set MFS_VERSITYGW")
	return ""
}

// lockedBuffer is the server's output, shown if it fails to start.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start runs versitygw's posix backend on a temporary directory on a free
// loopback port, with the Access/Secret root account, and returns its
// endpoint; tb.Cleanup kills it. Bounded: 10 s to listen.
func Start(tb testing.TB) string {
	tb.Helper()
	bin := Binary(tb)
	root := tb.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	cmd := exec.Command(bin, "--access", Access, "--secret", Secret, "--port", addr, "--quiet", "posix", root)
	// Only what it needs: no VGW_* or ROOT_* from the environment.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		select {
		case err := <-exited:
			exited <- err
			tb.Fatalf("versitygw exited before listening: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("versitygw did not listen on %s within 10 s:\n%s", addr, out.String())
		}
	}
}
