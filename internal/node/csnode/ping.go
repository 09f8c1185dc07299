package csnode

import (
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
)

// Ping returns once the loop has taken a no-op input, or node.ErrPing
// after timeout (service.Pinger). From any goroutine.
func (n *ChunkserverNode) Ping(timeout time.Duration) error {
	return node.Ping(&n.life, n.inbox, func(took chan struct{}) csInput { return csInput{ping: took} }, timeout)
}
