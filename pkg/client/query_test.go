package client

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// TestQueryErrors: nothing listening is UNREACHABLE; a listener that
// takes the connection and never answers is BUSY, once the timeout has
// passed.
func TestQueryErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	if _, err := Status(closed, time.Second); !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrBusy) {
		t.Errorf("nothing listening: %v, want ErrUnreachable", err)
	}

	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			nc, err := mute.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
		}
	}()
	start := time.Now()
	_, err = Status(netip.MustParseAddrPort(mute.Addr().String()), 200*time.Millisecond)
	if !errors.Is(err, ErrBusy) || errors.Is(err, ErrUnreachable) {
		t.Errorf("a mute listener: %v, want ErrBusy", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a mute listener held Status for %v", took)
	}
}

// TestAdminProvesAndNamesTarget: an admin command names the master it was
// sent to and proves the password over the nonce and cluster id of that
// master's hello, in the one handshake every request uses (an admin
// hello, then the request on the same connection).
func TestAdminProvesAndNamesTarget(t *testing.T) {
	const pw = "admin-password-0123"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan protocol.AdminReq, 1)
	var theirs frame.Hello
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		h, err := frame.ReadHello(nc)
		if err != nil || h.Kind != frame.KindAdmin {
			close(got)
			return
		}
		theirs = frame.Hello{Proto: frame.ProtocolVersion, Kind: frame.KindMaster, Cluster: "C9", Nonce: []byte("nonce-of-this-co")}
		if frame.WriteFrame(nc, theirs) != nil {
			return
		}
		m, err := frame.RegistryOf(protocol.AdminReq{}).ReadFrame(nc, frame.DefaultMaxFrame)
		if err != nil {
			close(got)
			return
		}
		req := *m.(*protocol.AdminReq)
		got <- req
		_ = frame.WriteFrame(nc, protocol.AdminResp{ID: req.ID, OK: true, Text: "done"})
	}()
	addr := netip.MustParseAddrPort(ln.Addr().String())
	r, err := Admin(addr, protocol.AdminReq{ID: 4, Kind: roles.AdminStepDown}, pw, 2*time.Second)
	if err != nil || !r.OK || r.ID != 4 {
		t.Fatalf("Admin = %+v, %v", r, err)
	}
	req, ok := <-got
	if !ok {
		t.Fatal("the master did not get an admin hello and a request")
	}
	if req.Target != addr.Addr() {
		t.Errorf("the command names %v, was sent to %v", req.Target, addr.Addr())
	}
	if want := protocol.AdminProof(pw, theirs.Nonce, "C9", req); string(req.Proof) != string(want) {
		t.Errorf("proof %x, want %x", req.Proof, want)
	}
}
