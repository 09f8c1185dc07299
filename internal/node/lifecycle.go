package node

import (
	"errors"
	"sync"
	"time"
)

// Lifecycle is how a daemon's loop is stopped and says why it ended, the
// same for both daemons: Stop asks (once), the loop sets err and closes
// done (End) when it ends. Its callers' side is Stop, Done and Err; the
// loop's is StopAsked, SetErr and End.
type Lifecycle struct {
	stopReq  chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	err      error

	pauseMu sync.Mutex
	paused  chan struct{} // non-nil while Paused: closed by Resume
}

// NewLifecycle is a Lifecycle of a loop not asked to stop.
func NewLifecycle() Lifecycle {
	return Lifecycle{stopReq: make(chan struct{}), done: make(chan struct{})}
}

// Stop asks the loop to end in order and waits for it, at most timeout;
// it returns Err.
func (l *Lifecycle) Stop(timeout time.Duration) error {
	l.stopOnce.Do(func() { close(l.stopReq) })
	select {
	case <-l.done:
	case <-time.After(timeout):
	}
	return l.Err()
}

// Done is closed when the loop has ended; Err then says why (nil: stopped).
func (l *Lifecycle) Done() <-chan struct{} { return l.done }

// Err is why the loop ended (nil while running or after an orderly stop).
func (l *Lifecycle) Err() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}

// StopAsked is closed once Stop was called: the loop's cue to end in
// order.
func (l *Lifecycle) StopAsked() <-chan struct{} { return l.stopReq }

// SetErr records why the loop ends (loop only, before End).
func (l *Lifecycle) SetErr(err error) { l.err = err }

// End closes Done: the loop has ended (it calls this last, deferred).
func (l *Lifecycle) End() { close(l.done) }

// Pause holds the loop at its next input, before it reads the clock or
// steps anything, until Resume: the driver simulation's SIGSTOP
// (internal/sim/drivers), which also blocks the host's network, so that
// nothing is decided, sent or heard meanwhile. Readers and writers of
// connections go on, as the kernel's buffers do; what the role reports say
// is judged on the clock as ever, so a paused LEADER's lease lapses in
// them.
func (l *Lifecycle) Pause() {
	l.pauseMu.Lock()
	defer l.pauseMu.Unlock()
	if l.paused == nil {
		l.paused = make(chan struct{})
	}
}

// Resume lets a paused loop go on.
func (l *Lifecycle) Resume() {
	l.pauseMu.Lock()
	defer l.pauseMu.Unlock()
	if l.paused != nil {
		close(l.paused)
		l.paused = nil
	}
}

// Hold waits out a Pause; a Stop ends the wait. Loop only.
func (l *Lifecycle) Hold() {
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

// ErrPing: a loop did not take a ping in time.
var ErrPing = errors.New("the loop did not take a ping in time")

// Ping puts in (made with the channel it must close when the loop takes
// it) into inbox and waits for the loop to take it, at most timeout: the
// systemd watchdog's proof that the loop runs (service.Pinger). l is the
// loop's lifecycle: an ended loop answers with its Err.
func Ping[T any](l *Lifecycle, inbox chan<- T, in func(took chan struct{}) T, timeout time.Duration) error {
	took := make(chan struct{})
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case inbox <- in(took):
	case <-l.Done():
		return l.Err()
	case <-t.C:
		return ErrPing
	}
	select {
	case <-took:
		return nil
	case <-l.Done():
		return l.Err()
	case <-t.C:
		return ErrPing
	}
}
