package cluster_test

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// TestReloadLiveKeys (issue 12) against a real mfsmaster: a SIGHUP after
// ADMIN_PASSWORD, LOG_LEVEL and VOTE_LEASE were changed in its cfg file
// puts the new password in force at once (the old one refused, the new
// one taken), lowers the log level at once (the refusal of the old
// password, logged as a warning before, is no longer logged at error), and
// names VOTE_LEASE in the log as waiting for a restart.
func TestReloadLiveKeys(t *testing.T) {
	const oldPW, newPW = "reload-old-password-0", "reload-new-password-0"
	b := base()
	a := func(y, z uint8) netip.Addr { return netip.AddrFrom4([4]byte{127, b, y, z}) }
	s := cluster.Spec{Dir: t.TempDir(), Bin: bin, Masters: []netip.Addr{a(0, 11)}, CS: []cluster.CS{{Addr: a(1, 1), VoterOnly: true}},
		MasterCfg: map[string]string{"SELF_NOMINATE_AFTER": "1s", "ADMIN_PASSWORD": oldPW}}
	c, err := cluster.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			dumpLogs(t, s.Dir)
		}
	})
	for end := time.Now().Add(30 * time.Second); ; {
		_, st, err := c.WaitLeader(time.Second, 100*time.Millisecond)
		if err == nil && st.Voters == 1 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no LEADER counting its chunkserver within 30 s: %+v %v", st, err)
		}
	}
	m := c.Masters[0]
	// admin runs an admin command with a password and says whether the
	// password check refused it (any other failure ends the test).
	admin := func(pw, cmd string) (refused bool) {
		t.Helper()
		x := exec.Command(filepath.Join(bin, "mfscli"), "-H", s.MasterHost(), cmd)
		x.Env = append(os.Environ(), "MFSCLI_PASSWORD="+pw)
		out, err := x.CombinedOutput()
		if err != nil && strings.Contains(string(out), "ADMIN_PASSWORD") {
			return true
		}
		if err != nil {
			t.Fatalf("mfscli %s: %v\n%s", cmd, err, out)
		}
		return false
	}
	warnings := func() int {
		b, _ := os.ReadFile(m.Log)
		return strings.Count(string(b), "admin command refused")
	}
	on, off := fmt.Sprintf("-CM1/%s/9422", s.CS[0].Addr), fmt.Sprintf("-CM0/%s/9422", s.CS[0].Addr)

	if admin(oldPW, on) {
		t.Fatal("the password of the start is refused")
	}
	if !admin(newPW, off) || warnings() != 1 {
		t.Fatalf("before the reload: the next password taken, or its refusal not logged (%d warnings)", warnings())
	}

	cfg, err := os.ReadFile(m.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "ADMIN_PASSWORD = "+oldPW, "ADMIN_PASSWORD = "+newPW, 1) + "LOG_LEVEL = error\nVOTE_LEASE = 900ms\n"
	if err := os.WriteFile(m.Cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The restart line is written before the live keys are applied; the
	// swap follows at once, so the new password is tried until it is taken.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(m.Log)
		if strings.Contains(string(b), `"key":"VOTE_LEASE"`) && strings.Contains(string(b), "reload: VOTE_LEASE changed; it takes effect at the next restart") {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the log does not name VOTE_LEASE as waiting for a restart")
		}
	}
	for end := time.Now().Add(10 * time.Second); admin(newPW, off); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the new password is still refused 10 s after the reload")
		}
	}
	before := warnings()
	if !admin(oldPW, on) {
		t.Fatal("the old password is taken after the reload")
	}
	// The refusal's warning is written before mfscli gets its answer: at
	// LOG_LEVEL = error it is not written at all.
	if got := warnings(); got != before {
		t.Errorf("after LOG_LEVEL = error the refusal was still logged as a warning (%d, was %d)", got, before)
	}
	if b, _ := os.ReadFile(m.Log); strings.Contains(string(b), newPW) || strings.Contains(string(b), oldPW) {
		t.Error("the log shows a password")
	}
	if _, st, err := c.WaitLeader(5*time.Second, 100*time.Millisecond); err != nil || st.Addr != m.Addr {
		t.Errorf("the master is not LEADER after the reload: %+v %v", st, err)
	}
}
