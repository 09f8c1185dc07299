// Package transport is the daemons' edge: every socket mfsmaster and
// mfschunkserver open goes through a Transport. OS is the real one (TCP and
// UDP through the kernel); internal/transport/memnet is an in-memory network
// with faults, on which the driver simulation (internal/sim/drivers) runs
// the real drivers of internal/node, as hashicorp/raft tests its Raft over
// InmemTransport.
//
// The interface is the narrowest the drivers need: listen and dial for the
// TCP ports, and one datagram socket per daemon for the heartbeat side path.
// Addresses are real addresses either way: a master tells chunkservers and
// peers apart by the address their connection comes from, so a Transport
// must report true local and remote addresses.
package transport

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// Transport opens the connections and sockets of one host.
type Transport interface {
	// Listen opens a stream listener on addr ("host:port"; port 0 picks
	// one, an empty host every address of this host).
	Listen(addr string) (net.Listener, error)
	// Dial connects from bind (invalid: the host's choice) to addr within
	// timeout. An error for which Refused is true means nothing listens
	// there: the kill -9 fast path trusts it.
	Dial(bind netip.Addr, addr netip.AddrPort, timeout time.Duration) (net.Conn, error)
	// ListenPacket opens a datagram socket on addr ("host:port").
	ListenPacket(addr string) (PacketConn, error)
}

// PacketConn is the part of *net.UDPConn the heartbeat datagrams use.
type PacketConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	LocalAddr() net.Addr
	Close() error
}

// Refused reports that err is a dial's "connection refused": the address
// answered, and nothing listens on its port. A Transport other than OS
// returns an error wrapping syscall.ECONNREFUSED for that.
func Refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// OS is the kernel's network.
type OS struct{}

var _ Transport = OS{}

// Listen is net.Listen("tcp", addr).
func (OS) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// Dial opens a TCP connection with Nagle off: every frame the daemons
// write is a whole message that should leave at once.
func (OS) Dial(bind netip.Addr, addr netip.AddrPort, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if bind.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: bind.AsSlice()}
	}
	nc, err := d.Dial("tcp", addr.String())
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return nc, nil
}

// ListenPacket opens a UDP socket on addr.
func (OS) ListenPacket(addr string) (PacketConn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	return net.ListenUDP("udp", ua)
}

// Or is t, or OS when t is nil: the daemons' options leave it unset.
func Or(t Transport) Transport {
	if t == nil {
		return OS{}
	}
	return t
}
