package masterhost

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

func TestIDOf(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want wire.MasterID
	}{
		{"127.0.0.11", 0x7f00000b},
		{"10.1.2.3", 0x0a010203},
		{"::ffff:10.1.2.3", 0x0a010203}, // a mapped address is the IPv4 one
	} {
		if got := IDOf(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("IDOf(%s) = %d, want %d", tc.addr, got, tc.want)
		}
	}
	if IDOf(netip.MustParseAddr("fd00::1")) == IDOf(netip.MustParseAddr("fd00::2")) {
		t.Error("two IPv6 addresses share an id")
	}
	if s := IDOf(netip.MustParseAddr("127.0.0.11")).String(); s != "127.0.0.11" {
		t.Errorf("an address-derived id prints as %q", s)
	}
}

func TestResolve(t *testing.T) {
	got, err := Resolve(" 10.0.0.3, 10.0.0.1:9500,10.0.0.3 ,", 9419)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.1:9500", "10.0.0.3:9419"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i, m := range got {
		if m.Addr.String() != want[i] || m.ID != IDOf(m.Addr.Addr()) {
			t.Fatalf("got %v, want %v (sorted by id, one entry per address)", got, want)
		}
	}
	for spec, msg := range map[string]string{
		"":                     "names no master",
		"10.0.0.1:0":           "bad port",
		"10.0.0.1:99999":       "bad port",
		"no-such-host.invalid": "no-such-host.invalid",
	} {
		if _, err := Resolve(spec, 9419); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Resolve(%q) = %v, want an error saying %q", spec, err, msg)
		}
	}
}

// TestResolverHostsFile: a name the hosts file lists resolves to every
// address listed for it, read again at every resolution (so an edit adds
// or removes a master); a literal address needs no file; a bad line is
// refused with its number.
func TestResolverHostsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Resolver{HostsFile: path}
	write("# the masters\n10.0.0.2 mfsmaster\n10.0.0.1 mfsmaster other # two names\n\n")
	got, err := r.Resolve("MFSMaster, 10.0.0.9", 9419)
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(got); s != "[{10.0.0.1 10.0.0.1:9419} {10.0.0.2 10.0.0.2:9419} {10.0.0.9 10.0.0.9:9419}]" {
		t.Errorf("got %s", s)
	}
	write("10.0.0.2 mfsmaster\n10.0.0.3 mfsmaster\n")
	if got, err := r.Resolve("mfsmaster", 9419); err != nil || len(got) != 2 || got[1].Addr.Addr().String() != "10.0.0.3" {
		t.Errorf("after the edit: %v %v", got, err)
	}
	write("10.0.0.2 mfsmaster\nnot-an-address mfsmaster\n")
	if _, err := r.Resolve("mfsmaster", 9419); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad line: %v", err)
	}
	if _, err := (Resolver{HostsFile: filepath.Join(t.TempDir(), "none")}).Resolve("10.0.0.1", 9419); err == nil {
		t.Error("a hosts file that cannot be read must be an error, not an empty list")
	}
}
