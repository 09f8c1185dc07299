package masternode

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/rs/zerolog"
)

// The guards take the time as an argument: these tests run on a clock of
// their own (t0 and offsets), never sleeping.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// v4 is 10.A.B.C; v6 is fd00:0:0:P::H (P picks the /64).
func v4(a, b, c int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(a), byte(b), byte(c)}) }

func v6(p, h int) netip.Addr {
	return netip.MustParseAddr(fmt.Sprintf("fd00:0:0:%x::%x", p, h))
}

// TestPrefixOf: the block a source's holder is assumed to hold.
func TestPrefixOf(t *testing.T) {
	for _, c := range []struct {
		addr netip.Addr
		want string
	}{
		{netip.MustParseAddr("192.0.2.77"), "192.0.2.0/24"},
		{netip.MustParseAddr("::ffff:192.0.2.77"), "192.0.2.0/24"}, // IPv4-mapped: the IPv4 block
		{netip.MustParseAddr("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64"},
		{netip.MustParseAddr("fe80::1%eth0"), "fe80::/64"},
		{netip.Addr{}, "invalid Prefix"},
	} {
		if got := prefixOf(c.addr).String(); got != c.want {
			t.Errorf("prefixOf(%v) = %s, want %s", c.addr, got, c.want)
		}
	}
}

// TestRegistrationThrottledByPrefix (review N6): many addresses of one
// /24 (or one /64) asking for new ids share regPerPrefix a window (256
// for a /24, one a host; 64 for a /64), each
// still at most regPerSource; another prefix has its own budget; a retry
// of a pair already asked for passes; the next window gives the budget
// back.
func TestRegistrationThrottledByPrefix(t *testing.T) {
	for _, fam := range []struct {
		name  string
		addr  func(host int) netip.Addr // hosts of one prefix
		other netip.Addr                // an address of another prefix
	}{
		{"IPv4 /24", func(h int) netip.Addr { return v4(1, 2, h) }, v4(1, 3, 1)},
		{"IPv6 /64", func(h int) netip.Addr { return v6(1, h) }, v6(2, 1)},
	} {
		t.Run(fam.name, func(t *testing.T) {
			var g regGuard
			given := 0
			// 200 addresses of the prefix, each asking for regPerSource
			// new ports: the prefix's budget, not 200 x 4, is handed out.
			for h := 1; h <= 200; h++ {
				for p := 0; p < regPerSource; p++ {
					if g.allow(fam.addr(h), uint16(40000+p), t0.Add(time.Duration(h)*time.Millisecond)) {
						given++
					}
				}
			}
			if want := regPerPrefix(fam.addr(1)); given != want {
				t.Fatalf("%d new ids allowed to one prefix within %v, want %d", given, regWindow, want)
			}
			now := t0.Add(time.Second)
			if !g.allow(fam.addr(1), 40000, now) {
				t.Fatal("a retry of a pair already allowed was refused")
			}
			if g.allow(fam.addr(250), 40000, now) {
				t.Fatal("a new address of an exhausted prefix was allowed")
			}
			for p := 0; p < regPerSource; p++ {
				if !g.allow(fam.other, uint16(40000+p), now) {
					t.Fatalf("an address of another prefix refused its id %d", p+1)
				}
			}
			if g.allow(fam.other, 40000+regPerSource, now) {
				t.Fatalf("an address allowed more than regPerSource (%d) new ids", regPerSource)
			}
			if !g.allow(fam.addr(250), 40000, t0.Add(regWindow+time.Second)) {
				t.Fatal("the prefix refused again after its window ended")
			}
		})
	}
}

// TestAuthFailuresThrottledByPrefix (review N6): failed proofs from many
// addresses of one /24 (or /64), none of them failing authFailMax times,
// block the prefix after authFailMaxPrefix; an address of another prefix
// and a known peer inside the blocked one are not refused; the block ends
// after authBlock.
func TestAuthFailuresThrottledByPrefix(t *testing.T) {
	for _, fam := range []struct {
		name  string
		addr  func(host int) netip.Addr
		other netip.Addr
	}{
		{"IPv4 /24", func(h int) netip.Addr { return v4(5, 6, h) }, v4(5, 7, 1)},
		{"IPv6 /64", func(h int) netip.Addr { return v6(5, h) }, v6(6, 1)},
	} {
		t.Run(fam.name, func(t *testing.T) {
			var g authGuard
			known := fam.addr(250)
			g.knownPeers(&registry.ClusterConfig{Members: []registry.Chunkserver{{ID: 1, Addr: known, Port: 9422}}}, nil)
			now := t0
			for i := 1; i <= authFailMaxPrefix; i++ {
				if g.blocked(fam.addr(i), now) {
					t.Fatalf("address %d of the prefix blocked after %d failures of the prefix", i, i-1)
				}
				if g.failed(fam.addr(i), now) {
					t.Fatalf("one failure blocked address %d itself", i)
				}
				now = now.Add(100 * time.Millisecond)
			}
			if !g.blocked(fam.addr(200), now) {
				t.Fatalf("a fresh address of a prefix with %d failures within %v is not blocked", authFailMaxPrefix, authFailWindow)
			}
			if g.blocked(fam.other, now) {
				t.Fatal("an address of another prefix is blocked")
			}
			if g.blocked(known, now) {
				t.Fatal("a registered chunkserver in the blocked prefix is refused for its neighbours' failures")
			}
			tk := g.take()
			if tk.began[scopePrefix] != 1 || len(tk.notes) != 1 || tk.notes[0].prefix != prefixOf(fam.addr(1)) {
				t.Fatalf("took %+v, want one prefix block of %v", tk, prefixOf(fam.addr(1)))
			}
			if tk := g.take(); len(tk.notes) != 0 || len(tk.began) != 0 {
				t.Fatalf("the same block taken twice: %+v", tk)
			}
			if g.blocked(fam.addr(200), now.Add(authBlock)) {
				t.Fatalf("the prefix is still blocked %v later", authBlock)
			}
		})
	}
}

// TestAuthFailuresThrottledGlobally (review N6): failed proofs from
// authGlobalMax addresses, each in a prefix of its own, refuse every
// source but the known peers for authGlobalBlock, and the episode is
// noted once; failures of known peers during it start no second one;
// after authGlobalBlock proofs are taken again.
func TestAuthFailuresThrottledGlobally(t *testing.T) {
	var g authGuard
	master, cs := v4(99, 0, 1), v4(99, 1, 1)
	book := newBook([]masterhost.Master{{ID: masterhost.IDOf(master), Addr: netip.AddrPortFrom(master, 9419)}})
	g.knownPeers(&registry.ClusterConfig{Members: []registry.Chunkserver{{ID: 1, Addr: cs, Port: 9422}}}, book)
	var now time.Time
	for i := 0; i < authGlobalMax; i++ {
		now = t0.Add(time.Duration(i) * authGlobalWindow / (2 * authGlobalMax)) // all within half a window
		a := v4(i/200, i%200, 1)                                                // a /24 of its own each
		if g.blocked(a, now) {
			t.Fatalf("source %d blocked after %d failures from all sources", i, i)
		}
		g.failed(a, now)
	}
	fresh := v4(200, 0, 1)
	if !g.blocked(fresh, now) || !g.blocked(v6(77, 1), now) {
		t.Fatalf("%d failures from all sources within %v: a fresh source is not refused", authGlobalMax, authGlobalWindow)
	}
	if g.blocked(master, now) || g.blocked(cs, now) {
		t.Fatal("a master of the set or a registered chunkserver is refused for others' failures")
	}
	for i := 0; i < authFailMax-1; i++ {
		g.failed(cs, now) // a known peer's own failures during the block
	}
	tk := g.take()
	if tk.began[scopeAll] != 1 || len(tk.notes) != 1 || tk.notes[0].scope != scopeAll || !tk.notes[0].until.Equal(now.Add(authGlobalBlock)) {
		t.Fatalf("took %+v, want the one block of every source", tk)
	}
	end := now.Add(authGlobalBlock)
	if !g.blocked(fresh, end.Add(-time.Millisecond)) || g.blocked(fresh, end) {
		t.Fatalf("the block of every source does not last %v exactly", authGlobalBlock)
	}
	// Recovered: slow failures (fewer than authGlobalMax a window) never
	// block again.
	for i := 0; i < 3*authGlobalMax; i++ {
		g.failed(v4(150+i/200, i%200, 9), end.Add(time.Duration(i)*authGlobalWindow/(authGlobalMax/2)))
	}
	if tk := g.take(); tk.began[scopeAll] != 0 {
		t.Fatalf("failures at half the global rate blocked every source: %+v", tk)
	}
}

// TestGuardTablesBounded (review N6): however many sources and prefixes
// fail proofs, ask for ids or are refused within one window, no table
// grows past maxTracked.
func TestGuardTablesBounded(t *testing.T) {
	var a authGuard
	var r regGuard
	var l rateLog
	for i := 0; i < maxTracked+64; i++ {
		src := v6(i, 1) // a /64 of its own each
		now := t0.Add(time.Duration(i) * time.Microsecond)
		a.failed(src, now)
		r.allow(src, 9422, now)
		l.allow("matocs|auth|"+src.String(), now)
	}
	if len(a.src) > maxTracked || len(a.pfx) > maxTracked || len(r.src) > maxTracked || len(r.pfx) > maxTracked || len(l.last) > maxTracked {
		t.Fatalf("tables past %d: auth %d/%d, registrations %d/%d, refusal log %d",
			maxTracked, len(a.src), len(a.pfx), len(r.src), len(r.pfx), len(l.last))
	}
	if tk := a.take(); len(tk.notes) > maxAuthNotes+1 {
		t.Fatalf("%d notes kept", len(tk.notes))
	}
}

// TestGlobalProofRateOnMaster (review N6) on a real master: wrong
// AUTH_CODE proofs from authGlobalMax loopback addresses, each in a /24
// of its own (so that no address and no prefix is blocked by itself),
// make the master refuse a new source even with the right code, while its
// registered voter still connects; the episode is logged once and counted
// in mfs_master_auth_blocks_total{scope="all"}.
func TestGlobalProofRateOnMaster(t *testing.T) {
	nodetest.NoLeaks(t)
	const code = "s3cret-s3cret-s3cret"
	self := netip.MustParseAddr("127.0.0.1")
	var logs nodetest.SyncBuffer
	n, _, reg := startSoloWith(t, nodetest.StoreWithChanges(t, self, 10), self, func(o *MasterOptions) {
		o.AuthCode = code
		o.Log = zerolog.New(&logs)
	})
	if !nodetest.Until(5*time.Second, func() bool { return nodetest.StatusOf(t, n).Role == roles.Leader }) {
		t.Fatal("the master did not lead")
	}
	const voter, port = "127.0.0.2", 40001
	f, err := connectCS(t, n, voter, 0, code)
	if err != nil {
		t.Fatal(err)
	}
	id := f.register(port)
	f.nc.Close()
	if f, err = connectCS(t, n, voter, id, code); err != nil {
		t.Fatal(err)
	}
	f.vote(port, 1<<32|1)
	if !nodetest.Until(5*time.Second, func() bool { return csRow(nodetest.StatusOf(t, n), id).Voting }) {
		t.Fatalf("the voter is not counted: %+v", nodetest.StatusOf(t, n).Chunkservers)
	}

	for i := 0; i < authGlobalMax; i++ {
		src := fmt.Sprintf("127.1.%d.1", i)
		if g, err := connectCS(t, n, src, 0, "a-wrong-guess-of-it"); err == nil && !closedByPeer(g.nc, 2*time.Second) {
			t.Fatalf("wrong code from %s accepted", src)
		}
	}
	if g, err := connectCS(t, n, "127.2.0.1", 0, code); err == nil && !closedByPeer(g.nc, 2*time.Second) {
		t.Fatal("a new source was let in while every unknown source is refused")
	}
	f.nc.Close()
	<-f.done
	// Its only voter gone, the LEADER steps down and closes the
	// chunkservers' connections: wait for that, or the new connection
	// below may be closed by the step-down rather than refused, which
	// the check after it could not tell apart on a busy machine.
	if !nodetest.Until(5*time.Second, func() bool { return nodetest.StatusOf(t, n).Role != roles.Leader }) {
		t.Fatal("the LEADER kept its role without its only voter")
	}
	again, err := connectCS(t, n, voter, id, code)
	if err != nil || closedByPeer(again.nc, 300*time.Millisecond) {
		t.Fatalf("the registered voter was refused for others' failures: %v", err)
	}
	if !nodetest.Until(5*time.Second, func() bool {
		return nodetest.Labelled(t, reg, "mfs_master_auth_blocks_total", map[string]string{"scope": "all"}) == 1
	}) {
		t.Fatalf("blocks of every source counted: %v", nodetest.Labelled(t, reg, "mfs_master_auth_blocks_total", map[string]string{"scope": "all"}))
	}
	if v := nodetest.Labelled(t, reg, "mfs_master_auth_blocks_total", map[string]string{"scope": "prefix"}); v != 0 {
		t.Fatalf("prefix blocks counted: %v", v)
	}
	if k := strings.Count(logs.String(), "from all sources within"); k != 1 {
		t.Fatalf("the episode logged %d times, want once:\n%s", k, logs.String())
	}
}
