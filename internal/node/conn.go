package node

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/transport"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Limits of every connection.
const (
	handshakeTimeout = 2 * time.Second
	writeTimeout     = 2 * time.Second
	dialTimeout      = time.Second
	// A peer slower than this many queued frames is cut off rather than
	// let it hold memory or stall the loop that owns the state.
	sendQueue = 1024
)

// conn is one established, checked connection. Writes go through a bounded
// queue; the owner's loop never blocks on a peer. A writer goroutine runs
// only while frames are queued, and writes everything queued in one
// system call (writev): thousands of connections each holding a parked
// writer and a 1,024-slot channel cost a crowd's LEADER 24 KiB and more a
// chunkserver, and a goroutine switch a frame.
type conn struct {
	nc     net.Conn
	raw    syscall.RawConn // nil: no direct writes (not a socket)
	peer   frame.Hello
	remote netip.Addr

	mu         sync.Mutex
	q          [][]byte // frames queued, in order (at most sendQueue)
	spare      [][]byte // the writer's last batch, reused
	writing    bool     // a writer goroutine owns the socket's write side
	closeAfter bool     // close once q is written (closeAfterFlush)

	queued     atomic.Int64 // bytes in q, bounded by maxQueuedBytes
	slow       atomic.Bool  // closed because the peer did not read its replies
	once       sync.Once
	done       chan struct{}
	challenged bool // chunkserver side: the master asked for AUTH_CODE
	// nonceSpent: master side, the nonce its hello gave this (client
	// port) connection has proved an admin command (one per connection).
	nonceSpent bool
}

func newConn(nc net.Conn, peer frame.Hello) *conn {
	c := &conn{nc: nc, peer: peer, done: make(chan struct{})}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.raw = rc
		}
	}
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		c.remote = ap.Addr().Unmap()
	}
	return c
}

// writer writes what is queued until nothing is, then ends. One at a time
// (writing), started by send or closeAfterFlush.
func (c *conn) writer() {
	for {
		c.mu.Lock()
		batch := c.q
		c.q, c.spare = c.spare[:0], nil
		closeAfter := c.closeAfter && len(batch) == 0
		if len(batch) == 0 {
			c.writing = false
			c.mu.Unlock()
			if closeAfter {
				c.close()
			}
			return
		}
		c.mu.Unlock()

		n := 0
		for _, b := range batch {
			n += len(b)
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		bufs := net.Buffers(batch)
		_, err := bufs.WriteTo(c.nc)
		c.queued.Add(-int64(n))
		clear(batch)
		c.mu.Lock()
		c.spare = batch[:0]
		c.mu.Unlock()
		if err != nil {
			c.writeFailed()
			return
		}
	}
}

// writeFailed ends the write side after a failed write: nothing more is
// written, and the connection closes.
func (c *conn) writeFailed() {
	c.mu.Lock()
	c.writing = false
	c.mu.Unlock()
	c.close()
}

// send queues m; a full queue (in frames or in bytes) closes the
// connection (the peer is not keeping up, and the core treats a lost
// connection as it must anyway).
func (c *conn) send(m wire.Message) {
	b, err := frame.Encode(m)
	if err != nil {
		// Our own message failed to encode: a programming error that must
		// not pass silently, but it is no reason to stop the daemon.
		panic(fmt.Sprintf("node: encoding %T: %v", m, err))
	}
	if c.closed() {
		return
	}
	if c.queued.Add(int64(len(b))) > maxQueuedBytes {
		c.queued.Add(-int64(len(b)))
		c.tooSlow()
		return
	}
	c.mu.Lock()
	if c.closeAfter || len(c.q) >= sendQueue {
		full := !c.closeAfter
		c.mu.Unlock()
		c.queued.Add(-int64(len(b)))
		if full {
			c.tooSlow()
		}
		return
	}
	if !c.writing && len(c.q) == 0 && c.raw != nil {
		// Nothing queued and no writer: write it from here, without
		// waiting (writeNow). A goroutine started for every frame cost a
		// wake-up of another thread each, most of an idle chunkserver's
		// processor per round in a VM where those are dear.
		c.writing = true
		c.mu.Unlock()
		c.writeNow(b)
		return
	}
	c.q = append(c.q, b)
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if start {
		go c.writer()
	}
}

// writeNow writes b with one non-blocking system call; what the socket
// does not take at once (its buffer is full) is queued before anything
// sent meanwhile, for a writer goroutine. The caller set writing.
func (c *conn) writeNow(b []byte) {
	n, werr := 0, error(nil)
	err := c.raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			k, e := syscall.Write(int(fd), b[n:])
			if e == syscall.EINTR {
				continue
			}
			if e != nil {
				if e != syscall.EAGAIN {
					werr = e
				}
				break
			}
			n += k
		}
		return true // never wait here: the rest goes to the writer
	})
	if err == nil {
		err = werr
	}
	c.queued.Add(-int64(n))
	if err != nil {
		c.writeFailed()
		return
	}
	c.mu.Lock()
	if n < len(b) {
		c.q = append([][]byte{b[n:]}, c.q...)
	}
	if len(c.q) == 0 && !c.closeAfter {
		c.writing = false
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go c.writer() // the rest, frames queued meanwhile, or a close after them
}

