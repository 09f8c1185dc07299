package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
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
// The rounds of questions run in the background (run), never in a
// request: a scrape of /metrics, or a page's poll, answers at once from
// the newest round, and says how old it is (mfs_cluster_view_age_seconds,
// the document's cache_age_seconds, an Age header). Asked inline, one
// frozen master made every other master's /metrics wait for its timeout,
// so a poller saw a failover about four times later than it happened
// (issue "Seen as fast as it happens"). A round starts every statusFresh
// while the document or the alarms were read within statusWanted, and
// not otherwise: nobody reading, nobody asked.
//
// The document is read-only and carries nothing the client port does not
// answer to anyone, but it is an inventory of the cluster and of what is
// left open: a browser lets a page of another origin read it only when
// origins allows that origin (the page of a master of the set, which asks
// the others when its own master is down, and HTTP_ALLOW_ORIGIN), never
// any page (review N4).
type statusAPI struct {
	masters    func() []masterhost.Master // the set of masters now (it changes: MASTER_RESOLVE_INTERVAL)
	clientPort uint16
	host       string // MASTER_HOST, for the removal commands
	timeout    time.Duration
	origins    *originRule
	wake       chan struct{} // a read while no round runs

	mu     sync.Mutex
	cur    *statusRound  // the newest round (nil: none yet)
	next   chan struct{} // closed when cur is next replaced
	wanted time.Time     // the last read
}

// statusRound is one round's document and alarms.
type statusRound struct {
	at     time.Time
	doc    clusterview.Document
	alarms map[string]bool // by kind
}

const (
	// statusFresh: a round starts at most this often.
	statusFresh = 500 * time.Millisecond
	// statusWanted: rounds go on this long after the last read: past the
	// longest scrape interval in common use (Prometheus's default is 15 s,
	// many run 1 m), so that no scrape reads a round older than a round's
	// own length.
	statusWanted = 5 * time.Minute
	// statusFirstWait: how long a request for the document waits for a
	// round when there is none, or the newest is from before the rounds
	// stopped (nobody read for statusWanted); /metrics never waits.
	statusFirstWait = 2 * time.Second
)

func newStatusAPI(masters func() []masterhost.Master, clientPort uint16, host string, timeout time.Duration, origins *originRule) *statusAPI {
	return &statusAPI{masters: masters, clientPort: clientPort, host: host, timeout: timeout, origins: origins,
		wake: make(chan struct{}, 1), next: make(chan struct{})}
}

// run asks the masters a round at a time, every statusFresh while the
// document or the alarms are read, until done is closed.
func (s *statusAPI) run(done <-chan struct{}) {
	for {
		s.mu.Lock()
		idle := time.Since(s.wanted) > statusWanted
		s.mu.Unlock()
		if idle {
			select {
			case <-done:
				return
			case <-s.wake:
			}
		}
		r := s.ask()
		s.mu.Lock()
		s.cur = r
		close(s.next)
		s.next = make(chan struct{})
		s.mu.Unlock()
		select {
		case <-done:
			return
		case <-time.After(statusFresh):
		}
	}
}

// ask is one round: every master asked at once, each with its own deadline.
func (s *statusAPI) ask() *statusRound {
	var addrs []netip.AddrPort
	for _, m := range s.masters() {
		addrs = append(addrs, netip.AddrPortFrom(m.Addr.Addr(), s.clientPort))
	}
	answers := clusterview.AskAll(addrs, s.timeout)
	now := time.Now()
	ds := clusterview.Build(answers, s.host, now)
	r := &statusRound{at: now, doc: clusterview.NewDocument(ds, clusterview.AnswerErrors(answers), clusterview.AllParts, release.Version, now),
		alarms: map[string]bool{}}
	for _, w := range ds.Warnings {
		r.alarms[w.Kind] = true
	}
	return r
}

// latest is the newest round (nil: none yet), whether it is from before
// the rounds stopped (stale), and a channel closed at the next round; it
// notes the read: the rounds go on (or start again) while someone reads.
func (s *statusAPI) latest() (cur *statusRound, stale bool, next <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stale = time.Since(s.wanted) > statusWanted; stale {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	s.wanted = time.Now()
	return s.cur, stale, s.next
}

func (s *statusAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cur, stale, next := s.latest()
	if cur == nil || stale {
		select {
		case <-next:
			cur, _, _ = s.latest()
		case <-time.After(statusFirstWait):
		case <-r.Context().Done():
			return
		}
	}
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
	if cur == nil {
		http.Error(w, fmt.Sprintf("no status round yet: the masters were asked and none has answered within %v", statusFirstWait), http.StatusServiceUnavailable)
		return
	}
	doc := cur.doc
	age := time.Since(cur.at)
	secs := age.Seconds()
	doc.CacheAge = &secs
	b, err := json.Marshal(doc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Age", strconv.Itoa(int(age/time.Second)))
	_, _ = w.Write(append(b, '\n'))
}

// alarmDesc is mfs_cluster_alarm: 1 while an alarm is raised, 0 when not,
// for every kind (clusterview.AlarmKinds), as this master sees the whole
// cluster (the round /api/v1/status serves).
var alarmDesc = prometheus.NewDesc("mfs_cluster_alarm",
	"1 while the alarm is raised, as this master sees the cluster (every master's status answer, as mfscli -SIM -SLQ lists them); 0 otherwise. As of mfs_cluster_view_age_seconds ago.",
	[]string{"alarm"}, nil)

// ageDesc is mfs_cluster_view_age_seconds: how old the round behind
// mfs_cluster_alarm is.
var ageDesc = prometheus.NewDesc("mfs_cluster_view_age_seconds",
	"How long ago the round of status answers behind mfs_cluster_alarm (and /api/v1/status) was asked. Rounds run in the background every 0.5 s while read; a frozen or far master makes a round last up to its timeout, and this grow.",
	nil, nil)

// Describe and Collect make the alarms a collector of the master's
// registry. A scrape reads the newest round and never waits for one:
// before the first round it has no alarm to give.
func (s *statusAPI) Describe(ch chan<- *prometheus.Desc) { ch <- alarmDesc; ch <- ageDesc }

func (s *statusAPI) Collect(ch chan<- prometheus.Metric) {
	cur, _, _ := s.latest()
	if cur == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, time.Since(cur.at).Seconds())
	for _, k := range clusterview.AlarmKinds {
		v := 0.0
		if cur.alarms[k] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(alarmDesc, prometheus.GaugeValue, v, k)
	}
}
