package csnode

import (
	"time"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The chunkserver's effects as voter.Carry uses them, and what the loop
// reports after each group.

// csFx carries a voter's batch out to the links and the log
// (voter.Effects). The store is the Persister: one fsync for the newest
// voter record of the group, before anything leaves.
type csFx struct{ n *ChunkserverNode }

// Durable: nothing of the chunkserver's reports waits on its disk.
func (fx csFx) Durable() {}

func (fx csFx) WallUnixMs() int64 { return time.Now().UnixMilli() }

func (fx csFx) Send(to roles.Peer, msg wire.Message) {
	n := fx.n
	l := n.links[wire.MasterID(to.ID)]
	switch m := msg.(type) {
	case roles.VoteHello:
		n.log.Debug().Str("master", n.addrOf[wire.MasterID(to.ID)].String()).Bool("nominate", m.Nominate).Msg("vote session opened")
		if l != nil {
			msg = n.openDatagrams(l.To, m)
		}
	case roles.VoteBye:
		n.log.Debug().Str("master", n.addrOf[wire.MasterID(to.ID)].String()).Msg("vote session closed")
		n.dg.Forget(uint32(to.ID), m.Session)
	}
	if l != nil {
		l.Send(msg)
		if a, ok := msg.(roles.HeartbeatAck); ok {
			n.sendDatagram(l.To.ID, a)
		}
	}
}

// IDTaken: the store forgets the id, and the links reconnect to register
// again; Carry drops whatever the old voter asked for after this.
func (fx csFx) IDTaken(t roles.IDTaken) error {
	n := fx.n
	n.log.Warn().Str("master", n.addrOf[t.Master].String()).Uint32("id", uint32(n.Identity().CS)).
		Msg("the registry gives this id to another chunkserver: registering again")
	if err := n.store.ForgetIdentity(); err != nil {
		return err
	}
	n.idMu.Lock()
	n.id = metadata.Identity{}
	n.idMu.Unlock()
	n.voter = nil
	for _, l := range n.links {
		l.Reconnect()
	}
	return nil
}

// Stopped: the loop ends after this flush (it asks voter.Stopped()).
func (fx csFx) Stopped() {}

func (fx csFx) Ignored(reason string) { fx.n.log.Debug().Str(obs.FieldReason, reason).Msg("ignored") }

func (n *ChunkserverNode) observe() {
	n.stMu.Lock()
	st := &n.state
	st.Registered, st.VoteFor, st.Promised = n.voter != nil, wire.NoMaster, wire.NoMaster
	for i, m := range n.masters {
		st.Up[i] = n.links[m.ID].Up()
	}
	if n.voter != nil {
		st.VoteFor = n.voter.VoteFor()
		st.Promised, _ = n.voter.Promise()
		st.Crowd, st.InCrowd = n.voter.Crowd(), n.voter.InCrowd()
	}
	n.stMu.Unlock()
	if n.metrics == nil {
		return
	}
	s := obs.ChunkserverSnapshot{Registered: n.voter != nil, Connected: n.conns}
	for id, l := range n.links {
		s.Connected[n.named[id]] = l.Up()
	}
	if n.voter != nil {
		if m := n.voter.VoteFor(); m != wire.NoMaster {
			s.VoteFor = n.named[m]
		}
		if m, until := n.voter.Promise(); m != wire.NoMaster {
			s.Promised = n.named[m]
			s.PromiseLeft = time.Duration(until - n.at) // as of the newest step
		}
		s.MaxEpoch = n.voter.Hard().MaxEpoch
		s.Uncertain = n.voter.Uncertain()
	}
	n.metrics.Set(s)
}
