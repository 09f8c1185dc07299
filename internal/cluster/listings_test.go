package cluster_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// listing is the part of mfscli -j that the test reads.
type listing struct {
	Dataset struct {
		Masters []struct {
			IP    string `json:"ip"`
			State string `json:"state"`
		} `json:"masters"`
		Chunkservers []struct {
			IP          string `json:"ip"`
			Connected   bool   `json:"connected"`
			Maintenance bool   `json:"maintenance"`
			Removal     string `json:"removal_command"`
		} `json:"chunkservers"`
		Locations []struct {
			Name       string `json:"name"`
			On         bool   `json:"on"`
			Registered int    `json:"registered"`
			Reach      int    `json:"reach"`
			Carried    bool   `json:"carried"`
		} `json:"locations"`
		Quorum struct {
			Held    bool   `json:"held"`
			Verdict string `json:"verdict"`
		} `json:"quorum"`
	} `json:"dataset"`
	Errors []string `json:"errors"`
}

// TestListingsAndAdmin runs mfscli against real processes with
// ADMIN_PASSWORD set: the JSON listings parse and say what the cluster is
// doing (a frozen master is BUSY, a dead one UNREACHABLE, a location cut
// off is named in the verdict); admin commands are refused without the
// password and with a wrong one, and with it they set maintenance, change
// the location map, and remove a stopped chunkserver with the command the
// listing printed, which changes the denominator -SLQ shows.
func TestListingsAndAdmin(t *testing.T) {
	const password = "listings-s3cret-pw"
	c, lead := start(t, func(s *cluster.Spec) { s.MasterCfg["ADMIN_PASSWORD"] = password })
	list := func(args ...string) listing {
		t.Helper()
		out, err := mfscli(t, c, append(args, "-j")...)
		var l listing
		if jerr := json.Unmarshal([]byte(out), &l); jerr != nil {
			t.Fatalf("mfscli %v -j is not JSON (%v, exit %v):\n%s", args, jerr, err, out)
		}
		return l
	}
	admin := func(env string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "mfscli"), append([]string{"-H", c.Spec.MasterHost()}, args...)...)
		cmd.Env = append(os.Environ(), env)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Waits (bounded) until the listing satisfies ok.
	until := func(what string, ok func(listing) bool, args ...string) listing {
		t.Helper()
		var l listing
		eventually(t, 10*time.Second, 100*time.Millisecond, what, func() error {
			if l = list(args...); !ok(l) {
				return fmt.Errorf("last listing %+v", l.Dataset)
			}
			return nil
		})
		return l
	}

	l := until("a LEADER and quorum", func(l listing) bool { return l.Dataset.Quorum.Held }, "-SIM", "-SLQ")
	if len(l.Dataset.Masters) != 3 || l.Dataset.Masters[lead].State != "LEADER" {
		t.Fatalf("masters: %+v", l.Dataset.Masters)
	}

	// The password: refused without, refused when wrong, done with it.
	cs := c.CS[0]
	m1 := fmt.Sprintf("-CM1/%s/9422", cs.Addr)
	if out, err := admin("MFSCLI_PASSWORD=", m1); err == nil || !strings.Contains(out, "ADMIN_PASSWORD") {
		t.Fatalf("an admin command without the password was not refused: %v\n%s", err, out)
	}
	if out, err := admin("MFSCLI_PASSWORD=", "-a", "wrong", m1); err == nil || !strings.Contains(out, "ADMIN_PASSWORD") {
		t.Fatalf("an admin command with a wrong password was not refused: %v\n%s", err, out)
	}
	if out, err := admin("MFSCLI_PASSWORD="+password, m1); err != nil {
		t.Fatalf("%s with the password: %v\n%s", m1, err, out)
	}
	until("maintenance shown", func(l listing) bool {
		for _, r := range l.Dataset.Chunkservers {
			if r.IP == cs.Addr.String() {
				return r.Maintenance
			}
		}
		return false
	}, "-SCS")
	pw := "MFSCLI_PASSWORD=" + password

	// The location map: a new location, renamed, switched off and on.
	b := c.Masters[0].Addr.As4()[1] // 127.B.0.11
	for _, cmd := range []string{fmt.Sprintf("-CMAP/127.%d.9.0/24/dc9", b), "-CREN/dc9/spare", "-COFF/spare", "-CON/spare"} {
		if out, err := admin(pw, cmd); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	until("the new location listed", func(l listing) bool {
		for _, loc := range l.Dataset.Locations {
			if loc.Name == "spare" && loc.On && loc.Registered == 0 {
				return true
			}
		}
		return false
	}, "-SLQ")

	// A frozen master is BUSY (it accepts, never answers); it comes back.
	f := (lead + 1) % 3
	_ = c.Masters[f].Signal(syscall.SIGSTOP)
	l = list("-SIM")
	_ = c.Masters[f].Signal(syscall.SIGCONT)
	if got := l.Dataset.Masters[f].State; got != "BUSY" {
		t.Fatalf("a frozen master is listed as %q, want BUSY", got)
	}

	// dc3 cut off: both its chunkservers stop. The verdict names it; the
	// disconnected block prints the removal command, which works and
	// shrinks dc3's denominator.
	c.CS[4].Term(5 * time.Second) // 127.B.3.1
	c.CS[5].Term(5 * time.Second) // 127.B.3.2
	l = until("dc3 cut off", func(l listing) bool {
		for _, loc := range l.Dataset.Locations {
			if loc.Name == "dc3" && loc.Reach == 0 && !loc.Carried {
				return l.Dataset.Quorum.Held && strings.Contains(l.Dataset.Quorum.Verdict, "dc3")
			}
		}
		return false
	}, "-SLQ", "-SCS")
	var removal string
	for _, r := range l.Dataset.Chunkservers {
		if r.IP == c.CS[5].Addr.String() {
			removal = r.Removal
		}
	}
	if !strings.HasPrefix(removal, "mfscli -H ") || !strings.Contains(removal, "-CRC/") {
		t.Fatalf("no removal command for the stopped chunkserver: %q", removal)
	}
	t.Logf("running the printed command: %s", removal)
	words := strings.Fields(removal)
	if out, err := admin(pw, words[1:]...); err != nil {
		t.Fatalf("%s: %v\n%s", removal, err, out)
	}
	until("dc3 down to one registered chunkserver", func(l listing) bool {
		for _, loc := range l.Dataset.Locations {
			if loc.Name == "dc3" {
				return loc.Registered == 1
			}
		}
		return false
	}, "-SLQ")

	// The LEADER killed: UNREACHABLE, then another LEADER is listed.
	c.Masters[lead].Kill()
	l = until("a new LEADER listed", func(l listing) bool {
		leaders := 0
		for _, m := range l.Dataset.Masters {
			if m.State == "LEADER" {
				leaders++
			}
		}
		return leaders == 1 && l.Dataset.Masters[lead].State == "UNREACHABLE"
	}, "-SIM")
	if len(l.Errors) == 0 {
		t.Fatal("the unreachable master is not in errors")
	}
}

