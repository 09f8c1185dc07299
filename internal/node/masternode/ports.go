package masternode

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The per-port demultiplexer: what arrives on each port goes to the core
// as events, stamped with the connection's sender; what the core sends is
// routed to connections.

// routes are the connections of each port and where replies go (loop
// only).
type routes struct {
	cs      map[wire.CSID]*node.Conn          // the current connection of each chunkserver
	csInfo  map[wire.CSID]protocol.CSInfo     // what each said of itself
	peersIn map[*node.Conn]bool               // incoming master connections
	clConns map[*node.Conn]bool               // every open client/mfscli connection
	clients map[changelog.ClientID]*node.Conn // where each client session's replies go
	nextCl  uint64                            // the last session id given a request without one (session)
	admins  map[uint64]adminWait              // admin commands waiting for the core's reply, by the core's id
	nextAdm uint64
	hbSent  map[hbKey]time.Time // heartbeats sent, for the round-trip metric; pruned (pruneHBSent)
	hbPrune time.Time           // when hbSent was last pruned
}

// route sends what the core sends to its connection or link.
func (n *MasterNode) route(to roles.Peer, msg wire.Message) {
	switch m := msg.(type) {
	case roles.Heartbeat:
		now := time.Now()
		n.pruneHBSent(now)
		n.hbSent[hbKey{wire.CSID(to.ID), m.Seq}] = now
		if m.Role == roles.Leader {
			n.stages.commitSent(m.Commit.Version, now)
		}
		if to.Kind == roles.PeerCS {
			n.sendDatagram(wire.CSID(to.ID), node.DgHeartbeat, m.Session, m.Seq, m)
		}
	case roles.VoteRelease:
		if to.Kind == roles.PeerCS {
			n.sendDatagram(wire.CSID(to.ID), node.DgRelease, m.Session, 0, m)
		}
	case roles.ClientReply:
		delete(n.listsOut, listKey{m.Client, m.Seq})
	}
	switch to.Kind {
	case roles.PeerMaster:
		if l := n.links[wire.MasterID(to.ID)]; l != nil {
			l.Send(msg)
		}
	case roles.PeerCS:
		if c := n.cs[wire.CSID(to.ID)]; c != nil {
			c.Send(msg)
		}
	case roles.PeerAllCS:
		for _, c := range n.cs {
			c.Send(msg)
		}
	case roles.PeerClient:
		if r, ok := msg.(roles.ClientReply); ok && n.bkWait != nil && r.Client == n.bkWait.client {
			n.backupConfirmed(r)
			return
		}
		if r, ok := msg.(roles.ClientReply); ok {
			switch {
			case r.Code == wire.CodeBusy:
				n.metrics.Busy()
			case r.OK:
				n.stages.replied(r.Client, r.Seq, time.Now(), n.metrics.ChangeStage)
			}
		}
		if c := n.clients[changelog.ClientID(to.ID)]; c != nil {
			c.Send(msg)
		}
	}
}

// pruneHBSent drops the heartbeats unanswered for hbSentMaxAge, once per
// that long at most (a pass over every entry).
func (n *MasterNode) pruneHBSent(now time.Time) {
	if now.Sub(n.hbPrune) < hbSentMaxAge {
		return
	}
	n.hbPrune = now
	for k, at := range n.hbSent {
		if now.Sub(at) > hbSentMaxAge {
			delete(n.hbSent, k)
		}
	}
}

// disconnect closes a class of connections after their queued goodbyes.
func (n *MasterNode) disconnect(class roles.ConnClass) {
	switch class {
	case roles.ConnChunkservers:
		for id, c := range n.cs {
			c.CloseAfterFlush()
			delete(n.cs, id)
			delete(n.csInfo, id)
			n.forgetDatagrams(id)
		}
	case roles.ConnClients:
		for c := range n.clConns {
			c.CloseAfterFlush()
		}
		clear(n.clConns)
		clear(n.clients)
		clear(n.listsOut)
	case roles.ConnSessions:
		for c := range n.peersIn {
			c.CloseAfterFlush()
			delete(n.peersIn, c)
		}
	}
}

