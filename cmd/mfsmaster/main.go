// Command mfsmaster is the metadata master: one of several, of which the
// chunkservers' votes make exactly one the LEADER. See docs/operations.md.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/release"
	"github.com/mfs-election/mfs-election/internal/service"
	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/secret"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

const defaultCfg = "/etc/mfs/mfsmaster.cfg"

func main() {
	app := &cli.App{
		Name:      "mfsmaster",
		Usage:     "metadata master elected by chunkserver quorum",
		UsageText: "mfsmaster [-c CFG] [-f] [-e] [--KEY value ...] [start|stop|restart|reload|test|init|repair]",
		Version:   release.Version,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "c", Usage: "config file", Value: defaultCfg},
			&cli.BoolFlag{Name: "f", Usage: "run in the foreground"},
			&cli.BoolFlag{Name: "e", Usage: "start without metadata: sync from the LEADER, FOLLOWER only until synced"},
			&cli.StringSliceFlag{Name: "location", Usage: "init only: NAME=CIDR, map a range to a location in the new metadata (repeatable)"},
			&cli.StringFlag{Name: "remove-chunkservers", Usage: "repair only: ids (as -SCS lists them) of registered chunkservers that will never vote again, comma-separated; run the same repair on every master, all stopped, before starting any"},
		}, spec.Flags()...),
		HideHelpCommand: true,
		Action:          run,
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "mfsmaster:", err)
		os.Exit(1)
	}
}

func run(c *cli.Context) error {
	action, err := service.ParseAction(c.Args().Slice())
	if err != nil {
		return err
	}
	v, err := spec.Resolve(c.String("c"), c.IsSet("c"), c)
	if err != nil {
		return err
	}
	dataPath := v.String("DATA_PATH")
	if err := service.EnsureDir(dataPath); err != nil {
		return err
	}
	lockPath := filepath.Join(dataPath, ".mfsmaster.lock")
	if action == service.ActionInit {
		return initMetadata(os.Stdout, v, lockPath, c.StringSlice("location"))
	}
	if action == service.ActionRepair {
		return repairMetadata(os.Stdout, v.String("DATA_PATH"), lockPath, c.String("remove-chunkservers"))
	}
	return service.Dispatch(action, "mfsmaster", lockPath, filepath.Join(dataPath, "mfsmaster.log"),
		c.Bool("f"), os.Args[1:], func() error { return foreground(c, v, lockPath, c.Bool("e")) })
}

// masters resolves MASTER_HOST and finds this master in it.
func masters(v settings.Values) ([]masterhost.Master, netip.Addr, error) {
	list, err := masterhost.Resolve(v.String("MASTER_HOST"), uint16(v.Int("MATOML_LISTEN_PORT")))
	if err != nil {
		return nil, netip.Addr{}, err
	}
	var cands []netip.Addr
	for _, k := range []string{"BIND_HOST", "MATOML_LISTEN_HOST"} {
		if a, err := netip.ParseAddr(v.String(k)); err == nil {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		ifas, _ := net.InterfaceAddrs()
		for _, ifa := range ifas {
			if p, err := netip.ParsePrefix(ifa.String()); err == nil {
				cands = append(cands, p.Addr())
			}
		}
	}
	for _, a := range cands {
		for _, m := range list {
			if m.Addr.Addr() == a {
				return list, a, nil
			}
		}
	}
	var names []string
	for _, m := range list {
		names = append(names, m.Addr.String())
	}
	return nil, netip.Addr{}, fmt.Errorf("this master is not in MASTER_HOST (%s): set MATOML_LISTEN_HOST or BIND_HOST to its address there", strings.Join(names, ", "))
}

// initMetadata is `mfsmaster init`: fresh metadata with a new id, for the
// first master of a new cluster. Without AUTH_CODE it prints a new random
// one and where it goes; the cfg files are the one place secrets live, so
// it is stored nowhere else.
func initMetadata(out io.Writer, v settings.Values, lockPath string, locs []string) error {
	for _, k := range []string{"AUTH_CODE", "ADMIN_PASSWORD"} {
		if err := secret.Check(k, v.String(k)); err != nil {
			return err
		}
	}
	lock, err := service.Acquire(lockPath)
	if err != nil {
		return err
	}
	defer lock.Release()
	_, self, err := masters(v)
	if err != nil {
		return err
	}
	g := roles.Genesis(masterhost.IDOf(self))
	for _, l := range locs {
		name, cidr, ok := strings.Cut(l, "=")
		p, perr := netip.ParsePrefix(cidr)
		if !ok || perr != nil {
			return fmt.Errorf("--location %q: want NAME=CIDR, e.g. west=10.1.0.0/16", l)
		}
		m, err := g[0].Config.Locations.MapRange(p, name)
		if err != nil {
			return fmt.Errorf("--location %q: %w", l, err)
		}
		g[0].Config.Locations = m
	}
	st, err := metadata.OpenMaster(v.String("DATA_PATH"))
	if err != nil {
		return err
	}
	defer st.Close()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	id := strings.ToUpper(hex.EncodeToString(b))
	if err := st.Init(id, g); err != nil {
		return err
	}
	fmt.Fprintf(out, "mfsmaster: new metadata %s in %s (founder %s)\n", id, st.Path(), self)
	if v.String("AUTH_CODE") == "" {
		code, err := secret.Generate()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "mfsmaster: no AUTH_CODE is set. A new random one (stored nowhere else):\n\nAUTH_CODE = %s\n\n"+
			"Put this line in the mfsmaster.cfg of every master and the mfschunkserver.cfg of every chunkserver (files readable by their daemons only, mode 0600), then start them.\n", code)
	}
	return nil
}

