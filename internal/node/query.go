package node

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Query sends one request to a master's client port (9421) and returns its
// answer: what mfscli and the tests use. A master that does not connect
// gives refused or a dial error (UNREACHABLE); one that connects but does
// not answer in time, a timeout (BUSY).
func Query(addr netip.AddrPort, req wire.Message, timeout time.Duration) (wire.Message, error) {
	nc, _, err := dial(netip.Addr{}, addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("unreachable: %w", err)
	}
	defer nc.Close()
	end := time.Now().Add(timeout)
	h := frame.Hello{Proto: frame.ProtocolVersion, Kind: frame.KindAdmin}
	if _, err := dialHello(nc, h, "", frame.KindMaster, timeout); err != nil {
		return nil, fmt.Errorf("busy: %w", err)
	}
	_ = nc.SetDeadline(end)
	if err := frame.WriteFrame(nc, req); err != nil {
		return nil, fmt.Errorf("busy: %w", err)
	}
	m, err := cltomaIn.ReadFrame(nc, frame.DefaultMaxFrame)
	if err != nil {
		return nil, fmt.Errorf("busy: %w", err)
	}
	return deref(m), nil
}

// Status asks one master for its state.
func Status(addr netip.AddrPort, timeout time.Duration) (StatusResp, error) {
	m, err := Query(addr, StatusReq{}, timeout)
	if err != nil {
		return StatusResp{}, err
	}
	st, ok := m.(StatusResp)
	if !ok {
		return StatusResp{}, fmt.Errorf("busy: answered %T", m)
	}
	return st, nil
}
