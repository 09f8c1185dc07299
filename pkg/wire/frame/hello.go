package frame

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// ProtocolVersion is the newest version of the wire protocol this binary
// speaks, ProtocolMin the oldest: two peers use the newest both speak
// (Common), and a peer with no version in common is refused with a message
// naming both ranges. 2: masters prove AUTH_CODE to each other on 9419,
// every proof is keyed by the slow KDF of its secret, and an admin command
// names its target master (version 1 is not spoken). 3: the changelog
// carries the election history, nominations say why the last LEADER went,
// a status can be asked for more of the history; a LEADER writes the
// history only once every master speaks 3 (a version-2 master refuses to
// follow an entry kind it does not know: roles.HistoryProtocol). Every
// other addition of 3 is a field a version-2 peer skips. 4: the registry
// can name an object-store witness (registry.ClusterConfig.Witness); a
// LEADER writes one only once every master speaks 4 (roles.WitnessProtocol):
// an older master would skip the field and break ties by the default
// location, a second rule beside the witness's.
const (
	ProtocolMin     = 2
	ProtocolVersion = 4
)

// Kind says what sort of node opened a connection.
type Kind uint8

// Node kinds.
const (
	KindMaster Kind = 1 + iota
	KindChunkserver
	KindClient
	KindAdmin
)

func (k Kind) String() string {
	switch k {
	case KindMaster:
		return "master"
	case KindChunkserver:
		return "chunkserver"
	case KindClient:
		return "client"
	case KindAdmin:
		return "admin"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Hello is the first frame on every connection, in both directions.
type Hello struct {
	// Proto is the oldest version the sender speaks and ProtoMax the
	// newest (0: Proto only, as a version-2 node, which compares Proto
	// with its own version and knows no ProtoMax, says it).
	Proto       uint16
	ProtoMax    uint16 `msgpack:",omitempty"`
	Cluster     string // the metadata id; empty only for a node that has none yet
	Kind        Kind
	ID          uint32 // MasterID, CSID or client session; 0 when not assigned yet
	Incarnation uint64
	// Nonce: a master's answer on its client port carries a fresh one, for
	// an admin command on that connection to prove ADMIN_PASSWORD with.
	Nonce []byte `msgpack:",omitempty"`
}

// MsgType implements wire.Message.
func (Hello) MsgType() wire.Type { return wire.TypeHello }

// Reasons a hello is refused.
var (
	ErrProtocol = errors.New("protocol version mismatch")
	ErrCluster  = errors.New("peer belongs to another cluster")
	ErrKind     = errors.New("peer kind not accepted on this port")
)

// Ours is a hello of this binary: the versions it speaks, the rest to be
// filled in.
func Ours(kind Kind) Hello { return Hello{Proto: ProtocolMin, ProtoMax: ProtocolVersion, Kind: kind} }

// Versions is the range of protocol versions h says its sender speaks.
func (h Hello) Versions() (oldest, newest uint16) { return h.Proto, max(h.Proto, h.ProtoMax) }

// Common is the version a peer that sent h and this binary use: the
// newest both speak (0: none).
func (h Hello) Common() uint16 {
	lo, hi := h.Versions()
	if v := min(hi, ProtocolVersion); v >= max(lo, ProtocolMin) {
		return v
	}
	return 0
}

// VersionsText is a range of versions as the refusals and listings write
// it: "3", or "2-3".
func VersionsText(oldest, newest uint16) string {
	if newest <= oldest {
		return fmt.Sprint(oldest)
	}
	return fmt.Sprintf("%d-%d", oldest, newest)
}

// Check decides whether a peer's hello is acceptable on a port that takes
// the given kinds and belongs to cluster (empty: this node has no metadata
// yet and accepts any). The error says what to do about it.
func (h Hello) Check(cluster string, kinds ...Kind) error {
	if h.Common() == 0 {
		lo, hi := h.Versions()
		return fmt.Errorf("%w: peer speaks %s, this node %s; upgrade the older one (docs/operations.md, \"Upgrade\")",
			ErrProtocol, VersionsText(lo, hi), VersionsText(ProtocolMin, ProtocolVersion))
	}
	if cluster != "" && h.Cluster != "" && h.Cluster != cluster {
		return fmt.Errorf("%w: peer has metadata id %s, this node %s; point it at its own masters, or clear its data directory to join this cluster", ErrCluster, h.Cluster, cluster)
	}
	for _, k := range kinds {
		if h.Kind == k {
			return nil
		}
	}
	return fmt.Errorf("%w: a %v connected, this port takes %v", ErrKind, h.Kind, kinds)
}

// MaxHelloFrame bounds the first frames of a connection (the hello, and
// the AUTH_CODE exchange after it): they are tiny, and a peer that opens
// with a big frame is not one of ours.
const MaxHelloFrame = 4096

// ErrNotHello: the first frame of a connection was something else.
var ErrNotHello = errors.New("first frame is not a hello")

// helloOnly decodes nothing but a hello.
var helloOnly = NewRegistry()

// ReadHello reads the first frame of a connection. Anything but a
// well-formed hello (an HTTP request, a port scanner, random bytes) is
// ErrNotHello, whose text names what was read rather than the frame limit
// it happened to hit; the end of the stream and a deadline come back as
// they are.
func ReadHello(r io.Reader) (Hello, error) {
	m, err := helloOnly.ReadFrame(r, MaxHelloFrame)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, os.ErrDeadlineExceeded) {
			return Hello{}, err
		}
		return Hello{}, fmt.Errorf("%w: %v", ErrNotHello, err)
	}
	h, ok := m.(*Hello)
	if !ok {
		return Hello{}, ErrNotHello
	}
	return *h, nil
}

// DialHello is the dialing side's handshake: it sends ours, reads the
// answer and checks it (Check with cluster and want), within timeout. The
// answer is returned even when it fails the check, so that the caller can
// say what answered.
func DialHello(nc net.Conn, ours Hello, cluster string, want Kind, timeout time.Duration) (Hello, error) {
	_ = nc.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	if err := WriteFrame(nc, ours); err != nil {
		return Hello{}, err
	}
	h, err := ReadHello(nc)
	if err != nil {
		return h, err
	}
	return h, h.Check(cluster, want)
}
