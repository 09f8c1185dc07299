package csnode

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/node/masternode"
	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// startLeader starts a single master on loopback over a founder's store,
// with HEARTBEAT_UDP when datagrams is set, and waits for it to lead: the
// master a chunkserver under test registers with and votes for.
func startLeader(t *testing.T, self netip.Addr, datagrams bool) (*masternode.MasterNode, *prometheus.Registry) {
	t.Helper()
	st, err := metadata.OpenMaster(nodetest.StoreWithChanges(t, self, 10))
	if err != nil {
		t.Fatal(err)
	}
	id := masterhost.IDOf(self)
	core := master.DefaultConfig(id, []wire.MasterID{id})
	core.SnapshotEvery, core.LogRetain = 20, 10
	core.SelfNominateAfter = 20 * time.Millisecond
	reg := prometheus.NewRegistry()
	opt := masternode.MasterOptions{
		Core: core, Self: self, Masters: []masterhost.Master{{ID: id, Addr: netip.AddrPortFrom(self, 9419)}},
		ListenML: "127.0.0.1:0", ListenCS: "127.0.0.1:0", ListenCL: "127.0.0.1:0",
		Log: zerolog.New(zerolog.NewTestWriter(t)), Metrics: reg, Datagrams: datagrams,
	}
	n, err := masternode.StartMaster(opt, st)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(5 * time.Second); st.Close() })
	if !nodetest.Until(5*time.Second, func() bool { return nodetest.StatusOf(t, n).Role == roles.Leader }) {
		t.Fatal("the master did not lead")
	}
	return n, reg
}

// TestDatagramPath: a master and a voter with HEARTBEAT_UDP renew the vote
// on both paths: each takes datagrams from the other (first or second,
// as the race goes). Datagrams a stranger sends to the master's port (no
// key, a wrong key, garbage) are counted as refused and change nothing.
func TestDatagramPath(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")
	m, mreg := startLeader(t, self, true)
	_, csAddr, _ := m.Addrs()
	master := netip.MustParseAddrPort(csAddr.String())
	creg := prometheus.NewRegistry()
	opt := ChunkserverOptions{
		Masters: []masterhost.Master{{ID: masterhost.IDOf(self), Addr: master}},
		Bind:    netip.MustParseAddr("127.0.0.12"), Listen: "127.0.0.12:0", Datagrams: true, Metrics: creg,
		Voter: voter.DefaultConfig(0, netip.Addr{}, nil), ReconnectDelay: time.Second, TrustRefused: true,
		Log: zerolog.New(zerolog.NewTestWriter(t)),
	}
	n, err := StartChunkserver(opt, NewMemChunkserverStore())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(5 * time.Second)
	if n.udp == nil || n.udpPort != n.port {
		t.Fatalf("datagram port %d, CSSERV port %d", n.udpPort, n.port)
	}
	taken := func(reg *prometheus.Registry, daemon string) float64 {
		name := "mfs_" + daemon + "_heartbeat_datagrams_total"
		return nodetest.Labelled(t, reg, name, map[string]string{"result": "first"}) + nodetest.Labelled(t, reg, name, map[string]string{"result": "second"})
	}
	if !nodetest.Until(15*time.Second, func() bool {
		s := n.State()
		return s.Promised == opt.Masters[0].ID && taken(mreg, "master") >= 5 && taken(creg, "chunkserver") >= 5
	}) {
		t.Fatalf("datagrams taken: master %v, chunkserver %v; voter %+v", taken(mreg, "master"), taken(creg, "chunkserver"), n.State())
	}
	refusedBefore := nodetest.Labelled(t, mreg, "mfs_master_heartbeat_datagrams_total", map[string]string{"result": "refused"})

	// A stranger on the master's UDP port: garbage, and well-formed
	// acknowledgements of the voter's real id and session (the voter's
	// side of it holds the same session) under a key of its own, claiming
	// a long grant.
	k, ok := n.dg.Get(uint32(opt.Masters[0].ID))
	if !ok {
		t.Fatal("the voter holds no key for its session with the master")
	}
	uc, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(master))
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	forged := node.SealDatagram(node.NewDatagramKey(), node.DgHeader{Kind: node.DgAck, From: uint32(n.Identity().CS), Session: k.Session, Seq: 1 << 60},
		roles.HeartbeatAck{CS: n.Identity().CS, Session: k.Session, Seq: 1 << 60, OK: true, Granted: time.Hour})
	const sent = 20
	for i := 0; i < sent/2; i++ {
		_, _ = uc.Write([]byte("MFSD garbage"))
		_, _ = uc.Write(forged)
	}
	if !nodetest.Until(5*time.Second, func() bool {
		return nodetest.Labelled(t, mreg, "mfs_master_heartbeat_datagrams_total", map[string]string{"result": "refused"})-refusedBefore >= sent
	}) {
		t.Fatalf("refused %v of %d forged datagrams", nodetest.Labelled(t, mreg, "mfs_master_heartbeat_datagrams_total", map[string]string{"result": "refused"})-refusedBefore, sent)
	}
	// Renewals go on (the forged sequence number, had it been taken, would
	// have filtered out every real acknowledgement after it).
	before := taken(mreg, "master")
	if !nodetest.Until(5*time.Second, func() bool { return taken(mreg, "master") >= before+3 }) {
		t.Fatal("no datagram taken after the forged ones")
	}
	if st := nodetest.StatusOf(t, m); st.Role != roles.Leader || st.Voters != 1 {
		t.Fatalf("after the forged datagrams: %+v", st)
	}
}
