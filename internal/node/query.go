package node

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// What Query's errors wrap, for errors.Is: mfscli shows the first as
// UNREACHABLE, the second as BUSY. The text of the error still starts with
// "unreachable: " or "busy: ".
var (
	// ErrUnreachable: no connection (refused, no route, dial timeout).
	ErrUnreachable = errors.New("unreachable")
	// ErrBusy: connected, but no answer in time, or not the answer asked for.
	ErrBusy = errors.New("busy")
)

// Query sends one request to a master's client port (9421) and returns its
// answer: what mfscli and the tests use. A master that does not connect
// gives an error wrapping ErrUnreachable (and the dial error); one that
// connects but does not answer in time, one wrapping ErrBusy.
func Query(addr netip.AddrPort, req wire.Message, timeout time.Duration) (wire.Message, error) {
	return query(addr, req, "", timeout)
}

// Admin sends an admin command to the master at addr (req.Target is set to
// addr's address), proving password (ADMIN_PASSWORD) with the nonce of the
// master's hello when it is set.
func Admin(addr netip.AddrPort, req protocol.AdminReq, password string, timeout time.Duration) (protocol.AdminResp, error) {
	m, err := query(addr, req, password, timeout)
	if err != nil {
		return protocol.AdminResp{}, err
	}
	r, ok := m.(protocol.AdminResp)
	if !ok {
		return protocol.AdminResp{}, fmt.Errorf("%w: answered %T", ErrBusy, m)
	}
	return r, nil
}

func query(addr netip.AddrPort, req wire.Message, password string, timeout time.Duration) (wire.Message, error) {
	nc, _, err := dial(netip.Addr{}, addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer nc.Close()
	end := time.Now().Add(timeout)
	h := frame.Hello{Proto: frame.ProtocolVersion, Kind: frame.KindAdmin}
	theirs, err := frame.DialHello(nc, h, "", frame.KindMaster, timeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	if a, ok := req.(protocol.AdminReq); ok {
		// The master it is meant for is the one dialed, whatever answers:
		// a relay cannot move the command to another master.
		a.Target = addr.Addr()
		if password != "" {
			a.Proof = protocol.AdminProof(password, theirs.Nonce, theirs.Cluster, a)
		}
		req = a
	}
	_ = nc.SetDeadline(end)
	if err := frame.WriteFrame(nc, req); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	m, err := protocol.ClientIn().ReadFrame(nc, frame.DefaultMaxFrame)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	return deref(m), nil
}

// Status asks one master for its state.
func Status(addr netip.AddrPort, timeout time.Duration) (protocol.StatusResp, error) {
	m, err := Query(addr, protocol.StatusReq{}, timeout)
	if err != nil {
		return protocol.StatusResp{}, err
	}
	st, ok := m.(protocol.StatusResp)
	if !ok {
		return protocol.StatusResp{}, fmt.Errorf("%w: answered %T", ErrBusy, m)
	}
	return st, nil
}
