package node

import (
	"sync"
	"time"
)

// lifecycle is how a daemon's loop is stopped and says why it ended, the
// same for both daemons: Stop asks (once), the loop closes done when it
// ends, having set err.
type lifecycle struct {
	stopReq  chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	err      error
}

func newLifecycle() lifecycle {
	return lifecycle{stopReq: make(chan struct{}), done: make(chan struct{})}
}

// Stop asks the loop to end in order and waits for it, at most timeout;
// it returns Err. A master ends through DUMMY, its disconnect rules
// included; a chunkserver sends a VoteBye to the master it votes for,
// then closes every connection.
func (l *lifecycle) Stop(timeout time.Duration) error {
	l.stopOnce.Do(func() { close(l.stopReq) })
	select {
	case <-l.done:
	case <-time.After(timeout):
	}
	return l.Err()
}

// Done is closed when the loop has ended; Err then says why (nil: stopped).
func (l *lifecycle) Done() <-chan struct{} { return l.done }

// Err is why the loop ended (nil while running or after an orderly stop).
func (l *lifecycle) Err() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}
