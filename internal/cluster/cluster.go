// Package cluster starts a real local cluster of mfsmaster and
// mfschunkserver processes on loopback addresses: what `make run`, the
// real-process tests and `make bench` share. Every wait in it is bounded.
package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// CS is one chunkserver of a Spec.
type CS struct {
	Addr      netip.Addr
	VoterOnly bool
}

// Spec describes a cluster.
type Spec struct {
	Dir       string // configs, data and logs go under it
	Bin       string // holds mfsmaster and mfschunkserver
	Masters   []netip.Addr
	CS        []CS
	Locations map[string]netip.Prefix // name -> range, set at init
	// Extra config keys for every master / chunkserver; then, by index,
	// for one master (e.g. KEEP_LEADERSHIP on one of them).
	MasterCfg, CSCfg map[string]string
	PerMaster        []map[string]string
	PerCS            []map[string]string // by index of CS, as PerMaster
	// Netns, when set, is a network namespace (made by the caller) that
	// every process runs in; Statuses enter it too.
	Netns string
	// Members, when set, are chunkservers registered before the masters
	// ever start (e.g. SwarmMembers): Start writes the founder's metadata
	// itself, as `mfsmaster init` would, but with a genesis config whose
	// registry already holds them (the bootstrap over), and records the
	// new cluster id in Cluster.ClusterID for the voters to claim. For
	// registries too large to register one member at a time (each
	// registration is a config change put in force by a heartbeat round).
	Members []registry.Chunkserver
}

// Proc is one daemon process.
type Proc struct {
	Name  string
	Addr  netip.Addr
	Cfg   string
	Log   string
	args  []string
	bin   string
	netns string

	mu  sync.Mutex
	cmd *exec.Cmd
	ex  chan struct{}
}

// Cluster is a running Spec.
type Cluster struct {
	Spec      Spec
	Masters   []*Proc
	CS        []*Proc
	ClusterID string // with Spec.Members: the cluster id Start wrote
}

