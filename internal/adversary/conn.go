package adversary

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"reflect"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/secret"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Dialer opens a TCP connection from bind (invalid: the kernel's choice) to
// to. Tests whose daemons run in a network namespace pass one that dials
// from inside it; nil means a plain net.Dialer.
type Dialer func(ctx context.Context, bind netip.Addr, to netip.AddrPort) (net.Conn, error)

// Target is where an attack goes and what it holds.
type Target struct {
	// Addr is the port attacked: a master's 9419, 9420 or 9421.
	Addr netip.AddrPort
	// Bind is the source address (invalid: the kernel's choice). On
	// loopback any 127.x address can be bound, even one a daemon listens
	// on.
	Bind netip.Addr
	// AuthCode, when set, is used to answer an AUTH_CODE challenge the way
	// an honest chunkserver would (bound to the attacker's own address).
	// Empty: the attacker answers with an empty proof.
	AuthCode string
	// Cluster is the metadata id put in the attacker's hello (empty: none,
	// which every port accepts).
	Cluster string
	// Dial, when set, opens the connections (e.g. inside a namespace).
	Dial Dialer
	// Timeout bounds each handshake and each write (0: 2 s).
	Timeout time.Duration
}

func (t Target) timeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return 2 * time.Second
}

func (t Target) dial(ctx context.Context) (net.Conn, error) {
	if t.Dial != nil {
		return t.Dial(ctx, t.Bind, t.Addr)
	}
	return DialFrom(ctx, t.Bind, t.Addr)
}

// DialFrom is the default Dialer: TCP from bind (when valid) to to.
func DialFrom(ctx context.Context, bind netip.Addr, to netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	if bind.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: bind.AsSlice()}
	}
	return d.DialContext(ctx, "tcp", to.String())
}

// Raw is a frame of a type this package does not know (a message added by
// a later fix, say): its type and length only.
type Raw struct {
	Type wire.Type
	Len  int
}

// MsgType implements wire.Message.
func (r Raw) MsgType() wire.Type { return r.Type }

// known decodes every message a daemon sends on any port.
var known = func() *frame.Registry {
	r := frame.NewRegistry()
	for _, m := range []wire.Message{
		protocol.AuthChallenge{}, protocol.AuthProof{}, protocol.RegisterReq{}, protocol.RegisterReply{}, protocol.CSInfo{},
		protocol.StatusReq{}, protocol.StatusResp{}, protocol.AdminReq{}, protocol.AdminResp{},
		roles.Probe{}, roles.ProbeReply{}, roles.VoteHello{}, roles.VoteBye{}, roles.Heartbeat{},
		roles.HeartbeatAck{}, roles.VoteRelease{}, roles.Redirect{}, roles.PeerStatus{}, roles.Append{},
		roles.AppendAck{}, roles.FetchReq{}, roles.FetchResp{}, roles.SnapshotChunk{},
		roles.ClientWrite{}, roles.ClientRead{}, roles.ClientReply{},
	} {
		t := reflect.TypeOf(m)
		r.Register(m.MsgType(), func() wire.Message { return reflect.New(t).Interface().(wire.Message) })
	}
	return r
}()

// maxRead bounds a frame this package reads (a master's frames are at most
// frame.DefaultMaxFrame).
const maxRead = frame.DefaultMaxFrame

// Conn is one connection that has exchanged hellos.
type Conn struct {
	nc      net.Conn
	br      *bufio.Reader
	timeout time.Duration
	// challenged: the master asked for AUTH_CODE (a non-empty nonce).
	challenged bool
	// Peer is the daemon's hello.
	Peer frame.Hello
}

// Open dials t and exchanges hellos: ours is sent first, theirs read back.
// The daemon's hello comes even when it refuses ours (it closes after).
func Open(ctx context.Context, t Target, hello frame.Hello) (*Conn, error) {
	nc, err := t.dial(ctx)
	if err != nil {
		return nil, err
	}
	return handshake(nc, t.timeout(), hello)
}

// handshake exchanges hellos on nc (closed on failure).
func handshake(nc net.Conn, timeout time.Duration, hello frame.Hello) (*Conn, error) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &Conn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), timeout: timeout}
	if hello.Proto == 0 {
		hello.Proto, hello.ProtoMax = frame.ProtocolMin, frame.ProtocolVersion
	}
	if err := c.Send(hello); err != nil {
		nc.Close()
		return nil, err
	}
	m, err := c.Recv(c.timeout)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("reading the hello: %w", err)
	}
	h, ok := m.(frame.Hello)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("first frame is %T, not a hello", m)
	}
	c.Peer = h
	return c, nil
}

// Send writes one frame, within the connection's timeout.
func (c *Conn) Send(m wire.Message) error {
	b, err := frame.Encode(m)
	if err != nil {
		return err
	}
	return c.Write(b)
}

// Write writes raw bytes, within the connection's timeout.
func (c *Conn) Write(b []byte) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	_, err := c.nc.Write(b)
	return err
}

