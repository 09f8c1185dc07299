package csnode

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// csSide is a chunkserver's link to one master: probes, vote sessions and
// registration all travel on it.
type csSide struct {
	n       *ChunkserverNode
	backoff time.Duration
	sentAt  roles.Instant    // when the last dial began (a refusal's proof)
	down    node.Unreachable // failed dials, told to the log spaced out
	foreign node.Unreachable // refusals of another cluster's master, the same way
}

func startCSLink(n *ChunkserverNode, to masterhost.Master) *node.Link {
	return node.StartLink(to, &csSide{n: n}, true)
}

// sendInfo tells the master who this chunkserver is (after registration).
func (n *ChunkserverNode) sendInfo(l *node.Link) {
	id := n.Identity()
	if id.CS == wire.NoCS {
		return
	}
	var total, used uint64
	for _, d := range n.opt.Disks {
		t, u, err := diskSpace(d)
		if err == nil {
			total, used = total+t, used+u
		}
	}
	n.stMu.Lock()
	record, uncertain := n.state.Record, n.state.Uncertain
	n.stMu.Unlock()
	l.Send(protocol.CSInfo{ID: id.CS, Port: n.port, Labels: n.opt.Labels, VoterOnly: len(n.opt.Disks) == 0,
		Total: total, Used: used, Version: n.opt.Version, Record: record, Uncertain: uncertain})
}

func (s *csSide) deliver(l *node.Link, in csInput) {
	in.from = l.To.ID
	select {
	case s.n.inbox <- in:
	case <-l.Quit():
	}
}

func (s *csSide) Failed(l *node.Link, err error, refused bool) time.Duration {
	if refused {
		s.deliver(l, csInput{ev: roles.Refused{Master: l.To.ID, SentAt: s.sentAt}})
	}
	if errors.Is(err, frame.ErrCluster) {
		if say, fails, since := s.foreign.Failed(time.Now()); say {
			s.n.log.Error().Str("master", l.To.Addr.String()).Err(err).Int("attempts", fails).Dur("for", time.Since(since)).
				Msg("master of another cluster refused: if that cluster was founded on a backup to replace this one (mfsmaster init --from-backup), stop this chunkserver, move " +
					s.n.recordPath() + " aside and start it to join it; still trying")
		}
		s.backoff = s.n.opt.ReconnectDelay
	} else {
		s.backoff = node.NextBackoff(s.backoff, s.n.opt.ReconnectDelay)
		if say, fails, since := s.down.Failed(time.Now()); say {
			s.n.log.Warn().Str("master", l.To.Addr.String()).Err(err).Int("attempts", fails).Dur("for", time.Since(since)).
				Msg("cannot reach master: is it up, and is MASTER_HOST (or the master's port) right? still trying")
		}
	}
	return s.backoff
}

func (s *csSide) Serve(l *node.Link, c *node.Conn) time.Duration {
	s.foreign.Reached()
	if fails, since := s.down.Reached(); fails > 0 {
		s.n.log.Info().Str("master", l.To.Addr.String()).Int("attempts", fails).Dur("for", time.Since(since)).Msg("master reached again")
	}
	s.n.sendInfo(l)
	s.deliver(l, csInput{up: true})
	opened := time.Now()
	s.keepalive(l, c)
	closed := s.read(l, c)
	l.Detach()
	s.deliver(l, csInput{ev: roles.VoteConnLost{Master: l.To.ID, Closed: closed}})
	// A connection that lived is retried at once (was the master killed?
	// a refusal says so); one closed right after opening is a refusal of
	// us, and is retried with back-off.
	if time.Since(opened) > time.Second {
		s.backoff = 0
		// A one-off wait, not the start of the back-off: doubling from it
		// had a cold start's links (every master stopped, then started)
		// wait out the 5 s cap at 5,000 voters. A probe sent meanwhile
		// does not cut it short (redialDelay).
		if d := s.n.redialDelay(l.To.ID, closed); d > 0 {
			l.Sleep(d, false)
		}
		return 0
	}
	if c.Challenged {
		s.n.log.Warn().Str("master", l.To.Addr.String()).Msg("master closed the connection right after authentication: is AUTH_CODE the masters' one?")
	}
	s.backoff = node.NextBackoff(s.backoff, s.n.opt.ReconnectDelay)
	return s.backoff
}

// redialDelay is how long a link to master m waits before it redials a
// connection that lived; closed: the master's host closed it. In a crowd
// (voter.Voter.InCrowd: more than PROBE_VOTERS registered) the dials after a
// network blip are spread: after one that cut every link of 10,000
// voters, 30,000 handshakes at once timed out by the thousand, and the
// LEADER, which had to renew 10,000 votes it still held, had no
// acknowledgement for 1.8 s and fell. The link to the master the vote is with, or
// promised to, comes first: that master counts the vote until its lease
// ends, and only a new session renews it. It redials at once when the
// master's host closed the connection (a killed master: the refusal that
// proves it gone must come at once), else within 20 us per chunkserver
// (200 ms at 10,000). Other links wait up to 100 us per chunkserver (1 s
// at 10,000). A probe sent meanwhile does not cut the wait short (it
// would: every voter probes every master once its session ends).
func (n *ChunkserverNode) redialDelay(m wire.MasterID, closed bool) time.Duration {
	n.stMu.Lock()
	st := n.state
	n.stMu.Unlock()
	if !st.InCrowd {
		return 0
	}
	spread := redialSpread
	if m == st.VoteFor || m == st.Promised {
		if closed {
			return 0
		}
		spread = redialSpreadVote
	}
	return time.Duration(rand.Int64N(int64(min(st.Crowd, maxRedialCrowd)) * int64(spread)))
}

