package node

import (
	"fmt"
	"net"
	"net/netip"
)

// SourceFor is the address the kernel would send from towards to: a UDP
// "connection" is made (no packet leaves) and its local address read.
func SourceFor(to netip.AddrPort) (netip.Addr, error) {
	c, err := net.Dial("udp", to.String())
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	ap, err := netip.ParseAddrPort(c.LocalAddr().String())
	if err != nil {
		return netip.Addr{}, fmt.Errorf("local address %v: %w", c.LocalAddr(), err)
	}
	return ap.Addr().Unmap(), nil
}
