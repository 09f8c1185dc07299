package node

import (
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
	// HandshakeTimeout bounds a hello exchange and an AUTH_CODE challenge.
	HandshakeTimeout = 2 * time.Second
	writeTimeout     = 2 * time.Second
	// DialTimeout bounds a link's dial to a master.
	DialTimeout = time.Second
	// A peer slower than this many queued frames is cut off rather than
	// let it hold memory or stall the loop that owns the state.
	sendQueue = 1024
	// maxQueuedBytes: replies queued for one connection; a peer that does
	// not read is cut off before it holds more (a list answer is at most
	// 2 MiB, so a reading client never comes near).
	maxQueuedBytes = 16 << 20
	// CSKeepalive: a chunkserver repeats its CSInfo this often, so that a
	// connection of a voter that neither votes nor probes here (a content
	// voter probes every 10 probe intervals, up to 100 s) is never
	// silent for long; a master cuts one silent for three of those.
	CSKeepalive = 10 * time.Second
)

// Conn is one established, checked connection. Writes go through a bounded
// queue; the owner's loop never blocks on a peer. A writer goroutine runs
// only while frames are queued, and writes everything queued in one
// system call (writev): thousands of connections each holding a parked
// writer and a 1,024-slot channel cost a crowd's LEADER 24 KiB and more a
// chunkserver, and a goroutine switch a frame.
type Conn struct {
	NC     net.Conn        // the socket (reads are its owner's; writes go through Send)
	raw    syscall.RawConn // nil: no direct writes (not a socket)
	Peer   frame.Hello     // the hello the peer opened with
	Remote netip.Addr      // the peer's address (invalid if it has none)

	mu         sync.Mutex
	q          [][]byte // frames queued, in order (at most sendQueue)
	spare      [][]byte // the writer's last batch, reused
	writing    bool     // a writer goroutine owns the socket's write side
	closeAfter bool     // close once q is written (CloseAfterFlush)

	queued atomic.Int64 // bytes in q, bounded by maxQueuedBytes
	slow   atomic.Bool  // closed because the peer did not read its replies
	once   sync.Once
	done   chan struct{}
	// Challenged: chunkserver side, the master asked for AUTH_CODE.
	Challenged bool
	// NonceSpent: master side, the nonce its hello gave this (client
	// port) connection has proved an admin command (one per connection).
	// The master's loop only.
	NonceSpent bool
}

// NewConn is nc, past its handshake with peer, as a Conn.
func NewConn(nc net.Conn, peer frame.Hello) *Conn {
	c := &Conn{NC: nc, Peer: peer, done: make(chan struct{})}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.raw = rc
		}
	}
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		c.Remote = ap.Addr().Unmap()
	}
	return c
}

// writer writes what is queued until nothing is, then ends. One at a time
// (writing), started by Send or CloseAfterFlush.
func (c *Conn) writer() {
	for {
		c.mu.Lock()
		batch := c.q
		c.q, c.spare = c.spare[:0], nil
		closeAfter := c.closeAfter && len(batch) == 0
		if len(batch) == 0 {
			c.writing = false
			c.mu.Unlock()
			if closeAfter {
				c.Close()
			}
			return
		}
		c.mu.Unlock()

		n := 0
		for _, b := range batch {
			n += len(b)
		}
		_ = c.NC.SetWriteDeadline(time.Now().Add(writeTimeout))
		bufs := net.Buffers(batch)
		_, err := bufs.WriteTo(c.NC)
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
func (c *Conn) writeFailed() {
	c.mu.Lock()
	c.writing = false
	c.mu.Unlock()
	c.Close()
}

// Send queues m; a full queue (in frames or in bytes) closes the
// connection (the peer is not keeping up, and the core treats a lost
// connection as it must anyway).
func (c *Conn) Send(m wire.Message) {
	b, err := frame.Encode(m)
	if err != nil {
		// Our own message failed to encode: a programming error that must
		// not pass silently, but it is no reason to stop the daemon.
		panic(fmt.Sprintf("node: encoding %T: %v", m, err))
	}
	if c.Closed() {
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
func (c *Conn) writeNow(b []byte) {
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

// Slow: the connection was closed because the peer did not read its
// replies (a full send queue).
func (c *Conn) Slow() bool { return c.slow.Load() }

func (c *Conn) tooSlow() {
	c.slow.Store(true)
	c.Close()
}

// CloseAfterFlush closes once every queued frame (goodbyes) is written.
func (c *Conn) CloseAfterFlush() {
	c.mu.Lock()
	c.closeAfter = true
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if start {
		go c.writer()
	}
	// Bound how long a goodbye may hold the connection open.
	time.AfterFunc(writeTimeout, c.Close)
}

// Close closes the connection at once (what is queued is dropped).
func (c *Conn) Close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.NC.Close()
	})
}

// Done is closed when the connection is.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Closed: Close was called (by the owner, a failed write, or a peer too
// slow).
func (c *Conn) Closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// ReadBuf is each connection's read buffer: a heartbeat, an ack or a
// request fits many times over, so that a frame costs one system call or
// less instead of two (header, body).
const ReadBuf = 1 << 10

// Dial connects through tr from bind (when valid) to addr. refused
// reports that nothing listens there: the kill -9 fast path
// (docs/architecture.md).
func Dial(tr transport.Transport, bind netip.Addr, addr netip.AddrPort, timeout time.Duration) (nc net.Conn, refused bool, err error) {
	nc, err = tr.Dial(bind, addr, timeout)
	if err != nil {
		return nil, transport.Refused(err), err
	}
	return nc, false, nil
}

// LocalAddr is the address a connection leaves from.
func LocalAddr(nc net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(nc.LocalAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// EndedByPeer: err ended a read because the peer's side closed the
// connection (a FIN or a RST arrived), as a killed process's kernel does.
func EndedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// The handshake failures both daemons name (a master's refusal reasons,
// a link's dial errors).
var (
	// ErrAuth: the peer did not prove AUTH_CODE, or asked for a proof it
	// had no business asking for.
	ErrAuth = errors.New("peer did not prove AUTH_CODE")
	// ErrIdentity: the peer's hello names another master or chunkserver
	// than its address has.
	ErrIdentity = errors.New("peer claims an identity its address does not have")
)
