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

	pauseMu sync.Mutex
	paused  chan struct{} // non-nil while Paused: closed by Resume
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

// Pause holds the loop at its next input, before it reads the clock or
// steps anything, until Resume: the driver simulation's SIGSTOP
// (internal/sim/drivers), which also blocks the host's network, so that
// nothing is decided, sent or heard meanwhile. Readers and writers of
// connections go on, as the kernel's buffers do; what the role reports say
// is judged on the clock as ever, so a paused LEADER's lease lapses in
// them.
func (l *lifecycle) Pause() {
	l.pauseMu.Lock()
	defer l.pauseMu.Unlock()
	if l.paused == nil {
		l.paused = make(chan struct{})
	}
}

// Resume lets a paused loop go on.
func (l *lifecycle) Resume() {
	l.pauseMu.Lock()
	defer l.pauseMu.Unlock()
	if l.paused != nil {
		close(l.paused)
		l.paused = nil
	}
}

// hold waits out a Pause; a Stop ends the wait. Loop only.
func (l *lifecycle) hold() {
	l.pauseMu.Lock()
	p := l.paused
	l.pauseMu.Unlock()
	if p != nil {
		select {
		case <-p:
		case <-l.stopReq:
		}
	}
}
