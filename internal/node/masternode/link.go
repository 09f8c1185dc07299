package masternode

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// masterSide is a master's link to another master: everything it sends
// that master goes through it, and the peer sends nothing back on it.
type masterSide struct {
	n       *MasterNode
	backoff time.Duration
	down    node.Unreachable // failed dials, told to the log spaced out
}

// linkMaxBackoff: a master's link to another master waits at most this
// long between dials.
const linkMaxBackoff = time.Second

func startMasterLink(n *MasterNode, to masterhost.Master) *node.Link {
	return node.StartLink(to, &masterSide{n: n, backoff: node.LinkMinBackoff}, false)
}

// linked tells the loop how the peer answered: with the others, whether
// this master is in the set (masterset.go). False: the link stopped.
func (s *masterSide) linked(l *node.Link, stranger bool) bool {
	select {
	case s.n.inbox <- input{kind: inLink, from: l.To.ID, stranger: stranger}:
		return true
	case <-l.Quit():
		return false
	}
}

func (s *masterSide) Failed(l *node.Link, err error, _ bool) time.Duration {
	if errors.Is(err, errNotNamed) {
		if !s.linked(l, true) {
			return 0
		}
		s.backoff = linkMaxBackoff
	}
	if errors.Is(err, frame.ErrCluster) || errors.Is(err, frame.ErrProtocol) {
		s.n.log.Error().Str(obs.FieldPeer, l.To.Addr.String()).Err(err).Msg("master link refused")
		s.backoff = linkMaxBackoff
	}
	if errors.Is(err, frame.ErrCluster) {
		// A master of MASTER_HOST belongs to another cluster: the core
		// must not bootstrap a second one beside it.
		select {
		case s.n.inbox <- input{kind: inMsg, ev: roles.ForeignCluster{Master: l.To.ID}}:
		case <-l.Quit():
			return 0
		}
	}
	if say, fails, since := s.down.Failed(time.Now()); say && !errors.Is(err, errNotNamed) {
		s.n.log.Warn().Str(obs.FieldPeer, l.To.Addr.String()).Err(err).Int("attempts", fails).Dur("for", time.Since(since)).
			Msg("cannot reach master: is it up, and is MASTER_HOST right? still trying")
	}
	wait := s.backoff
	s.backoff = node.NextBackoff(s.backoff, linkMaxBackoff)
	return wait
}

func (s *masterSide) Serve(l *node.Link, c *node.Conn) time.Duration {
	if !s.linked(l, false) {
		c.Close()
		return 0
	}
	s.backoff = node.LinkMinBackoff
	if fails, since := s.down.Reached(); fails > 0 {
		s.n.log.Info().Str(obs.FieldPeer, l.To.Addr.String()).Int("attempts", fails).Dur("for", time.Since(since)).Msg("master reached again")
	}
	// The peer sends nothing back on this connection; reading tells when
	// it ends.
	_, _ = io.Copy(io.Discard, c.NC)
	c.Close()
	l.Detach()
	return 0
}

func (s *masterSide) Connect(l *node.Link) (*node.Conn, bool, error) {
	nc, _, err := node.Dial(s.n.tr, s.n.opt.Bind, l.To.Addr, node.DialTimeout)
	if err != nil {
		return nil, false, err
	}
	h := s.n.hello()
	peer, err := frame.DialHello(nc, h, h.Cluster, frame.KindMaster, node.HandshakeTimeout)
	if err == nil && wire.MasterID(peer.ID) != l.To.ID {
		err = node.ErrIdentity
	}
	if err == nil {
		err = s.prove(l, nc, peer)
	}
	if err != nil {
		_ = nc.Close()
		return nil, false, err
	}
	return node.NewConn(nc, peer), false, nil
}

// prove answers the peer's AUTH_CODE challenge. The proof binds the
// peer's cluster id (this master may have none yet: started with -e) and
// the address this connection leaves from, under the master key, so it is
// good for this connection only and never passes for a chunkserver's.
func (s *masterSide) prove(l *node.Link, nc net.Conn, peer frame.Hello) error {
	_ = nc.SetReadDeadline(time.Now().Add(node.HandshakeTimeout))
	m, err := mltomaIn.ReadFrame(nc, frame.MaxHelloFrame)
	_ = nc.SetReadDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("reading the AUTH_CODE challenge: %w", err)
	}
	ch := m.(*protocol.AuthChallenge)
	if ch.NotMember {
		return errNotNamed
	}
	var mac []byte
	if len(ch.Nonce) > 0 {
		if len(ch.Nonce) != protocol.AuthNonceLen {
			return fmt.Errorf("%w: the challenge's nonce has %d bytes, not %d", node.ErrAuth, len(ch.Nonce), protocol.AuthNonceLen)
		}
		if s.n.opt.AuthCode == "" {
			s.n.log.Error().Str(obs.FieldPeer, l.To.Addr.String()).Msg("master requires AUTH_CODE and none is set")
		}
		mac = protocol.MasterProof(s.n.opt.AuthCode, ch.Nonce, peer.Cluster, node.LocalAddr(nc))
	}
	return frame.WriteFrame(nc, protocol.AuthProof{MAC: mac})
}