func (c *conn) tooSlow() {
	c.slow.Store(true)
	c.close()
}

// closeAfterFlush closes once every queued frame (goodbyes) is written.
func (c *conn) closeAfterFlush() {
	c.mu.Lock()
	c.closeAfter = true
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if start {
		go c.writer()
	}
	// Bound how long a goodbye may hold the connection open.
	time.AfterFunc(writeTimeout, c.close)
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.nc.Close()
	})
}

func (c *conn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// frameReader reads a connection's frames under two deadlines: idle while
// it waits for a frame's first byte, frameTimeout from there to the
// frame's end. A peer that sends nothing, or starts a frame and never
// finishes it, holds nothing for long.
type frameReader struct {
	nc      net.Conn
	br      *bufio.Reader // over nc: a frame's header and body in one read, and often the next frames too
	idle    time.Duration
	frame   time.Duration // frameTimeout
	started bool          // the frame being read has begun
}

// readBuf is each connection's read buffer: a heartbeat, an ack or a
// request fits many times over, so that a frame costs one system call or
// less instead of two (header, body).
const readBuf = 1 << 10

func newFrameReader(nc net.Conn, idle, frame time.Duration) *frameReader {
	return &frameReader{nc: nc, br: bufio.NewReaderSize(nc, readBuf), idle: idle, frame: frame}
}

// next arms the idle deadline for the next frame.
func (r *frameReader) next() {
	r.started = false
	_ = r.nc.SetReadDeadline(time.Now().Add(r.idle))
}

func (r *frameReader) Read(p []byte) (int, error) {
	n, err := r.br.Read(p)
	if n > 0 && !r.started {
		r.started = true
		_ = r.nc.SetReadDeadline(time.Now().Add(r.frame))
	}
	return n, err
}

// Frame bodies in flight. A small body (at most smallBody: every vote,
// ack, request and CSInfo) is read into a buffer of its size. A larger one
// grows with the bytes received, never past its length, and each growth
// is drawn from a budget shared by every connection that uses one
// (budget nil: none, for the authenticated master port); a peer that
// would take more than what is left loses its connection (errLimit). So
// many connections each sending most of a 4 MiB frame hold at most the
// budget between them, not 4 MiB each.
const (
	smallBody   = 16 << 10
	largeBodies = 64 << 20 // for 9420 and 9421 together
)

// bodyBudget is bytes of large frame bodies that may be held at once.
type bodyBudget struct{ left atomic.Int64 }

func newBodyBudget(n int64) *bodyBudget {
	b := &bodyBudget{}
	b.left.Store(n)
	return b
}

func (b *bodyBudget) take(n int) bool {
	if b == nil {
		return true
	}
	if b.left.Add(-int64(n)) < 0 {
		b.left.Add(int64(n))
		return false
	}
	return true
}

func (b *bodyBudget) give(n int) {
	if b != nil {
		b.left.Add(int64(n))
	}
}

// readFrame reads one frame like reg.ReadFrame, but holds only what has
// arrived: the body buffer grows with the bytes received, never to the
// length the header claims, and large bodies draw on budget.
func readFrame(reg *frame.Registry, r io.Reader, max uint32, budget *bodyBudget) (wire.Message, error) {
	var hdr [frame.HeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < 2 {
		return nil, fmt.Errorf("%w: length %d", frame.ErrShortFrame, n)
	}
	if n > max {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", frame.ErrFrameTooLarge, n, max)
	}
	size := frame.HeaderLen + int(n-2)
	bodyErr := func(err error) error {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("reading the %d-byte body of type %d: %w", n-2, binary.BigEndian.Uint16(hdr[4:6]), err)
	}
	if n-2 <= smallBody {
		b := make([]byte, size)
		copy(b, hdr[:])
		if _, err := io.ReadFull(r, b[frame.HeaderLen:]); err != nil {
			return nil, bodyErr(err)
		}
		return reg.Decode(b, max)
	}
	held := 0
	defer func() { budget.give(held) }()
	b := make([]byte, 0, smallBody)
	b = append(b, hdr[:]...)
	for len(b) < size {
		if len(b) == cap(b) {
			grow := min(2*cap(b), size) - cap(b)
			if !budget.take(grow) {
				return nil, bodyErr(fmt.Errorf("%w: large frames in flight from every peer already hold %d MiB", errLimit, largeBodies>>20))
			}
			held += grow
			nb := make([]byte, len(b), cap(b)+grow)
			copy(nb, b)
			b = nb
		}
		k, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err != nil && len(b) < size {
			return nil, bodyErr(err)
		}
	}
	return reg.Decode(b, max)
}

// acceptHello reads the peer's hello, checks it, then answers with ours.
func acceptHello(nc net.Conn, ours frame.Hello, cluster string, kinds ...frame.Kind) (frame.Hello, error) {
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	h, err := frame.ReadHello(nc)
	if err != nil {
		return h, err
	}
	// Ours goes out even when theirs is refused, so that the peer can tell
	// its operator why (another cluster, another protocol version).
	if err := frame.WriteFrame(nc, ours); err != nil {
		return h, err
	}
	return h, h.Check(cluster, kinds...)
}

// dial connects through tr from bind (when valid) to addr. refused
// reports that nothing listens there: the kill -9 fast path
// (docs/architecture.md).
func dial(tr transport.Transport, bind netip.Addr, addr netip.AddrPort, timeout time.Duration) (nc net.Conn, refused bool, err error) {
	nc, err = tr.Dial(bind, addr, timeout)
	if err != nil {
		return nil, transport.Refused(err), err
	}
	return nc, false, nil
}

// localAddr is the address a connection leaves from.
func localAddr(nc net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(nc.LocalAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// endedByPeer: err ended a read because the peer's side closed the
// connection (a FIN or a RST arrived), as a killed process's kernel does.
func endedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// isFrameError: the peer sent something wrong, as opposed to the
// connection ending (EOF, reset, closed by us).
func isFrameError(err error) bool {
	for _, e := range []error{frame.ErrFrameTooLarge, frame.ErrShortFrame, frame.ErrUnknownType, frame.ErrBadBody} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// refuseReason names a decoding or handshake failure for logs and metrics.
func refuseReason(err error) string {
	switch {
	case errors.Is(err, frame.ErrFrameTooLarge):
		return "oversized"
	case errors.Is(err, frame.ErrUnknownType):
		return "unknown_type"
	case errors.Is(err, frame.ErrCluster):
		return "cluster"
	case errors.Is(err, frame.ErrProtocol):
		return "protocol"
	case errors.Is(err, frame.ErrKind):
		return "kind"
	case errors.Is(err, errAuth):
		return "auth"
	case errors.Is(err, errIdentity):
		return "identity"
	case errors.Is(err, errStranger):
		return "stranger"
	case errors.Is(err, errAuthRate):
		return "auth_rate"
	case errors.Is(err, errLimit):
		return "limit"
	case errors.Is(err, errClone):
		return "clone"
	case errors.Is(err, errIdle):
		return "idle"
	case errors.Is(err, errSlow):
		return "slow"
	}
	return "garbage"
}

var (
	errAuth     = errors.New("peer did not prove AUTH_CODE")
	errIdentity = errors.New("peer claims an identity its address does not have")
	errStranger = errors.New("a master this one's MASTER_HOST does not name (told so)")
	errNotNamed = errors.New("that master's MASTER_HOST does not name this one")
	errAuthRate = errors.New("too many failed proofs from this address lately")
	errLimit    = errors.New("too many connections")
	errClone    = errors.New("chunkserver id already connected from another address: cloned chunkserver or impostor")
	errIdle     = errors.New("nothing received for too long")
	errSlow     = errors.New("a frame was not completed in time, or replies were not read")
)
