package masternode

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mfs-election/mfs-election/internal/witness/s3store"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/witness"
	"github.com/mfs-election/mfs-election/pkg/witness/logobj"
)

// witnessClient makes the calls the core's witness lease asks for
// (master.Batch.Witness) on the store, one at a time, each within the
// store's call timeout, and hands every answer back to the loop. Until the
// store has passed its self-test (at start, and again every
// witnessRetest while it fails) every call is answered Refused with the
// self-test's finding: the master then never counts the witness, says
// why, and takes it up by itself once the store passes.
type witnessClient struct {
	store *s3store.Store
	log   zerolog.Logger
	calls chan witness.Request
	// logCalls: the store log's (Request.Key set), on a worker of their
	// own, so that an upload never holds up a lease renewal.
	logCalls chan witness.Request
	// delCalls: the store log's deletes of garbage, on a third worker, so
	// that they never hold up an object or a head (the core has at most
	// one of each out).
	delCalls chan witness.Request
	done     chan witnessDone
	// ready: nil before the first self-test ended, then "" (passed) or
	// what it found.
	ready  atomic.Pointer[string]
	report atomic.Pointer[s3store.SelfTestReport]
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// witnessDone is one answered call.
type witnessDone struct {
	res  witness.Result
	op   witness.Op
	took time.Duration
}

// witnessRetest: how long after a failed self-test the next one runs.
const witnessRetest = 30 * time.Second

func startWitness(store *s3store.Store, log zerolog.Logger) *witnessClient {
	w := &witnessClient{store: store, log: log, calls: make(chan witness.Request, 4), logCalls: make(chan witness.Request, 4),
		delCalls: make(chan witness.Request, 4), done: make(chan witnessDone, 8)}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.wg.Add(4)
	go w.selfTests()
	go w.worker(w.calls)
	go w.worker(w.logCalls)
	go w.worker(w.delCalls)
	return w
}

func (w *witnessClient) stop() {
	w.cancel()
	w.wg.Wait()
}

// selfTests runs the self-test until the store passes it.
func (w *witnessClient) selfTests() {
	defer w.wg.Done()
	for {
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		rep, err := s3store.SelfTest(ctx, w.store, s3store.SelfTestOptions{})
		cancel()
		if w.ctx.Err() != nil {
			return
		}
		if err == nil {
			ok := ""
			w.ready.Store(&ok)
			w.report.Store(&rep)
			w.log.Info().Str("store", w.store.String()).Str("report", rep.String()).Msg("witness: the store passed its self-test (conditional writes are atomic); it may break ties")
			return
		}
		why := err.Error()
		w.ready.Store(&why)
		w.log.Error().Err(err).Str("store", w.store.String()).Dur("retry_in", witnessRetest).
			Msg("witness: the store failed its self-test and is not used: this master wins only with a strict majority of the locations until it passes")
		select {
		case <-time.After(witnessRetest):
		case <-w.ctx.Done():
			return
		}
	}
}

// Ready is "" once the store passed its self-test, else why it is not
// used ("" and false before the first test ended).
func (w *witnessClient) Ready() (string, bool) {
	p := w.ready.Load()
	if p == nil {
		return "", false
	}
	return *p, true
}

func (w *witnessClient) worker(calls <-chan witness.Request) {
	defer w.wg.Done()
	for {
		select {
		case req := <-calls:
			d := w.do(req)
			select {
			case w.done <- d:
			case <-w.ctx.Done():
				return
			}
		case <-w.ctx.Done():
			return
		}
	}
}

// do makes one call. The store bounds it by its call timeout; every
// failure comes back classified (s3store.Classify), never as a crash.
func (w *witnessClient) do(req witness.Request) witnessDone {
	start := time.Now()
	res := witness.Result{Seq: req.Seq, Key: req.Key}
	name := req.Key
	if name == "" {
		name = witness.Key
	}
	body := req.Body
	if req.Batch != nil {
		// A store log object: encoded here, and described in every
		// answer (the core names it in the head by that description).
		body, res.Object = logobj.Encoded(req)
	}
	if why, tested := w.Ready(); !tested || why != "" {
		if !tested {
			why = "the store's self-test has not finished"
		}
		res.Class, res.Err = witness.Refused, why
		return witnessDone{res: res, op: req.Op}
	}
	var err error
	switch req.Op {
	case witness.Get:
		res.Body, res.ETag, err = w.store.Get(w.ctx, name)
	case witness.Create:
		res.ETag, err = w.store.Create(w.ctx, name, body)
	case witness.Swap:
		res.ETag, err = w.store.Swap(w.ctx, name, req.ETag, body)
	case witness.Delete:
		err = w.store.Delete(w.ctx, name)
	}
	res.Class = classOf(s3store.Classify(err))
	if err != nil {
		res.Err = err.Error()
	}
	logobj.Check(&res, req)
	return witnessDone{res: res, op: req.Op, took: time.Since(start)}
}

func classOf(c s3store.Class) witness.Class {
	switch c {
	case s3store.OK:
		return witness.OK
	case s3store.Absent:
		return witness.Absent
	case s3store.Conflict:
		return witness.Conflict
	case s3store.Refused:
		return witness.Refused
	}
	return witness.Ambiguous
}

// witnessCall queues a call of the core's (masterFx.Witness). The core has
// one out at a time, so the queue never fills; if it did, the call is
// dropped rather than block the loop, and the lease gives it up as
// ambiguous after twice the call timeout.
func (n *MasterNode) witnessCall(r witness.Request) {
	if n.wit == nil {
		panic("invariant witness-store: the core asked for a witness call, and this master has no store")
	}
	calls := n.wit.calls
	if r.Key != "" {
		calls = n.wit.logCalls
		if r.Op == witness.Delete {
			calls = n.wit.delCalls
		}
	}
	select {
	case calls <- r:
	default:
		n.log.Error().Str("op", r.Op.String()).Msg("witness: call queue full; the call is dropped")
	}
}

// witnessAnswered logs and counts an answer, and steps it.
func (n *MasterNode) witnessAnswered(d witnessDone) {
	n.metrics.WitnessCall(d.op.String(), d.res.Class.String(), d.took)
	ev := n.log.Debug()
	if d.res.Class == witness.Ambiguous || d.res.Class == witness.Refused {
		ev = n.log.Warn()
	}
	ev.Str("op", d.op.String()).Str("result", d.res.Class.String()).Str("error", d.res.Err).Dur("took", d.took).Msg("witness call")
	n.step(roles.WitnessResult{Result: d.res})
}

// witnessSide: wit makes the witness's calls (nil: no store); witDone is
// its answers (nil, so never ready, without one); witAdm the listings'
// view of the store's answers (witnessadmin.go).
type witnessSide struct {
	wit     *witnessClient
	witDone chan witnessDone
	witAdm  witnessAdmin
}
