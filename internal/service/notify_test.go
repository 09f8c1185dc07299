package service

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// pingDaemon is a Daemon whose loop answers pings while alive is set.
type pingDaemon struct {
	done  chan struct{}
	alive atomic.Bool
}

func (d *pingDaemon) Done() <-chan struct{}    { return d.done }
func (d *pingDaemon) Err() error               { return nil }
func (d *pingDaemon) Stop(time.Duration) error { return nil }
func (d *pingDaemon) Ping(t time.Duration) error {
	if d.alive.Load() {
		return nil
	}
	time.Sleep(t)
	return errors.New("stuck")
}

// TestNotifyAndWatchdog (issue 37): under a Type=notify unit (the
// NOTIFY_SOCKET systemd gives), Serve says READY=1 once started, and feeds
// the watchdog (WATCHDOG_USEC) only while the daemon's loop answers its
// pings: a stuck loop stops the WATCHDOG=1 lines, so systemd restarts it.
func TestNotifyAndWatchdog(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "150000") // fed every 50 ms
	t.Setenv("WATCHDOG_PID", fmt.Sprint(os.Getpid()))
	d := &pingDaemon{done: make(chan struct{})}
	d.alive.Store(true)
	_, v, err := reloadSpec.Resolve("", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(d, reloadSpec, nil, zerolog.Nop(), v, nil, time.Second) }()
	defer func() { close(d.done); <-served }()

	// read collects what systemd would be told over d.
	read := func(d time.Duration) string {
		var got []string
		buf := make([]byte, 512)
		for end := time.Now().Add(d); time.Now().Before(end); {
			_ = conn.SetReadDeadline(end)
			n, err := conn.Read(buf)
			if err != nil {
				break
			}
			got = append(got, string(buf[:n]))
		}
		return strings.Join(got, " ")
	}
	if got := read(400 * time.Millisecond); !strings.HasPrefix(got, "READY=1") || strings.Count(got, "WATCHDOG=1") < 3 {
		t.Fatalf("told %q, want READY=1 then WATCHDOG=1 every 50 ms", got)
	}
	d.alive.Store(false)
	read(150 * time.Millisecond) // a feed that was under way may still come
	if got := read(400 * time.Millisecond); strings.Contains(got, "WATCHDOG=1") {
		t.Fatalf("the watchdog was fed while the loop did not answer: %q", got)
	}
	d.alive.Store(true)
	if got := read(400 * time.Millisecond); !strings.Contains(got, "WATCHDOG=1") {
		t.Fatalf("the watchdog was not fed again once the loop answered: %q", got)
	}
}
