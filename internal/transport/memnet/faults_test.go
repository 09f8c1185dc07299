package memnet

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/transport"
)

func TestBlockHoldsBytes(t *testing.T) {
	n := newNet(t)
	d, a := pair(t, n, ip1, ip2)
	defer d.Close()
	defer a.Close()

	n.Block(ip1, ip2)
	write(t, d, "hello ")
	write(t, d, "world")
	readTimesOut(t, a)
	if got := n.Stats().BytesHeld; got != 11 {
		t.Errorf("BytesHeld %d, want 11", got)
	}
	// The other direction still carries.
	write(t, a, "back")
	if got := readN(t, d, 4); got != "back" {
		t.Fatalf("read %q", got)
	}
	n.Unblock(ip1, ip2)
	if got := readN(t, a, 11); got != "hello world" {
		t.Fatalf("after Unblock read %q", got)
	}
	if got := n.Stats().BytesHeld; got != 0 {
		t.Errorf("BytesHeld %d after Unblock", got)
	}
}

// TestBlockedWriterWaits: a block fills the buffer, and the writer blocks
// on it rather than growing a queue.
func TestBlockedWriterWaits(t *testing.T) {
	n := newNet(t)
	d, a := pair(t, n, ip1, ip2)
	defer d.Close()
	defer a.Close()
	n.Block(ip1, ip2)
	_ = d.SetWriteDeadline(time.Now().Add(short))
	big := make([]byte, streamBuffer+1000)
	k, err := d.Write(big)
	if !isTimeout(err) || k != streamBuffer {
		t.Fatalf("write into a blocked direction: %d, %v; want %d and a timeout", k, err, streamBuffer)
	}
	_ = d.SetWriteDeadline(time.Time{})
	done := make(chan error, 1)
	go func() { _, err := d.Write(big[k:]); done <- err }()
	n.Unblock(ip1, ip2)
	_ = a.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(a, make([]byte, len(big))); err != nil {
		t.Fatalf("reading the held bytes: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the rest of the write: %v", err)
	}
}

func TestPartitionHeal(t *testing.T) {
	n := newNet(t)
	h1, h2, h3 := n.Host(ip1), n.Host(ip2), n.Host(ip3)
	for _, h := range []*Host{h1, h2, h3} {
		ln, err := h.Listen(":9000")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	n.Partition([]netip.Addr{ip1}, []netip.Addr{ip2, ip3})
	if _, err := h1.Dial(netip.Addr{}, netip.AddrPortFrom(ip2, 9000), short); !isTimeout(err) {
		t.Fatalf("dial across the partition: %v; want a timeout", err)
	}
	if _, err := h3.Dial(netip.Addr{}, netip.AddrPortFrom(ip1, 9000), short); !isTimeout(err) {
		t.Fatalf("dial across the partition: %v; want a timeout", err)
	}
	c, err := h2.Dial(netip.Addr{}, netip.AddrPortFrom(ip3, 9000), time.Second)
	if err != nil {
		t.Fatalf("dial within a side: %v", err)
	}
	c.Close()
	n.Heal()
	c, err = h1.Dial(netip.Addr{}, netip.AddrPortFrom(ip2, 9000), time.Second)
	if err != nil {
		t.Fatalf("dial after Heal: %v", err)
	}
	c.Close()
}

func TestCut(t *testing.T) {
	n := newNet(t)
	d, a := pair(t, n, ip1, ip2)
	defer d.Close()
	defer a.Close()
	o1, o2 := pair(t, n, ip1, ip3) // another link, untouched
	defer o1.Close()
	defer o2.Close()

	write(t, d, "unread")
	n.Block(ip1, ip2) // a RST injected on the path needs no open path
	woke := make(chan error, 1)
	go func() { _, err := d.Read(make([]byte, 1)); woke <- err }()
	time.Sleep(short / 3)
	n.Cut(ip2, ip1)
	if err := <-woke; !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a blocked read on a cut conn: %v; want ECONNRESET", err)
	}
	for _, c := range []net.Conn{d, a} {
		if _, err := c.Read(make([]byte, 10)); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("read on a cut conn: %v; want ECONNRESET (bytes dropped)", err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("write on a cut conn: %v; want ECONNRESET", err)
		}
	}
	write(t, o1, "still")
	if got := readN(t, o2, 5); got != "still" {
		t.Fatalf("the other link read %q", got)
	}
	if got := n.Stats().Resets; got != 2 {
		t.Errorf("Resets %d, want 2", got)
	}
}