func coreConfig(v settings.Values, list []masterhost.Master, self netip.Addr) roles.Config {
	mids := make([]wire.MasterID, 0, len(list))
	for _, m := range list {
		mids = append(mids, m.ID)
	}
	cfg := roles.DefaultConfig(masterhost.IDOf(self), mids)
	cfg.HeartbeatInterval = v.Duration("HEARTBEAT_INTERVAL")
	cfg.VoteLease = v.Duration("VOTE_LEASE")
	cfg.MaxClockDrift = v.Float("MAX_CLOCK_DRIFT")
	cfg.LeaseMargin = v.Duration("LEASE_MARGIN")
	cfg.PeerInterval = v.Duration("PEER_INTERVAL")
	cfg.PeerTimeout = v.Duration("PEER_TIMEOUT")
	cfg.SelfNominateAfter = v.Duration("SELF_NOMINATE_AFTER")
	cfg.DeputyElectionTime = v.Duration("DEPUTY_ELECTION_TIME")
	cfg.ElectTimeout = v.Duration("ELECT_TIMEOUT")
	cfg.HandoverTimeout = v.Duration("HANDOVER_TIMEOUT")
	cfg.AckReplicas = v.Int("ACK_REPLICAS")
	cfg.KeepLeadership = v.Bool("KEEP_LEADERSHIP")
	cfg.LeaseReads = v.Bool("LEASE_READS")
	cfg.SnapshotEvery = uint64(v.Int("SNAPSHOT_CHANGES"))
	cfg.LogRetain = uint64(v.Int("CHANGELOG_RETAIN"))
	return cfg
}

func foreground(c *cli.Context, v settings.Values, lockPath string, empty bool) error {
	log, err := obs.DaemonLogger(v.String("LOG_LEVEL"), "mfsmaster")
	if err != nil {
		return err
	}
	warnSecretFlags(log, v, "AUTH_CODE", "ADMIN_PASSWORD")
	list, self, err := masters(v)
	if err != nil {
		return err
	}
	warnings, err := startChecks(v, list)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		log.Warn().Msg(w)
	}
	lock, err := service.Acquire(lockPath)
	if err != nil {
		return err
	}
	defer lock.Release()
	st, err := metadata.OpenMaster(v.String("DATA_PATH"))
	if err != nil {
		return err
	}
	defer st.Close()
	if !st.HasMetadata() && !empty {
		return fmt.Errorf("no metadata in %s: run `mfsmaster -c CFG init` for the first master of a new cluster, or start with -e to sync from the LEADER", st.Path())
	}
	bind := self
	if a, err := netip.ParseAddr(v.String("BIND_HOST")); err == nil {
		bind = a
	}
	reg := obs.NewRegistry()
	opt := node.MasterOptions{
		Core: coreConfig(v, list, self), Self: self, Masters: list,
		ListenML: node.ListenAddr(v.String("MATOML_LISTEN_HOST"), v.Int("MATOML_LISTEN_PORT")),
		ListenCS: node.ListenAddr(v.String("MATOCS_LISTEN_HOST"), v.Int("MATOCS_LISTEN_PORT")),
		ListenCL: node.ListenAddr(v.String("MATOCL_LISTEN_HOST"), v.Int("MATOCL_LISTEN_PORT")),
		Bind:     bind, AuthCode: v.String("AUTH_CODE"), AdminPassword: v.String("ADMIN_PASSWORD"), ExportsFile: v.String("EXPORTS_FILENAME"),
		Version: release.Version,
		Log:     log, Metrics: reg,
	}
	httpLn, err := net.Listen("tcp", node.ListenAddr(v.String("HTTP_LISTEN_HOST"), v.Int("HTTP_LISTEN_PORT")))
	if err != nil {
		return fmt.Errorf("HTTP_LISTEN: %w", err)
	}
	n, err := node.StartMaster(opt, st)
	if err != nil {
		_ = httpLn.Close()
		return err
	}
	// /healthz: 200 only while this master is LEADER holding a quorum at
	// the instant of the request (docs/operations.md, Health checks).
	srv := obs.Serve(httpLn, reg, n.Health, log)
	defer srv.Close()
	return service.Serve(n, spec, c, log, v, 10*time.Second)
}

// warnSecretFlags warns about each secret given as a flag: every local
// user can read a command line (ps, /proc/PID/cmdline).
func warnSecretFlags(log zerolog.Logger, v settings.Values, keys ...string) {
	for _, k := range keys {
		if src := v.Source(k); strings.HasPrefix(src, "flag") && v.String(k) != "" {
			log.Warn().Str("key", k).Str("source", src).
				Msg("secret given on the command line, where every local user can read it (ps): set it in the cfg file (mode 0600) instead")
		}
	}
}
