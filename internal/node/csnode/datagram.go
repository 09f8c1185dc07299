package csnode

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The chunkserver's side of the datagram path (the path itself: node's
// datagram.go).

// openDatagramPort opens the datagram socket when Datagrams is on: on the
// CSSERV port's number (one rule for a firewall: 9422/udp beside
// 9422/tcp), or on any port when that one is taken. Without one the voter
// runs on TCP alone, as before.
func (n *ChunkserverNode) openDatagramPort() {
	if !n.opt.Datagrams {
		return
	}
	host := ""
	if n.opt.Bind.IsValid() {
		host = n.opt.Bind.String()
	}
	uc, err := n.tr.ListenPacket(net.JoinHostPort(host, fmt.Sprint(n.port)))
	if err != nil {
		first := err
		if uc, err = n.tr.ListenPacket(net.JoinHostPort(host, "0")); err != nil {
			n.log.Warn().Err(err).Msg("heartbeat datagrams off: no UDP port could be opened; votes are renewed on TCP alone, which packet loss holds up")
			return
		}
		n.log.Warn().Err(first).Str("port", uc.LocalAddr().String()).Msg("heartbeat datagrams on another UDP port than the CSSERV port's number")
	}
	n.udp = uc
	ap, _ := netip.ParseAddrPort(uc.LocalAddr().String())
	n.udpPort = ap.Port()
	n.dgStats = obs.NewDatagrams(n.opt.Metrics, "chunkserver")
	go node.ReadDatagrams(uc, n.takeDatagram)
}

func (n *ChunkserverNode) closeDatagrams() {
	if n.udp != nil {
		_ = n.udp.Close()
	}
}

// openDatagrams gives a new session to master to its datagram key, and
// returns the hello that carries it (h as it is without a socket).
func (n *ChunkserverNode) openDatagrams(to masterhost.Master, h roles.VoteHello) roles.VoteHello {
	if n.udp == nil {
		return h
	}
	k := node.DgKey{Session: h.Session, Key: node.NewDatagramKey(), To: to.Addr}
	n.dg.Set(uint32(to.ID), k)
	h.DgKey, h.DgPort = k.Key, n.udpPort
	return h
}

// forgetDatagrams: the connection to master m is gone, and its session
// with it.
func (n *ChunkserverNode) forgetDatagrams(m wire.MasterID) {
	n.dg.Forget(uint32(m), 0)
	delete(n.hbSeen, uint32(m))
}

// sendDatagram sends a to master m as a datagram too, when the session
// it answers has a key.
func (n *ChunkserverNode) sendDatagram(m wire.MasterID, a roles.HeartbeatAck) {
	if n.udp == nil {
		return
	}
	k, ok := n.dg.Get(uint32(m))
	if !ok || k.Session != a.Session {
		return
	}
	if b := node.SealDatagram(k.Key, node.DgHeader{Kind: node.DgAck, From: uint32(a.CS), Session: a.Session, Seq: a.Seq}, a); b != nil {
		_, _ = n.udp.WriteToUDPAddrPort(b, k.To)
	}
}

// takeDatagram is the datagram reader's: a heartbeat that authenticates
// under its session's key goes to the loop as its master's, anything else
// is counted and dropped. Never blocks: a full inbox drops it.
func (n *ChunkserverNode) takeDatagram(b []byte, _ netip.AddrPort) {
	h, m, err := n.dg.Open(b, node.DgMasterIn, node.DgHeartbeat, node.DgRelease)
	if err != nil {
		n.dgStats.Refused()
		return
	}
	from := wire.MasterID(h.From)
	ev, ok := roles.FromMaster(m, from)
	if !ok {
		n.dgStats.Refused()
		return
	}
	select {
	case n.inbox <- csInput{from: from, ev: ev, dgram: true}:
	default:
		n.dgStats.Refused()
	}
}

// admitRelease: r (from TCP, or a datagram: dgram) is stepped. A release
// ends its session's datagram path: nothing of the session is taken
// after it. A datagram whose session ended meanwhile (its TCP copy came
// first) is not stepped again. Loop only.
func (n *ChunkserverNode) admitRelease(r roles.VoteRelease, dgram bool) bool {
	if dgram && !n.dg.Current(uint32(r.From), r.Session) {
		n.dgStats.Second()
		return false
	}
	if dgram {
		n.dgStats.First()
	}
	n.dg.Forget(uint32(r.From), r.Session)
	return true
}

// admitHeartbeat: hb (from TCP, or a datagram: dgram) is stepped, being
// the first copy to arrive of a heartbeat newer than any stepped in its
// session. Loop only.
func (n *ChunkserverNode) admitHeartbeat(hb roles.Heartbeat, dgram bool) bool {
	if dgram && !n.dg.Current(uint32(hb.From), hb.Session) {
		n.dgStats.Refused() // its session ended while it waited
		return false
	}
	if !n.hbSeen.Admit(uint32(hb.From), hb.Session, hb.Seq) {
		if dgram {
			n.dgStats.Second()
		}
		return false
	}
	if dgram {
		n.dgStats.First()
	}
	return true
}
