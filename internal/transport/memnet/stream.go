package memnet

import (
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
)

const (
	// streamBuffer bounds one direction of a stream, the send and receive
	// buffers of a loopback TCP connection together: a writer whose reader
	// lags (or whose path is blocked) blocks past it.
	streamBuffer = 256 << 10
	// maxSegments bounds the in-flight write records of one direction:
	// past it a write joins the last record, whose bytes then arrive with it.
	maxSegments = 4096
)

// stream is one connection: two pipes, two conn ends. End 0 dialed, end 1
// was accepted; pipes[i] carries what end i writes.
type stream struct {
	n     *Network
	hosts [2]netip.Addr
	ports [2]uint16
	pipes [2]*pipe
	ends  [2]*conn
	// under n.mu:
	closed    [2]bool
	portFreed bool // the dialer's source port went back to its host
}

// newStream makes the conn from src (dialing) to dst (listening). n.mu is
// held: the pipes start held when their direction is blocked.
func newStream(n *Network, src, dst netip.AddrPort) *stream {
	s := &stream{
		n:     n,
		hosts: [2]netip.Addr{src.Addr(), dst.Addr()},
		ports: [2]uint16{src.Port(), dst.Port()},
	}
	for i := range 2 {
		p := &pipe{s: s, w: i, from: s.hosts[i], to: s.hosts[1-i]}
		p.cond.L = &p.mu
		p.held = n.blocked[link{p.from, p.to}]
		s.pipes[i] = p
		s.ends[i] = &conn{
			s:     s,
			i:     i,
			laddr: tcpAddr(s.hosts[i], s.ports[i]),
			raddr: tcpAddr(s.hosts[1-i], s.ports[1-i]),
		}
	}
	return s
}

// reset aborts end i, as its kernel does on a RST or a dead process: its
// calls fail with ECONNRESET, what it had not sent is dropped, and so is
// what it had not read. With rst the RST flies to the other end, which is
// reset when it lands. A closed end has nothing left to reset.
func (s *stream) reset(i int, rst bool) {
	out, in := s.pipes[i], s.pipes[1-i]
	out.mu.Lock()
	if out.wclosed || out.wreset {
		out.mu.Unlock()
		return
	}
	out.wreset = true
	out.q.truncate(out.readable)
	out.segs = nil
	var ev event
	if rst {
		now := time.Now()
		out.rst, out.rstAt = true, now.Add(out.lat())
		ev = out.advanceLocked(now)
		out.armLocked()
	}
	out.cond.Broadcast()
	out.mu.Unlock()

	in.mu.Lock()
	in.rreset = true
	in.dropAllLocked()
	in.cond.Broadcast()
	in.mu.Unlock()

	s.n.resets.Add(1)
	s.n.mu.Lock()
	s.freePortLocked(i)
	s.n.mu.Unlock()
	ev.dispatch()
}

// finArrived is end w's FIN reaching the other end, r: w has closed, so r's
// writes from now on fail with EPIPE.
func (s *stream) finArrived(w int) {
	p := s.pipes[1-w]
	p.mu.Lock()
	p.epipe = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// closeEnd records end i closed; the stream leaves the network, its timers
// stopped, when both are.
func (s *stream) closeEnd(i int) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	s.freePortLocked(i)
	s.closed[i] = true
	if !s.closed[0] || !s.closed[1] {
		return
	}
	delete(n.streams, s)
	for _, p := range s.pipes {
		p.mu.Lock()
		p.dead = true
		if p.timer != nil {
			p.timer.Stop()
		}
		p.armed = false
		p.mu.Unlock()
	}
}

// freePortLocked gives the dialer's source port back once its end is done.
func (s *stream) freePortLocked(i int) {
	if i != 0 || s.portFreed {
		return
	}
	s.portFreed = true
	if h := s.n.hosts[s.hosts[0]]; h != nil {
		delete(h.dialPorts, s.ports[0])
	}
}

// segment is one write (or the FIN) on its way: its bytes become readable
// at at, after every segment before it.
type segment struct {
	n   int
	at  time.Time
	fin bool
}

