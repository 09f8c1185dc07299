package memnet

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/transport"
)

const (
	// maxDatagram4 and maxDatagram6 are the largest UDP payloads the kernel
	// sends (65535 less the IP and UDP headers): longer ones fail EMSGSIZE.
	maxDatagram4 = 65507
	maxDatagram6 = 65527
	// packetQueue bounds a socket's receive queue, in datagrams (in flight
	// to it included): past it the kernel drops, and so does memnet.
	packetQueue = 1024
)

// datagram is one payload on its way to a socket, readable from at.
type datagram struct {
	from netip.AddrPort
	b    []byte
	at   time.Time
}

// packetConn is a datagram socket, the part of *net.UDPConn the daemons
// use, plus its deadlines.
type packetConn struct {
	h     *Host
	port  uint16
	self  netip.AddrPort
	laddr *net.UDPAddr

	mu      sync.Mutex
	cond    sync.Cond  // on mu: readers wait here
	q       []datagram // by landing time
	closed  bool
	rd, wd  deadline
	timer   *time.Timer // wakes readers when q's head lands
	armed   bool
	timerAt time.Time
}

var _ transport.PacketConn = (*packetConn)(nil)

func newPacketConn(h *Host, port uint16) *packetConn {
	p := &packetConn{
		h:     h,
		port:  port,
		self:  netip.AddrPortFrom(h.addr, port),
		laddr: udpAddr(h.addr, port),
	}
	p.cond.L = &p.mu
	return p
}

func (p *packetConn) opErr(op string, to net.Addr, err error) error {
	return &net.OpError{Op: op, Net: "udp", Source: p.laddr, Addr: to, Err: err}
}

// ReadFromUDPAddrPort waits for a datagram and returns it (cut to len(b),
// as the kernel cuts it) with its sender's address.
func (p *packetConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		switch {
		case p.closed:
			return 0, netip.AddrPort{}, p.opErr("read", nil, errClosed)
		case p.rd.expired:
			return 0, netip.AddrPort{}, p.opErr("read", nil, errTimeout)
		}
		if len(p.q) > 0 {
			d := p.q[0]
			if !d.at.After(time.Now()) {
				copy(p.q, p.q[1:])
				p.q[len(p.q)-1] = datagram{}
				p.q = p.q[:len(p.q)-1]
				return copy(b, d.b), d.from, nil
			}
			p.armLocked(d.at)
		}
		p.cond.Wait()
	}
}

// armLocked wakes the readers at at, when the head datagram lands.
func (p *packetConn) armLocked(at time.Time) {
	if p.armed && !at.Before(p.timerAt) {
		return
	}
	d := time.Until(at)
	if p.timer == nil {
		p.timer = time.AfterFunc(d, p.onTimer)
	} else {
		p.timer.Reset(d)
	}
	p.armed, p.timerAt = true, at
}

func (p *packetConn) onTimer() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = false
	p.cond.Broadcast()
}

// WriteToUDPAddrPort sends a copy of b to addr and returns at once: whether
// it lands is the network's business (blocks, loss, a bound socket, room in
// its queue), never the sender's, as with UDP.
func (p *packetConn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	p.mu.Lock()
	closed, expired := p.closed, p.wd.expired
	p.mu.Unlock()
	dst := norm(addr.Addr())
	if dst.IsUnspecified() {
		dst = p.h.addr
	}
	to := netip.AddrPortFrom(dst, addr.Port())
	ua := udpAddr(dst, addr.Port())
	limit := maxDatagram4
	if dst.Is6() {
		limit = maxDatagram6
	}
	switch {
	case closed:
		return 0, p.opErr("write", ua, errClosed)
	case expired:
		return 0, p.opErr("write", ua, errTimeout)
	case !addr.Addr().IsValid():
		return 0, p.opErr("write", nil, errors.New("missing address"))
	case len(b) > limit:
		return 0, p.opErr("write", ua, os.NewSyscallError("sendto", syscall.EMSGSIZE))
	}
	p.h.n.send(p.self, to, bytes.Clone(b))
	return len(b), nil
}

// send carries one datagram from to to, or drops it, and counts which.
func (n *Network) send(from, to netip.AddrPort, b []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dgSent.Add(1)
	remote := from.Addr() != to.Addr()
	var dst *packetConn
	if h := n.hosts[to.Addr()]; h != nil {
		dst = h.packets[to.Port()]
	}
	switch {
	case remote && n.blocked[link{from.Addr(), to.Addr()}]:
		n.dgDropped.Add(1)
	case remote && n.loss > 0 && n.rng.Float64() < n.loss:
		n.dgLost.Add(1)
	case dst == nil || !dst.enqueue(datagram{from: from, b: b, at: time.Now().Add(n.lat(from.Addr(), to.Addr()))}):
		n.dgDropped.Add(1)
	default:
		n.dgDelivered.Add(1)
	}
}

// enqueue takes a datagram in, in landing order, unless the socket is
// closed or its queue full. n.mu is held.
func (p *packetConn) enqueue(d datagram) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.q) >= packetQueue {
		return false
	}
	i := len(p.q)
	for i > 0 && p.q[i-1].at.After(d.at) {
		i--
	}
	p.q = append(p.q, datagram{})
	copy(p.q[i+1:], p.q[i:])
	p.q[i] = d
	p.cond.Broadcast()
	return true
}

// LocalAddr is the socket's *net.UDPAddr, with the host's true IP.
func (p *packetConn) LocalAddr() net.Addr { return p.laddr }

// Close unbinds the socket and drops its queue; a blocked read returns
// net.ErrClosed. A second Close fails.
func (p *packetConn) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return p.opErr("close", nil, errClosed)
	}
	p.closed = true
	p.q = nil
	p.rd.stop()
	p.wd.stop()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.armed = false
	p.cond.Broadcast()
	p.mu.Unlock()

	n := p.h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if p.h.packets[p.port] == p {
		delete(p.h.packets, p.port)
	}
	return nil
}

// SetDeadline sets both deadlines, as on a *net.UDPConn.
func (p *packetConn) SetDeadline(t time.Time) error {
	if err := p.SetReadDeadline(t); err != nil {
		return err
	}
	return p.SetWriteDeadline(t)
}

// SetReadDeadline bounds the reads; a blocked read sees it at once.
func (p *packetConn) SetReadDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.opErr("set", nil, errClosed)
	}
	p.rd.set(t, &p.mu, &p.cond)
	return nil
}

// SetWriteDeadline bounds the writes, which never wait: a past one fails them.
func (p *packetConn) SetWriteDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.opErr("set", nil, errClosed)
	}
	p.wd.set(t, &p.mu, &p.cond)
	return nil
}