// handle takes one input from a reader or a link.
func (n *MasterNode) handle(in input) error {
	if ev, ok := in.ev.(roles.ForeignCluster); ok {
		if !n.foreign[ev.Master] {
			n.foreign[ev.Master] = true
			n.log.Error().Str(obs.FieldPeer, n.addr(ev.Master).String()).Msg("a master of MASTER_HOST has another cluster's metadata id: this master will not bootstrap a cluster of its own; if it was wiped by mistake, empty DATA_PATH and start it with -e; if it was founded on a backup to replace that cluster, that cluster's masters must be gone first: stop them, then restart this one")
		}
		n.step(ev)
		return nil
	}
	switch in.kind {
	case inMasters:
		if in.err == nil {
			n.takeMasters(in.masters)
		}
		if in.asked != nil {
			n.answerResolve(*in.asked, in.err)
		}
		return nil
	case inLink:
		n.linkAnswered(in.from, in.stranger)
		return nil
	case inCall:
		in.call()
		return nil
	case inDatagram:
		n.fromDatagram(in.msg.(roles.HeartbeatAck), in.src)
		return nil
	case inOpen:
		switch in.port {
		case portCS:
			n.csOpened(in.c)
		case portML:
			n.peersIn[in.c] = true
		case portCL:
			n.clConns[in.c] = true
		}
		return nil
	case inClosed:
		switch in.port {
		case portCS:
			id := wire.CSID(in.c.Peer.ID)
			if n.cs[id] == in.c {
				delete(n.cs, id)
				delete(n.csInfo, id)
				delete(n.infoClipped, id)
				n.forgetDatagrams(id)
				n.step(roles.ConnLost{CS: id, ByPeer: in.byPeer})
			}
		case portML:
			delete(n.peersIn, in.c)
		case portCL:
			delete(n.clConns, in.c)
			for id, c := range n.clients {
				if c == in.c {
					delete(n.clients, id)
				}
			}
		}
		return nil
	}
	switch in.port {
	case portCS:
		return n.fromCS(in.c, in.msg)
	case portML:
		return n.fromMaster(in.c, in.msg)
	}
	return n.fromClient(in)
}

// csOpened makes a new chunkserver connection its id's route, or refuses
// it. One id has one connection: a second one from the same address is the
// same chunkserver reconnecting (its old connection may be half dead), so
// it replaces the old one; one from another address is a cloned
// chunkserver or an impostor and is refused, unless the registry gives the
// id to the new address and not to the old one (the registered address
// wins). A replaced connection is a lost one to the core, so the core never
// goes on counting a session whose connection is gone.
func (n *MasterNode) csOpened(c *node.Conn) {
	id := wire.CSID(c.Peer.ID)
	if id == wire.NoCS {
		return // registering: it takes no part in votes until it has an id
	}
	old := n.cs[id]
	if old == nil {
		// Even from an address the registry gives to another id's holder:
		// the core answers its VoteHello with Redirect{IDTaken}, which is
		// how an honest holder of an id handed out twice learns to
		// register again. Should the registered address connect, it wins.
		n.cs[id] = c
		return
	}
	if old.Remote == c.Remote {
		n.dropCS(id, old)
		n.cs[id] = c
		return
	}
	var reg netip.Addr
	if cfg := n.core.Registry(); cfg != nil {
		if m, ok := cfg.Member(id); ok {
			reg = m.Addr
		}
	}
	if reg.IsValid() && reg == c.Remote {
		n.cloneRefused(id, old, c.Remote)
		n.dropCS(id, old)
		n.cs[id] = c
		return
	}
	n.cloneRefused(id, c, old.Remote)
	c.Close()
}