// pipe is one direction of a stream: the bytes end w wrote that the other
// end has not read, those readable first, then those still in flight.
type pipe struct {
	s        *stream
	w        int // the writing end
	from, to netip.Addr

	mu         sync.Mutex
	cond       sync.Cond // on mu: the reader and the writers wait here
	q          byteQueue // readable bytes, then the in-flight ones of segs
	readable   int
	segs       []segment
	finArrived bool
	rst        bool // the writer's RST is in flight, to land at rstAt
	rstAt      time.Time
	held       bool // the direction is blocked: nothing lands
	dead       bool // both ends closed: no timer may start
	timer      *time.Timer
	armed      bool // timer is set for timerAt
	timerAt    time.Time

	wclosed, wreset bool // the writing end closed, reset
	epipe           bool // the reader's FIN came back: the reader closed
	writing         bool // a Write is on: Writes do not interleave
	rclosed, rreset bool // the reading end closed, reset
	rd, wd          deadline
}

func (p *pipe) lat() time.Duration { return p.s.n.lat(p.from, p.to) }

// event is what a delivery set off on the other end, to dispatch once no
// lock is held.
type event struct {
	p        *pipe
	fin, rst bool
}

type events []event

func (ev event) dispatch() {
	if ev.fin {
		ev.p.s.finArrived(ev.p.w)
	}
	if ev.rst {
		ev.p.s.reset(1-ev.p.w, false)
	}
}

func (evs events) dispatch() {
	for _, ev := range evs {
		ev.dispatch()
	}
}

// advanceLocked lands what is due by now, unless the direction is held.
func (p *pipe) advanceLocked(now time.Time) event {
	ev := event{p: p}
	if p.held {
		return ev
	}
	moved := false
	for len(p.segs) > 0 && !p.segs[0].at.After(now) {
		sg := p.segs[0]
		p.segs = p.segs[1:]
		p.readable += sg.n
		if sg.fin {
			p.finArrived, ev.fin = true, true
		}
		moved = true
	}
	if len(p.segs) == 0 {
		p.segs = nil
	}
	if p.rst && !p.rstAt.After(now) {
		p.rst, ev.rst, moved = false, true, true
	}
	if moved {
		p.cond.Broadcast()
	}
	return ev
}

// armLocked sets the timer for the next landing.
func (p *pipe) armLocked() {
	if p.dead || p.held {
		return
	}
	var next time.Time
	if len(p.segs) > 0 {
		next = p.segs[0].at
	}
	if p.rst && (next.IsZero() || p.rstAt.Before(next)) {
		next = p.rstAt
	}
	if next.IsZero() || p.armed && !next.Before(p.timerAt) {
		return
	}
	d := time.Until(next)
	if p.timer == nil {
		p.timer = time.AfterFunc(d, p.onTimer)
	} else {
		p.timer.Reset(d)
	}
	p.armed, p.timerAt = true, next
}

func (p *pipe) onTimer() {
	p.mu.Lock()
	p.armed = false
	ev := p.advanceLocked(time.Now())
	p.armLocked()
	p.mu.Unlock()
	ev.dispatch()
}

// setHeld holds or releases the direction (n.mu is held). Released bytes are
// sent again: they land one latency from now, or at their own time if later.
func (p *pipe) setHeld(on bool) events {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == on {
		return nil
	}
	p.held = on
	if on {
		if p.timer != nil {
			p.timer.Stop()
		}
		p.armed = false
		return nil
	}
	now := time.Now()
	resend := now.Add(p.lat())
	for i := range p.segs {
		if p.segs[i].at.Before(resend) {
			p.segs[i].at = resend
		}
	}
	if p.rst && p.rstAt.Before(resend) {
		p.rstAt = resend
	}
	ev := p.advanceLocked(now)
	p.armLocked()
	if !ev.fin && !ev.rst {
		return nil
	}
	return events{ev}
}

// addSegLocked queues a segment behind the others.
func (p *pipe) addSegLocked(sg segment) {
	if k := len(p.segs); k > 0 {
		last := &p.segs[k-1]
		if sg.at.Before(last.at) {
			sg.at = last.at // in order, whatever the latency did meanwhile
		}
		if k >= maxSegments && !last.fin && !sg.fin {
			last.n += sg.n
			last.at = sg.at
			return
		}
	}
	p.segs = append(p.segs, sg)
	p.armLocked()
}

// pushLocked takes written bytes: readable at once on a fast, open path with
// nothing ahead of them, else a segment.
func (p *pipe) pushLocked(b []byte) {
	p.q.push(b)
	lat := p.lat()
	if lat == 0 && !p.held && len(p.segs) == 0 {
		p.readable += len(b)
		p.cond.Broadcast()
		return
	}
	p.addSegLocked(segment{n: len(b), at: time.Now().Add(lat)})
}

// dropAllLocked forgets everything in the pipe: its reader is gone.
func (p *pipe) dropAllLocked() {
	p.q.reset()
	p.readable = 0
	p.segs = nil
	p.rst = false
}

