package main

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/internal/release"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
)

// statusAPI serves GET /api/v1/status on the HTTP port: the document
// mfscli -j prints with every listing (clusterview.NewDocument), built as
// mfscli builds it, from every master's answer to the status request on
// its client port. So any master's page or script sees the whole cluster,
// this master included or not: one that is down is listed UNREACHABLE by
// the others. Each master's answer is fenced as its role is, so the
// document never shows a LEADER that no longer holds its quorum.
//
// Answers are kept for statusFresh: however many pages poll, a master
// asks the others at most that often, one round at a time (a request that
// comes during a round waits for it). The document is read-only and
// carries nothing the client port does not answer to anyone, so any page
// may read it (Access-Control-Allow-Origin: *): a page loaded from one
// master asks the others when that one is down.
type statusAPI struct {
	masters []netip.AddrPort // every master's client port
	host    string           // MASTER_HOST, for the removal commands
	timeout time.Duration

	mu  sync.Mutex
	at  time.Time
	doc []byte
}

// statusFresh is how long one round of answers is served again.
const statusFresh = 500 * time.Millisecond

func newStatusAPI(list []masterhost.Master, clientPort uint16, host string, timeout time.Duration) *statusAPI {
	s := &statusAPI{host: host, timeout: timeout}
	for _, m := range list {
		s.masters = append(s.masters, netip.AddrPortFrom(m.Addr.Addr(), clientPort))
	}
	return s
}

func (s *statusAPI) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	doc, err := s.document()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}

// document is the newest round's document, asked anew once it is older
// than statusFresh.
func (s *statusAPI) document() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.doc != nil && time.Since(s.at) < statusFresh {
		return s.doc, nil
	}
	answers := clusterview.AskAll(s.masters, s.timeout)
	now := time.Now()
	ds := clusterview.Build(answers, s.host, now)
	b, err := json.Marshal(clusterview.NewDocument(ds, clusterview.AnswerErrors(answers), clusterview.AllParts, release.Version, now))
	if err != nil {
		return nil, err
	}
	s.doc, s.at = append(b, '\n'), time.Now()
	return s.doc, nil
}
