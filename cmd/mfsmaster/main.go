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
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/masternode"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/release"
	"github.com/mfs-election/mfs-election/internal/service"
	"github.com/mfs-election/mfs-election/internal/settings"
	"github.com/mfs-election/mfs-election/internal/webui"
	"github.com/mfs-election/mfs-election/internal/witness/s3store"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/secret"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

const defaultCfg = "/etc/mfs/mfsmaster.cfg"

func main() {
	service.Command[config]{
		Name:      "mfsmaster",
		Usage:     "metadata master elected by chunkserver quorum",
		UsageText: "mfsmaster [-c CFG] [-f] [-e] [--KEY value ...] [start|stop|restart|reload|test|init|repair]",
		About: "Several masters run; the one that a quorum of chunkservers (per location, the default location breaking ties) keeps its vote leases with is the LEADER, which takes the metadata changes and replicates them to the others. " +
			"A master started with -e has no metadata yet and takes it from the LEADER. Ports: 9419 (masters), 9420 (chunkservers), 9421 (clients and mfscli), 9425 (web page, /metrics, /healthz).",
		DefaultCfg: defaultCfg,
		Spec:       spec,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "e", Usage: "start without metadata: sync from the LEADER, FOLLOWER only until synced"},
			&cli.StringSliceFlag{Name: "location", Usage: "init only: NAME=CIDR, map a range to a location in the new metadata (repeatable)"},
			&cli.StringFlag{Name: "from-backup", Usage: "init only: found the new cluster on this backup file (mfscli --backup): every change it holds, a new metadata id; see docs/operations.md, Backups and disaster recovery"},
			&cli.BoolFlag{Name: "accept-loss", Usage: "repair only: let this master lead without the changes only a lost master held (they are gone: the status names them); run it on the one master to promote, after the lost one is gone for good"},
			&cli.StringFlag{Name: "remove-chunkservers", Usage: "repair only: ids (as -SCS lists them) of registered chunkservers that will never vote again, comma-separated; run the same repair on every master, all stopped, before starting any"},
		},
		DataPath: func(cfg config) string { return cfg.DataPath },
		Own:      offline,
		Foreground: func(c *cli.Context, cfg config, v settings.Values, lockPath string) error {
			return foreground(c, cfg, v, lockPath, c.Bool("e"))
		},
	}.Main()
}

// offline carries out the actions a master takes stopped: init and repair.
func offline(c *cli.Context, action service.Action, cfg config, lockPath string) (bool, error) {
	for _, f := range []struct {
		name string
		with service.Action
	}{{"from-backup", service.ActionInit}, {"location", service.ActionInit}, {"accept-loss", service.ActionRepair}, {"remove-chunkservers", service.ActionRepair}} {
		if c.IsSet(f.name) && action != f.with {
			// Ignored, it would leave the operator believing it was done.
			return true, fmt.Errorf("--%s goes with %s (mfsmaster -c CFG --%s ... %s), not with %q", f.name, f.with, f.name, f.with, action)
		}
	}
	switch {
	case action == service.ActionInit:
		return true, initMetadata(os.Stdout, cfg, lockPath, c.StringSlice("location"), c.String("from-backup"))
	case action == service.ActionRepair && c.Bool("accept-loss"):
		return true, acceptLoss(os.Stdout, cfg.DataPath, lockPath)
	case action == service.ActionRepair:
		return true, repairMetadata(os.Stdout, cfg.DataPath, lockPath, c.String("remove-chunkservers"))
	}
	return false, nil
}

