package cluster_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

func mfscli(t *testing.T, c *cluster.Cluster, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "mfscli"), append([]string{"-H", c.Spec.MasterHost()}, args...)...).CombinedOutput()
	return string(out), err
}

// TestAdmin drives the admin commands through mfscli against real
// processes: a USURPER takes over, a step-down hands over, a stopped
// chunkserver is removed (and a connected one is not), and the LEADER's
// metrics say what the listings say.
func TestAdmin(t *testing.T) {
	c, lead := start(t, nil)

	// Gauges are sampled (at most every 100 ms): give them a moment.
	eventually(t, 3*time.Second, 100*time.Millisecond, "the LEADER's metrics", func() error {
		body := scrape(t, fmt.Sprintf("http://%s:9425/metrics", c.Masters[lead].Addr))
		for _, want := range []string{`mfs_master_role{role="LEADER"} 1`, `mfs_master_role{role="FOLLOWER"} 0`,
			`mfs_master_quorum_held 1`, `mfs_master_chunkservers_registered 6`, `mfs_master_votes{location="dc1"} 2`} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("they lack %q", want)
			}
		}
		return nil
	})
	if out, err := mfscli(t, c, "-SIM"); err != nil || !strings.Contains(out, "LEADER") {
		t.Fatalf("mfscli -SIM: %v\n%s", err, out)
	}

	namespaceCommands(t, c)

	// USURPER: a planned handover to a chosen FOLLOWER.
	u := (lead + 1) % 3
	if out, err := mfscli(t, c, "-CLU/"+c.Masters[u].Addr.String()); err != nil {
		t.Fatalf("-CLU: %v\n%s", err, out)
	}
	next, st, err := c.WaitLeader(10*time.Second, 50*time.Millisecond, lead)
	if err != nil || next != u {
		t.Fatalf("the USURPER %s did not become LEADER: %d %v", c.Masters[u].Addr, next, err)
	}
	t.Logf("USURPER %s is LEADER at epoch %d", st.Addr, st.Epoch)

	// Step down: the LEADER hands over to another.
	if out, err := mfscli(t, c, "-CLS"); err != nil {
		t.Fatalf("-CLS: %v\n%s", err, out)
	}
	if _, _, err := c.WaitLeader(10*time.Second, 50*time.Millisecond, u); err != nil {
		t.Fatalf("after step-down: %v", err)
	}

	// Removal: refused while connected, done once stopped.
	victim := c.CS[5]
	addr := fmt.Sprintf("-CRC/%s/9422", victim.Addr)
	if out, err := mfscli(t, c, addr); err == nil || !strings.Contains(out, "still active") {
		t.Fatalf("removing a connected chunkserver was not refused: %v\n%s", err, out)
	}
	victim.Term(5 * time.Second)
	var out string
	eventually(t, 10*time.Second, 200*time.Millisecond, "the stopped chunkserver's removal", func() error {
		var err error
		if out, err = mfscli(t, c, addr); err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
		return nil
	})
	t.Logf("mfscli %s: %s", addr, strings.TrimSpace(out))
	eventually(t, 10*time.Second, 100*time.Millisecond, "the registry to shrink to 5", func() error {
		i, st, err := c.WaitLeader(time.Second, 100*time.Millisecond)
		if err != nil {
			return err
		}
		if st.Registered != 5 || st.Voters != 5 {
			return fmt.Errorf("%d members, %d votes", st.Registered, st.Voters)
		}
		t.Logf("registry of %s: %d members", c.Masters[i].Addr, st.Registered)
		return nil
	})
	// Shut a FOLLOWER down through mfscli.
	sts, _ := c.Statuses(time.Second)
	for i, s := range sts {
		if s.Role == roles.Follower {
			if out, err := mfscli(t, c, "-CMS/"+c.Masters[i].Addr.String()); err != nil {
				t.Fatalf("-CMS: %v\n%s", err, out)
			}
			if !c.Masters[i].Wait(10 * time.Second) {
				t.Fatalf("%s did not exit after -CMS", c.Masters[i].Addr)
			}
			break
		}
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	cl := http.Client{Timeout: 3 * time.Second}
	r, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// namespaceCommands: mfscli get/set/cas/delete/list with their exit codes.
func namespaceCommands(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	code := func(err error) int {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			return -1
		}
		return 0
	}
	step := func(want int, args ...string) string {
		t.Helper()
		out, err := mfscli(t, c, args...)
		if got := code(err); got != want {
			t.Fatalf("mfscli %v: exit %d, want %d\n%s", args, got, want, out)
		}
		return strings.TrimSpace(out)
	}
	ver := step(0, "set", "dir/a", "one")
	step(2, "get", "dir/nothing")
	if out := step(0, "get", "dir/a"); out != "one\t"+ver {
		t.Fatalf("get dir/a = %q, want one at version %s", out, ver)
	}
	step(3, "cas", "dir/a", "two", "1")
	step(0, "cas", "dir/a", "two", ver)
	step(3, "cas", "dir/a", "three", ver)
	step(0, "cas", "dir/b", "bee", "0")
	step(3, "cas", "dir/b", "again", "0")
	out := step(0, "list", "dir/")
	if lines := strings.Split(out, "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "dir/a\ttwo\t") || !strings.HasPrefix(lines[1], "dir/b\tbee\t") {
		t.Fatalf("list dir/ =\n%s", out)
	}
	step(0, "delete", "dir/b")
	step(2, "get", "dir/b")
	step(1, "cas", "dir/a", "x", "notanumber")
	step(1, "frobnicate")
}
