package service

import (
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