// masters resolves MASTER_HOST and finds this master in it.
func masters(cfg config) ([]masterhost.Master, netip.Addr, error) {
	list, err := masterhost.Resolver{HostsFile: cfg.Node.HostsFile}.Resolve(cfg.MasterHost, uint16(cfg.ML.Port))
	if err != nil {
		return nil, netip.Addr{}, err
	}
	var cands []netip.Addr
	for _, h := range []string{cfg.BindHost, cfg.ML.Host} {
		if a, err := netip.ParseAddr(h); err == nil {
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
// first master of a new cluster, empty or founded on a backup (from, a
// file of mfscli --backup). Without AUTH_CODE it prints a new random one
// and where it goes; the cfg files are the one place secrets live, so it
// is stored nowhere else.
func initMetadata(out io.Writer, cfg config, lockPath string, locs []string, from string) error {
	if err := checkSecrets(cfg); err != nil {
		return err
	}
	lock, err := service.Acquire(lockPath)
	if err != nil {
		return err
	}
	defer lock.Release()
	_, self, err := masters(cfg)
	if err != nil {
		return err
	}
	g := changelog.Genesis(masterhost.IDOf(self))
	var restored *metadata.Backup
	var snap *namespace.Snapshot
	if from != "" {
		b, err := metadata.ReadBackup(from)
		if err != nil {
			return err
		}
		restored, snap = &b, b.Snap.Refound(masterhost.IDOf(self))
		g[0].Config = snap.Latest // the --location flags below map into it
	}
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
	st, err := metadata.OpenMaster(cfg.DataPath)
	if err != nil {
		return err
	}
	defer st.Close()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	id := strings.ToUpper(hex.EncodeToString(b))
	if restored == nil {
		if err := st.Init(id, g); err != nil {
			return err
		}
		fmt.Fprintf(out, "mfsmaster: new metadata %s in %s (founder %s)\n", id, st.Path(), self)
	} else if err := restoreBackup(out, st, id, self, snap, from, restored); err != nil {
		return err
	}
	if cfg.Node.AuthCode == "" {
		code, err := secret.Generate()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "mfsmaster: no AUTH_CODE is set. A new random one (stored nowhere else):\n\nAUTH_CODE = %s\n\n"+
			"Put this line in the mfsmaster.cfg of every master and the mfschunkserver.cfg of every chunkserver (files readable by their daemons only, mode 0600), then start them.\n", code)
	}
	return nil
}

// restoreBackup founds the new cluster id on snap, the backup b (read
// from file) refounded, and says what the operator does next.
func restoreBackup(out io.Writer, st *metadata.MasterStore, id string, self netip.Addr, snap *namespace.Snapshot, file string, b *metadata.Backup) error {
	if err := st.Restore(id, snap); err != nil {
		return err
	}
	fmt.Fprintf(out, "mfsmaster: new metadata %s in %s (founder %s), restored from %s:\n"+
		"  taken from cluster %s at version %d (epoch %d): %d keys, %d client sessions\n"+
		"  every chunkserver and the witness belong to the old cluster and join this one anew.\n"+
		"Next (docs/operations.md, Backups and disaster recovery): start this master; start the other masters with empty DATA_PATHs and -e; "+
		"on each chunkserver, stopped, move chunkserver.mfs aside and start it; give clients pinned to cluster %s the new id.\n",
		id, st.Path(), self, file, b.Cluster, b.Snap.Pos.Version, b.Snap.Pos.Epoch, len(b.Snap.Data), len(b.Snap.Sessions), b.Cluster)
	return nil
}

func foreground(c *cli.Context, cfg config, v settings.Values, lockPath string, empty bool) error {
	log, err := obs.DaemonLogger(cfg.LogLevel, cfg.LogFormat, "mfsmaster")
	if err != nil {
		return err
	}
	service.WarnSecretFlags(log, v, "AUTH_CODE", "ADMIN_PASSWORD")
	list, self, err := masters(cfg)
	if err != nil {
		return err
	}
	allOrigins, extraOrigins, err := parseOrigins(cfg.HTTPAllowOrigin)
	if err != nil {
		return err
	}
	warnings, err := startChecks(cfg, list)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		log.Warn().Msg(w)
	}
	wstore, err := witnessStore(cfg, os.Getenv)
	if err != nil {
		return err
	}
	lock, err := service.Acquire(lockPath)
	if err != nil {
		return err
	}
	defer lock.Release()
	st, err := metadata.OpenMaster(cfg.DataPath)
	if err != nil {
		return err
	}
	defer st.Close()
	if w := st.Warning(); w != "" {
		log.Warn().Msg(w)
	}
	if !st.HasMetadata() && !empty {
		return fmt.Errorf("no metadata in %s: run `mfsmaster -c CFG init` for the first master of a new cluster, or start with -e to sync from the LEADER", st.Path())
	}
	reg := obs.NewRegistry()
	obs.RegisterBuildInfo(reg, "mfsmaster", release.Version)
	opt := masterOptions(cfg, list, self, wstore)
	opt.Log, opt.Metrics = log, reg
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
	n, err := masternode.StartMaster(opt, st)
	if err != nil {
		_ = httpLn.Close()
		return err
	}
	// /api/v1/status: the whole cluster as mfscli -j shows it, and its
	// alarms as mfs_cluster_alarm; the page at / is drawn from it.
	// A browser lets another page read it only if it is a master's page
	// or one HTTP_ALLOW_ORIGIN names (review N4).
	origins := &originRule{httpPort: uint16(cfg.HTTP.Port), own: []netip.Addr{self}, host: n.MasterHost, all: allOrigins, extra: extraOrigins}
	if a, err := netip.ParseAddr(cfg.HTTP.Host); err == nil {
		origins.own = append(origins.own, a)
	}
	api := newStatusAPI(n.Masters, uint16(cfg.CL.Port), cfg.MasterHost, time.Second, origins)
	reg.MustRegister(api)
	apiDone := make(chan struct{})
	defer close(apiDone)
	go api.run(apiDone)
	page := webui.Handler()
	// /healthz: 200 only while this master is LEADER holding a quorum at
	// the instant of the request (docs/operations.md, Health checks).
	srv := obs.Serve(httpLn, reg, n.Health, log, obs.Route{Pattern: "GET /api/v1/status", Handler: api},
		obs.Route{Pattern: "GET /{$}", Handler: page}, obs.Route{Pattern: "GET /static/", Handler: page})
	defer srv.Close()
	apply := func(next config) error { return applyLive(n, log, next) }
	return service.Serve(n, spec, c, log, v, apply, 10*time.Second)
}

// masterOptions is what the driver is given, from the config, the set of
// masters and this master's address among them.
func masterOptions(cfg config, list []masterhost.Master, self netip.Addr, wstore *s3store.Config) masternode.MasterOptions {
	opt := cfg.Node
	opt.Witness = wstore // its cluster id and Store flag: masternode.StartMaster
	opt.Core.ID, opt.Core.Protocol = masterhost.IDOf(self), frame.ProtocolVersion
	opt.Core.Masters = nil
	for _, m := range list {
		opt.Core.Masters = append(opt.Core.Masters, m.ID)
	}
	opt.Self, opt.Masters, opt.Bind = self, list, self
	if a, err := netip.ParseAddr(cfg.BindHost); err == nil {
		opt.Bind = a
	}
	opt.ListenML, opt.ListenCS, opt.ListenCL = cfg.ML.addr(), cfg.CS.addr(), cfg.CL.addr()
	opt.MasterHost, opt.MLPort = cfg.MasterHost, uint16(cfg.ML.Port)
	opt.Version = release.Version
	return opt
}

// liveMaster is what a reload changes in a running master.
type liveMaster interface {
	SetAdminPassword(pw string) error
	SetMasterHost(spec string)
}

// applyLive puts the keys spec marks Live in force from a reloaded config
// (service.ReloadConfig): LOG_LEVEL, ADMIN_PASSWORD and MASTER_HOST. The
// first two are checked before either changes, so a bad one leaves both
// as they were; MASTER_HOST is resolved in the background (a name that
// does not resolve keeps the set of masters as it was, logged). The
// password is swapped atomically in n: each admin command is checked
// against the old one or the new one.
func applyLive(n liveMaster, log zerolog.Logger, next config) error {
	if _, err := obs.ParseLevel(next.LogLevel); err != nil {
		return err
	}
	if err := secret.Check("ADMIN_PASSWORD", next.Node.AdminPassword); err != nil {
		return err
	}
	// The level first: what the swap logs is written at the new one.
	if err := obs.SetLevel(next.LogLevel); err != nil {
		return err
	}
	if err := n.SetAdminPassword(next.Node.AdminPassword); err != nil {
		return err
	}
	if next.Node.AdminPassword == "" {
		log.Warn().Msg(noAdminPassword)
	}
	n.SetMasterHost(next.MasterHost)
	return nil
}
