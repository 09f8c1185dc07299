package node

import (
	"net/netip"
	"testing"
)

// A chunkserver without BIND_HOST leaves from one address, found once.
func TestSourceFor(t *testing.T) {
	got, err := SourceFor(netip.MustParseAddrPort("127.0.0.1:9420"))
	if err != nil || !got.IsLoopback() {
		t.Fatalf("SourceFor(127.0.0.1) = %v, %v; want a loopback address", got, err)
	}
}
