package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// SelfTestOptions sizes the races of SelfTest.
type SelfTestOptions struct {
	// Rounds of each race (creates, then swaps); 0 means 5. Emulators
	// that check then write without a lock let several racers win in
	// most rounds, so a few rounds are enough to catch them.
	Rounds int
	// Writers released at once in each round; 0 means 16: more than a
	// cluster has masters, and enough to overlap on a real store.
	Writers int
}

// Bounds of SelfTestOptions: a self-test must stay a few seconds long.
const (
	maxRounds  = 100
	maxWriters = 256
)

func (o SelfTestOptions) withDefaults() (SelfTestOptions, error) {
	if o.Rounds == 0 {
		o.Rounds = 5
	}
	if o.Writers == 0 {
		o.Writers = 16
	}
	var errs []error
	if o.Rounds < 1 || o.Rounds > maxRounds {
		errs = append(errs, fmt.Errorf("self-test Rounds %d: want 1 to %d", o.Rounds, maxRounds))
	}
	if o.Writers < 2 || o.Writers > maxWriters {
		errs = append(errs, fmt.Errorf("self-test Writers %d: want 2 to %d (a race needs two)", o.Writers, maxWriters))
	}
	return o, errors.Join(errs...)
}

// The phases of a SelfTestReport, in the order they run.
const (
	PhaseGet        = "get"
	PhaseCreate     = "create"
	PhaseSwap       = "swap"
	PhaseRaceCreate = "race-create"
	PhaseRaceSwap   = "race-swap"
	PhaseDelete     = "delete"
)

var phaseOrder = []string{PhaseGet, PhaseCreate, PhaseSwap, PhaseRaceCreate, PhaseRaceSwap, PhaseDelete}

// Latency sums up the calls of one phase.
type Latency struct {
	Phase  string
	N      int // calls timed, whatever their answer
	Median time.Duration
	Max    time.Duration
}

// SelfTestReport is what SelfTest measured; on failure it holds the phases
// that ran.
type SelfTestReport struct {
	Dir     string // the probe keys' folder, <prefix>/selftest/<id>
	Rounds  int
	Writers int
	Phases  []Latency // in phaseOrder, phases with no call left out
	Elapsed time.Duration
}

// Phase is the latency of one phase, if it ran.
func (r SelfTestReport) Phase(name string) (Latency, bool) {
	for _, l := range r.Phases {
		if l.Phase == name {
			return l, true
		}
	}
	return Latency{}, false
}

// String is one log line: each phase's median and max.
func (r SelfTestReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d rounds x %d writers in %v:", r.Rounds, r.Writers, r.Elapsed.Round(time.Millisecond))
	for _, l := range r.Phases {
		fmt.Fprintf(&b, " %s median %v max %v (%d)", l.Phase, l.Median.Round(10*time.Microsecond), l.Max.Round(10*time.Microsecond), l.N)
	}
	return b.String()
}

// timings collects call durations per phase; the race goroutines add to it.
type timings struct {
	mu sync.Mutex
	d  map[string][]time.Duration
}

func (t *timings) add(phase string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.d[phase] = append(t.d[phase], d)
}

func (t *timings) report() []Latency {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Latency
	for _, p := range phaseOrder {
		ds := slices.Clone(t.d[p])
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		out = append(out, Latency{Phase: p, N: len(ds), Median: ds[(len(ds)-1)/2], Max: ds[len(ds)-1]})
	}
	return out
}

// selfTest is one run's state.
type selfTest struct {
	s       *Store
	opt     SelfTestOptions
	dir     string // under the store's prefix, without it
	times   *timings
	cleanup []string // probe names that may exist
}

// SelfTest checks that s can be a witness, on fresh probe keys under
// <prefix>/selftest/: (a) sequential answers (create, create again, swaps
// with a wrong, the right, a stale ETag, a swap on a missing key, GETs);
// (b) opt.Rounds races of opt.Writers create-only PUTs on a new key, then
// as many If-Match swaps on one ETag: exactly one writer may win each, and
// the object must hold the winner's body; (c) it deletes its probe keys,
// best effort. The error says what failed in operator words. The overall
// deadline is ctx's; each call has the store's CallTimeout.
func SelfTest(ctx context.Context, s *Store, opt SelfTestOptions) (SelfTestReport, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return SelfTestReport{}, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
	st := &selfTest{s: s, opt: opt, dir: "selftest/" + hex.EncodeToString(id[:]), times: &timings{d: map[string][]time.Duration{}}}
	start := time.Now()
	err = st.run(ctx)
	if err != nil && ctx.Err() != nil {
		// The caller's deadline, not the store's answer.
		err = fmt.Errorf("self-test stopped: %w: %w", context.Cause(ctx), err)
	}
	st.deleteProbes(ctx)
	return SelfTestReport{
		Dir:     s.ObjectKey(st.dir),
		Rounds:  opt.Rounds,
		Writers: opt.Writers,
		Phases:  st.times.report(),
		Elapsed: time.Since(start),
	}, err
}

