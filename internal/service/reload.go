package service

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// ReloadConfig re-reads a daemon's config on SIGHUP (the -c file, flags
// still winning): the log level changes at once; the log names any other
// key that changed, which waits for a restart. On an error the old values
// stand.
func ReloadConfig(spec settings.Spec, c *cli.Context, log zerolog.Logger, old settings.Values) settings.Values {
	v, changed, err := spec.Reload(c.String("c"), c.IsSet("c"), c, old, obs.SetLevel)
	switch {
	case err != nil:
		log.Error().Err(err).Msg("reload: config not taken")
	case len(changed) > 0:
		log.Warn().Strs("keys", changed).Msg("reload: log level applied; these keys take effect at the next restart")
	default:
		log.Info().Str("level", v.String("LOG_LEVEL")).Msg("reload: config re-read")
	}
	return v
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
// it: SIGHUP reloads the config (ReloadConfig) and, for a Reloader, its
// own files; SIGTERM and SIGINT stop it in order within stopWithin.
func Serve(d Daemon, spec settings.Spec, c *cli.Context, log zerolog.Logger, v settings.Values, stopWithin time.Duration) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	for {
		select {
		case <-d.Done():
			return d.Err()
		case s := <-sigs:
			if s == syscall.SIGHUP {
				v = ReloadConfig(spec, c, log, v)
				if r, ok := d.(Reloader); ok {
					r.Reload()
				}
				continue
			}
			log.Info().Str("signal", s.String()).Msg("orderly stop")
			return d.Stop(stopWithin)
		}
	}
}
