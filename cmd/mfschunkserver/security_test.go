package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
)

// TestStartRules (issue 10, H3, L3): a chunkserver that reaches masters
// off loopback, or leaves from an address off loopback, refuses to start
// without AUTH_CODE unless INSECURE = 1 (then warned at every start); on
// loopback nothing changes; a short AUTH_CODE is refused everywhere.
func TestStartRules(t *testing.T) {
	lo := netip.MustParseAddr("127.0.1.1")
	masters := func(as ...string) []masterhost.Master {
		var out []masterhost.Master
		for _, a := range as {
			out = append(out, masterhost.Master{Addr: netip.AddrPortFrom(netip.MustParseAddr(a), 9420)})
		}
		return out
	}
	for _, c := range []struct {
		name, cfg string
		bind      netip.Addr
		masters   []masterhost.Master
		err, warn string
	}{
		{name: "loopback", bind: lo, masters: masters("127.0.0.11", "127.0.0.12")},
		{name: "a master off loopback", bind: lo, masters: masters("127.0.0.11", "10.0.0.12"), err: "10.0.0.12"},
		{name: "leaves from an address off loopback", bind: netip.MustParseAddr("10.1.0.7"), masters: masters("127.0.0.11"), err: "BIND_HOST 10.1.0.7"},
		{name: "with AUTH_CODE", cfg: "AUTH_CODE = 0123456789abcdef0123\n", bind: lo, masters: masters("10.0.0.11")},
		{name: "INSECURE", cfg: "INSECURE = 1\n", bind: lo, masters: masters("10.0.0.11"), warn: "INSECURE = 1 and no AUTH_CODE"},
		{name: "short AUTH_CODE", cfg: "AUTH_CODE = s3cret\n", bind: lo, masters: masters("127.0.0.11"), err: "at least 16"},
	} {
		p := filepath.Join(t.TempDir(), "mfschunkserver.cfg")
		if err := os.WriteFile(p, []byte(c.cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := spec.Resolve(p, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		warn, err := startChecks(cfg, c.bind, c.masters)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "INSECURE = 1")) && !strings.Contains(c.err, "at least"):
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v", c.name, err)
		}
		if (c.warn == "") != (warn == "") || !strings.Contains(warn, c.warn) {
			t.Errorf("%s: warning %q", c.name, warn)
		}
	}
}
