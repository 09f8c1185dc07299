package masternode

import (
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestSetAdminPassword (issue 12): a reload's new ADMIN_PASSWORD is the one
// admin commands must prove from then on, and the old one is refused; a
// short one is refused and changes nothing; an empty one opens admin
// commands, which the status says. Commands racing the swap are each
// judged by one password (run with -race for the handoff itself).
func TestSetAdminPassword(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.23")
	n, _, _ := startSoloWith(t, nodetest.StoreWithChanges(t, self, 3), self, func(o *MasterOptions) {
		o.AdminPassword = testPassword
		o.ListenCL = self.String() + ":0"
	})
	_, _, cl := n.Addrs()
	addr := netip.MustParseAddrPort(cl.String())
	const next = "the-next-admin-password"
	// refused says whether the password check turned the command away
	// (AdminCancelUsurper is harmless: the core refuses it for what it
	// asks, not for the password).
	refused := func(pw string) bool {
		t.Helper()
		r, err := client.Admin(addr, protocol.AdminReq{ID: 1, Kind: roles.AdminCancelUsurper}, pw, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(r.Text, "ADMIN_PASSWORD")
	}
	if refused(testPassword) {
		t.Fatal("the password of the start is refused")
	}
	if err := n.SetAdminPassword(next); err != nil {
		t.Fatal(err)
	}
	if !refused(testPassword) {
		t.Error("the old password still works after the swap")
	}
	if refused(next) {
		t.Error("the new password is refused")
	}
	if err := n.SetAdminPassword("short"); err == nil || !strings.Contains(err.Error(), "ADMIN_PASSWORD") {
		t.Errorf("a short password: %v", err)
	}
	if refused(next) {
		t.Error("a refused short password replaced the one in force")
	}

	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if _, err := client.Admin(addr, protocol.AdminReq{ID: 2, Kind: roles.AdminCancelUsurper}, next, 2*time.Second); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		_ = n.SetAdminPassword(next)
	}
	wg.Wait()

	if nodetest.StatusOf(t, n).AdminOpen {
		t.Error("status says admin commands are open while a password is set")
	}
	if err := n.SetAdminPassword(""); err != nil {
		t.Fatal(err)
	}
	if refused("") || !nodetest.StatusOf(t, n).AdminOpen {
		t.Error("an emptied password does not open admin commands, or the status does not say so")
	}
}