func TestCrash(t *testing.T) {
	n := newNet(t)
	d, a := pair(t, n, ip1, ip2)
	defer d.Close()
	defer a.Close()
	ln, err := n.Host(ip2).Listen(":9000")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := n.Host(ip2).ListenPacket(":9000")
	if err != nil {
		t.Fatal(err)
	}
	woke := make(chan error, 1)
	go func() { _, err := d.Read(make([]byte, 1)); woke <- err }()
	time.Sleep(short / 3)

	n.Crash(ip2)
	if err := <-woke; !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the far end of a crashed host's conn: %v; want ECONNRESET", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("write on the crashed host's own end: %v; want ECONNRESET", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("accept on a crashed host's listener: %v; want net.ErrClosed", err)
	}
	if _, _, err := pc.ReadFromUDPAddrPort(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read on a crashed host's packet socket: %v; want net.ErrClosed", err)
	}
	start := time.Now()
	_, err = n.Host(ip1).Dial(netip.Addr{}, netip.AddrPortFrom(ip2, 9000), 10*time.Second)
	if !transport.Refused(err) || time.Since(start) > 5*time.Second {
		t.Fatalf("dial to a crashed host: %v after %v; want refused at once", err, time.Since(start))
	}
	// The process restarts: the host listens again.
	ln2, err := n.Host(ip2).Listen(":9000")
	if err != nil {
		t.Fatalf("listen after a crash: %v", err)
	}
	ln2.Close()
}

// TestCrashBehindBlock: the RST of a crashed host waits for its path, so the
// far end learns nothing through a partition.
func TestCrashBehindBlock(t *testing.T) {
	n := newNet(t)
	d, a := pair(t, n, ip1, ip2)
	defer d.Close()
	defer a.Close()
	n.Block(ip2, ip1)
	n.Crash(ip2)
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the crashed end: %v; want ECONNRESET", err)
	}
	readTimesOut(t, d)
	write(t, d, "into the void") // accepted: its sender cannot know yet
	n.Unblock(ip2, ip1)
	_ = d.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := d.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after Unblock the RST lands: %v; want ECONNRESET", err)
	}
}

func TestCloseSendsFIN(t *testing.T) {
	n := newNet(t)
	d, a := pair(t, n, ip1, ip2)
	defer a.Close()
	write(t, d, "last words")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, a, 10); got != "last words" {
		t.Fatalf("read %q", got)
	}
	if _, err := a.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after the data: %v; want io.EOF", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("write to a closed peer: %v; want EPIPE", err)
	}
	if _, err := d.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after Close: %v; want net.ErrClosed", err)
	}
	if _, err := d.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after Close: %v; want net.ErrClosed", err)
	}
	if err := d.Close(); err == nil {
		t.Error("a second Close succeeded")
	}
	if err := d.SetDeadline(time.Now()); err == nil {
		t.Error("SetDeadline after Close succeeded")
	}
}

// TestFINBehindBlock: the FIN waits behind the held bytes.
func TestFINBehindBlock(t *testing.T) {
	n := newNet(t)
	d, a := pair(t, n, ip1, ip2)
	defer a.Close()
	n.Block(ip1, ip2)
	write(t, d, "held")
	d.Close()
	readTimesOut(t, a)
	// The writer back to ip1 has not heard of the close either.
	write(t, a, "x")
	n.Unblock(ip1, ip2)
	if got := readN(t, a, 4); got != "held" {
		t.Fatalf("read %q", got)
	}
	if _, err := a.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after the held data: %v; want io.EOF", err)
	}
}