// dropCS ends id's current connection old and tells the core.
func (n *MasterNode) dropCS(id wire.CSID, old *node.Conn) {
	old.Close()
	delete(n.cs, id)
	delete(n.csInfo, id)
	delete(n.infoClipped, id)
	n.forgetDatagrams(id)
	n.step(roles.ConnLost{CS: id})
}

// cloneRefused logs, counts and records a refused connection c of id
// (holder: the address that keeps the id).
func (n *MasterNode) cloneRefused(id wire.CSID, c *node.Conn, holder netip.Addr) {
	now := time.Now()
	rec := n.clones.add(id, c.Remote, holder, now)
	n.metrics.ConnRefused(portCS.String(), "clone")
	if ok, missed := n.acc.refusals.allow(fmt.Sprintf("clone|%d|%v", id, c.Remote), now); ok {
		n.log.Warn().Uint32("id", uint32(id)).Str(obs.FieldPeer, c.Remote.String()).Str("holder", holder.String()).
			Int("times", rec.Count).Int("not_logged", missed).Str("port", portCS.String()).Str(obs.FieldReason, "clone").
			Msg("chunkserver id already connected from another address: cloned chunkserver or impostor, connection refused")
	}
}

func (n *MasterNode) fromCS(c *node.Conn, msg wire.Message) error {
	id := wire.CSID(c.Peer.ID)
	if c.Closed() {
		return nil // refused or replaced: what it sent is not heard
	}
	switch m := msg.(type) {
	case protocol.RegisterReq:
		if !n.regs.allow(c.Remote, m.Port, time.Now()) {
			n.metrics.RegistrationRefused()
			if ok, missed := n.acc.refusals.allow("register|"+c.Remote.String(), time.Now()); ok {
				n.log.Warn().Str(obs.FieldPeer, c.Remote.String()).Uint16("cs_port", m.Port).Int("not_logged", missed).
					Str(obs.FieldReason, "register_flood").
					Msgf("registration refused: this address asked for more than %d new ids within %v, or its /24 for more than %d (a /64: %d)", regPerSource, regWindow, regPerPrefix4, regPerPrefix6)
			}
			return nil
		}
		// The address it registers with is the one it connects from:
		// locations are decided by address, so a claim is not enough.
		// Step first: a LEADER resumed from a freeze fences itself in the
		// step, and must neither hand out ids nor name itself LEADER.
		n.step(roles.Tick{})
		got, ok := n.core.AssignID(c.Remote, m.Port)
		reply := protocol.RegisterReply{ID: got}
		if !ok {
			reply.Leader = n.addr(n.core.Leader())
		} else {
			// New only when the id is surely no member's (no config: say
			// nothing, and the chunkserver keeps quiet).
			if cfg := n.core.Registry(); cfg != nil {
				_, member := cfg.Member(got)
				reply.New = !member
			}
			n.log.Info().Str(obs.FieldCS, netip.AddrPortFrom(c.Remote, m.Port).String()).Uint32("id", uint32(got)).Msg("chunkserver id assigned")
		}
		n.later(func() { c.Send(reply) })
		return nil
	case protocol.CSInfo:
		// Kept only while this is the id's connection, and bounded: the
		// listings need a few words, not what a peer cares to send.
		if id != wire.NoCS && m.ID == id && n.cs[id] == c {
			m.Addr = c.Remote
			var cut1, cut2 bool
			m.Labels, cut1 = clip(m.Labels, maxInfoString)
			m.Version, cut2 = clip(m.Version, maxInfoString)
			m.Record, _ = clip(m.Record, maxRecordReport)
			if (cut1 || cut2) && !n.infoClipped[id] {
				n.infoClipped[id] = true
				n.log.Warn().Uint32("id", uint32(id)).Str(obs.FieldPeer, c.Remote.String()).
					Msgf("chunkserver labels or version longer than %d bytes: cut for the listings", maxInfoString)
			}
			n.csInfo[id] = m
		}
		return nil
	}
	if id == wire.NoCS || n.cs[id] != c {
		return nil // an unregistered or superseded connection takes no part
	}
	ev, ok := roles.FromVoter(msg, id, c.Remote)
	if !ok {
		return nil
	}
	switch m := ev.(type) {
	case roles.VoteHello:
		n.openDatagrams(id, c.Remote, m)
		m.DgKey = nil
		ev = m
	case roles.VoteBye:
		n.dg.Forget(uint32(id), m.Session) // after this, nothing of the session is taken
	case roles.HeartbeatAck:
		if !n.ackSeen.Admit(uint32(id), m.Session, m.Seq) {
			return nil // its datagram was taken first
		}
		n.ackRTT(id, m.Seq)
	}
	n.step(ev)
	return nil
}

