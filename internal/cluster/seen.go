package cluster

import (
	"bufio"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Seen is what pollers of the masters' HTTP ports saw of a new LEADER:
// the arrival of the first answer of each kind that showed one (zero:
// none), which master it was, and the slowest answer of each kind.
type Seen struct {
	Metrics, Healthz               time.Time
	MetricsMaster, HealthzMaster   int
	Polls                          int
	SlowestMetrics, SlowestHealthz time.Duration
}

// RoleWatch polls GET /metrics and GET /healthz of every master but one,
// each in a loop of its own, as a monitoring system or a load balancer
// would, from StartRoleWatch until Wait.
type RoleWatch struct {
	quit chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	seen Seen
}

// StartRoleWatch starts polling every master of c but skip, each port every
// `every`, each request allowed 3 s.
func StartRoleWatch(c *Cluster, skip int, every time.Duration) *RoleWatch {
	w := &RoleWatch{quit: make(chan struct{})}
	hc := &http.Client{Timeout: 3 * time.Second}
	for i, m := range c.Masters {
		if i == skip {
			continue
		}
		base := "http://" + MasterHTTP(m.Addr).String()
		for _, kind := range []string{"metrics", "healthz"} {
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				// Bounded: at most 10 minutes of polls.
				for end := time.Now().Add(10 * time.Minute); time.Now().Before(end); {
					select {
					case <-w.quit:
						return
					default:
					}
					asked := time.Now()
					leader := pollLeader(hc, base, kind)
					w.note(kind, i, asked, time.Now(), leader)
					time.Sleep(every)
				}
			}()
		}
	}
	return w
}

// pollLeader asks base's /metrics or /healthz whether that master says it
// is LEADER now.
func pollLeader(hc *http.Client, base, kind string) bool {
	r, err := hc.Get(base + "/" + kind)
	if err != nil {
		return false
	}
	defer r.Body.Close()
	if kind == "healthz" {
		return r.StatusCode == http.StatusOK
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	leader := false
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == `mfs_master_role{role="LEADER"} 1` {
			leader = true
		}
	}
	return leader
}

func (w *RoleWatch) note(kind string, i int, asked, got time.Time, leader bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen.Polls++
	took := got.Sub(asked)
	switch kind {
	case "metrics":
		w.seen.SlowestMetrics = max(w.seen.SlowestMetrics, took)
		if leader && w.seen.Metrics.IsZero() {
			w.seen.Metrics, w.seen.MetricsMaster = got, i
		}
	case "healthz":
		w.seen.SlowestHealthz = max(w.seen.SlowestHealthz, took)
		if leader && w.seen.Healthz.IsZero() {
			w.seen.Healthz, w.seen.HealthzMaster = got, i
		}
	}
}

// Wait returns what was seen once both kinds showed a LEADER, or within
// has passed, and stops the polls.
func (w *RoleWatch) Wait(within time.Duration) Seen {
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		w.mu.Lock()
		done := !w.seen.Metrics.IsZero() && !w.seen.Healthz.IsZero()
		w.mu.Unlock()
		if done {
			break
		}
	}
	close(w.quit)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}
