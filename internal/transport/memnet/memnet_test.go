package memnet

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/nettest"

	"github.com/mfs-election/mfs-election/internal/transport"
)

// TestMain fails the package if a test leaves a goroutine behind: Close
// must stop every timer and wake every waiter.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	ip1 = netip.MustParseAddr("10.0.0.1")
	ip2 = netip.MustParseAddr("10.0.0.2")
	ip3 = netip.MustParseAddr("10.0.0.3")
	ip6 = netip.MustParseAddr("fd00::6")
)

// short is the wait for something that must not happen: long enough to
// catch it on a loaded machine most of the time, short enough for a fast
// suite.
const short = 30 * time.Millisecond

func newNet(t *testing.T) *Network {
	t.Helper()
	n := New(1)
	t.Cleanup(n.Close)
	return n
}

// pair dials from to to's listener on port and returns both ends.
func pair(t *testing.T, n *Network, from, to netip.Addr) (dialed, accepted net.Conn) {
	t.Helper()
	ln, err := n.Host(to).Listen(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed, err = n.Host(from).Dial(netip.Addr{}, addrPort(ln.Addr()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	accepted, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return dialed, accepted
}

func addrPort(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.AddrPort()
	case *net.UDPAddr:
		return a.AddrPort()
	}
	panic("not an IP address")
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

// readN reads exactly n bytes within a second.
func readN(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return string(b)
}

// readTimesOut checks that nothing arrives on c for a while.
func readTimesOut(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(short))
	defer c.SetReadDeadline(time.Time{})
	n, err := c.Read(make([]byte, 1))
	if !isTimeout(err) {
		t.Fatalf("read: %d, %v; want a timeout", n, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && errors.Is(err, os.ErrDeadlineExceeded)
}

// TestConn runs x/net's net.Conn conformance suite on a dialed and an
// accepted end: on one host, and between two hosts with latency.
func TestConn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to netip.Addr
		lat      time.Duration
	}{
		{"loopback", ip1, ip1, 0},
		{"remote", ip1, ip2, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
				n := New(1)
				n.SetLatency(tc.lat)
				ln, err := n.Host(tc.to).Listen(":0")
				if err != nil {
					return nil, nil, nil, err
				}
				c1, err = n.Host(tc.from).Dial(netip.Addr{}, addrPort(ln.Addr()), time.Second)
				if err != nil {
					return nil, nil, nil, err
				}
				c2, err = ln.Accept()
				return c1, c2, n.Close, err
			})
		})
	}
}