func (n *MasterNode) fromMaster(c *node.Conn, msg wire.Message) error {
	ev, ok := roles.FromPeerMaster(msg, wire.MasterID(c.Peer.ID))
	if !ok {
		return nil
	}
	switch m := ev.(type) {
	case roles.Append:
		if len(m.Entries) > 0 {
			if err := n.adoptCluster(c); err != nil {
				return err
			}
		}
	case roles.SnapshotChunk:
		if err := n.adoptCluster(c); err != nil {
			return err
		}
	case roles.AppendAck:
		if m.OK && n.core.Role() == roles.Leader {
			n.stages.replicated(m.Match.Version, time.Now())
		}
	}
	n.step(ev)
	return nil
}

// adoptCluster: a master started with -e takes its cluster id from the
// first master that sends it metadata (entries or a snapshot), before the
// core stores any of it.
func (n *MasterNode) adoptCluster(c *node.Conn) error {
	if n.store.ClusterID() != "" || c.Peer.Cluster == "" {
		return nil
	}
	if err := n.store.AdoptCluster(c.Peer.Cluster); err != nil {
		return err
	}
	n.setHello()
	n.log.Info().Str("cluster", c.Peer.Cluster).Msg("joined cluster")
	return nil
}

func (n *MasterNode) fromClient(in input) error {
	c := in.c
	switch m := in.msg.(type) {
	case protocol.StatusReq:
		// Step first: a LEADER resumed from a freeze fences itself in
		// the step and must not report the role it no longer holds.
		n.step(roles.Tick{})
		n.later(func() { c.Send(n.statusWith(m)) })
		return nil
	case protocol.AdminReq:
		if !n.acc.adminAllowed(c, m, in.admin) {
			return nil
		}
		if m.Kind == roles.AdminResolve {
			n.resolveFor(c, m.ID)
			return nil
		}
		if m.Kind == roles.AdminTrust {
			n.trustFor(c, m)
			return nil
		}
		if m.Kind == protocol.AdminBackup {
			n.backupFor(c, m, in.admin)
			return nil
		}
		if m.Kind == protocol.AdminWitnessOn || m.Kind == protocol.AdminWitnessTest {
			n.witnessCommand(c, m)
			return nil
		}
		n.nextAdm++
		id := n.nextAdm
		n.admins[id] = adminWait{c: c, id: m.ID}
		n.step(roles.Admin{ID: id, Kind: m.Kind, Change: m.Change})
	case roles.ClientWrite:
		m.Client = n.session(c, m.Client)
		n.step(m)
	case roles.ClientRead:
		m.Client = n.session(c, m.Client)
		if m.Prefix {
			n.listsOut[listKey{m.Client, m.Seq}] = time.Now()
		}
		n.step(m)
	}
	return nil
}

// session routes the replies of a client session to the connection its
// newest request came on. A request without a session (mfscli) gets one of
// its own, never retried, so never deduplicated.
func (n *MasterNode) session(c *node.Conn, id changelog.ClientID) changelog.ClientID {
	if id == 0 || id&protocol.AnonymousClient != 0 {
		n.nextCl++
		id = protocol.AnonymousClient | changelog.ClientID(n.nextCl)
	}
	if c.Closed() {
		return id
	}
	n.clients[id] = c
	return id
}
