package masternode

import (
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
)

// Ping returns once the loop has taken a no-op input from the inbox of
// votes and acks, or node.ErrPing after timeout (service.Pinger). From any
// goroutine.
func (n *MasterNode) Ping(timeout time.Duration) error {
	return node.Ping(&n.life, n.inbox, func(took chan struct{}) input {
		return input{kind: inCall, call: func() { close(took) }}
	}, timeout)
}
