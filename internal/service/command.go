package service

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/mfs-election/mfs-election/internal/release"
	"github.com/mfs-election/mfs-election/internal/settings"
)

// Command is a daemon's command line, the part both daemons share written
// once: -c CFG and -f beside every cfg key as a flag, the MooseFS actions
// (start, stop, restart, reload, test), the data directory and its lock,
// and the log file of a daemon started in the background. Each daemon
// gives its key table and the hooks below.
type Command[T any] struct {
	Name, Usage, UsageText string
	// About is the man page's description, after Usage.
	About      string
	DefaultCfg string
	Spec       settings.Spec[T]
	// Flags: the daemon's own, beside -c, -f and the keys.
	Flags []cli.Flag
	// DataPath is cfg's DATA_PATH.
	DataPath func(cfg T) string
	// Refuse names an action this daemon does not take (nil: every one),
	// before anything is read.
	Refuse func(a Action) error
	// Own carries out an action the daemon handles itself, offline, with
	// its config read and its data directory in place (mfsmaster's init
	// and repair); handled false: the shared ones.
	Own func(c *cli.Context, a Action, cfg T, lockPath string) (handled bool, err error)
	// Foreground runs the daemon (start -f, or the child a plain start
	// leaves in the background).
	Foreground func(c *cli.Context, cfg T, v settings.Values, lockPath string) error
}

// Main runs the command on the process's arguments; an error is printed,
// named by the daemon, and exits 1.
func (d Command[T]) Main() {
	own := []cli.Flag{
		&cli.StringFlag{Name: "c", Usage: "config file", Value: d.DefaultCfg},
		&cli.BoolFlag{Name: "f", Usage: "run in the foreground"},
		&cli.BoolFlag{Name: "man", Hidden: true, Usage: "print this command's man page (section 8) and exit"},
		&cli.BoolFlag{Name: "man-cfg", Hidden: true, Usage: "print the config file's man page (section 5) and exit"},
	}
	app := &cli.App{
		Name:            d.Name,
		Usage:           d.Usage,
		UsageText:       d.UsageText,
		Version:         release.Version,
		Flags:           append(append(own, d.Flags...), d.Spec.Flags()...),
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if asked, err := d.writeMan(c, os.Stdout, append(own, d.Flags...)); asked {
				return err
			}
			return d.run(c)
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", d.Name, err)
		os.Exit(1)
	}
}

func (d Command[T]) run(c *cli.Context) error {
	action, err := ParseAction(c.Args().Slice())
	if err != nil {
		return err
	}
	if d.Refuse != nil {
		if err := d.Refuse(action); err != nil {
			return err
		}
	}
	cfg, v, err := d.Spec.Resolve(c.String("c"), c.IsSet("c"), c)
	if err != nil && (action == ActionStop || action == ActionTest) {
		// They need only DATA_PATH, to find the lock: a mistake in another
		// key must not keep a running daemon from being stopped.
		if cfg, v, err = d.Spec.Lenient(c.String("c"), c.IsSet("c"), c); err != nil && (!v.Resolved("DATA_PATH") || strings.Contains(err.Error(), "DATA_PATH")) {
			return err // the file could not be read at all, or the one key needed is in doubt
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "%s: the configuration has problems (a restart would refuse it); %s goes on with DATA_PATH = %s (%s):\n  %v\n",
				d.Name, action, d.DataPath(cfg), v.Source("DATA_PATH"), err)
		}
	} else if err != nil {
		return err
	}
	dir := d.DataPath(cfg)
	if dir == "" {
		return fmt.Errorf("DATA_PATH is empty (%s): it names the directory of this daemon's data and lock file (/var/lib/mfs by default)", v.Source("DATA_PATH"))
	}
	if err := EnsureDir(dir); err != nil {
		return err
	}
	lockPath := filepath.Join(dir, "."+d.Name+".lock")
	if d.Own != nil {
		if handled, err := d.Own(c, action, cfg, lockPath); handled {
			return err
		}
	}
	return Dispatch(action, d.Name, lockPath, filepath.Join(dir, d.Name+".log"),
		c.Bool("f"), os.Args[1:], func() error { return d.Foreground(c, cfg, v, lockPath) })
}

// WarnSecretFlags warns about each secret given as a flag: every local
// user can read a command line (ps, /proc/PID/cmdline).
func WarnSecretFlags(log zerolog.Logger, v settings.Values, keys ...string) {
	for _, k := range keys {
		if src := v.Source(k); strings.HasPrefix(src, "flag") && v.String(k) != "" {
			log.Warn().Str("key", k).Str("source", src).
				Msg("secret given on the command line, where every local user can read it (ps): set it in the cfg file (mode 0600) instead")
		}
	}
}
