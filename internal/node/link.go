package node

import (
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// linkMinBackoff: the redial back-off is quick at first (a restarted
// master is back within a heartbeat or two), doubling from this. A
// master's link to another master waits at most linkMaxBackoff; a
// chunkserver's, at most MASTER_RECONNECTION_DELAY
// (ChunkserverOptions.ReconnectDelay).
const linkMinBackoff = 50 * time.Millisecond

// nextBackoff is the wait after prev, doubling from linkMinBackoff up to
// most.
func nextBackoff(prev, most time.Duration) time.Duration {
	return min(max(2*prev, linkMinBackoff), most)
}

// link is one outgoing connection to a master, of either daemon: dialled
// again, after the wait its side asks, until the link is stopped. Sends
// while it is down are dropped (the cores repeat what matters). The side
// decides how to connect, what the connection carries and how long to
// wait: masterSide (a master's link to another master, link_master.go)
// and csSide (a chunkserver's to a master, link_cs.go).
type link struct {
	to   masterhost.Master
	side linkSide
	// kicks: a send while the link is down cuts the wait short (a
	// chunkserver asking a dead master finds out at once).
	kicks bool
	mu    sync.Mutex
	c     *conn
	kick  chan struct{}
	quit  chan struct{}
	once  sync.Once
}

// linkSide is what a daemon does with its link.
type linkSide interface {
	// connect dials l.to, exchanges hellos and answers the challenge;
	// refused: the dial itself was refused (a closed port).
	connect(l *link) (c *conn, refused bool, err error)
	// failed: connect failed; the wait before the next dial.
	failed(l *link, err error, refused bool) time.Duration
	// serve: c is l's connection; it is served until it ends (detach
	// then clears it), and the wait before the next dial is returned.
	serve(l *link, c *conn) time.Duration
}

func startLink(to masterhost.Master, side linkSide, kicks bool) *link {
	l := &link{to: to, side: side, kicks: kicks, kick: make(chan struct{}, 1), quit: make(chan struct{})}
	go l.run()
	return l
}

// up: a connection is open.
func (l *link) up() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c != nil && !l.c.closed()
}

func (l *link) send(m wire.Message) {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if c != nil {
		c.send(m)
		return
	}
	if l.kicks {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// reconnect closes the connection; the link dials again.
func (l *link) reconnect() {
	l.mu.Lock()
	if l.c != nil {
		l.c.close()
	}
	l.mu.Unlock()
}

func (l *link) stop() {
	l.once.Do(func() { close(l.quit) })
	l.mu.Lock()
	if l.c != nil {
		l.c.closeAfterFlush()
	}
	l.mu.Unlock()
}

// quitting is closed once stop was called: a side's deliveries to its
// loop give up then.
func (l *link) quitting() <-chan struct{} { return l.quit }

// stopped: stop was called.
func (l *link) stopped() bool {
	select {
	case <-l.quit:
		return true
	default:
		return false
	}
}

// sleep waits d, or less if stopped (false) or, with kick, kicked.
func (l *link) sleep(d time.Duration, kick bool) bool {
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
// while it was dialled: stop found no connection to close then, so none
// may be kept (false: c is closed).
func (l *link) install(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped() {
		c.close()
		return false
	}
	l.c = c
	return true
}

// detach: the connection ended.
func (l *link) detach() {
	l.mu.Lock()
	l.c = nil
	l.mu.Unlock()
}

func (l *link) run() {
	var wait time.Duration // the first dial is at once
	for {
		if wait > 0 && !l.sleep(wait, true) {
			return
		}
		if l.stopped() {
			return
		}
		c, refused, err := l.side.connect(l)
		if err != nil {
			wait = l.side.failed(l, err, refused)
			continue
		}
		if !l.install(c) {
			return
		}
		wait = l.side.serve(l, c)
	}
}
