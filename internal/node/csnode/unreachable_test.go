package csnode

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/rs/zerolog"
)

// TestUnreachableMasterLogged (issue 37): a chunkserver whose only master
// does not answer says so in its log, naming the master and what to
// check, instead of nothing.
func TestUnreachableMasterLogged(t *testing.T) {
	nodetest.NoLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	master := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close() // nothing listens there now: every dial is refused
	var log nodetest.SyncBuffer
	opt := ChunkserverOptions{
		Masters: []masterhost.Master{{ID: masterhost.IDOf(master.Addr()), Addr: master}},
		Bind:    netip.MustParseAddr("127.0.0.1"), Listen: "127.0.0.1:0",
		Voter: voter.DefaultConfig(0, netip.Addr{}, nil), ReconnectDelay: 200 * time.Millisecond,
		Log: zerolog.New(&log),
	}
	n, err := StartChunkserver(opt, NewMemChunkserverStore())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(5 * time.Second)
	if !nodetest.Until(5*time.Second, func() bool { return strings.Contains(log.String(), "cannot reach master") }) {
		t.Fatalf("nothing logged about the unreachable master:\n%s", log.String())
	}
	line := log.String()
	for _, want := range []string{master.String(), "MASTER_HOST", "connection refused"} {
		if !strings.Contains(line, want) {
			t.Errorf("the log does not say %q:\n%s", want, line)
		}
	}
	time.Sleep(time.Second) // several more refused dials: not a line each
	if c := strings.Count(log.String(), "cannot reach master"); c != 1 {
		t.Errorf("%d lines about the unreachable master within a second, want 1:\n%s", c, log.String())
	}
}
