package memnet

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/transport"
)

// The ephemeral port range, Linux's default ip_local_port_range: dials take
// their source port from it, and so do listeners on port 0.
const (
	ephemeralLow  = 32768
	ephemeralHigh = 60999
)

// backlog is how many established conns a listener holds before Accept:
// past it, dials wait as they would for a full kernel backlog.
const backlog = 512

// Errors the kernel would give, wrapped as the net package wraps them so
// errors.Is finds the syscall.Errno and net.Error finds Timeout().
var (
	errTimeout = os.ErrDeadlineExceeded
	errClosed  = net.ErrClosed
)

// Host is one machine's view of the network: a transport.Transport whose
// sockets all have the host's address.
type Host struct {
	n    *Network
	addr netip.Addr

	// under n.mu:
	listeners map[uint16]*listener
	packets   map[uint16]*packetConn
	dialPorts map[uint16]bool // stream source ports of open dialed conns
	nextTCP   uint16
	nextUDP   uint16
	down      bool // Network.Down: every call of its own fails until Up
}

// errDown is what a Down host's own calls fail with.
var errDown = os.NewSyscallError("connect", syscall.ENETDOWN)

// isDown reports Network.Down in force.
func (h *Host) isDown() bool {
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	return h.down
}

var _ transport.Transport = (*Host)(nil)

// Addr is the host's address.
func (h *Host) Addr() netip.Addr { return h.addr }

// Listen opens a stream listener on addr ("host:port"). An empty host,
// 0.0.0.0 or :: means this host; another address fails as bind would, with
// EADDRNOTAVAIL. Port 0 picks a free one; a port another listener holds
// fails with EADDRINUSE (dialed conns' ports do not count: Go sets
// SO_REUSEADDR).
func (h *Host) Listen(addr string) (net.Listener, error) {
	if h.isDown() {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Err: errDown}
	}
	port, err := h.parseBind("tcp", addr)
	if err != nil {
		return nil, err
	}
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: tcpAddr(h.addr, port), Err: errClosed}
	}
	if port == 0 {
		port = h.freePortLocked(&h.nextTCP, func(p uint16) bool { return h.listeners[p] == nil && !h.dialPorts[p] })
	}
	if port == 0 || h.listeners[port] != nil {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: tcpAddr(h.addr, port),
			Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	}
	l := &listener{
		h:     h,
		port:  port,
		addr:  tcpAddr(h.addr, port),
		queue: make(chan *conn, backlog),
		done:  make(chan struct{}),
	}
	h.listeners[port] = l
	return l, nil
}

// ListenPacket opens a datagram socket on addr, as Listen does for streams;
// datagram ports are a space of their own.
func (h *Host) ListenPacket(addr string) (transport.PacketConn, error) {
	if h.isDown() {
		return nil, &net.OpError{Op: "listen", Net: "udp", Err: errDown}
	}
	port, err := h.parseBind("udp", addr)
	if err != nil {
		return nil, err
	}
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, &net.OpError{Op: "listen", Net: "udp", Addr: udpAddr(h.addr, port), Err: errClosed}
	}
	if port == 0 {
		port = h.freePortLocked(&h.nextUDP, func(p uint16) bool { return h.packets[p] == nil })
	}
	if port == 0 || h.packets[port] != nil {
		return nil, &net.OpError{Op: "listen", Net: "udp", Addr: udpAddr(h.addr, port),
			Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	}
	pc := newPacketConn(h, port)
	h.packets[port] = pc
	return pc, nil
}

// Dial connects from this host (bind, when valid and specified, must be its
// address) to addr within timeout (<= 0: no limit). While either direction
// between the two hosts is blocked, or addr names no host, it waits, and
// times out as a dial whose SYNs go unanswered. A host with nothing
// listening on the port refuses at once (transport.Refused is true). The
// handshake costs one round trip of latency.
func (h *Host) Dial(bind netip.Addr, addr netip.AddrPort, timeout time.Duration) (net.Conn, error) {
	dst := norm(addr.Addr())
	if dst.IsUnspecified() {
		dst = h.addr
	}
	raddr := tcpAddr(dst, addr.Port())
	fail := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: err} }
	if !addr.Addr().IsValid() {
		return nil, fail(errors.New("missing address"))
	}
	if b := norm(bind); b.IsValid() && !b.IsUnspecified() && b != h.addr {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Source: tcpAddr(b, 0), Addr: raddr,
			Err: os.NewSyscallError("bind", syscall.EADDRNOTAVAIL)}
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	n := h.n
	for {
		n.mu.Lock()
		peer, ch, err := n.hosts[dst], n.changed, error(nil)
		if n.closed {
			err = errClosed
		} else if h.down {
			err = errDown
		}
		n.mu.Unlock()
		if err != nil {
			return nil, fail(err)
		}
		if peer == nil || h.cutOff(dst) {
			if err := n.wait(ch, deadline); err != nil {
				return nil, fail(err)
			}
			continue
		}
		lat := n.lat(h.addr, dst)
		if err := n.sleep(lat, deadline); err != nil { // the SYN's flight
			return nil, fail(err)
		}
		c, ch, err := h.connect(peer, addr.Port())
		switch {
		case err != nil: // the RST flies back
			_ = n.sleep(lat, deadline)
			return nil, fail(err)
		case c == nil:
			if err := n.wait(ch, deadline); err != nil {
				return nil, fail(err)
			}
			continue
		}
		if err := n.sleep(lat, deadline); err != nil { // the SYN-ACK's flight
			c.s.reset(0, true)
			_ = c.Close()
			return nil, fail(err)
		}
		return c, nil
	}
}

