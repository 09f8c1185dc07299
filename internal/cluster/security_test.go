package cluster_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/protocol"
)

// TestListingsSecurity (issue 10, H3) against real processes: masters
// without AUTH_CODE and ADMIN_PASSWORD say so at start and mfscli -SIM
// shows the alarm; with an mfsexports.cfg whose read-write line needs a
// password, mfscli's namespace commands read without it, are refused a
// change without it (or with a wrong one) naming the fix, and change with
// --mfspassword or MFSPASSWORD.
func TestListingsSecurity(t *testing.T) {
	const password = "listings-export-pw0"
	exports := filepath.Join(t.TempDir(), "mfsexports.cfg")
	if err := os.WriteFile(exports, []byte("*           /  ro\n127.0.0.0/8 /  rw,password="+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := start(t, func(s *cluster.Spec) { s.MasterCfg["EXPORTS_FILENAME"] = exports })
	cli := func(env string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "mfscli"), append([]string{"-H", c.Spec.MasterHost()}, args...)...)
		cmd.Env = append(os.Environ(), "MFSPASSWORD=", env)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, _ := cli("", "-SIM", "-j")
	var l struct {
		Dataset struct {
			Security struct {
				NoAuthCode  []string `json:"no_auth_code"`
				AdminOpen   []string `json:"admin_open"`
				ExportsOpen []string `json:"exports_open"`
			} `json:"security"`
		} `json:"dataset"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Dataset.Security.NoAuthCode) != 3 ||
		len(l.Dataset.Security.AdminOpen) != 3 || len(l.Dataset.Security.ExportsOpen) != 0 {
		t.Fatalf("-SIM -j security (%v):\n%s", err, out)
	}
	if out, _ := cli("", "-SIM", "-p"); !strings.Contains(out, "Security warning:\t") || !strings.Contains(out, "no ADMIN_PASSWORD on every master") {
		t.Fatalf("-SIM -p shows no alarm:\n%s", out)
	}
	if b, _ := os.ReadFile(c.Masters[0].Log); !strings.Contains(string(b), "admin commands are open to anyone who reaches port 9421") {
		t.Error("no warning about the empty ADMIN_PASSWORD in the master's log")
	}

	if out, err := cli("", "set", "k", "v"); err == nil || !strings.Contains(out, protocol.ErrExportsPasswordMissing) {
		t.Fatalf("a change without the password: %v\n%s", err, out)
	}
	if out, err := cli("MFSPASSWORD=wrong-password-0123", "set", "k", "v"); err == nil || !strings.Contains(out, protocol.ErrExportsPasswordWrong) {
		t.Fatalf("a change with a wrong password: %v\n%s", err, out)
	}
	if out, err := cli("", "--mfspassword", password, "set", "k", "v"); err != nil {
		t.Fatalf("a change with --mfspassword: %v\n%s", err, out)
	}
	if out, err := cli("MFSPASSWORD="+password, "set", "k", "w"); err != nil {
		t.Fatalf("a change with MFSPASSWORD: %v\n%s", err, out)
	}
	if out, err := cli("", "get", "k"); err != nil || !strings.HasPrefix(out, "w\t") {
		t.Fatalf("a read without the password (the * line is ro): %v\n%s", err, out)
	}
}