// Build compiles the daemons into dir (go build, from the module root),
// and the voter swarm (internal/cluster/swarm) as dir/mfsswarm; with
// MFS_RACE=1 in the environment, under the race detector.
func Build(dir, moduleRoot string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	build := []string{"build"}
	if os.Getenv("MFS_RACE") == "1" {
		// The daemons under the race detector: a data race in one of
		// them prints its report to its log and exits it with status 66.
		build = append(build, "-race")
	}
	for _, args := range [][]string{
		append(slices.Clone(build), "-o", dir, "./cmd/mfsmaster", "./cmd/mfschunkserver", "./cmd/mfscli"),
		append(slices.Clone(build), "-o", filepath.Join(dir, "mfsswarm"), "./internal/cluster/swarm"),
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = moduleRoot
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// MasterHost is the MASTER_HOST value of the spec.
func (s Spec) MasterHost() string {
	var parts []string
	for _, a := range s.Masters {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, ",")
}

func writeCfg(path string, kv map[string]string) error {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, kv[k])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Start writes the configs, gives the first master fresh metadata
// (mfsmaster init), starts it and the other masters (-e: they sync from the
// LEADER), then the chunkservers.
func Start(s Spec) (*Cluster, error) {
	c := &Cluster{Spec: s}
	for _, a := range s.Masters {
		if _, err := c.addMaster(a, nil); err != nil {
			return nil, err
		}
	}
	for _, cs := range s.CS {
		if _, err := c.addCS(cs, nil); err != nil {
			return nil, err
		}
	}
	if len(c.Masters) > 0 && len(s.Members) > 0 {
		id, err := initWithMembers(filepath.Dir(c.Masters[0].Cfg), s.Masters[0], s.Locations, s.Members)
		if err != nil {
			return nil, err
		}
		c.ClusterID = id
	} else if len(c.Masters) > 0 {
		args := []string{"-c", c.Masters[0].Cfg}
		names := make([]string, 0, len(s.Locations))
		for n := range s.Locations {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			args = append(args, "--location", n+"="+s.Locations[n].String())
		}
		args = append(args, "init")
		out, err := exec.Command(c.Masters[0].bin, args...).CombinedOutput() // init touches only the disk
		if err != nil {
			return nil, fmt.Errorf("mfsmaster init: %v: %s", err, out)
		}
	}
	for _, p := range append(append([]*Proc{}, c.Masters...), c.CS...) {
		if err := p.Start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// layered is kv with each layer's keys over it, later layers winning: the
// harness's keys, the spec's for every daemon of a kind, one daemon's,
// a call's.
func layered(kv map[string]string, layers ...map[string]string) map[string]string {
	for _, l := range layers {
		maps.Copy(kv, l)
	}
	return kv
}

// at is per[i], or nothing past its end.
func at(per []map[string]string, i int) map[string]string {
	if i < len(per) {
		return per[i]
	}
	return nil
}

// AddMaster prepares one more master (not started: Start it) at a, with
// extra config keys over the spec's: a master added to a running cluster,
// which starts with -e and syncs from the LEADER.
func (c *Cluster) AddMaster(a netip.Addr, cfg map[string]string) (*Proc, error) {
	return c.addMaster(a, cfg)
}

// addMaster writes master i's config (the first is the founder; the
// others start with -e) and adds its Proc.
func (c *Cluster) addMaster(a netip.Addr, cfg map[string]string) (*Proc, error) {
	s := c.Spec
	i := len(c.Masters)
	dir := filepath.Join(s.Dir, fmt.Sprintf("master%d", i+1))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kv := layered(map[string]string{
		"DATA_PATH": dir, "MASTER_HOST": s.MasterHost(),
		"MATOML_LISTEN_HOST": a.String(), "MATOCS_LISTEN_HOST": a.String(),
		"MATOCL_LISTEN_HOST": a.String(), "HTTP_LISTEN_HOST": a.String(),
		// Hermetic: never the host's /etc/mfs/mfsexports.cfg. This one is
		// not there (every client may do everything) unless a test
		// writes it or names another.
		"EXPORTS_FILENAME": filepath.Join(s.Dir, "mfsexports.cfg"),
	}, s.MasterCfg, at(s.PerMaster, i), cfg)
	p := &Proc{Name: fmt.Sprintf("master%d", i+1), Addr: a, Cfg: filepath.Join(dir, "mfsmaster.cfg"),
		Log: filepath.Join(s.Dir, fmt.Sprintf("master%d.log", i+1)), bin: filepath.Join(s.Bin, "mfsmaster"), netns: s.Netns}
	if err := writeCfg(p.Cfg, kv); err != nil {
		return nil, err
	}
	p.args = []string{"-c", p.Cfg, "-f"}
	if i > 0 {
		p.args = append(p.args, "-e")
	}
	c.Masters = append(c.Masters, p)
	return p, nil
}

// AddCS starts one more chunkserver with extra config keys (over the
// spec's), e.g. a wrong AUTH_CODE.
func (c *Cluster) AddCS(cs CS, cfg map[string]string) (*Proc, error) {
	return c.AddCSWith(cs, cfg, nil)
}

// AddCSWith is AddCS with prepare run on the data directory first (to
// plant a store, say).
func (c *Cluster) AddCSWith(cs CS, cfg map[string]string, prepare func(dataDir string) error) (*Proc, error) {
	p, err := c.addCS(cs, cfg)
	if err != nil {
		return nil, err
	}
	if prepare != nil {
		if err := prepare(filepath.Dir(p.Cfg)); err != nil {
			return nil, err
		}
	}
	return p, p.Start()
}

func (c *Cluster) addCS(cs CS, cfg map[string]string) (*Proc, error) {
	s := c.Spec
	i := len(c.CS)
	dir := filepath.Join(s.Dir, fmt.Sprintf("cs%d", i+1))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	hdd := filepath.Join(dir, "mfshdd.cfg")
	disks := ""
	if !cs.VoterOnly {
		disk := filepath.Join(dir, "hdd")
		if err := os.MkdirAll(disk, 0o755); err != nil {
			return nil, err
		}
		disks = disk + "\n"
	}
	if err := os.WriteFile(hdd, []byte(disks), 0o644); err != nil {
		return nil, err
	}
	kv := layered(map[string]string{
		"DATA_PATH": dir, "MASTER_HOST": s.MasterHost(), "BIND_HOST": cs.Addr.String(),
		"CSSERV_LISTEN_HOST": cs.Addr.String(), "HTTP_LISTEN_HOST": cs.Addr.String(),
		"HDD_CONF_FILENAME": hdd,
	}, s.CSCfg, at(s.PerCS, i), cfg)
	p := &Proc{Name: fmt.Sprintf("cs%d", i+1), Addr: cs.Addr, Cfg: filepath.Join(dir, "mfschunkserver.cfg"),
		Log: filepath.Join(s.Dir, fmt.Sprintf("cs%d.log", i+1)), bin: filepath.Join(s.Bin, "mfschunkserver"), netns: s.Netns}
	if err := writeCfg(p.Cfg, kv); err != nil {
		return nil, err
	}
	p.args = []string{"-c", p.Cfg, "-f"}
	c.CS = append(c.CS, p)
	return p, nil
}

// Use makes the next Start run the same daemon from the binaries in dir
// (an upgrade, or a downgrade).
func (p *Proc) Use(dir string) { p.bin = filepath.Join(dir, filepath.Base(p.bin)) }

// Start runs the process (again), its output appended to its log.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	if p.netns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", p.netns, p.bin}, p.args...)...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: Ctrl-C in `make run` reaches the runner,
	// which stops the daemons in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	ex := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(ex) }()
	p.cmd, p.ex = cmd, ex
	return nil
}

// Running reports whether the process has not exited.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.ex:
		return false
	default:
		return true
	}
}

// Pid is the process id (0 when never started).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return errors.New("not started")
	}
	return p.cmd.Process.Signal(sig)
}