func (st *selfTest) run(ctx context.Context) error {
	if err := st.sequential(ctx); err != nil {
		return err
	}
	for r := 1; r <= st.opt.Rounds; r++ {
		if ctx.Err() != nil {
			return fmt.Errorf("it passed the sequential checks and %d of %d rounds", r-1, st.opt.Rounds)
		}
		if err := st.round(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func (st *selfTest) body(step string, writer int) []byte {
	return fmt.Appendf(nil, `{"selftest":%q,"step":%q,"writer":%d}`, st.dir, step, writer)
}

// timed runs one call and records its duration under phase.
func timed[T any](st *selfTest, phase string, f func() (T, error)) (T, error) {
	t0 := time.Now()
	v, err := f()
	st.times.add(phase, time.Since(t0))
	return v, err
}

// unexpected words an answer that is not the one a witness must give. A
// Refused or Ambiguous answer is reported as the store gave it.
func unexpected(step string, err error, accepted string) error {
	switch Classify(err) {
	case OK:
		return errors.New(accepted)
	case Refused:
		return fmt.Errorf("%s: %w", step, err)
	case Ambiguous:
		return fmt.Errorf("%s: no clear answer, the store is failing or too slow: %w", step, err)
	}
	return fmt.Errorf("%s: unexpected answer: %w", step, err)
}

func (st *selfTest) sequential(ctx context.Context) error {
	s := st.s
	name := st.dir + "/seq"
	missing := st.dir + "/missing"

	body1 := st.body("create", 0)
	st.cleanup = append(st.cleanup, name)
	etag1, err := timed(st, PhaseCreate, func() (string, error) { return s.Create(ctx, name, body1) })
	if err != nil {
		if Classify(err) == Conflict {
			return fmt.Errorf("a create-only PUT on a fresh key answered %w: the store cannot be a witness", err)
		}
		return unexpected("a create-only PUT (If-None-Match: *) on a fresh key", err, "")
	}

	if _, err := timed(st, PhaseCreate, func() (string, error) { return s.Create(ctx, name, st.body("create-again", 0)) }); Classify(err) != Conflict {
		return unexpected("a second create-only PUT on the same key", err,
			"the store accepted a create-only PUT (If-None-Match: *) on an existing key: it ignores If-None-Match, it cannot be a witness")
	}
	if err := st.expectBody(ctx, name, body1, etag1, "after the first create"); err != nil {
		return err
	}

	// A GET of a missing key must read as absent: AWS answers 403 instead
	// when the credentials may not list the bucket (the create above shows
	// they are otherwise good), and then a witness could not tell "no lease
	// yet" from "not allowed".
	if _, err := timed(st, PhaseGet, func() ([]byte, error) { b, _, err := s.Get(ctx, missing); return b, err }); Classify(err) != Absent {
		var oe *OpError
		if errors.As(err, &oe) && oe.Status == 403 {
			return fmt.Errorf("a GET of a missing key answered 403 (%w): grant s3:ListBucket on the bucket, else a missing lease reads as access denied", err)
		}
		return unexpected("a GET of a missing key", err, "a GET of a missing key returned an object")
	}

	wrong := "0123456789abcdef0123456789abcdef"
	if wrong == etag1 {
		wrong = "fedcba9876543210fedcba9876543210"
	}
	if _, err := timed(st, PhaseSwap, func() (string, error) { return s.Swap(ctx, name, wrong, st.body("swap-wrong", 0)) }); Classify(err) != Conflict {
		return unexpected("a swap (If-Match) with a wrong ETag", err,
			"the store accepted a swap with a wrong ETag: it ignores If-Match, it cannot be a witness")
	}

	body2 := st.body("swap", 0)
	etag2, err := timed(st, PhaseSwap, func() (string, error) { return s.Swap(ctx, name, etag1, body2) })
	if err != nil {
		return unexpected("a swap (If-Match) with the current ETag", err, "")
	}
	if etag2 == etag1 {
		return fmt.Errorf("the store gave the same ETag %q to two different bodies: swaps could not tell versions apart, it cannot be a witness", etag2)
	}

	if _, err := timed(st, PhaseSwap, func() (string, error) { return s.Swap(ctx, name, etag1, st.body("swap-stale", 0)) }); Classify(err) != Conflict {
		return unexpected("a swap with the stale ETag", err,
			"the store accepted a swap with a stale ETag: it cannot be a witness")
	}
	if err := st.expectBody(ctx, name, body2, etag2, "after the swaps"); err != nil {
		return err
	}

	// AWS answers 404 NoSuchKey, gofakes3 412: either means not ours.
	_, err = timed(st, PhaseSwap, func() (string, error) { return s.Swap(ctx, missing, etag1, st.body("swap-missing", 0)) })
	if c := Classify(err); c != Conflict && c != Absent {
		if c == OK || c == Ambiguous {
			st.cleanup = append(st.cleanup, missing)
		}
		return unexpected("a swap on a missing key", err,
			"the store accepted a swap (If-Match) on a missing key: it cannot be a witness")
	}
	return nil
}

// expectBody reads name back: it must hold want under etag.
func (st *selfTest) expectBody(ctx context.Context, name string, want []byte, etag, when string) error {
	var gotTag string
	got, err := timed(st, PhaseGet, func() ([]byte, error) {
		b, t, err := st.s.Get(ctx, name)
		gotTag = t
		return b, err
	})
	if err != nil {
		return unexpected("a GET "+when, err, "")
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("a GET %s returned %q, not the last acknowledged write %q: the store lost a write, it cannot be a witness", when, got, want)
	}
	if gotTag != etag {
		return fmt.Errorf("a GET %s returned ETag %q, but the PUT answered %q: swaps would never match, it cannot be a witness", when, gotTag, etag)
	}
	return nil
}

type raceResult struct {
	etag string
	err  error
}

// race releases n calls at once and waits for all of them; each is bounded
// by the store's CallTimeout.
func (st *selfTest) race(phase string, n int, call func(i int) (string, error)) []raceResult {
	res := make([]raceResult, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			res[i].etag, res[i].err = timed(st, phase, func() (string, error) { return call(i) })
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return res
}

// judge checks that exactly one racer won and the others were told Conflict;
// it returns the winner.
func judge(round int, what string, res []raceResult) (int, error) {
	var won []int
	var ambiguous, other []error
	for i, r := range res {
		switch Classify(r.err) {
		case OK:
			won = append(won, i)
		case Conflict:
		case Refused:
			return 0, fmt.Errorf("round %d: %s: %w", round, what, r.err)
		case Ambiguous:
			ambiguous = append(ambiguous, r.err)
		default:
			other = append(other, r.err)
		}
	}
	n := len(res)
	switch {
	case len(won) > 1:
		return 0, fmt.Errorf("round %d: %d of %d concurrent %s won: the store does not serialise conditional writes, it cannot be a witness", round, len(won), n, what)
	case len(ambiguous) > 0:
		return 0, fmt.Errorf("round %d: %d of %d concurrent %s got no clear answer (first: %v): the store is failing or too slow for a witness", round, len(ambiguous), n, what, ambiguous[0])
	case len(other) > 0:
		return 0, fmt.Errorf("round %d: %d of %d concurrent %s got an unexpected answer (first: %v)", round, len(other), n, what, other[0])
	case len(won) == 0:
		return 0, fmt.Errorf("round %d: none of %d concurrent %s won: the store refused them all, it cannot be a witness", round, n, what)
	}
	return won[0], nil
}

func (st *selfTest) round(ctx context.Context, r int) error {
	s := st.s
	name := fmt.Sprintf("%s/race-%d", st.dir, r)
	st.cleanup = append(st.cleanup, name)
	n := st.opt.Writers

	res := st.race(PhaseRaceCreate, n, func(i int) (string, error) { return s.Create(ctx, name, st.body("race-create", i)) })
	w, err := judge(r, "create-only PUTs", res)
	if err != nil {
		return err
	}
	if err := st.expectBody(ctx, name, st.body("race-create", w), res[w].etag, fmt.Sprintf("after round %d's creates (writer %d won)", r, w)); err != nil {
		return fmt.Errorf("round %d: %w", r, err)
	}

	etag := res[w].etag
	res = st.race(PhaseRaceSwap, n, func(i int) (string, error) { return s.Swap(ctx, name, etag, st.body("race-swap", i)) })
	w, err = judge(r, "If-Match swaps on one ETag", res)
	if err != nil {
		return err
	}
	if err := st.expectBody(ctx, name, st.body("race-swap", w), res[w].etag, fmt.Sprintf("after round %d's swaps (writer %d won)", r, w)); err != nil {
		return fmt.Errorf("round %d: %w", r, err)
	}
	return nil
}

// deleteProbes removes the probe keys, best effort, even when ctx is done;
// it stops at the first failure (the store is not answering, and each
// further try would cost a CallTimeout).
func (st *selfTest) deleteProbes(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, name := range st.cleanup {
		if _, err := timed(st, PhaseDelete, func() (struct{}, error) { return struct{}{}, st.s.Delete(ctx, name) }); err != nil {
			return
		}
	}
}
