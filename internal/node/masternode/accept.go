package masternode

import (
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/transport"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	"github.com/rs/zerolog"
)

// acceptor takes the connections of a master's three ports and hands the
// loop checked inputs (ports.go): it owns the listeners, the caps on
// connections and on large bodies in flight, the count of failed proofs
// per source (auth) and the rate of refusal logs. Each connection's reader
// checks its hello, its identity and AUTH_CODE, reads its frames under
// their deadlines and budget, checks admin proofs and judges client
// requests by mfsexports.cfg, so that what reaches the loop passed all of
// it. Whatever it refuses is closed, counted and logged.
//
// Its readers run on their own goroutines; adminAllowed and observeGuards
// run on the loop. What it holds of its master (opt, book, hello, the
// inboxes, done) is read-only or safe for any goroutine.
type acceptor struct {
	opt     *MasterOptions // the master's, read only
	log     zerolog.Logger
	metrics *obs.MasterMetrics
	book    *atomic.Pointer[masterBook] // the master's set, to check a master port's peer
	hello   func() frame.Hello          // what this master opens with now
	// inbox (votes and peers) and clInbox (clients): where checked
	// inputs go; done: closed when the loop ended (nobody reads them).
	inbox, clInbox chan<- input
	done           <-chan struct{}

	lnML, lnCS, lnCL net.Listener
	conns            *connCounter // open connections per port and source (readers)
	bodies           *bodyBudget  // large frame bodies in flight on 9420 and 9421 (readers)
	auth             *authGuard   // failed proofs per source (readers and loop)
	refusals         *rateLog     // refusal log lines per source (readers and loop)
	// exports is mfsexports.cfg in force (readers judge client requests
	// with it; Reload replaces it).
	exports atomic.Pointer[exportsNow]
	// adminPassword is ADMIN_PASSWORD in force (readers check admin
	// proofs with it; SetAdminPassword replaces it), never nil.
	adminPassword atomic.Pointer[string]
	// backups: the backup being sent on a connection (*node.Conn ->
	// *backupFlow), whose acknowledgements its reader records.
	backups sync.Map
}

// newAcceptor is n's acceptor, with no listener yet (listen), ADMIN_PASSWORD
// as n's options give it and no mfsexports.cfg in force (useExports).
func newAcceptor(n *MasterNode) *acceptor {
	a := &acceptor{opt: &n.opt, log: n.log, metrics: n.metrics, book: &n.book, hello: n.hello,
		inbox: n.inbox, clInbox: n.clInbox, done: n.life.Done(),
		conns: newConnCounter(), bodies: newBodyBudget(largeBodies), auth: &authGuard{}, refusals: &rateLog{}}
	a.adminPassword.Store(&n.opt.AdminPassword)
	return a
}

// listen opens the three ports (tr's listeners, on the options'
// addresses); on an error none stays open.
func (a *acceptor) listen(tr transport.Transport) error {
	for _, l := range []struct {
		ln   *net.Listener
		addr string
	}{{&a.lnML, a.opt.ListenML}, {&a.lnCS, a.opt.ListenCS}, {&a.lnCL, a.opt.ListenCL}} {
		ln, err := tr.Listen(l.addr)
		if err != nil {
			a.closeListeners()
			return err
		}
		*l.ln = ln
	}
	return nil
}

// start accepts on the three ports, one goroutine each.
func (a *acceptor) start() {
	go a.accept(a.lnML, portML, matomlIn, frame.KindMaster)
	go a.accept(a.lnCS, portCS, matocsIn, frame.KindChunkserver)
	go a.accept(a.lnCL, portCL, matoclIn, frame.KindClient, frame.KindAdmin)
}

// closeListeners closes the ports: accept ends, established connections
// stay.
func (a *acceptor) closeListeners() {
	for _, ln := range []net.Listener{a.lnML, a.lnCS, a.lnCL} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// adminCheck is what the reader found of an admin command's proof.
type adminCheck uint8

const (
	adminOpen      adminCheck = iota // no ADMIN_PASSWORD: commands are open
	adminProved                      // the proof checks
	adminMissing                     // no proof
	adminWrong                       // a proof that does not check
	adminElsewhere                   // meant for another master (Target)
)

func (a *acceptor) accept(ln net.Listener, port masterPort, reg *frame.Registry, kinds ...frame.Kind) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		src := remoteAddr(nc)
		// Refused here, before a goroutine or a buffer is spent on it: a
		// source that failed its proofs too often lately, and connections
		// over the port's caps.
		if port != portCL && a.auth.blocked(src, time.Now()) {
			a.refuse(nc, src, port, errAuthRate)
			continue
		}
		if ok, which := a.conns.acquire(port, src); !ok {
			a.refuse(nc, src, port, fmt.Errorf("%w: %s (at most %d, %d per source)", errLimit, which,
				connLimits[port].total, connLimits[port].perSource))
			continue
		}
		go func() {
			defer a.conns.release(port, src)
			a.serveConn(nc, port, reg, kinds)
		}()
	}
}