func TestDialRefused(t *testing.T) {
	n := newNet(t)
	h1 := n.Host(ip1)
	n.Host(ip2)
	_, err := h1.Dial(netip.Addr{}, netip.AddrPortFrom(ip2, 9000), time.Second)
	if !transport.Refused(err) || isTimeout(err) {
		t.Fatalf("dial to a closed port: %v; want refused", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "dial" {
		t.Fatalf("dial error %T %v; want a *net.OpError of dial", err, err)
	}
	ln, err := n.Host(ip2).Listen(":9000")
	if err != nil {
		t.Fatal(err)
	}
	c, err := h1.Dial(netip.Addr{}, netip.AddrPortFrom(ip2, 9000), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept on a closed listener: %v; want net.ErrClosed", err)
	}
	if _, err := h1.Dial(netip.Addr{}, netip.AddrPortFrom(ip2, 9000), time.Second); !transport.Refused(err) {
		t.Fatalf("dial after the listener closed: %v; want refused", err)
	}
}

func TestDialTimesOut(t *testing.T) {
	n := newNet(t)
	h1 := n.Host(ip1)
	ln, err := n.Host(ip2).Listen(":9000")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	// An address no host has: nobody answers the SYNs.
	start := time.Now()
	_, err = h1.Dial(netip.Addr{}, netip.AddrPortFrom(ip3, 9000), short)
	if !isTimeout(err) || transport.Refused(err) {
		t.Fatalf("dial to no host: %v; want a timeout", err)
	}
	if time.Since(start) < short {
		t.Fatalf("dial gave up after %v, before its timeout %v", time.Since(start), short)
	}

	// Either direction blocked: the handshake cannot complete.
	n.Block(ip2, ip1)
	if _, err := h1.Dial(netip.Addr{}, netip.AddrPortFrom(ip2, 9000), short); !isTimeout(err) {
		t.Fatalf("dial with the way back blocked: %v; want a timeout", err)
	}
	// It waits, and goes on when the path opens.
	time.AfterFunc(short, func() { n.Unblock(ip2, ip1) })
	c, err := h1.Dial(netip.Addr{}, netip.AddrPortFrom(ip2, 9000), 10*time.Second)
	if err != nil {
		t.Fatalf("dial across an unblocked path: %v", err)
	}
	c.Close()
}

func TestAddresses(t *testing.T) {
	n := newNet(t)
	h1, h2 := n.Host(ip1), n.Host(ip2)
	ln, err := h2.Listen(":7000")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := ln.Addr().String(); got != "10.0.0.2:7000" {
		t.Fatalf("listener address %s", got)
	}
	if _, ok := ln.Addr().(*net.TCPAddr); !ok {
		t.Fatalf("listener address is a %T", ln.Addr())
	}
	d, a := pair(t, n, ip1, ip2)
	defer d.Close()
	defer a.Close()
	dl, dr := addrPort(d.LocalAddr()), addrPort(d.RemoteAddr())
	al, ar := addrPort(a.LocalAddr()), addrPort(a.RemoteAddr())
	if dl.Addr() != ip1 || dl.Port() < ephemeralLow || dl.Port() > ephemeralHigh {
		t.Errorf("dialed local %v: want 10.0.0.1 and an ephemeral port", dl)
	}
	if dr.Addr() != ip2 || al != dr || ar != dl {
		t.Errorf("dialed %v->%v, accepted %v<-%v: the two ends disagree", dl, dr, al, ar)
	}

	for _, ok := range []string{"0.0.0.0:7001", "[::]:7002", "10.0.0.2:7003", ":0"} {
		l, err := h2.Listen(ok)
		if err != nil {
			t.Errorf("listen %s: %v", ok, err)
			continue
		}
		if a := addrPort(l.Addr()); a.Addr() != ip2 || a.Port() == 0 {
			t.Errorf("listen %s: address %v", ok, a)
		}
		l.Close()
	}
	if _, err := h2.Listen("10.0.0.9:7004"); !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("listen on a foreign address: %v; want EADDRNOTAVAIL", err)
	}
	if _, err := h2.Listen(":7000"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("listen on a taken port: %v; want EADDRINUSE", err)
	}
	// Datagram ports are a space of their own, and have their own conflicts.
	pc, err := h2.ListenPacket(":7000")
	if err != nil {
		t.Fatalf("a UDP socket on a TCP listener's port: %v", err)
	}
	defer pc.Close()
	if _, ok := pc.LocalAddr().(*net.UDPAddr); !ok || pc.LocalAddr().String() != "10.0.0.2:7000" {
		t.Errorf("packet socket address %T %v", pc.LocalAddr(), pc.LocalAddr())
	}
	if _, err := h2.ListenPacket(":7000"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("a second UDP socket on a port: %v; want EADDRINUSE", err)
	}

	// bind: the host's own address works, another fails as bind(2) does.
	if _, err := h1.Dial(ip3, netip.AddrPortFrom(ip2, 7000), time.Second); !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("dial bound to a foreign address: %v; want EADDRNOTAVAIL", err)
	}
	c, err := h1.Dial(ip1, netip.AddrPortFrom(ip2, 7000), time.Second)
	if err != nil {
		t.Fatalf("dial bound to the host's address: %v", err)
	}
	c.Close()
}

