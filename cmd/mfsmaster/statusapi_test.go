package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
)

// frozenMaster accepts connections on loopback and never answers, as a
// SIGSTOPped master's kernel does; each accepted connection is sent on
// conns.
func frozenMaster(t *testing.T) (netip.AddrPort, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for range 100 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			select {
			case conns <- c:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	return netip.MustParseAddrPort(ln.Addr().String()), conns
}

// TestStatusAPINeverWaits: a scrape of the cluster alarms and a read of
// /api/v1/status answer from the newest round while a round waits on a
// master that does not answer (its deadline here 30 s): neither waits for
// it. Before, Collect asked every master inline, so one frozen master held
// every other master's /metrics for its timeout.
func TestStatusAPINeverWaits(t *testing.T) {
	addr, conns := frozenMaster(t)
	rule := &originRule{httpPort: 9425, host: func() string { return addr.String() }}
	api := newStatusAPI(func() []masterhost.Master { return []masterhost.Master{{ID: 1, Addr: addr}} }, addr.Port(), addr.String(), 30*time.Second, rule)
	done := make(chan struct{})
	defer close(done)
	go api.run(done)
	reg := prometheus.NewRegistry()
	reg.MustRegister(api)

	gather := func(what string) int {
		t.Helper()
		type result struct {
			n   int
			err error
		}
		got := make(chan result, 1)
		go func() {
			mfs, err := reg.Gather()
			n := 0
			for _, mf := range mfs {
				n += len(mf.GetMetric())
			}
			got <- result{n, err}
		}()
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("%s: %v", what, r.err)
			}
			return r.n
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the scrape waited for the round (a master that does not answer, its deadline 30 s)", what)
		}
		return 0
	}
	// Before any round: nothing to say, at once; and the read starts them.
	if n := gather("the first scrape"); n != 0 {
		t.Errorf("the first scrape gave %d metrics before any round", n)
	}
	select {
	case <-conns:
	case <-time.After(20 * time.Second):
		t.Fatal("no round asked the master after a scrape")
	}
	// A round is under way, held by the master: the scrape does not wait.
	if n := gather("a scrape during a held round"); n != 0 {
		t.Errorf("a scrape during the first round gave %d metrics", n)
	}

	// With a round done, the scrape and the document say how old it is.
	api.mu.Lock()
	api.cur = &statusRound{at: time.Now().Add(-3 * time.Second), alarms: map[string]bool{"witness": true}}
	api.mu.Unlock()
	if n := gather("a scrape with a round"); n < 2 {
		t.Errorf("a scrape with a round gave %d metrics, want the age and the alarms", n)
	}
	mfs, _ := reg.Gather()
	var age float64
	for _, mf := range mfs {
		if mf.GetName() == "mfs_cluster_view_age_seconds" {
			age = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if age < 3 || age > 3600 {
		t.Errorf("mfs_cluster_view_age_seconds %v, want the round's age (3 s and more)", age)
	}
	w := httptest.NewRecorder()
	api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/status", nil))
	if w.Code != http.StatusOK || w.Header().Get("Age") == "" || w.Header().Get("Age") == "0" || !strings.Contains(w.Body.String(), `"cache_age_seconds":3`) {
		t.Errorf("/api/v1/status: %d, Age %q, body %s", w.Code, w.Header().Get("Age"), w.Body)
	}
}
