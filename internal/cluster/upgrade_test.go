package cluster_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// previousRelease is the last commit of protocol version 2 (before the
// election history): the binaries a rolling upgrade starts from.
const previousRelease = "7297591d108a924ea989a59f1b0c8c4c4036d3cc"

// TestRollingUpgrade follows docs/operations.md, "Upgrade", from binaries
// built at previousRelease (git worktree) to this tree's, under client
// load: the FOLLOWERs first (old LEADER, new followers), leadership moved
// to an upgraded master (new LEADER, an old follower: it must not write
// what the old one cannot follow, the election history), the last master,
// then the chunkservers one by one. The skew shows in mfscli meanwhile and
// is gone at the end; porcupine checks that no acknowledged change was
// lost across it all.
func TestRollingUpgrade(t *testing.T) {
	old := buildPrevious(t)
	c, lead := start(t, func(s *cluster.Spec) { s.Bin = old })
	ld := startLoad(t, c, 3)
	var hist protocol.StatusResp
	steps := func() error {
		time.Sleep(500 * time.Millisecond)
		// 1. The FOLLOWERs, one at a time: an orderly stop, the new
		// binary, and the next only once it is synced.
		for i, m := range c.Masters {
			if i == lead {
				continue
			}
			if err := upgradeMaster(c, i); err != nil {
				return err
			}
			t.Logf("FOLLOWER %s upgraded", m.Addr)
		}
		if i, st, err := c.WaitLeader(5*time.Second, 50*time.Millisecond); err != nil || i != lead || st.Proto != 0 {
			return fmt.Errorf("with its FOLLOWERs upgraded the old LEADER should still lead: %d (protocol %d) %v", i, st.Proto, err)
		}
		if out, _ := mfscli(t, c, "-SIM"); !strings.Contains(out, "different versions run") {
			return fmt.Errorf("mfscli -SIM names no version skew with an old LEADER and new followers:\n%s", out)
		}
		// 2. Leadership to an upgraded master. The old one follows it, so
		// the new LEADER must not write the history yet.
		next := (lead + 1) % len(c.Masters)
		if err := usurp(t, c, next, lead, 10*time.Second); err != nil {
			return fmt.Errorf("moving leadership to the upgraded %s: %w", c.Masters[next].Addr, err)
		}
		if err := throughout(time.Second, 100*time.Millisecond, func() error {
			st, err := client.Status(cluster.ClientAddr(c.Masters[next].Addr), time.Second)
			if err != nil {
				return err
			}
			if st.Role == roles.Leader && st.HistoryTotal > 0 {
				return fmt.Errorf("the new LEADER wrote %d history records while an old master follows it", st.HistoryTotal)
			}
			return nil
		}); err != nil {
			return err
		}
		// 3. The last master, then the history is written.
		if err := upgradeMaster(c, lead); err != nil {
			return err
		}
		if err := waitUntil(10*time.Second, 100*time.Millisecond, func() error {
			i, st, err := c.WaitLeader(time.Second, 50*time.Millisecond)
			if err != nil {
				return err
			}
			st, err = client.Status(cluster.ClientAddr(c.Masters[i].Addr), time.Second)
			if err != nil || st.HistoryTotal == 0 {
				return fmt.Errorf("every master upgraded, no history written yet (%v)", err)
			}
			hist = st
			return nil
		}); err != nil {
			return err
		}
		// 4. The chunkservers, one at a time (an orderly restart votes
		// again at once).
		for i := range c.CS {
			c.CS[i].Term(10 * time.Second)
			c.CS[i].Use(bin)
			if err := c.CS[i].Start(); err != nil {
				return err
			}
		}
		return waitUntil(15*time.Second, 200*time.Millisecond, func() error {
			i, st, err := c.WaitLeader(time.Second, 50*time.Millisecond)
			if err != nil {
				return err
			}
			for _, cs := range st.Chunkservers {
				if !cs.Connected || cs.Proto != frame.ProtocolVersion {
					return fmt.Errorf("chunkserver %s: connected %v, protocol %d", cs.Addr, cs.Connected, cs.Proto)
				}
			}
			if out, _ := mfscli(t, c, "-SIM", "-SCS"); strings.Contains(out, "different versions run") {
				return fmt.Errorf("still a version skew after the upgrade (LEADER %s):\n%s", c.Masters[i].Addr, out)
			}
			return nil
		})
	}
	ferr := steps()
	ld.finish(t, ferr)
	t.Logf("the history after the upgrade: %d records", hist.HistoryTotal)
}

// upgradeMaster restarts master i, stopped in order, on this tree's
// binaries, and waits until it is a synced FOLLOWER again (or leads).
func upgradeMaster(c *cluster.Cluster, i int) error {
	m := c.Masters[i]
	m.Term(10 * time.Second)
	m.Use(bin)
	if err := m.Start(); err != nil {
		return err
	}
	return waitUntil(15*time.Second, 100*time.Millisecond, func() error {
		st, err := client.Status(cluster.ClientAddr(m.Addr), time.Second)
		if err != nil {
			return err
		}
		if st.Proto != frame.ProtocolVersion || (st.Role != roles.Leader && st.Sync != roles.Synced) {
			return fmt.Errorf("%s after its upgrade: %v (%v), protocol %d", m.Addr, st.Role, st.Sync, st.Proto)
		}
		return nil
	})
}

// buildPrevious builds mfsmaster and mfschunkserver at previousRelease in
// a git worktree of this repository, or skips the test with why when
// there is no git or no such history (a shallow clone, an export).
func buildPrevious(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs("../..")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the upgrade test builds the previous release from git history: git is not installed")
	}
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", previousRelease+"^{commit}").CombinedOutput(); err != nil {
		t.Skipf("the upgrade test builds the previous release from git history, and commit %s is not in this checkout (a shallow clone or an export?): %v %s",
			previousRelease[:7], err, out)
	}
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	if out, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", tree, previousRelease).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("git", "-C", root, "worktree", "remove", "--force", tree).Run()
		_ = exec.Command("git", "-C", root, "worktree", "prune").Run()
	})
	out := filepath.Join(dir, "bin")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", out, "./cmd/mfsmaster", "./cmd/mfschunkserver")
	build.Dir = tree
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", previousRelease[:7], err, b)
	}
	return out
}
