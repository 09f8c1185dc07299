package masternode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Reading what peers send to a master's ports: frames under deadlines,
// large bodies from a shared budget, the hello, and the names of the
// reasons a connection is refused.

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

func newFrameReader(nc net.Conn, idle, frame time.Duration) *frameReader {
	return &frameReader{nc: nc, br: bufio.NewReaderSize(nc, node.ReadBuf), idle: idle, frame: frame}
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
	_ = nc.SetDeadline(time.Now().Add(node.HandshakeTimeout))
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
	case errors.Is(err, node.ErrAuth):
		return "auth"
	case errors.Is(err, node.ErrIdentity):
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
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		// Not io.ErrUnexpectedEOF: a frame cut short stays garbage.
		return reasonEnded
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The hello or the proof not finished within its deadline: a
		// slow peer (or a master too busy to read it), not garbage.
		return "slow"
	}
	return "garbage"
}

// reasonEnded: the peer closed or reset the connection before its
// handshake was over (a chunkserver restarting, every voter redialling at
// once): counted, but logged at debug level, as nothing was wrong.
const reasonEnded = "ended"

var (
	errStranger = errors.New("a master this one's MASTER_HOST does not name (told so)")
	errNotNamed = errors.New("that master's MASTER_HOST does not name this one")
	errAuthRate = errors.New("too many failed proofs from this address lately")
	errLimit    = errors.New("too many connections")
	errClone    = errors.New("chunkserver id already connected from another address: cloned chunkserver or impostor")
	errIdle     = errors.New("nothing received for too long")
	errSlow     = errors.New("a frame was not completed in time, or replies were not read")
)
