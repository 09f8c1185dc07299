package cluster_test

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestMastersOnline follows docs/operations.md, "Add a master" and
// "Remove a master", against real processes whose MASTER_HOST is a name
// resolved through a hosts file (MASTER_HOSTS_FILE), re-read by the
// chunkservers every MASTER_RESOLVE_INTERVAL and by the masters on mfscli
// -CMR (their interval is 0 here): the cluster grows from two masters to three
// with no restart, the new master syncs and can lead once the old LEADER
// is killed; then a master is taken out of the name and nobody waits on
// it (the LEADER's changelog, held back for it while it was a member, is
// trimmed), while it says it is out.
func TestMastersOnline(t *testing.T) {
	m := startNamedMasters(t)
	m.addMaster(t)
	next := m.newMasterLeads(t)
	gone := m.stopMember(t, next)
	m.removeFromName(t, gone)
	m.removedSaysOut(t, gone)
	holdsLeader(t, m.c, 2, time.Second, "a master removed")
}

// namedMasters is TestMastersOnline's fixture: a cluster whose masters
// are found through the name mfsmaster in the hosts file, its LEADER,
// and the address of a third master not started yet.
type namedMasters struct {
	hosts string
	c     *cluster.Cluster
	lead  int
	third netip.Addr
}

// startNamedMasters starts two masters named mfsmaster in a hosts file
// (the chunkservers re-read it every 300 ms, the masters on -CMR), with
// snapshots often and a changelog kept for every master however long,
// and makes a first write.
func startNamedMasters(t *testing.T) *namedMasters {
	t.Helper()
	m := &namedMasters{hosts: filepath.Join(t.TempDir(), "hosts")}
	m.c, m.lead = start(t, func(s *cluster.Spec) {
		m.third = s.Masters[2]
		s.Masters = s.Masters[:2]
		m.writeHosts(t, s.Masters...)
		resolve := map[string]string{"MASTER_HOST": "mfsmaster", "MASTER_HOSTS_FILE": m.hosts, "MASTER_RESOLVE_INTERVAL": "300ms"}
		for k, v := range resolve {
			s.MasterCfg[k] = v
		}
		s.MasterCfg["MASTER_RESOLVE_INTERVAL"] = "0"
		s.CSCfg = resolve
		// Snapshots often, and a changelog kept for every master however
		// long: only a member that lags holds the LEADER's trimming back.
		s.MasterCfg["SNAPSHOT_CHANGES"], s.MasterCfg["CHANGELOG_RETAIN"] = "20", "100000"
	})
	if r, err := write(m.c.Masters[m.lead].Addr, "before", 3*time.Second); err != nil || !r.OK {
		t.Fatalf("a write: %+v %v", r, err)
	}
	return m
}

// writeHosts names the masters at as mfsmaster in the hosts file.
func (m *namedMasters) writeHosts(t *testing.T, as ...netip.Addr) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# the masters of this test's cluster\n")
	for _, a := range as {
		fmt.Fprintf(&b, "%s mfsmaster\n", a)
	}
	// Written whole, then renamed: a resolution never reads half a file.
	tmp := m.hosts + ".new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, m.hosts); err != nil {
		t.Fatal(err)
	}
}

// addMaster adds a master: name it, have the masters resolve again, then
// start it with -e, and wait for it to sync.
func (m *namedMasters) addMaster(t *testing.T) {
	t.Helper()
	c, lead := m.c, m.lead
	m.writeHosts(t, c.Masters[0].Addr, c.Masters[1].Addr, m.third)
	if out, err := mfscliAt(t, c.Spec.MasterHost(), "-CMR"); err != nil || strings.Count(out, "MASTER_HOST resolved: 3 masters") != 2 {
		t.Fatalf("-CMR: %v\n%s", err, out)
	}
	p, err := c.AddMaster(m.third, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, 100*time.Millisecond, "the new master synced", func() error {
		sts, errs := c.Statuses(time.Second)
		if errs[2] != nil {
			return errs[2]
		}
		n := sts[2]
		if n.Role != roles.Follower || n.Sync != roles.Synced || n.MetaVersion < sts[lead].MetaVersion || n.NotEligible != "" {
			return fmt.Errorf("it is %v (%v), version %d of %d, %q", n.Role, n.Sync, n.MetaVersion, sts[lead].MetaVersion, n.NotEligible)
		}
		return nil
	})
}