// TestTempRemoval: with both dc3 chunkservers and one of dc2 down, no
// master can win (1 of 3 locations). mfscli -CTR on the dead one of dc2
// makes every master count dc2 as its one live chunkserver; a LEADER is
// elected and writes the removal into the registry.
func TestTempRemoval(t *testing.T) {
	c, _ := start(t, nil)
	// The last registration in force first: while a change is in flight
	// the count is joint, and under the older registry dc2 may hold only
	// the chunkserver that is about to die (the last of its location,
	// which -CTR never leaves out).
	eventually(t, 10*time.Second, 100*time.Millisecond, "the registry in force on every master", func() error {
		sts, errs := c.Statuses(time.Second)
		for i, st := range sts {
			if errs[i] != nil || st.Registered != 6 || st.InForce != st.ConfigVersion {
				return fmt.Errorf("%+v %v", sts, errs)
			}
		}
		return nil
	})
	// In dc2 (two chunkservers, an even number) only the one with the
	// higher id may be left out: that is the one that dies.
	sts, _ := c.Statuses(time.Second)
	var dead *cluster.Proc
	top := uint32(0)
	for _, cs := range sts[0].Chunkservers {
		if cs.Location == "dc2" && uint32(cs.ID) > top {
			top = uint32(cs.ID)
			for _, p := range c.CS {
				if p.Addr == cs.Addr {
					dead = p
				}
			}
		}
	}
	if dead == nil {
		t.Fatalf("no dc2 chunkserver in %+v", sts[0].Chunkservers)
	}
	for _, p := range []*cluster.Proc{dead, c.CS[4], c.CS[5]} { // and 127.B.3.1, 127.B.3.2
		p.Kill()
	}
	// The LEADER loses quorum within a lease; nobody can win after that.
	eventually(t, 10*time.Second, 100*time.Millisecond, "no LEADER with 1 of 3 locations", func() error {
		if ls := c.Leaders(); len(ls) > 0 {
			return fmt.Errorf("LEADER %v still holds quorum", ls)
		}
		return nil
	})
	// The listing explains why nobody leads (once an ELECT counts).
	eventually(t, 10*time.Second, 100*time.Millisecond, "a verdict naming dc3 without a LEADER", func() error {
		out, _ := mfscli(t, c, "-SLQ", "-j")
		var stuck listing
		if err := json.Unmarshal([]byte(out), &stuck); err != nil {
			t.Fatalf("-SLQ -j: %v\n%s", err, out)
		}
		q := stuck.Dataset.Quorum
		if q.Held {
			t.Fatalf("quorum held with 1 of 3 locations: %+v", q)
		}
		if !strings.Contains(q.Verdict, "location dc3: 0 of 2") {
			return fmt.Errorf("last: %s", q.Verdict)
		}
		t.Logf("verdict: %s", q.Verdict)
		return nil
	})
	// Given until a LEADER is elected: a master that was still counting
	// the old LEADER's lease when the command arrived refused it (and
	// mfscli said so), the others took it.
	cmd := fmt.Sprintf("-CTR/%s/9422", dead.Addr)
	eventually(t, 20*time.Second, 300*time.Millisecond, "a LEADER after "+cmd, func() error {
		if len(c.Leaders()) > 0 {
			return nil
		}
		out, err := mfscli(t, c, cmd)
		t.Logf("mfscli %s: %v\n%s", cmd, err, strings.TrimSpace(out))
		return errors.New("none yet")
	})
	i, st, err := c.WaitLeader(15*time.Second, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("no LEADER after the temporary removal: %v", err)
	}
	t.Logf("LEADER %s at epoch %d", c.Masters[i].Addr, st.Epoch)
	eventually(t, 10*time.Second, 100*time.Millisecond, "the removal written and put in force", func() error {
		_, st, err := c.WaitLeader(time.Second, 100*time.Millisecond)
		if err == nil && st.Registered == 5 && st.InForce == st.ConfigVersion && len(st.TempRemoved) == 0 {
			return nil
		}
		return fmt.Errorf("%+v %v", st, err)
	})
	if out, err := mfscli(t, c, cmd); err == nil {
		t.Fatalf("-CTR with a LEADER was accepted:\n%s", out)
	}
}
