package nodetest

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

// Master is what the helpers need of a master under test: where it
// listens (matoml, matocs, matocl).
type Master interface {
	Addrs() (ml, cs, cl net.Addr)
}

// StatusOf asks n for its status on its client port, as mfscli does, and
// asks again while the master is dropping its clients (a LEADER that lost
// its quorum does).
func StatusOf(t *testing.T, n Master) protocol.StatusResp {
	t.Helper()
	_, _, cl := n.Addrs()
	var err error
	for i := 0; i < 20; i++ {
		var st protocol.StatusResp
		if st, err = client.Status(netip.MustParseAddrPort(cl.String()), 2*time.Second); err == nil {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal(err)
	return protocol.StatusResp{}
}

// Until polls cond every 10 ms for at most d.
func Until(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// Labelled reads one counter of a vector by its labels.
func Labelled(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// StoreWithChanges returns the data directory of a founder whose store
// holds the genesis entry and changes 2..last, all committed.
func StoreWithChanges(t *testing.T, self netip.Addr, last uint64) string {
	var es []changelog.Entry
	for v := uint64(2); v <= last; v++ {
		es = append(es, changelog.Entry{Pos: changelog.Pos{Version: v, Epoch: 1}, Kind: changelog.EntryPut,
			Client: changelog.ClientID(v % 7), Seq: v, Key: fmt.Sprint("k", v%50), Value: fmt.Sprint("v", v)})
	}
	return StoreWith(t, self, es)
}

// StoreWith returns the data directory of a founder whose store holds the
// genesis entry and es (versions 2.., epoch 1), all committed.
func StoreWith(t *testing.T, self netip.Addr, es []changelog.Entry) string {
	t.Helper()
	dir := t.TempDir()
	st, err := metadata.OpenMaster(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Init("C1", changelog.Genesis(masterhost.IDOf(self))); err != nil {
		t.Fatal(err)
	}
	last := uint64(len(es) + 1)
	hard := roles.HardState{Epoch: 1, MaxEpoch: 1, LeaderEpoch: 1, Commit: changelog.Pos{Version: last, Epoch: 1}, InForce: 1}
	if err := st.Apply(roles.Persist{Append: es, Hard: &hard}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// NoLeaks checks, after every other cleanup of the test, that no goroutine
// of the driver (readers, writers, the background snapshot) is left.
func NoLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}
