package node

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/mfs-election/mfs-election/internal/transport"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// The datagram path (docs/architecture.md §3, "Loss is not death"; the
// format is in docs/wire.md). Every heartbeat a master sends on a vote
// session's TCP connection also goes out as one UDP datagram, and every
// acknowledgement a voter sends likewise. Under packet loss TCP holds a
// whole stream behind one lost segment for its retransmission timeout
// (200 ms at least, doubling), longer than a lease renews; a datagram
// is lost alone. Whichever copy arrives first is stepped, the other is
// dropped: both paths pass one filter (SeqFilter) that lets through, per
// session, only sequence numbers above the highest it passed. So the
// core sees a rising subsequence of what was sent, as if TCP had lost
// some heartbeats, and every proof that holds for TCP holds unchanged:
// a grant still counts from the heartbeat's send time, an
// acknowledgement names the heartbeat it answers, and none older than
// one already counted is ever stepped.
//
// A datagram is authenticated with HMAC-SHA256 under a key the voter
// draws for each session and sends in its VoteHello on the TCP
// connection (authenticated with AUTH_CODE where one is set): only the
// two ends of that session can make one the other takes. A key is
// forgotten when its session ends, so nothing of an ended session is
// taken. Replays fail the sequence filter.
const (
	dgMagic   = "MFSD"
	dgVersion = 1
	// The kinds of datagram (DgHeader.Kind).
	DgHeartbeat = 1 // master -> chunkserver: roles.Heartbeat
	DgAck       = 2 // chunkserver -> master: roles.HeartbeatAck
	DgRelease   = 3 // master -> chunkserver: roles.VoteRelease (sequence number 0)
	// dgHeaderLen: magic, version, kind, sender id (4), session (8),
	// sequence number (8); the message's frame follows, then the MAC.
	dgHeaderLen = 4 + 1 + 1 + 4 + 8 + 8
	dgMACLen    = sha256.Size
	// DgKeyLen: a session's key (roles.VoteHello.DgKey), drawn by the
	// voter (NewDatagramKey).
	DgKeyLen = 32
	// dgMax bounds a datagram (it stays below any path's MTU: a
	// fragmented datagram is lost more often, not less); a heartbeat is
	// about 120 bytes. A larger message travels on TCP alone.
	dgMax = 1200
)

// What each end takes from a datagram: heartbeats, their
// acknowledgements, and a master's release of a vote, whose TCP copy waits
// behind whatever the connection could not deliver (a LEADER that cannot
// receive steps down, and its voters would otherwise keep their promise a
// lease longer: the goodbye sits in a send queue nobody acknowledges).
var (
	// DgMasterIn: a chunkserver, from a master.
	DgMasterIn = frame.RegistryOf(roles.Heartbeat{}, roles.VoteRelease{})
	// DgAckIn: a master, from a chunkserver.
	DgAckIn = frame.RegistryOf(roles.HeartbeatAck{})
)

// errDatagram wraps every reason a datagram is refused.
var errDatagram = errors.New("datagram refused")

// DgHeader is a datagram's header: kind, the sender's id (a master's or a
// chunkserver's), and the session and sequence number of the message it
// carries (which must be the message's own).
type DgHeader struct {
	Kind    uint8  // DgHeartbeat, DgAck, DgRelease
	From    uint32 // the sender's id
	Session uint64 // the vote session
	Seq     uint64 // the message's sequence number in its session
}

// NewDatagramKey draws a session's key.
func NewDatagramKey() []byte {
	k := make([]byte, DgKeyLen)
	_, _ = rand.Read(k) // never fails (crypto/rand)
	return k
}

// SealDatagram is m as a datagram under key, or nil when it does not fit.
func SealDatagram(key []byte, h DgHeader, m wire.Message) []byte {
	body, err := frame.Encode(m)
	if err != nil || dgHeaderLen+len(body)+dgMACLen > dgMax {
		return nil
	}
	b := make([]byte, 0, dgHeaderLen+len(body)+dgMACLen)
	b = append(b, dgMagic...)
	b = append(b, dgVersion, h.Kind)
	b = binary.BigEndian.AppendUint32(b, h.From)
	b = binary.BigEndian.AppendUint64(b, h.Session)
	b = binary.BigEndian.AppendUint64(b, h.Seq)
	b = append(b, body...)
	mac := hmac.New(sha256.New, key)
	mac.Write(b)
	return mac.Sum(b)
}

// parseDatagram reads b's header, of one of kinds: what the receiver
// needs to find the key. Nothing in b counts before openDatagram checked
// its MAC.
func parseDatagram(b []byte, kinds ...uint8) (DgHeader, error) {
	if len(b) < dgHeaderLen+frame.HeaderLen+dgMACLen || len(b) > dgMax {
		return DgHeader{}, fmt.Errorf("%w: %d bytes", errDatagram, len(b))
	}
	if string(b[:4]) != dgMagic || b[4] != dgVersion {
		return DgHeader{}, fmt.Errorf("%w: not a heartbeat datagram of version %d", errDatagram, dgVersion)
	}
	if !slices.Contains(kinds, b[5]) {
		return DgHeader{}, fmt.Errorf("%w: kind %d, want one of %v", errDatagram, b[5], kinds)
	}
	return DgHeader{Kind: b[5], From: binary.BigEndian.Uint32(b[6:10]),
		Session: binary.BigEndian.Uint64(b[10:18]), Seq: binary.BigEndian.Uint64(b[18:26])}, nil
}

