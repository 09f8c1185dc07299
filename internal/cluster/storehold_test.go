package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
)

// holdProxy is one master's way to the store: an HTTP reverse proxy on
// loopback that passes every call on, except that while it holds, a
// write of the store log's head (PUT .../log.json) waits in it, already
// sent by the master, until released. It is the stale writer made exact:
// a head swap under way when its sender was superseded, landing after the
// new LEADER's. The store's answer to each held call is recorded.
type holdProxy struct {
	URL string
	srv *http.Server
	rp  *httputil.ReverseProxy

	mu       sync.Mutex
	holding  bool
	release  chan struct{}
	held     int           // calls held so far
	heldOne  chan struct{} // closed at the first
	answered []int         // the store's status for each released call
}

func startHoldProxy(t *testing.T, endpoint string) *holdProxy {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{URL: "http://" + l.Addr().String(), release: make(chan struct{}), heldOne: make(chan struct{})}
	// The request keeps its Host (this proxy's address): the signature the
	// master computed over it still verifies at the store.
	p.rp = httputil.NewSingleHostReverseProxy(target)
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	t.Cleanup(func() { p.releaseAll(); _ = p.srv.Close() })
	return p
}

func (p *holdProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/log.json") {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.mu.Lock()
	hold, release := p.holding, p.release
	p.mu.Unlock()
	if hold {
		// The whole request in hand before it counts as held: the test
		// freezes its sender then, and a body still on the way would
		// wait for it to resume.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		// Answered by the store whatever becomes of its sender.
		r = r.WithContext(context.Background())
	}
	p.mu.Lock()
	if hold {
		p.held++
		if p.held == 1 {
			close(p.heldOne)
		}
	}
	p.mu.Unlock()
	if !hold {
		p.rp.ServeHTTP(w, r)
		return
	}
	select {
	case <-release:
	case <-time.After(3 * time.Minute): // bounded: a test that forgot to release
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	p.rp.ServeHTTP(rec, r)
	p.mu.Lock()
	p.answered = append(p.answered, rec.status)
	p.mu.Unlock()
}

// hold makes later head writes wait.
func (p *holdProxy) hold() {
	p.mu.Lock()
	p.holding = true
	p.mu.Unlock()
}

// releaseAll stops holding and lets every held call through.
func (p *holdProxy) releaseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holding {
		p.holding = false
		close(p.release)
	}
}

// outcome: how many calls were held, and the store's answers to those
// released so far.
func (p *holdProxy) outcome() (held int, answered []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, append([]int(nil), p.answered...)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// TestStoreStaleWriteRefused: fence 1 on live daemons, with the timing
// forced. The LEADER of site a stands in with the store for site b's
// master (its site killed). Its next write of the store log's head is
// held on the way, already sent, and the LEADER frozen (SIGSTOP) with it
// under way. Site b started again elects its master, which takes the
// frozen master's changes from the store and swaps the head at its own
// epoch. Only then does the held write reach the store: the store must
// refuse it (412, its If-Match names a head that is gone), the head's
// epoch must never fall, the resumed master must step down, and every
// change acknowledged must read back from the new LEADER.
func TestStoreStaleWriteRefused(t *testing.T) {
	s := siteBDown(t, rigOptions{proxies: true}, 30)
	r, lead, here, farMasters, ld, w := s.r, s.lead, s.here, s.farMasters, s.ld, s.w
	px := r.proxies[lead]
	old := r.c.Masters[lead]

	hw := watchHead(r)
	px.hold()
	select {
	case <-px.heldOne:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s wrote no head in 20 s with the store standing in", old.Addr)
	}
	if err := old.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Signal(syscall.SIGCONT) })
	before, _, _ := r.store.LogHead()
	t.Logf("LEADER %s (site %s) frozen with a head write under way (the head then: epoch %d, %d objects), after %d changes",
		old.Addr, here, before.Epoch, len(before.Objects), w.count())

	next := farMasters[0]
	nextEpoch := s.farLeadsOnStore(t)
	if h, ok, err := r.store.LogHead(); err != nil || !ok || h.Epoch != nextEpoch {
		t.Fatalf("the head after %s leads: epoch %d (%v %v), want %d", r.c.Masters[next].Addr, h.Epoch, ok, err, nextEpoch)
	}

	// The held write lands now, after the new LEADER's swap.
	px.releaseAll()
	eventually(t, 10*time.Second, 50*time.Millisecond, "the held head writes to be answered", func() error {
		if held, answered := px.outcome(); len(answered) < held {
			return fmt.Errorf("%d of %d answered", len(answered), held)
		}
		return nil
	})
	held, answered := px.outcome()
	for _, code := range answered {
		if code != http.StatusPreconditionFailed {
			t.Errorf("a head write of the superseded LEADER was answered %d by the store, want 412 (answers %v)", code, answered)
		}
	}
	if h, ok, err := r.store.LogHead(); err != nil || !ok || h.Epoch < nextEpoch {
		t.Errorf("the head after the held writes landed: epoch %d (%v %v), want at least %d", h.Epoch, ok, err, nextEpoch)
	}

	if err := old.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, 100*time.Millisecond, old.Addr.String()+" to step down once resumed", func() error {
		st, err := r.status(lead, time.Second)
		if err != nil || st.Role == roles.Leader {
			return fmt.Errorf("%v %v", st.Role, err)
		}
		return nil
	})
	w.await(t, w.count()+20)
	seen, polls, fell := hw.stop()
	if fell != "" {
		t.Error(fell)
	}
	st, err := r.status(lead, time.Second)
	if err != nil || st.StoreLog == nil {
		t.Fatalf("the resumed master's status: %v %+v", err, st.StoreLog)
	}
	t.Logf("%d head writes of the superseded LEADER held and released after %s's swap at epoch %d: the store answered %v; head read %d times, epochs %v, never falling; %s now %v at epoch %d, refused %d, last store error %q",
		held, r.c.Masters[next].Addr, nextEpoch, answered, polls, seen, old.Addr, st.Role, st.Epoch, st.StoreLog.Refused, st.StoreLog.Error)

	w.halt()
	cl := newClient(t, r.c, time.Second)
	w.check(t, cl, "after the superseded LEADER's held head write landed")
	ld.finish(t, nil)
}
