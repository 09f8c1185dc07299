package csnode

import (
	"errors"
	"time"
)

// errPing: the loop did not take a ping in time.
var errPing = errors.New("the chunkserver's loop did not take a ping in time")

// Ping returns once the loop has taken a no-op input, or errPing after
// timeout: the systemd watchdog's proof that the loop runs
// (service.Pinger). From any goroutine.
func (n *ChunkserverNode) Ping(timeout time.Duration) error {
	took := make(chan struct{})
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case n.inbox <- csInput{ping: took}:
	case <-n.life.Done():
		return n.life.Err()
	case <-t.C:
		return errPing
	}
	select {
	case <-took:
		return nil
	case <-n.life.Done():
		return n.life.Err()
	case <-t.C:
		return errPing
	}
}