// Wait waits at most d for the process to exit.
func (p *Proc) Wait(d time.Duration) bool {
	p.mu.Lock()
	ex := p.ex
	p.mu.Unlock()
	if ex == nil {
		return true
	}
	select {
	case <-ex:
		return true
	case <-time.After(d):
		return false
	}
}

// Kill is kill -9, waiting for the process to be gone.
func (p *Proc) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	p.Wait(5 * time.Second)
}

// Term stops the process in order (SIGTERM), then kills it after d.
func (p *Proc) Term(d time.Duration) {
	_ = p.Signal(syscall.SIGCONT)
	_ = p.Signal(syscall.SIGTERM)
	if !p.Wait(d) {
		p.Kill()
	}
}

// Stop ends every process: chunkservers first, then masters.
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for _, group := range [][]*Proc{c.CS, c.Masters} {
		for _, p := range group {
			if p.Running() {
				wg.Add(1)
				go func() { defer wg.Done(); p.Term(10 * time.Second) }()
			}
		}
		wg.Wait()
	}
}

// ClientAddr is a master's 9421 address.
func ClientAddr(a netip.Addr) netip.AddrPort { return netip.AddrPortFrom(a, 9421) }

// Statuses asks every master at once; a master that does not answer has a
// non-nil error.
func (c *Cluster) Statuses(timeout time.Duration) ([]protocol.StatusResp, []error) {
	st := make([]protocol.StatusResp, len(c.Masters))
	errs := make([]error, len(c.Masters))
	if c.Spec.Netns != "" {
		err := InNetns(c.Spec.Netns, func() {
			for i, p := range c.Masters {
				st[i], errs[i] = client.Status(ClientAddr(p.Addr), timeout)
			}
		})
		if err != nil {
			for i := range errs {
				errs[i] = err
			}
		}
		return st, errs
	}
	var wg sync.WaitGroup
	for i, p := range c.Masters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st[i], errs[i] = client.Status(ClientAddr(p.Addr), timeout)
		}()
	}
	wg.Wait()
	return st, errs
}

// Leaders lists the masters that report LEADER now.
func (c *Cluster) Leaders() []int {
	st, errs := c.Statuses(300 * time.Millisecond)
	var out []int
	for i := range st {
		if errs[i] == nil && st[i].Role == roles.Leader {
			out = append(out, i)
		}
	}
	return out
}

// WaitLeader polls (every poll, at most timeout) until exactly one master
// other than those in not reports LEADER holding quorum, and returns it.
func (c *Cluster) WaitLeader(timeout, poll time.Duration, not ...int) (int, protocol.StatusResp, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		st, errs := c.Statuses(poll + 200*time.Millisecond)
		found := -1
		for i := range st {
			if errs[i] != nil || st[i].Role != roles.Leader || !st[i].HoldsQuorum || contains(not, i) {
				continue
			}
			found = i
		}
		if found >= 0 {
			return found, st[found], nil
		}
		time.Sleep(poll)
	}
	return -1, protocol.StatusResp{}, fmt.Errorf("no LEADER within %v", timeout)
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// initWithMembers writes, in the founder's empty data directory, what
// `mfsmaster init` writes (a random cluster id and a genesis config with
// the location map), except that the genesis registry holds members and is
// no longer a bootstrap one: the founder cannot win alone, the members'
// votes elect. It returns the cluster id.
func initWithMembers(dataDir string, founder netip.Addr, locs map[string]netip.Prefix, members []registry.Chunkserver) (string, error) {
	g := changelog.Genesis(masterhost.IDOf(founder))
	cfg := g[0].Config
	names := make([]string, 0, len(locs))
	for n := range locs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m, err := cfg.Locations.MapRange(locs[n], n)
		if err != nil {
			return "", fmt.Errorf("location %s=%v: %w", n, locs[n], err)
		}
		cfg.Locations = m
	}
	cfg.Members = append([]registry.Chunkserver(nil), members...)
	sort.Slice(cfg.Members, func(i, j int) bool { return cfg.Members[i].ID < cfg.Members[j].ID })
	for i, m := range cfg.Members {
		if m.ID == wire.NoCS || (i > 0 && cfg.Members[i-1].ID == m.ID) {
			return "", fmt.Errorf("member %v: ids must be distinct and not 0", m.ID)
		}
	}
	cfg.TopID = cfg.Members[len(cfg.Members)-1].ID
	cfg.Bootstrap = false
	st, err := metadata.OpenMaster(dataDir)
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := strings.ToUpper(hex.EncodeToString(b[:]))
	return id, st.Init(id, g)
}