// redialSpread, redialSpreadVote, maxRedialCrowd: see redialDelay.
// Outside a crowd every link redials at once, as a small cluster always
// did; the crowd is a master's claim, so the spread stops growing at
// maxRedialCrowd (2 s, 400 ms).
const (
	redialSpread     = 100 * time.Microsecond
	redialSpreadVote = 20 * time.Microsecond
	maxRedialCrowd   = 20000
)

// keepalive repeats CSInfo (fresh disk figures) every node.CSKeepalive while c
// is open: a master cuts a chunkserver connection that is silent for
// csIdle, and a voter content with its LEADER may not probe another master
// for longer than that. A timer, not a goroutine with a ticker: the swarm
// holds tens of thousands of links in one process. Once c is closed the
// chain ends at its next firing.
func (s *csSide) keepalive(l *node.Link, c *node.Conn) {
	time.AfterFunc(node.CSKeepalive, func() {
		if c.Closed() {
			return
		}
		s.n.sendInfo(l)
		s.keepalive(l, c)
	})
}

// read feeds what the master sends to the loop until the connection ends.
// closed reports that the master's host ended it (a FIN or a RST arrived:
// what a killed process's kernel sends), not a timeout, an ICMP error or
// our own close: half of the proof the fast path needs (roles.Refused).
func (s *csSide) read(l *node.Link, c *node.Conn) (closed bool) {
	defer c.Close()
	rd := bufio.NewReaderSize(c.NC, node.ReadBuf) // one system call a frame or less
	for {
		m, err := cstomaIn.ReadFrame(rd, frame.DefaultMaxFrame)
		if err != nil {
			byPeer := node.EndedByPeer(err)
			if !byPeer && !errors.Is(err, net.ErrClosed) && !c.Closed() {
				s.n.log.Warn().Str("master", l.To.Addr.String()).Err(err).Msg("master connection dropped")
			}
			return byPeer
		}
		switch v := node.Deref(m).(type) {
		case protocol.RegisterReply:
			s.deliver(l, csInput{reply: &v, cluster: c.Peer.Cluster, local: node.LocalAddr(c.NC)})
		case roles.ProbeReply, roles.Heartbeat, roles.VoteRelease, roles.Redirect:
			ev, _ := roles.FromMaster(v, l.To.ID)
			s.deliver(l, csInput{ev: ev})
		case protocol.TrustRecord:
			if v.CS == s.n.Identity().CS {
				s.n.log.Warn().Str("master", l.To.Addr.String()).Msg("the operator vouches for this voter's record (mfscli -CTRUST)")
				s.deliver(l, csInput{ev: roles.TrustRecord{}})
			}
		}
	}
}

// Connect dials the master, exchanges hellos (refusing another cluster's
// master) and answers the AUTH_CODE challenge.
func (s *csSide) Connect(l *node.Link) (*node.Conn, bool, error) {
	s.sentAt = s.n.now()
	nc, refused, err := node.Dial(s.n.tr, s.n.opt.Bind, l.To.Addr, node.DialTimeout)
	if err != nil {
		return nil, refused, err
	}
	h := s.n.hello()
	peer, err := frame.DialHello(nc, h, h.Cluster, frame.KindMaster, node.HandshakeTimeout)
	if err == nil && masterhost.IDOf(l.To.Addr.Addr()) != wire.MasterID(peer.ID) {
		err = node.ErrIdentity
	}
	if err != nil {
		_ = nc.Close()
		return nil, false, err
	}
	_ = nc.SetReadDeadline(time.Now().Add(node.HandshakeTimeout))
	m, err := cstomaIn.ReadFrame(nc, frame.MaxHelloFrame)
	_ = nc.SetReadDeadline(time.Time{})
	ch, ok := m.(*protocol.AuthChallenge)
	if err != nil || !ok {
		_ = nc.Close()
		if err == nil {
			err = node.ErrAuth
		}
		return nil, false, err
	}
	var mac []byte
	if len(ch.Nonce) > 0 {
		if len(ch.Nonce) != protocol.AuthNonceLen {
			// Not a nonce of ours: whoever answers at this address wants
			// a proof over bytes it chose (an HMAC oracle).
			_ = nc.Close()
			return nil, false, fmt.Errorf("%w: the challenge's nonce has %d bytes, not %d", node.ErrAuth, len(ch.Nonce), protocol.AuthNonceLen)
		}
		if s.n.opt.AuthCode == "" {
			s.n.log.Error().Str("master", l.To.Addr.String()).Msg("master requires AUTH_CODE and none is set")
		}
		mac = protocol.ChunkserverProof(s.n.opt.AuthCode, ch.Nonce, peer.Cluster, node.LocalAddr(nc))
	}
	if err := frame.WriteFrame(nc, protocol.AuthProof{MAC: mac}); err != nil {
		_ = nc.Close()
		return nil, false, err
	}
	c := node.NewConn(nc, peer)
	c.Challenged = len(ch.Nonce) > 0
	return c, false, nil
}