// openDatagram checks b's MAC under key and decodes its message, which
// must name the session and sequence number of the header.
func openDatagram(b []byte, key []byte, h DgHeader, in *frame.Registry) (wire.Message, error) {
	end := len(b) - dgMACLen
	mac := hmac.New(sha256.New, key)
	mac.Write(b[:end])
	if !hmac.Equal(mac.Sum(nil), b[end:]) {
		return nil, fmt.Errorf("%w: bad MAC", errDatagram)
	}
	m, err := in.Decode(b[dgHeaderLen:end], dgMax)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDatagram, err)
	}
	var session, seq uint64
	var kind uint8
	switch v := Deref(m).(type) {
	case roles.Heartbeat:
		session, seq, kind, m = v.Session, v.Seq, DgHeartbeat, v
	case roles.HeartbeatAck:
		session, seq, kind, m = v.Session, v.Seq, DgAck, v
	case roles.VoteRelease:
		session, kind, m = v.Session, DgRelease, v
	}
	if kind != h.Kind {
		return nil, fmt.Errorf("%w: kind %d carries message type %d", errDatagram, h.Kind, m.MsgType())
	}
	if session != h.Session || seq != h.Seq {
		return nil, fmt.Errorf("%w: the header names session %d seq %d, the message %d/%d", errDatagram, h.Session, h.Seq, session, seq)
	}
	return m, nil
}

// DgKey is one open session's datagram key, and where its peer takes
// datagrams.
type DgKey struct {
	Session uint64         // the session the key is for
	Key     []byte         // DgKeyLen bytes
	To      netip.AddrPort // where the peer takes datagrams
}

// DgKeys holds the key of each peer's open session: the loop sets and
// forgets them, the datagram reader looks them up.
type DgKeys struct {
	mu sync.RWMutex
	m  map[uint32]DgKey
}

// NewDgKeys is an empty DgKeys.
func NewDgKeys() *DgKeys { return &DgKeys{m: map[uint32]DgKey{}} }

// Set makes v peer's open session and key.
func (k *DgKeys) Set(peer uint32, v DgKey) {
	k.mu.Lock()
	k.m[peer] = v
	k.mu.Unlock()
}

// Get is peer's open session and key, if it has one.
func (k *DgKeys) Get(peer uint32) (DgKey, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	v, ok := k.m[peer]
	return v, ok
}

// Forget drops peer's key; session 0 drops whatever it is, another only
// that session's.
func (k *DgKeys) Forget(peer uint32, session uint64) {
	k.mu.Lock()
	if v, ok := k.m[peer]; ok && (session == 0 || v.Session == session) {
		delete(k.m, peer)
	}
	k.mu.Unlock()
}

// Open is b's header and message, of one of kinds, if it authenticates
// under the key of the session open now with the peer it names.
func (k *DgKeys) Open(b []byte, in *frame.Registry, kinds ...uint8) (DgHeader, wire.Message, error) {
	h, err := parseDatagram(b, kinds...)
	if err != nil {
		return h, nil, err
	}
	v, ok := k.Get(h.From)
	if !ok || v.Session != h.Session {
		return h, nil, fmt.Errorf("%w: no open session %d with peer %d", errDatagram, h.Session, h.From)
	}
	m, err := openDatagram(b, v.Key, h, in)
	return h, m, err
}

// Current: session is peer's open session, whose key is held.
func (k *DgKeys) Current(peer uint32, session uint64) bool {
	v, ok := k.Get(peer)
	return ok && v.Session == session
}

// SeqFilter lets through, per peer and session, only sequence numbers
// above the highest it let through: the copy of a message that arrives
// second (on TCP or as a datagram) and anything older than what was
// stepped. Invariant: per session, the core is stepped with strictly
// rising sequence numbers. A message of an earlier session passes (the
// core refuses it as stale); one of a later session starts that session.
// Loop only.
type SeqFilter map[uint32]struct{ session, seq uint64 }

// Admit: the message (peer, session, seq) passes, and counts as the
// newest of its session.
func (f SeqFilter) Admit(peer uint32, session, seq uint64) bool {
	cur, ok := f[peer]
	switch {
	case !ok || session > cur.session:
		f[peer] = struct{ session, seq uint64 }{session, seq}
		return true
	case session < cur.session:
		return true
	case seq > cur.seq:
		f[peer] = struct{ session, seq uint64 }{session, seq}
		return true
	}
	return false
}

// ReadDatagrams hands every datagram read from uc to take until uc is
// closed. take runs on this goroutine; b is reused after it returns.
func ReadDatagrams(uc transport.PacketConn, take func(b []byte, from netip.AddrPort)) {
	buf := make([]byte, dgMax+1) // one more: a longer datagram is seen as such
	for {
		nb, from, err := uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // an ICMP error reported on the socket, a truncation
		}
		take(buf[:nb], netip.AddrPortFrom(from.Addr().Unmap(), from.Port()))
	}
}