// heldBytes counts the bytes a block holds back now.
func (p *pipe) heldBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held {
		return 0
	}
	return p.q.len() - p.readable
}

// conn is one end of a stream, a net.Conn with the kernel's errors.
type conn struct {
	s            *stream
	i            int
	laddr, raddr *net.TCPAddr
}

var _ net.Conn = (*conn)(nil)

func (c *conn) in() *pipe  { return c.s.pipes[1-c.i] }
func (c *conn) out() *pipe { return c.s.pipes[c.i] }

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.laddr, Addr: c.raddr, Err: err}
}

// Read returns the bytes that have landed, up to len(b), waiting for some;
// io.EOF after the peer's FIN and the bytes before it.
func (c *conn) Read(b []byte) (int, error) {
	p := c.in()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		switch {
		case p.rclosed:
			return 0, c.opErr("read", errClosed)
		case len(b) == 0:
			return 0, nil
		case p.rd.expired:
			return 0, c.opErr("read", errTimeout)
		case p.rreset:
			return 0, c.opErr("read", os.NewSyscallError("read", syscall.ECONNRESET))
		case p.readable > 0:
			n := p.q.pop(b[:min(len(b), p.readable)])
			p.readable -= n
			p.cond.Broadcast() // room for the writer
			return n, nil
		case p.finArrived:
			return 0, io.EOF
		}
		p.cond.Wait()
	}
}

// Write copies b into the pipe, waiting for room as long as the write
// deadline allows; on expiry it returns what it copied and a timeout. Once
// the peer is gone, bytes are dropped until its FIN or RST arrives, which
// then fails the writes (EPIPE, ECONNRESET).
func (c *conn) Write(b []byte) (int, error) {
	p := c.out()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.writing {
		if err := c.writeErrLocked(p); err != nil {
			return 0, err
		}
		p.cond.Wait()
	}
	p.writing = true
	defer func() {
		p.writing = false
		p.cond.Broadcast()
	}()
	n := 0
	for {
		if err := c.writeErrLocked(p); err != nil {
			return n, err
		}
		if p.rclosed || p.rreset {
			return len(b), nil
		}
		if n == len(b) {
			return n, nil
		}
		if k := min(streamBuffer-p.q.len(), len(b)-n); k > 0 {
			p.pushLocked(b[n : n+k])
			n += k
			continue
		}
		p.cond.Wait()
	}
}

// writeErrLocked is the error a Write fails with now, if any, in the order
// Go's poller and the kernel check them.
func (c *conn) writeErrLocked(p *pipe) error {
	switch {
	case p.wclosed:
		return c.opErr("write", errClosed)
	case p.wd.expired:
		return c.opErr("write", errTimeout)
	case p.wreset:
		return c.opErr("write", os.NewSyscallError("write", syscall.ECONNRESET))
	case p.epipe:
		return c.opErr("write", os.NewSyscallError("write", syscall.EPIPE))
	}
	return nil
}

// Close sends the FIN behind the bytes written (it waits like them behind a
// block) and drops what was not read. Local calls then fail with
// net.ErrClosed; a second Close fails too.
func (c *conn) Close() error {
	out, in := c.out(), c.in()
	out.mu.Lock()
	if out.wclosed {
		out.mu.Unlock()
		return c.opErr("close", errClosed)
	}
	out.wclosed = true
	out.wd.stop()
	var ev event
	if !out.wreset {
		now := time.Now()
		out.addSegLocked(segment{at: now.Add(out.lat()), fin: true})
		ev = out.advanceLocked(now)
	}
	out.cond.Broadcast()
	out.mu.Unlock()

	in.mu.Lock()
	in.rclosed = true
	in.rd.stop()
	in.dropAllLocked()
	in.cond.Broadcast()
	in.mu.Unlock()

	ev.dispatch()
	c.s.closeEnd(c.i)
	return nil
}

func (c *conn) LocalAddr() net.Addr  { return c.laddr }
func (c *conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline sets both deadlines.
func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline; a blocked Read sees it at once.
func (c *conn) SetReadDeadline(t time.Time) error {
	p := c.in()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rclosed {
		return c.opErr("set", errClosed)
	}
	p.rd.set(t, &p.mu, &p.cond)
	return nil
}

// SetWriteDeadline sets the write deadline; a blocked Write sees it at once.
func (c *conn) SetWriteDeadline(t time.Time) error {
	p := c.out()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wclosed {
		return c.opErr("set", errClosed)
	}
	p.wd.set(t, &p.mu, &p.cond)
	return nil
}
