package obs

import (
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"time"

	"github.com/rs/zerolog"
)

// StartProfiles is ServeProfiles for a daemon's PPROF_LISTEN: nothing
// when addr is empty (off). stop ends what it started.
func StartProfiles(addr string, log zerolog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	srv, _, err := ServeProfiles(addr, log)
	if err != nil {
		return nil, err
	}
	return func() { _ = srv.Close() }, nil
}

// ServeProfiles serves Go's profiles (net/http/pprof: /debug/pprof/, a CPU
// profile at /debug/pprof/profile?seconds=N, heap, goroutines, ...) on
// addr, a loopback host:port, in its own goroutine: PPROF_LISTEN. Off
// unless set. Loopback only: a profile names every function and a
// goroutine dump every connection's state, and a CPU profile costs the
// daemon a few percent while it runs; whoever may profile a master may
// log in to its host (ssh -L forwards the port). It returns the address
// listened on; stop it with Close.
func ServeProfiles(addr string, log zerolog.Logger) (*http.Server, string, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("PPROF_LISTEN %q: want a loopback HOST:PORT such as 127.0.0.1:6060: %v", addr, err)
	}
	if !ap.Addr().Unmap().IsLoopback() {
		return nil, "", fmt.Errorf("PPROF_LISTEN %q: profiles are served on a loopback address only (127.0.0.0/8 or ::1); reach them from elsewhere through ssh -L", addr)
	}
	ln, err := net.Listen("tcp", ap.String())
	if err != nil {
		return nil, "", fmt.Errorf("PPROF_LISTEN: %w", err)
	}
	el := newErrLog(log.With().Str("component", "pprof").Logger())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          stdlog.New(el, "", 0),
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			el.l.Error().Err(err).Str("addr", ln.Addr().String()).Msg("profile server stopped")
		}
	}()
	log.Info().Str("addr", ln.Addr().String()).Msg("serving Go profiles (PPROF_LISTEN)")
	return srv, ln.Addr().String(), nil
}