// cutOff reports that a handshake with dst cannot complete now.
func (h *Host) cutOff(dst netip.Addr) bool {
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	return h.n.cutOffLocked(h.addr, dst)
}

// connect is the SYN reaching peer: a conn queued on the listener, a refusal,
// or (nil, ch, nil) when the path got blocked or the backlog is full and the
// dial should wait for ch.
func (h *Host) connect(peer *Host, port uint16) (*conn, chan struct{}, error) {
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return nil, nil, errClosed
	case n.cutOffLocked(h.addr, peer.addr):
		return nil, n.changed, nil
	}
	l := peer.listeners[port]
	if l == nil {
		return nil, nil, os.NewSyscallError("connect", syscall.ECONNREFUSED)
	}
	if len(l.queue) == cap(l.queue) {
		return nil, n.changed, nil
	}
	sport := h.freePortLocked(&h.nextTCP, func(p uint16) bool { return h.listeners[p] == nil && !h.dialPorts[p] })
	if sport == 0 {
		return nil, nil, os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)
	}
	h.dialPorts[sport] = true
	s := newStream(n, netip.AddrPortFrom(h.addr, sport), netip.AddrPortFrom(peer.addr, port))
	n.streams[s] = struct{}{}
	n.connsOpened.Add(1)
	l.queue <- s.ends[1] // every sender holds n.mu: the room checked above is there
	return s.ends[0], nil, nil
}

// freePortLocked returns the next port from *next on that free accepts,
// cycling through the ephemeral range, or 0 when every one is taken.
func (h *Host) freePortLocked(next *uint16, free func(uint16) bool) uint16 {
	for range ephemeralHigh - ephemeralLow + 1 {
		p := *next
		*next++
		if *next > ephemeralHigh || *next < ephemeralLow {
			*next = ephemeralLow
		}
		if free(p) {
			return p
		}
	}
	return 0
}

// parseBind reads a listen address: the port, or the error bind would give.
func (h *Host) parseBind(network, addr string) (uint16, error) {
	fail := func(a net.Addr, err error) (uint16, error) {
		return 0, &net.OpError{Op: "listen", Net: network, Addr: a, Err: err}
	}
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return fail(nil, err)
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return fail(nil, &net.AddrError{Err: "invalid port", Addr: addr})
	}
	mk := tcpAddrOf
	if network == "udp" {
		mk = udpAddrOf
	}
	if host == "" {
		return uint16(port), nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		if host == "localhost" && h.addr.IsLoopback() {
			return uint16(port), nil
		}
		return fail(nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true})
	}
	if a = norm(a); !a.IsUnspecified() && a != h.addr {
		return fail(mk(a, uint16(port)), os.NewSyscallError("bind", syscall.EADDRNOTAVAIL))
	}
	return uint16(port), nil
}

func tcpAddr(a netip.Addr, port uint16) *net.TCPAddr {
	return &net.TCPAddr{IP: a.AsSlice(), Port: int(port)}
}

func udpAddr(a netip.Addr, port uint16) *net.UDPAddr {
	return &net.UDPAddr{IP: a.AsSlice(), Port: int(port)}
}

func tcpAddrOf(a netip.Addr, port uint16) net.Addr { return tcpAddr(a, port) }
func udpAddrOf(a netip.Addr, port uint16) net.Addr { return udpAddr(a, port) }

// listener is a stream listener: conns wait in its backlog for Accept.
type listener struct {
	h     *Host
	port  uint16
	addr  *net.TCPAddr
	queue chan *conn    // the backlog: established, not yet accepted
	done  chan struct{} // closed by Close
	// closed is under h.n.mu.
	closed bool
}

// Accept returns the next conn of the backlog, or net.ErrClosed once the
// listener is closed.
func (l *listener) Accept() (net.Conn, error) {
	fail := &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: errClosed}
	select {
	case <-l.done:
		return nil, fail
	default:
	}
	select {
	case c := <-l.queue:
		n := l.h.n
		n.mu.Lock()
		closed := l.closed
		n.notifyLocked() // room in the backlog: a waiting dial may go on
		n.mu.Unlock()
		if closed {
			l.abort(c)
			return nil, fail
		}
		return c, nil
	case <-l.done:
		return nil, fail
	}
}

// Close stops listening: later dials are refused, and the conns still in the
// backlog are reset, as the kernel does to them.
func (l *listener) Close() error {
	n := l.h.n
	n.mu.Lock()
	if l.closed {
		n.mu.Unlock()
		return &net.OpError{Op: "close", Net: "tcp", Addr: l.addr, Err: errClosed}
	}
	l.closed = true
	if l.h.listeners[l.port] == l {
		delete(l.h.listeners, l.port)
	}
	n.notifyLocked()
	n.mu.Unlock()
	close(l.done)
	for {
		select {
		case c := <-l.queue:
			l.abort(c)
		default:
			return nil
		}
	}
}

// abort resets a backlog conn no one will accept.
func (l *listener) abort(c *conn) {
	c.s.reset(c.i, true)
	_ = c.Close()
}

// Addr is the listener's address, with the host's true IP.
func (l *listener) Addr() net.Addr { return l.addr }
