package masternode

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Secrets of the tests: at least secret.MinLen characters.
const (
	testCode     = "test-auth-code-0123"
	testPassword = "test-admin-password"
)

// TestAdminProofBoundToTarget (review L4): an admin command names the
// master it is meant for (the address mfscli dialed), and its proof covers
// that name: a relay that hands it to another master has it refused, with
// the reason; sent to the master it names, it is carried out.
func TestAdminProofBoundToTarget(t *testing.T) {
	nodetest.NoLeaks(t)
	a, b := netip.MustParseAddr("127.0.0.21"), netip.MustParseAddr("127.0.0.22")
	start := func(self netip.Addr) *MasterNode {
		n, _, _ := startSoloWith(t, nodetest.StoreWithChanges(t, self, 3), self, func(o *MasterOptions) {
			o.AdminPassword = testPassword
			o.ListenCL = self.String() + ":0"
		})
		return n
	}
	na, nb := start(a), start(b)
	_ = na
	_, _, clB := nb.Addrs()
	addrB := netip.MustParseAddrPort(clB.String())

	// A relay's work: a command for a (a's address in it) sent to b with
	// a proof over b's nonce.
	nc, err := net.DialTimeout("tcp", addrB.String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	theirs, err := frame.DialHello(nc, frame.Hello{Proto: frame.ProtocolVersion, Kind: frame.KindAdmin}, "", frame.KindMaster, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	req := protocol.AdminReq{ID: 9, Kind: roles.AdminCancelUsurper, Target: a}
	req.Proof = protocol.AdminProof(testPassword, theirs.Nonce, theirs.Cluster, req)
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	if err := frame.WriteFrame(nc, req); err != nil {
		t.Fatal(err)
	}
	m, err := protocol.ClientIn().ReadFrame(nc, frame.DefaultMaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := node.Deref(m).(protocol.AdminResp)
	if !ok || r.OK || r.Code != wire.CodeDenied || !strings.Contains(r.Text, a.String()) || !strings.Contains(r.Text, b.String()) {
		t.Fatalf("a command meant for %v was answered by %v with %+v", a, b, node.Deref(m))
	}

	// The same command sent by Admin to b names b, and b takes it (and
	// refuses it for what it asks: b is not USURPER).
	r, err = client.Admin(addrB, protocol.AdminReq{ID: 10, Kind: roles.AdminCancelUsurper}, testPassword, 2*time.Second)
	if err != nil || r.Code != wire.CodeState || strings.Contains(r.Text, "ADMIN_PASSWORD") || strings.Contains(r.Text, "meant for") {
		t.Fatalf("a command for b, to b: %+v %v", r, err)
	}
}
