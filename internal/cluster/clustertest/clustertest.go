// Package clustertest holds what the real-process tests share, those of
// internal/cluster and those of the nested test module (xtest/webpage):
// the `make run` cluster started for one test and its first LEADER
// awaited, the address block each test draws, the bounded waits, and the
// daemons' race reports and log tails when a test ends. For tests only.
package clustertest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// FastStart is the masters' config of a test cluster: the founder
// nominates itself after 1 s instead of 5 (no chunkserver is registered
// yet at the first election). A new map on every call.
func FastStart() map[string]string {
	return map[string]string{"SELF_NOMINATE_AFTER": "1s"}
}

var bases struct {
	sync.Mutex
	used [256]bool
}

// Base draws a second octet B (100..249) that no other test of this
// process has drawn, so that each test takes its own 127.B.0.0/16 and
// packages and a `make run` cluster (B = 0) can run beside it. It panics
// once all 150 are taken.
func Base() uint8 {
	bases.Lock()
	defer bases.Unlock()
	first := rand.IntN(150)
	for i := range 150 {
		b := 100 + (first+i)%150
		if !bases.used[b] {
			bases.used[b] = true
			return uint8(b)
		}
	}
	panic("clustertest: all 150 address blocks 127.100-249.0.0/16 taken")
}

// Start runs the `make run` topology (cluster.Local on a Base block) from
// the daemons built into bin (cluster.Build), in a temporary directory of
// t's (MFS_TEST_DIR/<test name> instead, kept, with the chunkservers
// logging at debug), the masters' config FastStart, after mutate (nil:
// none) has its say. When t ends the cluster is stopped, t fails for a
// race report in any daemon's log (RaceReports), and a failed t gets the
// logs' tails (DumpLogs). Start waits at most 40 s for a LEADER counting
// all the chunkservers and returns the cluster and that LEADER's index.
func Start(t testing.TB, bin string, mutate func(*cluster.Spec)) (*cluster.Cluster, int) {
	t.Helper()
	dir := t.TempDir()
	if keep := os.Getenv("MFS_TEST_DIR"); keep != "" {
		// Keep configs, data and logs for a look afterwards.
		dir = filepath.Join(keep, t.Name())
		os.RemoveAll(dir)
	}
	s := cluster.Local(dir, bin, Base())
	s.MasterCfg = FastStart()
	if os.Getenv("MFS_TEST_DIR") != "" {
		s.CSCfg = map[string]string{"LOG_LEVEL": "debug"}
	}
	if mutate != nil {
		mutate(&s)
	}
	c, err := cluster.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		RaceReports(t, s.Dir)
		if t.Failed() {
			DumpLogs(t, s.Dir)
		}
	})
	return c, WaitAllCounted(t, c, 40*time.Second)
}

// WaitAllCounted waits at most within for a LEADER that counts every
// chunkserver of c registered and voting, and returns its index.
func WaitAllCounted(t testing.TB, c *cluster.Cluster, within time.Duration) int {
	t.Helper()
	lead := -1
	Eventually(t, within, 100*time.Millisecond, fmt.Sprintf("a LEADER counting all %d chunkservers", len(c.CS)), func() error {
		i, st, err := c.WaitLeader(time.Second, 100*time.Millisecond)
		if err != nil {
			return err
		}
		if st.Voters != len(c.CS) || st.Registered != len(c.CS) {
			return fmt.Errorf("LEADER %s with %d/%d votes", st.Addr, st.Voters, st.Registered)
		}
		t.Logf("LEADER %s epoch %d with %d/%d votes", st.Addr, st.Epoch, st.Voters, st.Registered)
		lead = i
		return nil
	})
	return lead
}

// RaceReports fails t for every daemon log in dir that holds a race
// detector report (daemons built with MFS_RACE=1: cluster.Build).
func RaceReports(t testing.TB, dir string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		if raw, err := os.ReadFile(l); err == nil && strings.Contains(string(raw), "WARNING: DATA RACE") {
			t.Errorf("%s holds a data race report", l)
		}
	}
}

// DumpLogs logs the last 25 lines of every daemon log in dir.
func DumpLogs(t testing.TB, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 25 {
			lines = lines[len(lines)-25:]
		}
		t.Logf("---- %s\n%s", filepath.Base(l), strings.Join(lines, "\n"))
	}
}

// Eventually calls check every poll until it returns nil, for at most
// within, and fails the test with what it waited for and check's last
// error if it never does.
func Eventually(t testing.TB, within, poll time.Duration, what string, check func() error) {
	t.Helper()
	if err := WaitUntil(within, poll, check); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// WaitUntil is Eventually for helpers that hand the failure to their
// caller: nil once check passes, else check's last error. check runs at
// least once; after that both the time and the number of tries are
// bounded (the count is a backstop: at one try per poll, within runs out
// first).
func WaitUntil(within, poll time.Duration, check func() error) error {
	end := time.Now().Add(within)
	tries := maxTries(within, poll)
	for try := 1; ; try++ {
		err := check()
		if err == nil {
			return nil
		}
		if try >= tries || time.Now().After(end) {
			return fmt.Errorf("not within %v: %w", within, err)
		}
		time.Sleep(poll)
	}
}

// Throughout calls check every poll for d and returns its first error:
// for what must hold the whole time, where Eventually is for what must
// come about.
func Throughout(d, poll time.Duration, check func() error) error {
	end := time.Now().Add(d)
	for try, tries := 0, maxTries(d, poll); try < tries && time.Now().Before(end); try++ {
		if err := check(); err != nil {
			return err
		}
		time.Sleep(poll)
	}
	return nil
}

// maxTries is how many checks one every poll fit in d, plus the first.
func maxTries(d, poll time.Duration) int {
	if poll <= 0 {
		panic("poll interval must be positive")
	}
	return int((d+poll-1)/poll) + 1
}