func TestIPv6(t *testing.T) {
	n := newNet(t)
	l, err := n.Host(ip6).Listen("[::]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if a := addrPort(l.Addr()); a.Addr() != ip6 {
		t.Fatalf("listener address %v", a)
	}
	h := n.Host(netip.MustParseAddr("fd00::7"))
	c, err := h.Dial(netip.Addr{}, addrPort(l.Addr()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.LocalAddr().String(); got[:9] != "[fd00::7]" {
		t.Fatalf("dialed from %s", got)
	}
}

func TestBacklog(t *testing.T) {
	n := newNet(t)
	h1 := n.Host(ip1)
	ln, err := n.Host(ip2).Listen(":9000")
	if err != nil {
		t.Fatal(err)
	}
	to := addrPort(ln.Addr())
	var conns []net.Conn
	for range backlog {
		c, err := h1.Dial(netip.Addr{}, to, time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	if _, err := h1.Dial(netip.Addr{}, to, short); !isTimeout(err) {
		t.Fatalf("dial past a full backlog: %v; want a timeout", err)
	}
	// An Accept makes room; a waiting dial takes it.
	time.AfterFunc(short, func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	})
	c, err := h1.Dial(netip.Addr{}, to, 10*time.Second)
	if err != nil {
		t.Fatalf("dial once the backlog had room: %v", err)
	}
	conns = append(conns, c)
	// Closing the listener resets what it never accepted.
	ln.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read on a conn its listener dropped: %v; want ECONNRESET", err)
	}
	for _, c := range conns {
		c.Close()
	}
	if got := n.Stats().ConnsOpened; got != backlog+1 {
		t.Errorf("ConnsOpened %d, want %d", got, backlog+1)
	}
}

func TestNetworkClose(t *testing.T) {
	n := New(1)
	h1 := n.Host(ip1)
	ln, err := n.Host(ip2).Listen(":9000")
	if err != nil {
		t.Fatal(err)
	}
	d, a := pair(t, n, ip1, ip2)
	n.Block(ip1, ip2) // d's FIN, if d closes first, stays away from a's read
	n.Block(ip1, ip3)
	n.Host(ip3)
	errs := make(chan error, 4)
	go func() { _, err := ln.Accept(); errs <- err }()
	go func() { _, err := a.Read(make([]byte, 1)); errs <- err }()
	go func() { _, err := h1.Dial(netip.Addr{}, netip.AddrPortFrom(ip3, 1), 0); errs <- err }()
	pc, err := n.Host(ip2).ListenPacket(":0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _, err := pc.ReadFromUDPAddrPort(make([]byte, 1)); errs <- err }()
	time.Sleep(short)
	n.Close()
	for range 4 {
		if err := <-errs; !errors.Is(err, net.ErrClosed) {
			t.Errorf("a call waiting when the network closed: %v; want net.ErrClosed", err)
		}
	}
	if _, err := d.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after the network closed: %v", err)
	}
	if _, err := h1.Listen(":1"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("listen after the network closed: %v", err)
	}
}

// TestCloseStopsTimers: with bytes in flight and deadlines pending, Close
// leaves no stream, socket or listener registered and no timer set (goleak
// sees goroutines, not timers).
func TestCloseStopsTimers(t *testing.T) {
	n := New(1)
	n.SetLatency(time.Hour)
	n.Host(ip1)
	ln, err := n.Host(ip2).Listen(":0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = n.Host(ip1).Dial(netip.Addr{}, addrPort(ln.Addr()), 0) }()
	time.Sleep(short / 3) // the dial waits out its hour-long SYN flight
	pc, err := n.Host(ip1).ListenPacket(":0")
	if err != nil {
		t.Fatal(err)
	}
	_ = pc.(*packetConn).SetReadDeadline(time.Now().Add(time.Hour))
	n.SetLatency(0)
	d, a := pair(t, n, ip1, ip2)
	n.SetLatency(time.Hour)
	write(t, d, "in flight for an hour")
	_ = a.SetDeadline(time.Now().Add(time.Hour))
	n.Close()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.streams) != 0 {
		t.Errorf("%d streams left", len(n.streams))
	}
	for _, h := range n.hosts {
		if len(h.listeners)+len(h.packets)+len(h.dialPorts) != 0 {
			t.Errorf("host %v keeps %d listeners, %d sockets, %d ports", h.addr, len(h.listeners), len(h.packets), len(h.dialPorts))
		}
	}
	for _, c := range []net.Conn{d, a} {
		for _, p := range c.(*conn).s.pipes {
			p.mu.Lock()
			if !p.dead || p.armed || p.rd.timer != nil || p.wd.timer != nil {
				t.Errorf("pipe %v->%v: dead %v, armed %v, deadline timers %v %v", p.from, p.to, p.dead, p.armed, p.rd.timer, p.wd.timer)
			}
			p.mu.Unlock()
		}
	}
	p := pc.(*packetConn)
	if p.rd.timer != nil || p.armed {
		t.Error("the packet socket keeps a timer")
	}
}
