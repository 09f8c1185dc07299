package memnet

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/transport"
)

// sockets binds a packet socket on each of from and to.
func sockets(t *testing.T, n *Network, from, to netip.Addr) (src, dst transport.PacketConn) {
	t.Helper()
	src, err := n.Host(from).ListenPacket(":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	dst, err = n.Host(to).ListenPacket(":9420")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	return src, dst
}

// recv reads one datagram, or fails the test after a while.
func recv(t *testing.T, pc transport.PacketConn) (string, netip.AddrPort) {
	t.Helper()
	type res struct {
		n    int
		from netip.AddrPort
		err  error
	}
	b := make([]byte, 100)
	ch := make(chan res, 1)
	go func() {
		k, from, err := pc.ReadFromUDPAddrPort(b)
		ch <- res{k, from, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read: %v", r.err)
		}
		return string(b[:r.n]), r.from
	case <-time.After(5 * time.Second):
		pc.Close()
		<-ch
		t.Fatal("no datagram")
	}
	return "", netip.AddrPort{}
}

func send(t *testing.T, pc transport.PacketConn, s string, to netip.AddrPort) {
	t.Helper()
	if k, err := pc.WriteToUDPAddrPort([]byte(s), to); err != nil || k != len(s) {
		t.Fatalf("send %q: %d, %v", s, k, err)
	}
}

func TestDatagramDelivery(t *testing.T) {
	const lat = 10 * time.Millisecond
	n := newNet(t)
	n.SetLatency(lat)
	src, dst := sockets(t, n, ip1, ip2)
	to := addrPort(dst.LocalAddr())
	start := time.Now()
	b := []byte("beat")
	send(t, src, string(b), to)
	copy(b, "XXXX") // the datagram is a copy
	got, from := recv(t, dst)
	if got != "beat" || from != addrPort(src.LocalAddr()) || from.Addr() != ip1 {
		t.Fatalf("got %q from %v", got, from)
	}
	if el := time.Since(start); el < lat {
		t.Errorf("datagram landed after %v, less than the latency", el)
	}
	// Cut to the reader's buffer, as the kernel cuts.
	send(t, src, "0123456789", to)
	k, _, err := dst.ReadFromUDPAddrPort(make([]byte, 4))
	if err != nil || k != 4 {
		t.Fatalf("short read: %d, %v", k, err)
	}
	if _, err := src.WriteToUDPAddrPort(make([]byte, maxDatagram4+1), to); !errors.Is(err, syscall.EMSGSIZE) {
		t.Errorf("an oversized datagram: %v; want EMSGSIZE", err)
	}
	// Nothing bound there: dropped without a word to the sender.
	send(t, src, "lost", netip.AddrPortFrom(ip2, 1))
	st := n.Stats()
	if st.DatagramsSent != 3 || st.DatagramsDelivered != 2 || st.DatagramsDropped != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestDatagramLoss: the loss rolls come from the seed, so a seed loses the
// same datagrams each run.
func TestDatagramLoss(t *testing.T) {
	const sends = 2000
	lost := func(seed int64) int64 {
		n := New(seed)
		defer n.Close()
		n.SetLoss(0.3)
		src, dst := sockets(t, n, ip1, ip2)
		to := addrPort(dst.LocalAddr())
		for i := range sends {
			if i%packetQueue == 0 { // keep the queue from filling: drain it
				drain(dst)
			}
			send(t, src, "x", to)
		}
		st := n.Stats()
		if st.DatagramsLost+st.DatagramsDelivered != sends || st.DatagramsDropped != 0 {
			t.Errorf("seed %d: stats %+v", seed, st)
		}
		return st.DatagramsLost
	}
	a, b := lost(7), lost(7)
	if a != b {
		t.Fatalf("seed 7 lost %d then %d", a, b)
	}
	if a < sends*25/100 || a > sends*35/100 {
		t.Fatalf("lost %d of %d at p=0.3", a, sends)
	}
}

// drain empties pc's queue, landed or not.
func drain(pc transport.PacketConn) {
	p := pc.(*packetConn)
	p.mu.Lock()
	p.q = nil
	p.mu.Unlock()
}

func TestDatagramBlocked(t *testing.T) {
	n := newNet(t)
	src, dst := sockets(t, n, ip1, ip2)
	back, err := n.Host(ip2).ListenPacket(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	n.Block(ip1, ip2)
	send(t, src, "dropped", addrPort(dst.LocalAddr()))
	send(t, back, "other way", addrPort(src.LocalAddr()))
	if got, _ := recv(t, src); got != "other way" {
		t.Fatalf("got %q", got)
	}
	n.Unblock(ip1, ip2)
	send(t, src, "through", addrPort(dst.LocalAddr()))
	if got, _ := recv(t, dst); got != "through" {
		t.Fatalf("got %q: the blocked datagram was not dropped", got)
	}
	if st := n.Stats(); st.DatagramsDropped != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestDatagramQueueBound(t *testing.T) {
	n := newNet(t)
	src, dst := sockets(t, n, ip1, ip2)
	to := addrPort(dst.LocalAddr())
	for range packetQueue + 100 {
		send(t, src, "x", to)
	}
	if st := n.Stats(); st.DatagramsDelivered != packetQueue || st.DatagramsDropped != 100 {
		t.Fatalf("stats %+v", st)
	}
	drain(dst)
	send(t, src, "room", to)
	if got, _ := recv(t, dst); got != "room" {
		t.Fatalf("got %q", got)
	}
}

func TestDatagramClose(t *testing.T) {
	n := newNet(t)
	src, dst := sockets(t, n, ip1, ip2)
	errc := make(chan error, 1)
	go func() { _, _, err := dst.ReadFromUDPAddrPort(make([]byte, 1)); errc <- err }()
	time.Sleep(short / 3)
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a read waiting at Close: %v; want net.ErrClosed", err)
	}
	if err := dst.Close(); err == nil {
		t.Error("a second Close succeeded")
	}
	if _, err := dst.WriteToUDPAddrPort([]byte("x"), addrPort(src.LocalAddr())); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write on a closed socket: %v", err)
	}
	// The port is free again.
	again, err := n.Host(ip2).ListenPacket(dst.LocalAddr().String())
	if err != nil {
		t.Fatalf("rebind after Close: %v", err)
	}
	again.Close()
}
