package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// What the errors of Query, Status and Admin wrap, for errors.Is: mfscli
// shows the first as UNREACHABLE, the second as BUSY. The text of the
// error starts with "unreachable: " or "busy: ".
var (
	// ErrUnreachable: no connection (refused, no route, dial timeout).
	ErrUnreachable = errors.New("unreachable")
	// ErrBusy: connected, but no answer in time, or not the answer asked
	// for (a hello that is not a master's of the cluster, say).
	ErrBusy = errors.New("busy")
)

// replies decodes what a client reads from a master's client port.
var replies = protocol.ClientIn()

// dial opens a connection to the client port of the master at addr and
// exchanges hellos, by deadline: the one handshake of every request this
// package sends. kind is what this side is (KindClient for a session,
// KindAdmin for the one-off requests); the master's hello must name
// cluster (empty: any), and it is returned for the proofs of the
// connection, made over its nonce. A failure to connect wraps
// ErrUnreachable; one after connecting, ErrBusy.
func dial(addr netip.AddrPort, kind frame.Kind, cluster string, deadline time.Time, bind netip.Addr, via Dialer) (net.Conn, frame.Hello, error) {
	var nc net.Conn
	var err error
	if via != nil {
		nc, err = via(addr, deadline)
	} else {
		d := net.Dialer{Deadline: deadline}
		if bind.IsValid() {
			d.LocalAddr = &net.TCPAddr{IP: bind.AsSlice()}
		}
		nc, err = d.Dial("tcp", addr.String())
	}
	if err != nil {
		return nil, frame.Hello{}, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	theirs, err := frame.DialHello(nc, frame.Ours(kind), cluster, frame.KindMaster, time.Until(deadline))
	if err != nil {
		nc.Close()
		return nil, theirs, fmt.Errorf("%w: %s: %w", ErrBusy, addr, err)
	}
	return nc, theirs, nil
}

// Query sends one request to the client port (9421) of the master at
// addr, whatever its role, and returns its answer: a protocol.StatusResp,
// a protocol.AdminResp or a roles.ClientReply. It is one exchange on a
// connection of its own: no redirect is followed and nothing is retried
// (a change without a session id is given one by the master, never
// deduplicated). Connecting and the hellos may take timeout, the answer
// timeout more. A master that does not connect gives an error wrapping
// ErrUnreachable (and the dial error); one that connects but does not
// answer in time, one wrapping ErrBusy.
func Query(addr netip.AddrPort, req wire.Message, timeout time.Duration) (wire.Message, error) {
	return query(addr, req, "", timeout)
}

// Status asks the master at addr for its state (what mfscli lists), as
// Query does.
func Status(addr netip.AddrPort, timeout time.Duration) (protocol.StatusResp, error) {
	return StatusWith(addr, protocol.StatusReq{}, timeout)
}

// StatusWith is Status with a request of its own (more of the history).
func StatusWith(addr netip.AddrPort, req protocol.StatusReq, timeout time.Duration) (protocol.StatusResp, error) {
	m, err := Query(addr, req, timeout)
	if err != nil {
		return protocol.StatusResp{}, err
	}
	st, ok := m.(protocol.StatusResp)
	if !ok {
		return protocol.StatusResp{}, fmt.Errorf("%w: %s answered %T", ErrBusy, addr, m)
	}
	return st, nil
}

// Admin sends an operator command to the master at addr, as Query does.
// req.Target is set to addr's address: the master the command is meant
// for is the one dialed, and a master with ADMIN_PASSWORD refuses one
// that names another. With password set, the command proves it
// (protocol.AdminProof over the nonce of the master's hello); the password
// itself is never sent. A refusal is an answer, not an error: resp.OK is
// false, resp.Code says why and resp.Text says it in words.
func Admin(addr netip.AddrPort, req protocol.AdminReq, password string, timeout time.Duration) (protocol.AdminResp, error) {
	m, err := query(addr, req, password, timeout)
	if err != nil {
		return protocol.AdminResp{}, err
	}
	r, ok := m.(protocol.AdminResp)
	if !ok {
		return protocol.AdminResp{}, fmt.Errorf("%w: %s answered %T", ErrBusy, addr, m)
	}
	return r, nil
}

func query(addr netip.AddrPort, req wire.Message, password string, timeout time.Duration) (wire.Message, error) {
	nc, theirs, err := dial(addr, frame.KindAdmin, "", time.Now().Add(timeout), netip.Addr{}, nil)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	if a, ok := req.(protocol.AdminReq); ok {
		// The master it is meant for is the one dialed, whatever answers:
		// a relay cannot move the command to another master.
		a.Target = addr.Addr()
		if password != "" {
			a.Proof = protocol.AdminProof(password, theirs.Nonce, theirs.Cluster, a)
		}
		req = a
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	if err := frame.WriteFrame(nc, req); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	m, err := replies.ReadFrame(nc, frame.DefaultMaxFrame)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	switch r := m.(type) {
	case *protocol.StatusResp:
		return *r, nil
	case *protocol.AdminResp:
		return *r, nil
	case *roles.ClientReply:
		return *r, nil
	}
	return nil, fmt.Errorf("%w: %s answered %T", ErrBusy, addr, m)
}
