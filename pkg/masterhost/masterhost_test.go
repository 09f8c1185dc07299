package masterhost

import (
	"net/netip"
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