// newMasterLeads kills the old LEADER: a LEADER again, and the new master
// can lead (handed the lead with -CLU if another master took it). It
// returns the new master's index, the LEADER's.
func (m *namedMasters) newMasterLeads(t *testing.T) int {
	t.Helper()
	c, lead, third := m.c, m.lead, m.third
	c.Masters[lead].Kill()
	next, st, err := c.WaitLeader(10*time.Second, 20*time.Millisecond, lead)
	if err != nil {
		t.Fatalf("after kill -9 of the LEADER: %v", err)
	}
	t.Logf("kill -9 of %s: LEADER %s", c.Masters[lead].Addr, st.Addr)
	if err := c.Masters[lead].Start(); err != nil {
		t.Fatal(err)
	}
	if next != 2 {
		all := strings.Join([]string{c.Masters[0].Addr.String(), c.Masters[1].Addr.String(), third.String()}, ",")
		eventually(t, 10*time.Second, 200*time.Millisecond, "the killed master synced again", func() error {
			sts, errs := c.Statuses(time.Second)
			if errs[lead] != nil || sts[lead].Sync != roles.Synced {
				return fmt.Errorf("%+v %v", sts[lead].Sync, errs[lead])
			}
			return nil
		})
		if out, err := mfscliAt(t, all, "-CLU/"+third.String()); err != nil {
			t.Fatalf("-CLU to the new master: %v\n%s", err, out)
		}
		if next, _, err = c.WaitLeader(10*time.Second, 50*time.Millisecond, lead, next); err != nil || next != 2 {
			t.Fatalf("the new master did not become LEADER: %d %v", next, err)
		}
	}
	t.Logf("the new master %s is LEADER", third)
	return next
}

// stopMember stops a master other than the LEADER next and the new one
// (it lags from then on: the LEADER keeps its changelog for it), writes
// 60 keys, and checks that the LEADER holds them back. It returns the
// stopped master's index.
func (m *namedMasters) stopMember(t *testing.T, next int) int {
	t.Helper()
	c := m.c
	gone := (next + 1) % 3
	if gone == 2 {
		gone = (next + 2) % 3
	}
	if err := c.Masters[gone].Signal(sigStop); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if r, err := write(m.third, fmt.Sprintf("k%d", i), 3*time.Second); err != nil || !r.OK {
			t.Fatalf("write %d with %s stopped: %+v %v", i, c.Masters[gone].Addr, r, err)
		}
	}
	if n, err := m.held(); err != nil || n < 60 {
		t.Fatalf("the LEADER holds %d changelog entries (%v): the stopped member should hold them back", n, err)
	}
	return gone
}

// held is how many changelog entries the new master (the LEADER) holds.
func (m *namedMasters) held() (int, error) {
	s, err := client.Status(cluster.ClientAddr(m.third), time.Second)
	return s.ChangelogEntries, err
}

// removeFromName takes the stopped master gone out of the name, has the
// others resolve again, and waits for the LEADER to trim without it.
func (m *namedMasters) removeFromName(t *testing.T, gone int) {
	t.Helper()
	var keep []netip.Addr
	for i, p := range m.c.Masters {
		if i != gone {
			keep = append(keep, p.Addr)
		}
	}
	m.writeHosts(t, keep...)
	for _, a := range keep {
		if out, err := mfscliAt(t, a.String(), "-CMR/"+a.String()); err != nil || !strings.Contains(out, "MASTER_HOST resolved: 2 masters") {
			t.Fatalf("-CMR/%s: %v\n%s", a, err, out)
		}
	}
	eventually(t, 5*time.Second, 100*time.Millisecond, "the LEADER to trim without the removed master", func() error {
		// A change or two, for a snapshot past the trim point.
		if r, err := write(m.third, "after", 3*time.Second); err != nil || !r.OK {
			return fmt.Errorf("write: %+v %v", r, err)
		}
		if n, err := m.held(); err != nil || n >= 40 {
			return fmt.Errorf("it still holds %d entries (%v)", n, err)
		}
		return nil
	})
}

// removedSaysOut continues the removed master gone. It has not resolved
// MASTER_HOST again: every master it reaches refuses it as a stranger,
// and it says it is out, in its status and in -SIM.
func (m *namedMasters) removedSaysOut(t *testing.T, gone int) {
	t.Helper()
	c := m.c
	if err := c.Masters[gone].Signal(sigCont); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, 100*time.Millisecond, "the removed master to say it is out", func() error {
		s, err := client.Status(cluster.ClientAddr(c.Masters[gone].Addr), time.Second)
		if err != nil {
			return err
		}
		if !s.Removed || s.Role != roles.Follower || !strings.Contains(s.NotEligible, "out of the set of masters") {
			return fmt.Errorf("it says %v, removed %v, %q", s.Role, s.Removed, s.NotEligible)
		}
		return nil
	})
	if out, err := mfscliAt(t, c.Masters[gone].Addr.String(), "-SIM"); err != nil || !strings.Contains(out, "FOLLOWER (REMOVED)") {
		t.Errorf("-SIM of the removed master: %v\n%s", err, out)
	}
}

// mfscliAt runs mfscli against the masters at hosts.
func mfscliAt(t *testing.T, hosts string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "mfscli"), append([]string{"-H", hosts}, args...)...).CombinedOutput()
	return string(out), err
}
