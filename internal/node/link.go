package node

import (
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// LinkMinBackoff: the redial back-off is quick at first (a restarted
// master is back within a heartbeat or two), doubling from this. A
// master's link to another master waits at most a second (masternode's
// linkMaxBackoff); a chunkserver's, at most MASTER_RECONNECTION_DELAY
// (csnode.ChunkserverOptions.ReconnectDelay).
const LinkMinBackoff = 50 * time.Millisecond

// NextBackoff is the wait after prev, doubling from LinkMinBackoff up to
// most.
func NextBackoff(prev, most time.Duration) time.Duration {
	return min(max(2*prev, LinkMinBackoff), most)
}

// Link is one outgoing connection to a master, of either daemon: dialled
// again, after the wait its side asks, until the link is stopped. Sends
// while it is down are dropped (the cores repeat what matters). The side
// decides how to connect, what the connection carries and how long to
// wait: masternode's masterSide (a master's link to another master) and
// csnode's csSide (a chunkserver's to a master), both in their link.go.
type Link struct {
	To   masterhost.Master // the master dialled (set at the start, never changed)
	side LinkSide
	// kicks: a send while the link is down cuts the wait short (a
	// chunkserver asking a dead master finds out at once).
	kicks bool
	mu    sync.Mutex
	c     *Conn
	kick  chan struct{}
	quit  chan struct{}
	once  sync.Once
}

// LinkSide is what a daemon does with its link.
type LinkSide interface {
	// Connect dials l.To, exchanges hellos and answers the challenge;
	// refused: the dial itself was refused (a closed port).
	Connect(l *Link) (c *Conn, refused bool, err error)
	// Failed: Connect failed; the wait before the next dial.
	Failed(l *Link, err error, refused bool) time.Duration
	// Serve: c is l's connection; it is served until it ends (Detach
	// then clears it), and the wait before the next dial is returned.
	Serve(l *Link, c *Conn) time.Duration
}

// StartLink starts a link to master to, dialled at once. kicks: a send
// while it is down cuts the wait before the next dial short.
func StartLink(to masterhost.Master, side LinkSide, kicks bool) *Link {
	l := &Link{To: to, side: side, kicks: kicks, kick: make(chan struct{}, 1), quit: make(chan struct{})}
	go l.run()
	return l
}

// Up: a connection is open.
func (l *Link) Up() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c != nil && !l.c.Closed()
}

// Send queues m on the connection; while there is none m is dropped (and,
// with kicks, the next dial is made at once).
func (l *Link) Send(m wire.Message) {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if c != nil {
		c.Send(m)
		return
	}
	if l.kicks {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// Reconnect closes the connection; the link dials again.
func (l *Link) Reconnect() {
	l.mu.Lock()
	if l.c != nil {
		l.c.Close()
	}
	l.mu.Unlock()
}

// Stop ends the link: no more dials, and the connection closes once what
// is queued on it (goodbyes) is written.
func (l *Link) Stop() {
	l.once.Do(func() { close(l.quit) })
	l.mu.Lock()
	if l.c != nil {
		l.c.CloseAfterFlush()
	}
	l.mu.Unlock()
}

// Quit is closed once Stop was called: a side's deliveries to its
// loop give up then.
func (l *Link) Quit() <-chan struct{} { return l.quit }

// stopped: Stop was called.
func (l *Link) stopped() bool {
	select {
	case <-l.quit:
		return true
	default:
		return false
	}
}

// Sleep waits d, or less if stopped (false) or, with kick, kicked.
func (l *Link) Sleep(d time.Duration, kick bool) bool {
	var k chan struct{}
	if kick {
		k = l.kick
	}
	select {
	case <-l.quit:
		return false
	case <-k:
	case <-time.After(d):
	}
	return true
}

// install makes c the link's connection, unless the link was stopped
// while it was dialled: Stop found no connection to close then, so none
// may be kept (false: c is closed).
func (l *Link) install(c *Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped() {
		c.Close()
		return false
	}
	l.c = c
	return true
}

// Detach: the connection ended (its side's Serve calls it).
func (l *Link) Detach() {
	l.mu.Lock()
	l.c = nil
	l.mu.Unlock()
}

func (l *Link) run() {
	var wait time.Duration // the first dial is at once
	for {
		if wait > 0 && !l.Sleep(wait, true) {
			return
		}
		if l.stopped() {
			return
		}
		c, refused, err := l.side.Connect(l)
		if err != nil {
			wait = l.side.Failed(l, err, refused)
			continue
		}
		if !l.install(c) {
			return
		}
		wait = l.side.Serve(l, c)
	}
}