func TestLatency(t *testing.T) {
	const lat = 20 * time.Millisecond
	n := newNet(t)
	n.SetLatency(lat)
	ln, err := n.Host(ip2).Listen(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	d, err := n.Host(ip1).Dial(netip.Addr{}, addrPort(ln.Addr()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if el := time.Since(start); el < 2*lat {
		t.Errorf("dial took %v, less than a round trip", el)
	}
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	start = time.Now()
	write(t, d, strings.Repeat("x", 100))
	readN(t, a, 100)
	if el := time.Since(start); el < lat {
		t.Errorf("bytes landed after %v, less than the latency", el)
	}
	// A refusal costs a round trip too.
	start = time.Now()
	if _, err := n.Host(ip1).Dial(netip.Addr{}, netip.AddrPortFrom(ip2, 1), time.Second); !transport.Refused(err) {
		t.Fatalf("dial a closed port: %v", err)
	}
	if el := time.Since(start); el < 2*lat {
		t.Errorf("refusal took %v, less than a round trip", el)
	}
	// A dial whose round trip outlasts its timeout times out.
	if _, err := n.Host(ip1).Dial(netip.Addr{}, addrPort(ln.Addr()), lat); !isTimeout(err) {
		t.Fatalf("dial with a timeout under a round trip: %v", err)
	}
}

// TestDeadlineWakesBlockedRead checks a deadline moved into the past while a
// Read waits, and that the conn works after a timeout.
func TestDeadlineWakesBlockedRead(t *testing.T) {
	n := newNet(t)
	d, a := pair(t, n, ip1, ip2)
	defer d.Close()
	defer a.Close()
	errc := make(chan error, 1)
	go func() { _, err := a.Read(make([]byte, 1)); errc <- err }()
	time.Sleep(short / 3)
	_ = a.SetReadDeadline(time.Now().Add(-time.Second))
	if err := <-errc; !isTimeout(err) {
		t.Fatalf("read: %v; want a timeout", err)
	}
	_ = a.SetReadDeadline(time.Time{})
	write(t, d, "ok")
	if got := readN(t, a, 2); got != "ok" {
		t.Fatalf("read %q", got)
	}
	var ne net.Error
	_ = a.SetReadDeadline(time.Now().Add(short))
	_, err := a.Read(make([]byte, 1))
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past a future deadline: %v", err)
	}
}

// TestResetWakesBlockedWrite: a Write waiting for room fails with
// ECONNRESET when its conn is cut, having copied what fitted.
func TestResetWakesBlockedWrite(t *testing.T) {
	n := newNet(t)
	d, a := pair(t, n, ip1, ip2)
	defer d.Close()
	defer a.Close()
	type res struct {
		n   int
		err error
	}
	done := make(chan res, 1)
	go func() {
		k, err := d.Write(make([]byte, streamBuffer+1))
		done <- res{k, err}
	}()
	for p := d.(*conn).out(); ; time.Sleep(time.Millisecond) { // until the buffer is full
		p.mu.Lock()
		full := p.q.len() == streamBuffer
		p.mu.Unlock()
		if full {
			break
		}
	}
	n.Cut(ip1, ip2)
	r := <-done
	if !errors.Is(r.err, syscall.ECONNRESET) || r.n != streamBuffer {
		t.Fatalf("write: %d, %v; want %d and ECONNRESET", r.n, r.err, streamBuffer)
	}
}

// TestDown: a Down host's own calls fail until Up, its conns are reset,
// and dials to it are refused.
func TestDown(t *testing.T) {
	n := New(1)
	defer n.Close()
	a, b := netip.MustParseAddr("10.9.0.1"), netip.MustParseAddr("10.9.0.2")
	ha, hb := n.Host(a), n.Host(b)
	ln, err := ha.Listen(":9000")
	if err != nil {
		t.Fatal(err)
	}
	c, err := hb.Dial(netip.Addr{}, netip.AddrPortFrom(a, 9000), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n.Down(a)
	if _, err := s.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("write on the down host's conn: %v, want ECONNRESET", err)
	}
	if _, err := ha.Dial(netip.Addr{}, netip.AddrPortFrom(b, 1), time.Second); !errors.Is(err, syscall.ENETDOWN) {
		t.Fatalf("dial from the down host: %v, want ENETDOWN", err)
	}
	if _, err := ha.Listen(":9000"); !errors.Is(err, syscall.ENETDOWN) {
		t.Fatalf("listen on the down host: %v, want ENETDOWN", err)
	}
	if _, err := ha.ListenPacket(":9000"); !errors.Is(err, syscall.ENETDOWN) {
		t.Fatalf("socket on the down host: %v, want ENETDOWN", err)
	}
	if _, err := hb.Dial(netip.Addr{}, netip.AddrPortFrom(a, 9000), time.Second); !transport.Refused(err) {
		t.Fatalf("dial to the down host: %v, want refused", err)
	}
	n.Up(a)
	ln2, err := ha.Listen(":9000")
	if err != nil {
		t.Fatalf("listen after Up: %v", err)
	}
	defer ln2.Close()
	c2, err := hb.Dial(netip.Addr{}, netip.AddrPortFrom(a, 9000), time.Second)
	if err != nil {
		t.Fatalf("dial after Up: %v", err)
	}
	c2.Close()
}
