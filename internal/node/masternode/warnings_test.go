package masternode

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/rs/zerolog"
)

// TestNoTieBreakLoggedAtStart: a master whose registry has two sites and
// an empty default location says so at start, naming the fix.
func TestNoTieBreakLoggedAtStart(t *testing.T) {
	self := netip.MustParseAddr("127.0.0.1")
	m := locations.New()
	var err error
	for _, r := range []struct{ prefix, name string }{{"10.1.0.0/16", "dc1"}, {"10.2.0.0/16", "dc2"}} {
		if m, err = m.MapRange(netip.MustParsePrefix(r.prefix), r.name); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &registry.ClusterConfig{Version: 2, Founder: masterhost.IDOf(self), Locations: m, Members: []registry.Chunkserver{
		{ID: 1, Addr: netip.MustParseAddr("10.1.0.1"), Port: 9422}, {ID: 2, Addr: netip.MustParseAddr("10.2.0.1"), Port: 9422},
	}}
	dir := nodetest.StoreWith(t, self, []changelog.Entry{{Pos: changelog.Pos{Version: 2, Epoch: 1}, Kind: changelog.EntryConfig, Config: cfg}})
	var logs nodetest.SyncBuffer
	startSoloWith(t, dir, self, func(o *MasterOptions) { o.Log = zerolog.New(&logs) })
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(logs.String(), "no tie-break") {
			if !strings.Contains(logs.String(), "voter-only") || !strings.Contains(logs.String(), "-CDEF") {
				t.Fatalf("the warning does not name the fix:\n%s", logs.String())
			}
			return
		}
	}
	t.Fatalf("no tie-break warning in the log:\n%s", logs.String())
}
