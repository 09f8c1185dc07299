package obs

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// NewRegistry returns a fresh registry holding the Go and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// RegisterBuildInfo exports mfs_build_info{daemon, version, goversion} =
// 1, the usual way to see which build each process runs (and, in a
// rolling upgrade, which still run the old one).
func RegisterBuildInfo(reg prometheus.Registerer, daemon, version string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "mfs_build_info",
		Help:        "Always 1: the daemon, its version and the Go version it was built with, as labels.",
		ConstLabels: prometheus.Labels{"daemon": daemon, "version": version, "goversion": runtime.Version()}})
	g.Set(1)
	reg.MustRegister(g)
}

// Route is one more handler for Serve's mux (a net/http pattern, e.g.
// "GET /api/v1/status").
type Route struct {
	Pattern string
	Handler http.Handler
}

// Serve serves GET /metrics from reg, GET /healthz from health (nil means
// always healthy; asked at each request, so it must judge its answer then)
// and GET /livez (200 while the process answers at all: a liveness probe
// for orchestrators, where /healthz is a readiness or routing check) on
// ln, in its own goroutine, and routes beside them. Stop it with Shutdown.
func Serve(ln net.Listener, reg *prometheus.Registry, health func() (ok bool, text string), log zerolog.Logger, routes ...Route) *http.Server {
	el := newErrLog(log.With().Str("component", "http").Logger())
	mux := http.NewServeMux()
	for _, r := range routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: el, ErrorHandling: promhttp.ContinueOnError, Registry: reg, Timeout: 10 * time.Second,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, text := true, "ok"
		if health != nil {
			ok, text = health()
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		_, _ = w.Write([]byte(text))
	})
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          stdlog.New(el, "", 0),
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			el.l.Error().Err(err).Str("addr", ln.Addr().String()).Msg("metrics server stopped")
		}
	}()
	return srv
}

// errLog routes promhttp and net/http errors to zerolog at warn level.
// A scrape its client gave up on (context canceled: a poller's timeout,
// a closed tab) is logged at most once a minute, with how many there were
// since: promhttp reports it once per metric family, dozens a scrape, and
// it says nothing about this daemon.
type errLog struct {
	l        zerolog.Logger
	canceled *canceledLog
}

type canceledLog struct {
	mu     sync.Mutex
	last   time.Time
	quiet  int // canceled since last, not logged
	now    func() time.Time
	period time.Duration
}

func newErrLog(l zerolog.Logger) errLog {
	return errLog{l: l, canceled: &canceledLog{now: time.Now, period: time.Minute}}
}

func (e errLog) Println(v ...any) { e.log(strings.TrimSpace(fmt.Sprintln(v...))) }

func (e errLog) Write(p []byte) (int, error) {
	e.log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (e errLog) log(msg string) {
	if strings.Contains(msg, context.Canceled.Error()) {
		c := e.canceled
		c.mu.Lock()
		if c.now().Sub(c.last) < c.period {
			c.quiet++
			c.mu.Unlock()
			return
		}
		n := c.quiet
		c.last, c.quiet = c.now(), 0
		c.mu.Unlock()
		e.l.Info().Int("since_last", n).Msg("a client gave up on its request (logged at most once a minute): " + msg)
		return
	}
	e.l.Warn().Msg(msg)
}

// RegisterStoreCommits exports a store's durable writes as
// mfs_<daemon>_store_commits_total (daemon: "master" or "chunkserver"):
// a master's is one bbolt commit, two fdatasyncs; a chunkserver's one
// slot of its record file, one fdatasync. Divided by the changes
// acknowledged over the same time it is the disk's cost of a change
// (docs/benchmarks.md).
// storeWrite says what one durable write of each daemon's file is.
var storeWrite = map[string]string{
	"master":      "one bbolt commit each: two fdatasyncs",
	"chunkserver": "one record written each: one fdatasync",
}

func RegisterStoreCommits(reg prometheus.Registerer, daemon string, commits func() uint64) {
	promauto.With(reg).NewCounterFunc(prometheus.CounterOpts{
		Name: "mfs_" + daemon + "_store_commits_total",
		Help: "Durable writes of the " + daemon + "'s metadata file (" + storeWrite[daemon] + ").",
	}, func() float64 { return float64(commits()) })
}
