package masternode

import (
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/transport"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The master's side of the datagram path (the path itself: node's
// datagram.go).

// openDatagramPort opens the datagram socket when Datagrams is on, on the
// chunkserver port's address and number; without one the master renews
// votes on TCP alone.
func (n *MasterNode) openDatagramPort() {
	n.dgStats = obs.NewDatagrams(n.opt.Metrics, "master")
	if !n.opt.Datagrams {
		return
	}
	var err error
	if n.udp, err = n.tr.ListenPacket(n.acc.lnCS.Addr().String()); err != nil {
		n.log.Warn().Err(err).Str("listen", n.acc.lnCS.Addr().String()).
			Msg("heartbeat datagrams off: their UDP port could not be opened; votes are renewed on TCP alone, which packet loss holds up")
	}
}

// openDatagrams keeps the datagram key a voter's VoteHello brings (from
// the connection's address: remote), or forgets the one it had when the
// hello brings none: the new session's heartbeats then go on TCP alone.
func (n *MasterNode) openDatagrams(id wire.CSID, remote netip.Addr, h roles.VoteHello) {
	if n.udp == nil || len(h.DgKey) != node.DgKeyLen || h.DgPort == 0 {
		n.dg.Forget(uint32(id), 0)
		return
	}
	n.dg.Set(uint32(id), node.DgKey{Session: h.Session, Key: h.DgKey, To: netip.AddrPortFrom(remote, h.DgPort)})
}

// forgetDatagrams: id's connection is gone, and its session with it.
func (n *MasterNode) forgetDatagrams(id wire.CSID) {
	n.dg.Forget(uint32(id), 0)
	delete(n.ackSeen, uint32(id))
}

// sendDatagram sends m (a heartbeat or a release of kind, for session and
// seq) to voter cs as a datagram too, when that session has a key.
func (n *MasterNode) sendDatagram(cs wire.CSID, kind uint8, session, seq uint64, m wire.Message) {
	if n.udp == nil {
		return
	}
	k, ok := n.dg.Get(uint32(cs))
	if !ok || k.Session != session {
		return
	}
	if b := node.SealDatagram(k.Key, node.DgHeader{Kind: kind, From: uint32(n.opt.Core.ID), Session: session, Seq: seq}, m); b != nil {
		_, _ = n.udp.WriteToUDPAddrPort(b, k.To) // lost like any datagram: TCP carries it too
	}
}

// takeDatagram is the datagram reader's: an acknowledgement that
// authenticates under its session's key goes to the loop, anything else is
// counted and dropped. Never blocks: a full inbox drops it, as the network
// may.
func (n *MasterNode) takeDatagram(b []byte, src netip.AddrPort) {
	h, m, err := n.dg.Open(b, node.DgAckIn, node.DgAck)
	if err != nil {
		n.dgStats.Refused()
		return
	}
	a := m.(roles.HeartbeatAck)
	a.CS = wire.CSID(h.From)
	select {
	case n.inbox <- input{kind: inDatagram, port: portCS, msg: a, src: src}:
	default:
		n.dgStats.Refused()
	}
}

// fromDatagram steps an acknowledgement that came as a datagram, unless
// its session ended meanwhile or its TCP copy came first. Its address is
// the datagram's source: the core counts it only from the address the
// session was opened from, as on TCP.
func (n *MasterNode) fromDatagram(a roles.HeartbeatAck, src netip.AddrPort) {
	id := a.CS
	if n.cs[id] == nil || !n.dg.Current(uint32(id), a.Session) {
		n.dgStats.Refused()
		return
	}
	if !n.ackSeen.Admit(uint32(id), a.Session, a.Seq) {
		n.dgStats.Second()
		return
	}
	n.dgStats.First()
	n.ackRTT(id, a.Seq)
	ev, _ := roles.FromVoter(a, id, src.Addr()) // the datagram's source, as a connection's
	n.step(ev)
}

// ackRTT observes the round trip of the heartbeat seq to id, answered now.
func (n *MasterNode) ackRTT(id wire.CSID, seq uint64) {
	if at, ok := n.hbSent[hbKey{id, seq}]; ok {
		n.metrics.HeartbeatRTT(time.Since(at))
		delete(n.hbSent, hbKey{id, seq})
	}
}

// masterDatagrams is a master's side of the datagram path: udp is the
// socket beside the chunkserver port (nil: Datagrams off, or it could not
// be opened); dg the voters' session keys, ackSeen the acknowledgements'
// filter (loop only), dgStats what was received.
type masterDatagrams struct {
	udp     transport.PacketConn
	dg      *node.DgKeys
	ackSeen node.SeqFilter
	dgStats *obs.Datagrams
}
