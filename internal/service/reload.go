package service

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// ReloadConfig re-reads a daemon's config on SIGHUP (the -c file, flags
// still winning) and returns the values in force after it. Each key whose
// value differs from the running one and that the key table does not mark
// Live is named in the log, one line each: it waits for a restart. If any
// Live key changed, apply puts the new config's live keys in force; it
// checks them all before it changes anything, so an error leaves every one
// as it was. On any error the log says why and the old values stand.
//
// The restart lines are written before apply runs, at the log level the
// reload found: a reload that raises LOG_LEVEL still reports what it could
// not change.
func ReloadConfig[T any](spec settings.Spec[T], c *cli.Context, log zerolog.Logger, old settings.Values, apply func(T) error) settings.Values {
	r, err := spec.Reload(c.String("c"), c.IsSet("c"), c, old)
	if err != nil {
		log.Error().Err(err).Msg("reload: config not taken")
		return old
	}
	for _, k := range r.Restart {
		log.Warn().Str("key", k).Msg("reload: " + k + " changed; it takes effect at the next restart")
	}
	if len(r.Live) == 0 {
		log.Info().Msg("reload: config re-read; nothing to apply")
		return r.Next
	}
	if err := apply(r.Config); err != nil {
		log.Error().Err(err).Strs("keys", r.Live).Msg("reload: config not taken")
		return old
	}
	log.Info().Strs("keys", r.Live).Msg("reload: applied")
	return r.Next
}

// Daemon is what Serve needs of a running daemon.
type Daemon interface {
	Done() <-chan struct{}
	Err() error
	Stop(timeout time.Duration) error
}

// Reloader is a daemon that re-reads files of its own on SIGHUP (the
// master: mfsexports.cfg).
type Reloader interface{ Reload() }

// Serve runs a daemon in the foreground until it ends or a signal stops
// it: SIGHUP reopens the log file of a daemon started by start
// (ReopenLog), reloads the config (ReloadConfig, with apply) and, for a
// Reloader, its own files; SIGTERM and SIGINT stop it in order within
// stopWithin. v is the config the daemon started with.
func Serve[T any](d Daemon, spec settings.Spec[T], c *cli.Context, log zerolog.Logger, v settings.Values, apply func(T) error, stopWithin time.Duration) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// Everything is started: a Type=notify unit is ready now, and its
	// watchdog is fed while the loop answers.
	notify(log, daemon.SdNotifyReady)
	wdStop := make(chan struct{})
	defer close(wdStop)
	go watchdog(d, log, wdStop)
	for {
		select {
		case <-d.Done():
			return d.Err()
		case s := <-sigs:
			if s == syscall.SIGHUP {
				notify(log, reloading())
				if ok, path, err := ReopenLog(); err != nil {
					log.Error().Err(err).Msg("reload")
				} else if ok {
					log.Info().Str("file", path).Msg("log file reopened")
				}
				v = ReloadConfig(spec, c, log, v, apply)
				if r, ok := d.(Reloader); ok {
					r.Reload()
				}
				notify(log, daemon.SdNotifyReady)
				continue
			}
			notify(log, daemon.SdNotifyStopping)
			log.Info().Str("signal", s.String()).Msg("orderly stop")
			return d.Stop(stopWithin)
		}
	}
}
