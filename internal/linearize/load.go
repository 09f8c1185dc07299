package linearize

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Client is what a Load drives: pkg/client's Put and Get.
type Client interface {
	Put(ctx context.Context, key, value string) (uint64, error)
	Get(ctx context.Context, key string) (value string, found bool, err error)
}

// LoadOptions shape a Load's clients.
type LoadOptions struct {
	Timeout time.Duration // one operation's context
	// Unknown: err says a write's outcome is unknown (it may have taken
	// effect): recorded as Pending. Any other error: not recorded.
	Unknown func(err error) bool
	// Pace: a client waits up to this long between operations, and
	// ErrPause after one that failed (0: none).
	Pace, ErrPause time.Duration
}

// Load is clients writing and reading the keys a, b and c, six writes in
// ten, each operation with a known effect recorded for porcupine. The
// real-process tests and the drivers' simulation run it.
type Load struct {
	opt     LoadOptions
	stop    atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	history []porcupine.Operation
	// Acked counts the acknowledged operations; AckedAt is the newest's
	// time (unix ns).
	Acked, AckedAt atomic.Int64
}

// NewLoad returns a Load with no client yet.
func NewLoad(opt LoadOptions) *Load { return &Load{opt: opt} }

// Go starts client id on cl, its choices drawn from rng; done (may be
// nil) runs when it stops.
func (l *Load) Go(cl Client, id int, rng *rand.Rand, done func()) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if done != nil {
			defer done()
		}
		for n := 0; !l.stop.Load() && n < 1_000_000; n++ {
			l.one(cl, id, n, rng)
		}
	}()
}

func (l *Load) one(cl Client, id, n int, rng *rand.Rand) {
	key := []string{"a", "b", "c"}[rng.IntN(3)]
	in := Input{Key: key, Write: rng.IntN(10) < 6}
	if in.Write {
		in.Val = fmt.Sprintf("c%d.%d", id, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.opt.Timeout)
	call := time.Now().UnixNano()
	var out Output
	var err error
	if in.Write {
		_, err = cl.Put(ctx, key, in.Val)
	} else {
		out.Val, out.Found, err = cl.Get(ctx, key)
	}
	ret := time.Now().UnixNano()
	cancel()
	switch {
	case err == nil:
		l.Acked.Add(1)
		l.AckedAt.Store(ret)
	case in.Write && l.opt.Unknown(err):
		out, ret = Output{Unknown: true}, Pending
	default:
		time.Sleep(l.opt.ErrPause) // never applied (or a read): no effect to check
		return
	}
	l.mu.Lock()
	l.history = append(l.history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
	l.mu.Unlock()
	if l.opt.Pace > 0 {
		time.Sleep(time.Duration(rng.Int64N(int64(l.opt.Pace))))
	}
}

// Record adds an operation made outside the clients (a final read of
// every key, say) to the history.
func (l *Load) Record(op porcupine.Operation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.history = append(l.history, op)
}

// Stop stops every client, waits for them, and returns the history.
func (l *Load) Stop() []porcupine.Operation {
	l.stop.Store(true)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.history
}
