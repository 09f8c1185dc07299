package masternode

import (
	"net"
	"testing"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// TestSessionIDs: a client's own session id is kept; a request without
// one, or with one from the masters' range (protocol.AnonymousClient set:
// a client cannot claim such an id, it could be another request's), gets
// a new id of that range, never given twice.
func TestSessionIDs(t *testing.T) {
	n := &MasterNode{routes: routes{clients: map[changelog.ClientID]*node.Conn{}}}
	nc, other := net.Pipe() // an open connection; nothing is sent on it
	defer nc.Close()
	defer other.Close()
	c := node.NewConn(nc, frame.Hello{})
	if id := n.session(c, 7); id != 7 || n.clients[7] != c {
		t.Fatalf("a client's session 7 became %d", id)
	}
	made := map[changelog.ClientID]bool{}
	for _, asked := range []changelog.ClientID{0, protocol.AnonymousClient | 1, 0, protocol.AnonymousClient | 3} {
		id := n.session(c, asked)
		if id&protocol.AnonymousClient == 0 || made[id] || n.clients[id] != c {
			t.Fatalf("a request with session %#x was given %#x (made so far: %v)", asked, id, made)
		}
		made[id] = true
	}
}
