// Command mfschunkserver is a chunkserver: here, a voter. The master it keeps
// its connection with is the one its vote is for. See docs/operations.md.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/node/csnode"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/release"
	"github.com/mfs-election/mfs-election/internal/service"
	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/urfave/cli/v2"
)

const defaultCfg = "/etc/mfs/mfschunkserver.cfg"

func main() {
	if os.Getenv("GOMAXPROCS") == "" {
		// A voter's work is a few small messages per heartbeat on one
		// loop: one processor runs it without the thread handoffs a second
		// one adds to each message (a futex wake and a context switch:
		// 142 switches a second idle at two, 95 at one, and 0.75% of a
		// core against 0.50%; docs/benchmarks.md, "Scale").
		runtime.GOMAXPROCS(1)
	}
	service.Command[config]{
		Name:      "mfschunkserver",
		Usage:     "chunkserver: votes for the master it keeps its connection with",
		UsageText: "mfschunkserver [-c CFG] [-f] [--KEY value ...] [start|stop|restart|reload|test]",
		About: "It registers with the masters of MASTER_HOST and keeps a connection to each; its vote, a promise renewed with every heartbeat of the master it votes for, is what elects the LEADER. " +
			"Without disks (HDD_CONF_FILENAME empty) it is a pure voter. Its voter record is DATA_PATH/chunkserver.mfs.",
		DefaultCfg: defaultCfg,
		Spec:       spec,
		DataPath:   func(cfg config) string { return cfg.DataPath },
		Refuse: func(a service.Action) error {
			if a == service.ActionInit {
				return errors.New("init is an mfsmaster action; a chunkserver registers with the LEADER by itself")
			}
			return nil
		},
		Foreground: foreground,
	}.Main()
}

// disks reads mfshdd.cfg: one path per line, '#' comments, MooseFS's
// leading marks (*, <, >, ~) and anything after the path ignored. An absent
// file means a voter-only chunkserver.
func disks(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = strings.TrimSpace(s[:i])
		}
		s = strings.TrimLeft(s, "*<>~")
		if s == "" {
			continue
		}
		p := strings.Fields(s)[0]
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s:%d: %q is not a directory", path, line, p)
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

func checkLabels(s string) error {
	if s == "" {
		return nil
	}
	for _, l := range strings.Split(s, ",") {
		l = strings.TrimSpace(l)
		if len(l) != 1 || l[0] < 'A' || l[0] > 'Z' {
			return fmt.Errorf("LABELS %q: each label is one letter A-Z, comma-separated", s)
		}
	}
	return nil
}

func foreground(c *cli.Context, cfg config, v settings.Values, lockPath string) error {
	log, err := obs.DaemonLogger(cfg.LogLevel, cfg.LogFormat, "mfschunkserver")
	if err != nil {
		return err
	}
	service.WarnSecretFlags(log, v, "AUTH_CODE")
	if err := checkLabels(cfg.Node.Labels); err != nil {
		return err
	}
	ds, err := disks(cfg.HDDConf)
	if err != nil {
		return err
	}
	var bind netip.Addr
	if h := cfg.BindHost; h != "" && h != "*" {
		if bind, err = netip.ParseAddr(h); err != nil {
			return fmt.Errorf("BIND_HOST %q is not an address", h)
		}
	}
	list, err := masterhost.Resolver{HostsFile: cfg.Node.HostsFile}.Resolve(cfg.MasterHost, uint16(cfg.MasterPort))
	if err != nil {
		return err
	}
	if !bind.IsValid() {
		// Never the kernel's pick per connection: a multi-homed host could
		// reach two masters from two addresses, which the masters would
		// take for two chunkservers (or a clone). One address, chosen once.
		if bind, err = node.SourceFor(list[0].Addr); err != nil {
			return fmt.Errorf("BIND_HOST is empty and no source address towards %v was found (%v): set BIND_HOST", list[0].Addr, err)
		}
		log.Info().Str("bind", bind.String()).Msg("BIND_HOST is empty: every connection leaves from the address the kernel picks towards the first master")
	}
	warning, err := startChecks(cfg, bind, list)
	if err != nil {
		return err
	}
	if warning != "" {
		log.Warn().Msg(warning)
	}
	lock, err := service.Acquire(lockPath)
	if err != nil {
		return err
	}
	defer lock.Release()
	st, err := metadata.OpenChunkserver(cfg.DataPath)
	if err != nil {
		return err
	}
	defer st.Close()
	reg := obs.NewRegistry()
	obs.RegisterBuildInfo(reg, "mfschunkserver", release.Version)
	opt := cfg.Node
	opt.Voter.Seed = uint64(time.Now().UnixNano())
	opt.Masters, opt.Bind, opt.Listen, opt.Disks = list, bind, cfg.CSServ.addr(), ds
	opt.MasterHost, opt.MasterPort = cfg.MasterHost, uint16(cfg.MasterPort)
	opt.Version, opt.Log, opt.Metrics = release.Version, log, reg
	httpLn, err := net.Listen("tcp", cfg.HTTP.addr())
	if err != nil {
		return fmt.Errorf("HTTP_LISTEN: %w", err)
	}
	stopProfiles, err := obs.StartProfiles(cfg.Pprof, log)
	if err != nil {
		_ = httpLn.Close()
		return err
	}
	defer stopProfiles()
	log.Info().Int("disks", len(ds)).Bool("voter_only", len(ds) == 0).Uint64("seed", opt.Voter.Seed).Msg("chunkserver starting")
	n, err := csnode.StartChunkserver(opt, st)
	if err != nil {
		_ = httpLn.Close()
		return err
	}
	srv := obs.Serve(httpLn, reg, func() (bool, string) {
		id := n.Identity()
		return true, fmt.Sprintf("chunkserver %v id %d", id.Addr, id.CS)
	}, log)
	defer srv.Close()
	return service.Serve(n, spec, c, log, v, func(next config) error { return applyLive(n, next) }, 5*time.Second)
}

// applyLive puts the keys spec marks Live in force from a reloaded config
// (service.ReloadConfig): LOG_LEVEL, then MASTER_HOST (resolved in the
// background: a name that does not resolve keeps the masters as they
// were, logged).
func applyLive(n interface{ SetMasterHost(string) }, next config) error {
	if err := obs.SetLevel(next.LogLevel); err != nil {
		return err
	}
	n.SetMasterHost(next.MasterHost)
	return nil
}