// Recv reads one frame within d and decodes it: a known type as its value,
// any other as Raw.
func (c *Conn) Recv(d time.Duration) (wire.Message, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	var hdr [frame.HeaderLen]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[0:4])
	t := wire.Type(binary.BigEndian.Uint16(hdr[4:6]))
	if n < 2 || n > maxRead {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	buf := make([]byte, frame.HeaderLen+int(n)-2)
	copy(buf, hdr[:])
	if _, err := io.ReadFull(c.br, buf[frame.HeaderLen:]); err != nil {
		return nil, err
	}
	m, err := known.Decode(buf, maxRead)
	if errors.Is(err, frame.ErrUnknownType) {
		return Raw{Type: t, Len: int(n)}, nil
	}
	if err != nil {
		return nil, err
	}
	return reflect.ValueOf(m).Elem().Interface().(wire.Message), nil
}

// Skip reads one frame within d without decoding it (a large answer the
// attacker does not need): its type and length.
func (c *Conn) Skip(d time.Duration) (Raw, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	var hdr [frame.HeaderLen]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return Raw{}, err
	}
	n := binary.BigEndian.Uint32(hdr[0:4])
	if n < 2 || n > maxRead {
		return Raw{}, fmt.Errorf("frame of %d bytes", n)
	}
	if _, err := io.CopyN(io.Discard, c.br, int64(n)-2); err != nil {
		return Raw{}, err
	}
	return Raw{Type: wire.Type(binary.BigEndian.Uint16(hdr[4:6])), Len: int(n)}, nil
}

// Local is the address the connection leaves from.
func (c *Conn) Local() netip.AddrPort {
	ap, _ := netip.ParseAddrPort(c.nc.LocalAddr().String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Proof is the AUTH_CODE proof an honest chunkserver at addr sends for
// nonce (protocol.ChunkserverProof, written again here: HMAC-SHA256 over
// nonce, cluster id and address, keyed by the key secret.Key derives from
// the code for the cluster). An attacker holding the code computes it for
// its own address.
func Proof(code string, nonce []byte, cluster string, addr netip.Addr) []byte {
	return proof(secret.Key(code, cluster, secret.Chunkserver), nonce, cluster, addr)
}

// MasterProof is the AUTH_CODE proof a master at addr sends on a peer's
// 9419 (protocol.MasterProof: the same MAC under the key derived for
// masters, so that no chunkserver proof passes for a master's).
func MasterProof(code string, nonce []byte, cluster string, addr netip.Addr) []byte {
	return proof(secret.Key(code, cluster, secret.Master), nonce, cluster, addr)
}

func proof(key, nonce []byte, cluster string, addr netip.Addr) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(nonce)
	h.Write([]byte{0})
	h.Write([]byte(cluster))
	h.Write([]byte{0})
	h.Write(addr.AsSlice())
	return h.Sum(nil)
}

// OpenCS opens a chunkserver connection (port 9420) with hello id id and
// answers the AUTH_CODE challenge. challenged reports that the master asked
// for the code (a non-empty nonce). Whether the proof passed shows only
// later: a master that refuses it closes the connection.
func OpenCS(ctx context.Context, t Target, id wire.CSID) (c *Conn, challenged bool, err error) {
	c, err = Open(ctx, t, frame.Hello{Kind: frame.KindChunkserver, ID: uint32(id), Cluster: t.Cluster})
	if err != nil {
		return nil, false, err
	}
	if err := c.answerChallenge(t.AuthCode); err != nil {
		c.Close()
		return nil, false, err
	}
	return c, c.challenged, nil
}

// answerChallenge reads the AuthChallenge a master sends after its hello
// and answers it (an empty proof without a code).
func (c *Conn) answerChallenge(code string) error {
	m, err := c.Recv(c.timeout)
	if err != nil {
		return fmt.Errorf("waiting for the challenge: %w", err)
	}
	ch, ok := m.(protocol.AuthChallenge)
	if !ok {
		return fmt.Errorf("expected a challenge, got %T", m)
	}
	var mac []byte
	if len(ch.Nonce) > 0 {
		c.challenged = true
		if code != "" {
			mac = Proof(code, ch.Nonce, c.Peer.Cluster, c.Local().Addr())
		}
	}
	return c.Send(protocol.AuthProof{MAC: mac})
}

// Closed reports whether err means the daemon ended the connection (EOF,
// reset) rather than a read timing out.
func Closed(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true
}

// Authenticated checks that t.AuthCode opens t's chunkserver port: a
// connection without an id asks for one (as a new chunkserver does) and
// gets an answer, where a wrong proof gets the connection closed. Point it
// at a master that is not the LEADER, which answers without assigning an
// id. The tests run it first, so that an attack refused after the
// challenge is refused for what it claims, not for a proof this package
// computes wrong.
func Authenticated(ctx context.Context, t Target) error {
	c, challenged, err := OpenCS(ctx, t, wire.NoCS)
	if err != nil {
		return err
	}
	defer c.Close()
	if t.AuthCode != "" && !challenged {
		return errors.New("the master asked for no AUTH_CODE")
	}
	if err := c.Send(protocol.RegisterReq{Addr: t.Bind, Port: 1, VoterOnly: true}); err != nil {
		return err
	}
	for end := time.Now().Add(t.timeout()); time.Now().Before(end); {
		m, err := c.Recv(time.Until(end))
		if err != nil {
			return fmt.Errorf("no answer after the proof: %w", err)
		}
		if _, ok := m.(protocol.RegisterReply); ok {
			return nil
		}
	}
	return errors.New("no answer after the proof")
}
