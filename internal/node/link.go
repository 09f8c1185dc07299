package node

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Reconnection back-off between masters: quick at first (a restarted peer
// is back within a heartbeat or two), never slower than linkMaxBackoff.
const (
	linkMinBackoff = 50 * time.Millisecond
	linkMaxBackoff = time.Second
)

// link is this master's outgoing connection to another master: everything
// it sends that master goes through here. Sends while it is down are
// dropped; the core repeats what matters every PeerInterval.
type link struct {
	n    *MasterNode
	to   masterhost.Master
	mu   sync.Mutex
	c    *conn
	quit chan struct{}
	once sync.Once
}

func startLink(n *MasterNode, to masterhost.Master) *link {
	l := &link{n: n, to: to, quit: make(chan struct{})}
	go l.run()
	return l
}

func (l *link) send(m wire.Message) {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if c != nil {
		c.send(m)
	}
}

func (l *link) stop() {
	l.once.Do(func() { close(l.quit) })
	l.mu.Lock()
	if l.c != nil {
		l.c.closeAfterFlush()
	}
	l.mu.Unlock()
}

func (l *link) run() {
	backoff := linkMinBackoff
	for {
		select {
		case <-l.quit:
			return
		default:
		}
		c, err := l.connect()
		if err == nil || errors.Is(err, errNotNamed) {
			// How it answered decides, with the others, whether this
			// master is in the set (masterset.go).
			select {
			case l.n.inbox <- input{kind: inLink, from: l.to.ID, stranger: err != nil}:
			case <-l.quit:
				if c != nil {
					c.close()
				}
				return
			}
		}
		if err != nil {
			if errors.Is(err, errNotNamed) {
				backoff = linkMaxBackoff
			}
			if errors.Is(err, frame.ErrCluster) || errors.Is(err, frame.ErrProtocol) {
				l.n.log.Error().Str(obs.FieldPeer, l.to.Addr.String()).Err(err).Msg("master link refused")
				backoff = linkMaxBackoff
			}
			if errors.Is(err, frame.ErrCluster) {
				// A master of MASTER_HOST belongs to another cluster: the
				// core must not bootstrap a second one beside it.
				select {
				case l.n.inbox <- input{kind: inMsg, ev: roles.ForeignCluster{Master: l.to.ID}}:
				case <-l.quit:
					return
				}
			}
			select {
			case <-l.quit:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, linkMaxBackoff)
			continue
		}
		backoff = linkMinBackoff
		l.mu.Lock()
		l.c = c
		l.mu.Unlock()
		// The peer sends nothing back on this connection; reading tells
		// when it ends.
		_, _ = io.Copy(io.Discard, c.nc)
		c.close()
		l.mu.Lock()
		l.c = nil
		l.mu.Unlock()
	}
}

func (l *link) connect() (*conn, error) {
	nc, _, err := dial(l.n.opt.Bind, l.to.Addr, dialTimeout)
	if err != nil {
		return nil, err
	}
	h := l.n.hello()
	peer, err := frame.DialHello(nc, h, h.Cluster, frame.KindMaster, handshakeTimeout)
	if err == nil && wire.MasterID(peer.ID) != l.to.ID {
		err = errIdentity
	}
	if err == nil {
		err = l.prove(nc, peer)
	}
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	return newConn(nc, peer), nil
}

// prove answers the peer's AUTH_CODE challenge. The proof binds the
// peer's cluster id (this master may have none yet: started with -e) and
// the address this connection leaves from, under the master key, so it is
// good for this connection only and never passes for a chunkserver's.
func (l *link) prove(nc net.Conn, peer frame.Hello) error {
	_ = nc.SetReadDeadline(time.Now().Add(handshakeTimeout))
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
			return fmt.Errorf("%w: the challenge's nonce has %d bytes, not %d", errAuth, len(ch.Nonce), protocol.AuthNonceLen)
		}
		if l.n.opt.AuthCode == "" {
			l.n.log.Error().Str(obs.FieldPeer, l.to.Addr.String()).Msg("master requires AUTH_CODE and none is set")
		}
		mac = protocol.MasterProof(l.n.opt.AuthCode, ch.Nonce, peer.Cluster, localAddr(nc))
	}
	return frame.WriteFrame(nc, protocol.AuthProof{MAC: mac})
}