// refuse closes nc, counts why, and logs it: once per source, port and
// reason per refuseLogEvery, so that a flood does not flood the log.
func (a *acceptor) refuse(nc net.Conn, src netip.Addr, port masterPort, err error) {
	a.cut(nc, src, port, err, "connection refused")
}

// dropped closes an established connection that broke the rules, counts
// and logs it like refuse.
func (a *acceptor) dropped(nc net.Conn, src netip.Addr, port masterPort, err error) {
	a.cut(nc, src, port, err, "connection dropped")
}

func (a *acceptor) cut(nc net.Conn, src netip.Addr, port masterPort, err error, what string) {
	a.cutConn(nc, src, port, err, what, func() { _ = nc.Close() })
}

// cutConn is cut with a close of the caller's (one that lets a last frame
// leave first).
func (a *acceptor) cutConn(nc interface{ RemoteAddr() net.Addr }, src netip.Addr, port masterPort, err error, what string, close func()) {
	reason := refuseReason(err)
	a.metrics.ConnRefused(port.String(), reason) // before the peer can see the close
	close()
	if ok, missed := a.refusals.allow(port.String()+"|"+reason+"|"+src.String(), time.Now()); ok {
		ev := a.log.Warn()
		if reason == reasonEnded {
			ev = a.log.Debug()
		}
		ev.Str(obs.FieldPeer, nc.RemoteAddr().String()).Str("port", port.String()).Str(obs.FieldReason, reason).
			Int("not_logged", missed).Err(err).Msg(what)
	}
}

