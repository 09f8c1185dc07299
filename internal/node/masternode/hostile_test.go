package masternode

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	"github.com/prometheus/client_golang/prometheus"
)

// Hostile and careless peers played by hand against an in-process master
// (security review C1, H1, M1, M6). Every peer dials from its own loopback
// address, as a real one would from its own host.

// fakeCS is one hand-driven chunkserver connection.
type fakeCS struct {
	t     *testing.T
	nc    net.Conn
	id    wire.CSID
	acks  atomic.Int64 // heartbeats answered
	wmu   sync.Mutex
	done  chan struct{}
	voted chan struct{}
}

// fakeCSIn is what a chunkserver reads from a master (csnode's registry).
var fakeCSIn = frame.RegistryOf(protocol.AuthChallenge{}, protocol.RegisterReply{}, roles.ProbeReply{}, roles.Heartbeat{}, roles.VoteRelease{}, roles.Redirect{}, protocol.TrustRecord{})

// dialFrom connects from src (port chosen by the kernel) to addr.
func dialFrom(t *testing.T, src string, addr net.Addr) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	nc, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// connectCS opens a chunkserver connection to n from src with hello id id
// and answers the challenge (with code when given). err: the master closed
// it during the handshake.
func connectCS(t *testing.T, n *MasterNode, src string, id wire.CSID, code string) (*fakeCS, error) {
	t.Helper()
	_, csAddr, _ := n.Addrs()
	nc := dialFrom(t, src, csAddr)
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	if err := frame.WriteFrame(nc, frame.Hello{Proto: frame.ProtocolVersion, Kind: frame.KindChunkserver, ID: uint32(id)}); err != nil {
		return nil, err
	}
	h, err := frame.ReadHello(nc)
	if err != nil {
		return nil, err
	}
	m, err := fakeCSIn.ReadFrame(nc, frame.MaxHelloFrame)
	if err != nil {
		return nil, err
	}
	ch := m.(*protocol.AuthChallenge)
	var mac []byte
	if code != "" {
		mac = protocol.ChunkserverProof(code, ch.Nonce, h.Cluster, node.LocalAddr(nc))
	}
	if err := frame.WriteFrame(nc, protocol.AuthProof{MAC: mac}); err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return &fakeCS{t: t, nc: nc, id: id, done: make(chan struct{}), voted: make(chan struct{})}, nil
}

func (f *fakeCS) send(m wire.Message) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_ = f.nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_ = frame.WriteFrame(f.nc, m)
}

