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
	"github.com/prometheus/client_golang/prometheus"
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
// carries nothing the client port does not answer to anyone, but it is an
// inventory of the cluster and of what is left open: a browser lets a
// page of another origin read it only when origins allows that origin
// (the page of a master of the set, which asks the others when its own
// master is down, and HTTP_ALLOW_ORIGIN), never any page (review N4).
type statusAPI struct {
	masters    func() []masterhost.Master // the set of masters now (it changes: MASTER_RESOLVE_INTERVAL)
	clientPort uint16
	host       string // MASTER_HOST, for the removal commands
	timeout    time.Duration
	origins    *originRule

	mu     sync.Mutex
	at     time.Time
	doc    []byte
	alarms map[string]bool // the round's alarms, by kind
}

// statusFresh is how long one round of answers is served again.
const statusFresh = 500 * time.Millisecond

func newStatusAPI(masters func() []masterhost.Master, clientPort uint16, host string, timeout time.Duration, origins *originRule) *statusAPI {
	return &statusAPI{masters: masters, clientPort: clientPort, host: host, timeout: timeout, origins: origins}
}

func (s *statusAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	doc, _, err := s.round()
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	// The answer depends on the Origin: a cache between must not hand
	// one page's answer to another.
	h.Set("Vary", "Origin")
	if o := r.Header.Get("Origin"); s.origins.allow(o, r.Host, s.masters()) {
		if s.origins.all {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", o)
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}

// round is the newest round's document and alarms, asked anew once it is
// older than statusFresh.
func (s *statusAPI) round() ([]byte, map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.doc != nil && time.Since(s.at) < statusFresh {
		return s.doc, s.alarms, nil
	}
	var addrs []netip.AddrPort
	for _, m := range s.masters() {
		addrs = append(addrs, netip.AddrPortFrom(m.Addr.Addr(), s.clientPort))
	}
	answers := clusterview.AskAll(addrs, s.timeout)
	now := time.Now()
	ds := clusterview.Build(answers, s.host, now)
	b, err := json.Marshal(clusterview.NewDocument(ds, clusterview.AnswerErrors(answers), clusterview.AllParts, release.Version, now))
	if err != nil {
		return nil, nil, err
	}
	s.alarms = map[string]bool{}
	for _, w := range ds.Warnings {
		s.alarms[w.Kind] = true
	}
	s.doc, s.at = append(b, '\n'), time.Now()
	return s.doc, s.alarms, nil
}

// alarmDesc is mfs_cluster_alarm: 1 while an alarm is raised, 0 when not,
// for every kind (clusterview.AlarmKinds), as this master sees the whole
// cluster (the round /api/v1/status serves).
var alarmDesc = prometheus.NewDesc("mfs_cluster_alarm",
	"1 while the alarm is raised, as this master sees the cluster (every master's status answer, as mfscli -SIM -SLQ lists them); 0 otherwise.",
	[]string{"alarm"}, nil)

// Describe and Collect make the alarms a collector of the master's
// registry: a scrape asks for a round at most every statusFresh.
func (s *statusAPI) Describe(ch chan<- *prometheus.Desc) { ch <- alarmDesc }

func (s *statusAPI) Collect(ch chan<- prometheus.Metric) {
	_, alarms, err := s.round()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(alarmDesc, err)
		return
	}
	for _, k := range clusterview.AlarmKinds {
		v := 0.0
		if alarms[k] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(alarmDesc, prometheus.GaugeValue, v, k)
	}
}