// remoteAddr is the source address of nc (invalid if it has none).
func remoteAddr(nc net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// maxFrameFor is the largest frame port takes: what its biggest honest
// message needs, so that a peer holding half-sent frames open holds as
// little as it can (a client's change is at most a 4 KiB key and a 256 KiB
// value; a chunkserver sends small messages only; masters send 1 MiB
// batches and snapshot chunks).
func maxFrameFor(port masterPort) uint32 {
	switch port {
	case portCS:
		return 64 << 10
	case portCL:
		return 512 << 10
	}
	return frame.DefaultMaxFrame
}

// bodyBudget is the budget large frames on port draw from: none for the
// master port, whose peers proved AUTH_CODE and send big Appends and
// snapshot chunks.
func (a *acceptor) bodyBudget(port masterPort) *bodyBudget {
	if port == portML {
		return nil
	}
	return a.bodies
}

// idleTimeout is how long a connection on port may send nothing, after
// its hello, before it is cut: three times the longest silence of an
// honest peer there.
func (a *acceptor) idleTimeout(port masterPort) time.Duration {
	if a.opt.idleOverride > 0 {
		return a.opt.idleOverride
	}
	switch port {
	case portCS:
		return csIdle
	case portML:
		return max(mlIdleMin, 3*a.opt.Core.PeerTimeout)
	}
	return clientIdle
}

// serveConn checks a new connection (handshake) and then feeds its frames
// to the loop (read). Whatever a peer sends, the worst outcome is this
// connection closed with a logged reason.
func (a *acceptor) serveConn(nc net.Conn, port masterPort, reg *frame.Registry, kinds []frame.Kind) {
	c, ours, ok := a.handshake(nc, port, kinds)
	if !ok {
		return
	}
	a.read(c, ours, port, reg)
}

// handshake checks a new connection: its hello, a master's identity and
// membership, and AUTH_CODE on the chunkserver and master ports. ours is
// the hello this master sent on it (on the client port with the nonce a
// client's proofs cover). false: refused, closed, counted and logged.
func (a *acceptor) handshake(nc net.Conn, port masterPort, kinds []frame.Kind) (c *node.Conn, ours frame.Hello, ok bool) {
	src := remoteAddr(nc)
	ours = a.hello()
	if port == portCL {
		ours.Nonce = make([]byte, 16)
		_, _ = rand.Read(ours.Nonce)
	}
	peer, err := acceptHello(nc, ours, ours.Cluster, kinds...)
	if err != nil {
		a.refuse(nc, src, port, err)
		return nil, ours, false
	}
	c = node.NewConn(nc, peer)
	if port == portML {
		m, member := a.book.Load().member(wire.MasterID(peer.ID))
		switch {
		case masterhost.IDOf(c.Remote) != wire.MasterID(peer.ID) || (member && m.Addr.Addr() != c.Remote):
			a.refuse(nc, src, port, node.ErrIdentity) // counted before the peer can see the close
			c.Close()
			return nil, ours, false
		case !member:
			// A master this one's MASTER_HOST does not name (removed, or
			// added where this master has not resolved it yet): told so,
			// it stops taking part once every master it reaches says it.
			c.Send(protocol.AuthChallenge{NotMember: true})
			a.cutConn(c.NC, src, port, errStranger, "connection refused", c.CloseAfterFlush)
			return nil, ours, false
		}
	}
	if port == portCS || port == portML {
		if err := a.challenge(c, port, ours.Cluster); err != nil {
			a.refuse(nc, src, port, err) // counted before the peer can see the close
			c.Close()
			return nil, ours, false
		}
	}
	return c, ours, true
}

// read feeds c's frames to the loop until c ends, and tells the loop it
// ended. An admin command goes with what its proof showed; a client's
// proof is kept for its requests, which mfsexports.cfg may refuse here.
func (a *acceptor) read(c *node.Conn, ours frame.Hello, port masterPort, reg *frame.Registry) {
	nc, src := c.NC, remoteAddr(c.NC)
	inbox := a.inbox
	if port == portCL {
		inbox = a.clInbox
	}
	deliver := func(in input) {
		select {
		case inbox <- in:
		case <-a.done: // the loop has ended: nobody will read it
		}
	}
	deliver(input{kind: inOpen, port: port, c: c})
	var proof clientProof // what a client proved (ClientAuth)
	fr := newFrameReader(nc, a.idleTimeout(port), frameTimeout)
	if a.opt.frameOverride > 0 {
		fr.frame = a.opt.frameOverride
	}
	for {
		fr.next()
		m, err := readFrame(reg, fr, maxFrameFor(port), a.bodyBudget(port))
		if err != nil {
			byPeer := !c.Closed() && !c.Slow() && node.EndedByPeer(err)
			switch {
			case c.Slow():
				err = errSlow // we cut it: it did not read its replies
			case c.Closed():
				err = nil // we closed it (replaced, refused, disconnected)
			case errors.Is(err, os.ErrDeadlineExceeded) && fr.started:
				err = fmt.Errorf("%w: %v", errSlow, err)
			case errors.Is(err, os.ErrDeadlineExceeded):
				err = fmt.Errorf("%w: nothing for %v", errIdle, fr.idle)
			case errors.Is(err, errLimit):
				// over the large-body budget: counted as a limit
			case !isFrameError(err):
				err = nil // it ended the connection
			}
			if err != nil {
				a.dropped(nc, src, port, err)
			}
			c.Close()
			deliver(input{kind: inClosed, port: port, c: c, byPeer: byPeer})
			return
		}
		in := input{kind: inMsg, port: port, c: c, msg: node.Deref(m)}
		switch msg := in.msg.(type) {
		case protocol.AdminReq:
			in.admin = a.checkAdmin(c, ours, msg)
		case protocol.ClientAuth:
			proof = clientProof{mac: msg.MAC}
			continue
		case protocol.BackupAck:
			if f, ok := a.backups.Load(c); ok {
				f.(*backupFlow).ack(msg.Offset)
			}
			continue
		case roles.ClientWrite, roles.ClientRead:
			if r := a.clientAccess(c, ours, &proof, msg); r != nil {
				c.Send(*r)
				continue
			}
		}
		deliver(in)
	}
}

// challenge runs the AUTH_CODE exchange on a chunkserver or master
// connection. It always happens, so the other side has one sequence to
// follow; with no AUTH_CODE the nonce is empty and any proof passes. The
// proof binds the cluster id of this master's hello (cluster): a master
// started with -e has none of its own until it syncs, so both sides use
// the acceptor's. A failure counts against the source (authGuard).
func (a *acceptor) challenge(c *node.Conn, port masterPort, cluster string) error {
	var nonce []byte
	if a.opt.AuthCode != "" {
		nonce = make([]byte, protocol.AuthNonceLen)
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
	}
	c.Send(protocol.AuthChallenge{Nonce: nonce})
	_ = c.NC.SetReadDeadline(time.Now().Add(node.HandshakeTimeout))
	defer func() { _ = c.NC.SetReadDeadline(time.Time{}) }()
	in := matocsIn
	if port == portML {
		in = matomlIn
	}
	m, err := in.ReadFrame(c.NC, frame.MaxHelloFrame)
	if err != nil {
		return err
	}
	p, ok := m.(*protocol.AuthProof)
	if ok && a.opt.AuthCode == "" {
		return nil
	}
	var want []byte
	if port == portML {
		want = protocol.MasterProof(a.opt.AuthCode, nonce, cluster, c.Remote)
	} else {
		want = protocol.ChunkserverProof(a.opt.AuthCode, nonce, cluster, c.Remote)
	}
	if !ok || !hmac.Equal(p.MAC, want) {
		if a.auth.failed(c.Remote, time.Now()) {
			a.log.Warn().Str(obs.FieldPeer, c.Remote.String()).Str("port", port.String()).
				Msgf("%d failed AUTH_CODE proofs within %v: this address is refused for %v", authFailMax, authFailWindow, authBlock)
		}
		return node.ErrAuth
	}
	return nil
}

// checkAdmin checks an admin command's proof against ADMIN_PASSWORD, on
// the connection's reader: the nonce and cluster id are those of the hello
// this master sent on it (ours), and the command must name this master,
// by its MASTER_HOST address or the address the connection reached.
func (a *acceptor) checkAdmin(c *node.Conn, ours frame.Hello, m protocol.AdminReq) adminCheck {
	pw := *a.adminPassword.Load() // once: a reload meanwhile cannot mix two passwords in one check
	switch {
	case pw == "":
		return adminOpen
	case len(m.Proof) == 0:
		return adminMissing
	case m.Target.Unmap() != a.opt.Self && m.Target.Unmap() != node.LocalAddr(c.NC):
		return adminElsewhere
	case len(ours.Nonce) == 0 || !hmac.Equal(m.Proof, protocol.AdminProof(pw, ours.Nonce, ours.Cluster, m)):
		return adminWrong
	}
	return adminProved
}

// adminAllowed decides on an admin command whose proof the reader checked
// (listings stay open) and answers a refusal itself. Wrong proofs count
// against the source (authGuard): after a few, it is refused without a try
// for a while. A connection's nonce proves one command.
func (a *acceptor) adminAllowed(c *node.Conn, m protocol.AdminReq, check adminCheck) bool {
	if check == adminOpen {
		return true
	}
	now := time.Now()
	if a.auth.blocked(c.Remote, now) {
		c.NonceSpent = true
		a.metrics.ConnRefused(portCL.String(), "auth_rate")
		if ok, missed := a.refusals.allow("matocl|auth_rate|"+c.Remote.String(), now); ok {
			a.log.Warn().Str(obs.FieldPeer, c.Remote.String()).Str(obs.FieldReason, "auth_rate").Int("not_logged", missed).
				Msg("admin command refused: too many wrong ADMIN_PASSWORD proofs from this address lately")
		}
		c.Send(protocol.AdminResp{ID: m.ID, Code: wire.CodeThrottled, Text: fmt.Sprintf("too many wrong ADMIN_PASSWORD proofs from %v lately: admin commands from there are refused for up to %v", c.Remote, authBlock)})
		return false
	}
	ok := check == adminProved && !c.NonceSpent
	c.NonceSpent = true
	if ok {
		return true
	}
	reason, text := "admin-password-wrong", "admin commands on this master need ADMIN_PASSWORD: give it with mfscli -a PASSWORD or in MFSCLI_PASSWORD"
	switch check {
	case adminMissing:
		reason = "admin-password-missing"
	case adminElsewhere:
		// Not a guess at the password: a command relayed (or dialed
		// through an address this master does not know as its own).
		reason = "admin-wrong-master"
		text = fmt.Sprintf("this command was meant for the master at %v, and this is %v (reached at %v): refused; send it to that master directly",
			m.Target, a.opt.Self, node.LocalAddr(c.NC))
	default:
		if a.auth.failed(c.Remote, now) {
			a.log.Warn().Str(obs.FieldPeer, c.Remote.String()).
				Msgf("%d wrong ADMIN_PASSWORD proofs within %v: admin commands from this address are refused for %v", authFailMax, authFailWindow, authBlock)
		}
	}
	a.metrics.ConnRefused(portCL.String(), reason)
	a.log.Warn().Str(obs.FieldPeer, c.Remote.String()).Str(obs.FieldReason, reason).Msg("admin command refused")
	c.Send(protocol.AdminResp{ID: m.ID, Code: wire.CodeDenied, Text: text})
	return false
}