// register asks for an id for port until the LEADER gives one.
func (f *fakeCS) register(port uint16) wire.CSID {
	f.t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		f.send(protocol.RegisterReq{Port: port, VoterOnly: true})
		_ = f.nc.SetReadDeadline(time.Now().Add(time.Second))
		m, err := fakeCSIn.ReadFrame(f.nc, frame.DefaultMaxFrame)
		if err != nil {
			f.t.Fatalf("waiting for an id: %v", err)
		}
		if r, ok := m.(*protocol.RegisterReply); ok && r.ID != wire.NoCS {
			_ = f.nc.SetReadDeadline(time.Time{})
			return r.ID
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatal("no id assigned")
	return 0
}

// vote opens a vote session and answers every heartbeat like a faithful
// voter, until the connection ends (then done is closed).
func (f *fakeCS) vote(port uint16, session uint64) {
	f.send(roles.VoteHello{CS: f.id, Port: port, VoterOnly: true, Session: session})
	go func() {
		defer close(f.done)
		for {
			m, err := fakeCSIn.ReadFrame(f.nc, frame.DefaultMaxFrame)
			if err != nil {
				return
			}
			if hb, ok := m.(*roles.Heartbeat); ok {
				f.send(roles.HeartbeatAck{CS: f.id, Session: hb.Session, Seq: hb.Seq, OK: true, Granted: hb.Lease,
					MaxEpoch: hb.Epoch, EpochOwner: hb.From, KnownReg: hb.RegVersion, InForce: hb.InForce,
					Commit: hb.Commit, CommitTag: hb.Epoch})
				if f.acks.Add(1) == 1 {
					close(f.voted)
				}
			}
		}
	}()
}

// closedByPeer reports whether the master closed nc within d (reads
// return EOF or a reset rather than time out); what arrives meanwhile is
// skipped.
func closedByPeer(nc net.Conn, d time.Duration) bool {
	_ = nc.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, nc)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// csRow is chunkserver id in st (zero if not listed).
func csRow(st protocol.StatusResp, id wire.CSID) protocol.CSStatus {
	for _, c := range st.Chunkservers {
		if c.ID == id {
			return c
		}
	}
	return protocol.CSStatus{}
}

// leaderWithVoter starts a solo master, waits for it to lead, and has a
// faithful voter at src register (CSSERV port port) and vote for it.
func leaderWithVoter(t *testing.T, src string, port uint16, mod func(*MasterOptions)) (*MasterNode, *prometheus.Registry, *fakeCS) {
	t.Helper()
	return leaderWithVoterIn(t, nodetest.StoreWithChanges(t, netip.MustParseAddr("127.0.0.1"), 10), src, port, mod)
}

// leaderWithVoterIn is leaderWithVoter over the founder's store in dir.
func leaderWithVoterIn(t *testing.T, dir, src string, port uint16, mod func(*MasterOptions)) (*MasterNode, *prometheus.Registry, *fakeCS) {
	t.Helper()
	self := netip.MustParseAddr("127.0.0.1")
	n, _, reg := startSoloWith(t, dir, self, mod)
	if !nodetest.Until(5*time.Second, func() bool { return nodetest.StatusOf(t, n).Role == roles.Leader }) {
		t.Fatal("the master did not lead")
	}
	f, err := connectCS(t, n, src, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	id := f.register(port)
	f.nc.Close()
	if f, err = connectCS(t, n, src, id, ""); err != nil {
		t.Fatal(err)
	}
	f.vote(port, 1<<32|1)
	if !nodetest.Until(5*time.Second, func() bool { return csRow(nodetest.StatusOf(t, n), id).Voting }) {
		t.Fatalf("the voter is not counted: %+v", nodetest.StatusOf(t, n).Chunkservers)
	}
	return n, reg, f
}

// TestCloneRefused (review C1): a second connection with a connected
// chunkserver's id from another address (a cloned VM, or an impostor with
// the right AUTH_CODE) is refused at once, logged, counted and listed; the
// real one keeps its connection and its vote. When the registered address
// reconnects while an impostor holds the id, the registered one wins.
func TestCloneRefused(t *testing.T) {
	nodetest.NoLeaks(t)
	n, reg, real := leaderWithVoter(t, "127.0.0.2", 40001, nil)
	id := real.id

	clone, err := connectCS(t, n, "127.0.0.3", id, "")
	if err == nil && !closedByPeer(clone.nc, 2*time.Second) {
		t.Fatal("the clone's connection is still open")
	}
	before := real.acks.Load()
	if !nodetest.Until(2*time.Second, func() bool { return real.acks.Load() > before+3 }) {
		t.Fatal("the real chunkserver gets no heartbeats after the clone tried")
	}
	select {
	case <-real.done:
		t.Fatal("the real chunkserver's connection was closed")
	default:
	}
	st := nodetest.StatusOf(t, n)
	if row := csRow(st, id); !row.Connected || !row.Voting {
		t.Fatalf("the real chunkserver after the clone: %+v", row)
	}
	if len(st.Clones) != 1 || st.Clones[0].ID != id || st.Clones[0].Addr != netip.MustParseAddr("127.0.0.3") ||
		st.Clones[0].Holder != netip.MustParseAddr("127.0.0.2") || st.Clones[0].Count != 1 {
		t.Fatalf("clones listed: %+v", st.Clones)
	}
	if v := nodetest.Labelled(t, reg, "mfs_master_connections_refused_total", map[string]string{"port": "matocs", "reason": "clone"}); v != 1 {
		t.Fatalf("refused clones counted: %v", v)
	}

	// The real one goes; an impostor takes the free id (it may: its
	// VoteHello would be answered IDTaken); the registered address
	// comes back and wins.
	real.nc.Close()
	<-real.done
	if !nodetest.Until(2*time.Second, func() bool { return !csRow(nodetest.StatusOf(t, n), id).Connected }) {
		t.Fatal("the closed connection is still listed")
	}
	// The vote it granted is counted until its lease ends (the voter's
	// side closed: roles.ConnLost.ByPeer); then the LEADER, left with no
	// vote, steps down and closes what is connected. Past that, so the
	// step-down does not close the connections below.
	if !nodetest.Until(3*time.Second, func() bool { return !csRow(nodetest.StatusOf(t, n), id).Voting }) {
		t.Fatal("the closed connection's vote is still counted after its lease")
	}
	imp, err := connectCS(t, n, "127.0.0.3", id, "")
	if err != nil {
		t.Fatal(err)
	}
	if !nodetest.Until(2*time.Second, func() bool { return csRow(nodetest.StatusOf(t, n), id).Connected }) {
		t.Fatal("the impostor's connection is not the id's")
	}
	back, err := connectCS(t, n, "127.0.0.2", id, "")
	if err != nil {
		t.Fatal(err)
	}
	if !closedByPeer(imp.nc, 2*time.Second) {
		t.Fatal("the impostor kept the id against its registered address")
	}
	if closedByPeer(back.nc, 200*time.Millisecond) {
		t.Fatal("the registered address was refused")
	}
	if st := nodetest.StatusOf(t, n); !csRow(st, id).Connected || len(st.Clones) != 1 || st.Clones[0].Count != 2 {
		t.Fatalf("clones listed: %+v", st.Clones)
	}
}

// TestReconnectEndsOldSession (review C1): a chunkserver that reconnects
// from the same address replaces its old connection, and the core stops
// counting the old session at once rather than when its lease runs out.
func TestReconnectEndsOldSession(t *testing.T) {
	nodetest.NoLeaks(t)
	n, _, first := leaderWithVoter(t, "127.0.0.2", 40001, func(o *MasterOptions) {
		// A long lease: counted until it lapses would be seconds.
		o.Core.VoteLease, o.Core.ElectTimeout = 5*time.Second, 6*time.Second
	})
	second, err := connectCS(t, n, "127.0.0.2", first.id, "")
	if err != nil {
		t.Fatal(err)
	}
	if !closedByPeer(first.nc, 2*time.Second) {
		t.Fatal("the old connection was not closed")
	}
	if !nodetest.Until(time.Second, func() bool { return !csRow(nodetest.StatusOf(t, n), first.id).Voting }) {
		t.Fatal("the replaced connection's vote is still counted")
	}
	second.nc.Close()
}

// TestCSInfoBounded (review M1): what a chunkserver tells for the
// listings is cut to a few hundred bytes, and forgotten with its
// connection.
func TestCSInfoBounded(t *testing.T) {
	nodetest.NoLeaks(t)
	n, _, f := leaderWithVoter(t, "127.0.0.2", 40001, nil)
	long := string(make([]byte, 30000)) // two of them still fit a chunkserver frame (64 KiB)
	f.send(protocol.CSInfo{ID: f.id, Labels: long, Version: long})
	var row protocol.CSStatus
	if !nodetest.Until(2*time.Second, func() bool { row = csRow(nodetest.StatusOf(t, n), f.id); return row.Labels != "" }) {
		t.Fatal("no labels listed")
	}
	if len(row.Labels) > maxInfoString {
		t.Fatalf("labels of %d bytes kept", len(row.Labels))
	}
	f.nc.Close()
	if !nodetest.Until(2*time.Second, func() bool { row = csRow(nodetest.StatusOf(t, n), f.id); return !row.Connected }) {
		t.Fatal("still connected")
	}
	if row.Labels != "" {
		t.Fatalf("labels kept after the connection closed: %d bytes", len(row.Labels))
	}
}

// TestRegistrationFlood (review H1, M1): one address asking for many new
// ids gets a few; the rest are refused and counted.
func TestRegistrationFlood(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")
	n, _, reg := startSolo(t, nodetest.StoreWithChanges(t, self, 10), self)
	if !nodetest.Until(5*time.Second, func() bool { return nodetest.StatusOf(t, n).Role == roles.Leader }) {
		t.Fatal("the master did not lead")
	}
	f, err := connectCS(t, n, "127.0.0.5", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	const asked = 10
	for i := 0; i < asked; i++ {
		f.send(protocol.RegisterReq{Port: uint16(41000 + i), VoterOnly: true})
	}
	got := 0
	_ = f.nc.SetReadDeadline(time.Now().Add(time.Second))
	for {
		m, err := fakeCSIn.ReadFrame(f.nc, frame.DefaultMaxFrame)
		if err != nil {
			break
		}
		if r, ok := m.(*protocol.RegisterReply); ok && r.ID != wire.NoCS {
			got++
		}
	}
	if got != regPerSource {
		t.Fatalf("%d ids given to one address, want %d", got, regPerSource)
	}
	if v := counter(t, reg, "mfs_master_registrations_refused_total"); v != asked-regPerSource {
		t.Fatalf("%v refusals counted, want %d", v, asked-regPerSource)
	}
}

// freePort returns a port that is free on addr now.
func freePort(t *testing.T, addr string) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return netip.MustParseAddrPort(ln.Addr().String()).Port()
}

// masterAt starts one of the masters in ms at self (a founder with ten
// changes, or an empty one as with -e) with AUTH_CODE code.
func masterAt(t *testing.T, self netip.Addr, ms []masterhost.Master, founder bool, code string) (*MasterNode, *prometheus.Registry) {
	t.Helper()
	dir := t.TempDir()
	if founder {
		dir = nodetest.StoreWithChanges(t, self, 10)
	}
	var port uint16
	for _, m := range ms {
		if m.Addr.Addr() == self {
			port = m.Addr.Port()
		}
	}
	n, _, reg := startSoloWith(t, dir, self, func(o *MasterOptions) {
		ids := []wire.MasterID{}
		for _, m := range ms {
			ids = append(ids, m.ID)
		}
		core := master.DefaultConfig(masterhost.IDOf(self), ids)
		core.SelfNominateAfter = 20 * time.Millisecond
		o.Core, o.Self, o.Masters, o.Bind, o.AuthCode = core, self, ms, self, code
		o.ListenML = netip.AddrPortFrom(self, port).String()
		o.ListenCS, o.ListenCL = self.String()+":0", self.String()+":0"
	})
	return n, reg
}

func masterPair(t *testing.T) (a, b netip.Addr, ms []masterhost.Master) {
	a, b = netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")
	for _, x := range []netip.Addr{a, b} {
		ms = append(ms, masterhost.Master{ID: masterhost.IDOf(x), Addr: netip.AddrPortFrom(x, freePort(t, x.String()))})
	}
	return a, b, ms
}

// TestMasterLinksProveAuthCode (review M6): masters prove AUTH_CODE to each
// other on 9419. With the same code an empty master syncs from the
// LEADER; with another code neither hears the other, and the refusals are
// counted.
func TestMasterLinksProveAuthCode(t *testing.T) {
	nodetest.NoLeaks(t)
	t.Run("same code", func(t *testing.T) {
		a, b, ms := masterPair(t)
		m1, _ := masterAt(t, a, ms, true, "s3cret")
		m2, _ := masterAt(t, b, ms, false, "s3cret")
		if !nodetest.Until(10*time.Second, func() bool {
			st := nodetest.StatusOf(t, m2)
			return st.Leader == a && st.MetaVersion >= 10 && nodetest.StatusOf(t, m1).Role == roles.Leader
		}) {
			t.Fatalf("the empty master did not sync: %+v", nodetest.StatusOf(t, m2))
		}
		// Each names the whole set, so that mfscli asking one of them
		// knows of the other (issue 37).
		if got := nodetest.StatusOf(t, m2).Masters; !slices.Equal(got, []netip.Addr{a, b}) {
			t.Fatalf("the status names the masters %v, want [%v %v]", got, a, b)
		}
	})
	t.Run("other code", func(t *testing.T) {
		a, b, ms := masterPair(t)
		_, reg1 := masterAt(t, a, ms, true, "s3cret")
		m2, reg2 := masterAt(t, b, ms, false, "guess")
		auth := map[string]string{"port": "matoml", "reason": "auth"}
		if !nodetest.Until(5*time.Second, func() bool {
			return nodetest.Labelled(t, reg1, "mfs_master_connections_refused_total", auth) > 0 &&
				nodetest.Labelled(t, reg2, "mfs_master_connections_refused_total", auth) > 0
		}) {
			t.Fatal("no refused master proofs counted")
		}
		if st := nodetest.StatusOf(t, m2); st.Leader.IsValid() || st.MetaVersion != 0 {
			t.Fatalf("a master without the code was heard: %+v", st)
		}
	})
}

// TestMasterPortRefusesForgery (review M6): a process that binds another
// master's address but does not hold AUTH_CODE cannot unseat the LEADER
// with one PeerStatus; it is cut off and counted.
func TestMasterPortRefusesForgery(t *testing.T) {
	nodetest.NoLeaks(t)
	a, b, ms := masterPair(t)
	m1, reg := masterAt(t, a, ms, true, "s3cret")
	if !nodetest.Until(5*time.Second, func() bool { return nodetest.StatusOf(t, m1).Role == roles.Leader }) {
		t.Fatal("no LEADER")
	}
	epoch := nodetest.StatusOf(t, m1).Epoch
	ml, _, _ := m1.Addrs()
	nc := dialFrom(t, b.String(), ml)
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	if err := frame.WriteFrame(nc, frame.Hello{Proto: frame.ProtocolVersion, Cluster: "C1", Kind: frame.KindMaster, ID: uint32(masterhost.IDOf(b))}); err != nil {
		t.Fatal(err)
	}
	if _, err := frame.ReadHello(nc); err != nil {
		t.Fatal(err)
	}
	_ = frame.WriteFrame(nc, roles.PeerStatus{From: masterhost.IDOf(b), Incarnation: 1 << 62, Role: roles.Leader, Epoch: epoch + 100,
		Leader: masterhost.IDOf(b), Eligible: true})
	if !closedByPeer(nc, 2*time.Second) {
		t.Fatal("the forger's connection is still open")
	}
	if st := nodetest.StatusOf(t, m1); st.Role != roles.Leader || st.Epoch != epoch {
		t.Fatalf("after the forged status: %v epoch %d (was LEADER at %d)", st.Role, st.Epoch, epoch)
	}
	if v := nodetest.Labelled(t, reg, "mfs_master_connections_refused_total", map[string]string{"port": "matoml", "reason": "auth"}); v < 1 {
		t.Fatalf("refusal not counted: %v", v)
	}
}
