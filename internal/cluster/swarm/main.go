// Command mfsswarm (built by cluster.Build as mfsswarm) runs many voters in
// one process: each is the real chunkserver driver (csnode.ChunkserverNode:
// its links, dials from its own source address, hellos and AUTH_CODE
// proofs) over an in-memory store (csnode.MemChunkserverStore), with the
// timings of mfschunkserver's defaults. It is the bench's way to put
// thousands of voters in front of real masters (make scale).
//
// Voter i is in location i % L and leaves from cluster.SwarmAddr(B, L, i);
// give the masters cluster.SwarmLocations(B, L) at init. Every voter names
// the same CSSERV port (-port) as its identity without listening on it.
//
// Signals: SIGUSR1 closes every voter's connections at once (each link
// dials again at once: a reconnect storm); SIGTERM or SIGINT stops every
// voter in order (a goodbye to the master it votes for, as mfschunkserver
// does) and exits.
//
// -status HOST:PORT answers GET / with cluster.SwarmStatus as JSON.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/node/csnode"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/release"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/rs/zerolog"
)

// config is the swarm's flags.
type config struct {
	masters   string
	n, locs   int
	first     int
	base      int
	auth      string
	port      int
	status    string
	rate      int
	logLevel  string
	voter     voter.Config
	reconnect time.Duration
	trust     bool
	stopWait  time.Duration
	cluster   string
}

func main() {
	// The voter's timings default to mfschunkserver's (cmd/mfschunkserver/keys.go:
	// voter.DefaultConfig, MASTER_RECONNECTION_DELAY 5s, TRUST_REFUSED 1).
	var c config
	c.voter = voter.DefaultConfig(0, netip.Addr{}, nil)
	flag.StringVar(&c.cluster, "cluster", "", "start every voter registered in this cluster (its id): voter i holds id i+1 at its address, as cluster.SwarmMembers registers them (empty: each registers with the LEADER)")
	flag.StringVar(&c.masters, "masters", "", "MASTER_HOST: the masters' chunkserver ports, e.g. 127.60.0.11:9420,127.60.0.12:9420 (port 9420 when left out)")
	flag.IntVar(&c.n, "n", 100, "voters")
	flag.IntVar(&c.first, "first", 0, "the index of this process's first voter: several processes (each under its RLIMIT_NOFILE) run voters first .. first+n-1 of one swarm")
	flag.IntVar(&c.locs, "locations", 3, fmt.Sprintf("locations L (1..%d): voter i leaves from the address range i %% L (the masters name at most 7 ranges; the rest are their default location: cluster.SwarmLocations)", cluster.MaxSwarmLocations))
	flag.IntVar(&c.base, "base", 61, "voter i of location l leaves from an address in 127.(B+l).0.0/16")
	flag.StringVar(&c.auth, "auth", "", "AUTH_CODE (empty: none)")
	flag.IntVar(&c.port, "port", 9422, "the CSSERV port every voter names as its identity (nothing listens on it)")
	flag.StringVar(&c.status, "status", "", "host:port of the JSON status endpoint (empty: none)")
	flag.IntVar(&c.rate, "rate", 5000, "voters started per second at most (in bursts every 10 ms)")
	flag.StringVar(&c.logLevel, "log-level", "error", "the voters' log level (to stderr): debug, info, warn or error")
	flag.DurationVar(&c.voter.MaxPromise, "max-promise", c.voter.MaxPromise, "MAX_PROMISE")
	flag.DurationVar(&c.voter.ProbeInterval, "probe-interval", c.voter.ProbeInterval, "PROBE_INTERVAL")
	flag.DurationVar(&c.voter.NominateSlot, "nominate-slot", c.voter.NominateSlot, "NOMINATE_SLOT")
	flag.DurationVar(&c.reconnect, "reconnect-delay", 5*time.Second, "MASTER_RECONNECTION_DELAY")
	flag.BoolVar(&c.trust, "trust-refused", true, "TRUST_REFUSED")
	flag.DurationVar(&c.stopWait, "stop-wait", 0, "how long SIGTERM waits for the voters to stop (0: MAX_PROMISE + 1s)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "mfsswarm:", err)
		os.Exit(1)
	}
}

// swarm is the running voters.
type swarm struct {
	masters []masterhost.Master
	n       int
	mu      sync.Mutex
	nodes   []*csnode.ChunkserverNode // started so far, by index
}

func run(c config) error {
	if c.base < 1 || c.base > 255 {
		return fmt.Errorf("-base %d: 1 to 255", c.base)
	}
	if c.first < 0 {
		return fmt.Errorf("-first %d: not negative", c.first)
	}
	if err := cluster.CheckSwarm(uint8(c.base), c.locs, c.first+c.n); err != nil {
		return err
	}
	if c.port < 1 || c.port > 65535 {
		return fmt.Errorf("-port %d: 1 to 65535", c.port)
	}
	if c.rate < 1 {
		return fmt.Errorf("-rate %d: at least 1", c.rate)
	}
	if strings.TrimSpace(c.masters) == "" {
		return errors.New("-masters is required")
	}
	masters, err := masterhost.Resolve(c.masters, 9420)
	if err != nil {
		return err
	}
	probe := c.voter
	probe.ID, probe.Addr = 1, cluster.SwarmAddr(uint8(c.base), c.locs, 0)
	for _, m := range masters {
		probe.Masters = append(probe.Masters, m.ID)
	}
	if err := probe.Validate(); err != nil {
		return err
	}
	if err := raiseNoFile(c.n, len(masters)); err != nil {
		return err
	}
	log, err := obs.NewLoggerTo(os.Stderr, c.logLevel, "mfsswarm", false)
	if err != nil {
		return err
	}

	s := &swarm{masters: masters, n: c.n}
	if c.status != "" {
		ln, err := net.Listen("tcp", c.status)
		if err != nil {
			return fmt.Errorf("-status: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /{$}", s.serveStatus)
		// The swarm's own weight, for whoever tunes it (loopback only).
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)

	fmt.Fprintf(os.Stderr, "mfsswarm: voters %d..%d in %d locations (127.%d.0.0/16 ..), %d masters, starting at most %d/s\n",
		c.first, c.first+c.n-1, c.locs, c.base, len(masters), c.rate)
	burst := max(c.rate/100, 1)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	lastReport := time.Now()
	started := 0
	var stopping bool
	for started < c.n && !stopping {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGUSR1 {
				s.storm()
				continue
			}
			stopping = true
			continue
		case <-tick.C:
		}
		for j := 0; j < burst && started < c.n; j++ {
			i := c.first + started
			n, err := startVoter(c, masters, i, log)
			if err != nil {
				s.stop(c, time.Second)
				return fmt.Errorf("voter %d (%v): %w", i, cluster.SwarmAddr(uint8(c.base), c.locs, i), err)
			}
			s.mu.Lock()
			s.nodes = append(s.nodes, n)
			s.mu.Unlock()
			started++
		}
		if time.Since(lastReport) >= time.Second || started == c.n {
			lastReport = time.Now()
			st := s.status()
			fmt.Fprintf(os.Stderr, "mfsswarm: %d/%d voters started, %d registered, %d with every link up\n", started, c.n, st.Registered, st.Connected)
		}
	}
	if !stopping {
		fmt.Fprintf(os.Stderr, "mfsswarm: all %d voters started\n", c.n)
	}
	for !stopping {
		sig := <-sigs
		if sig == syscall.SIGUSR1 {
			s.storm()
			continue
		}
		stopping = true
	}
	wait := c.stopWait
	if wait <= 0 {
		wait = c.voter.MaxPromise + time.Second
	}
	return s.stop(c, wait)
}

// voterInbox is each voter's inbox (csnode.ChunkserverOptions.Inbox): a
// voter hears from a few masters, whose readers wait when it is full.
const voterInbox = 32

// startVoter starts voter i: the real driver, on a store of its own.
func startVoter(c config, masters []masterhost.Master, i int, log zerolog.Logger) (*csnode.ChunkserverNode, error) {
	addr := cluster.SwarmAddr(uint8(c.base), c.locs, i)
	opt := csnode.ChunkserverOptions{
		Masters: masters, Bind: addr, Port: uint16(c.port),
		Voter: c.voter, AuthCode: c.auth, ReconnectDelay: c.reconnect, TrustRefused: c.trust,
		Version: release.Version, Log: log.With().Str(obs.FieldCS, addr.String()).Logger(),
		Inbox: voterInbox,
	}
	opt.Voter.Seed = uint64(time.Now().UnixNano()) + uint64(i)
	st := csnode.NewMemChunkserverStore()
	if c.cluster != "" {
		// Registered in an earlier run that never promised a vote.
		id := metadata.Identity{CS: wire.CSID(i + 1), ClusterID: c.cluster, Addr: netip.AddrPortFrom(addr, uint16(c.port))}
		if err := st.SetIdentity(id); err != nil {
			return nil, err
		}
	}
	return csnode.StartChunkserver(opt, st)
}

// storm closes every voter's connections at once.
func (s *swarm) storm() {
	s.mu.Lock()
	nodes := append([]*csnode.ChunkserverNode(nil), s.nodes...)
	s.mu.Unlock()
	t := time.Now()
	for _, n := range nodes {
		n.Reconnect()
	}
	fmt.Fprintf(os.Stderr, "mfsswarm: SIGUSR1: closed the connections of %d voters in %v; they reconnect\n", len(nodes), time.Since(t).Round(time.Millisecond))
}

// stop stops every voter at once, each within wait.
func (s *swarm) stop(c config, wait time.Duration) error {
	s.mu.Lock()
	nodes := append([]*csnode.ChunkserverNode(nil), s.nodes...)
	s.mu.Unlock()
	fmt.Fprintf(os.Stderr, "mfsswarm: stopping %d voters\n", len(nodes))
	t := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Stop(wait); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(os.Stderr, "mfsswarm: %d voters stopped in %v\n", len(nodes), time.Since(t).Round(time.Millisecond))
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d voters ended with an error (see the log above)", f)
	}
	return nil
}

// status counts what every started voter saw at its last flush.
func (s *swarm) status() cluster.SwarmStatus {
	s.mu.Lock()
	nodes := s.nodes
	s.mu.Unlock()
	st := cluster.SwarmStatus{Voters: s.n, Started: len(nodes), Masters: make([]cluster.SwarmMaster, len(s.masters))}
	idx := map[wire.MasterID]int{}
	for i, m := range s.masters {
		st.Masters[i].Addr = m.Addr.String()
		idx[m.ID] = i
	}
	for _, n := range nodes {
		v := n.State()
		if v.Registered {
			st.Registered++
		}
		all := true
		for i, up := range v.Up {
			if up {
				st.Masters[i].LinksUp++
			} else {
				all = false
			}
		}
		if all {
			st.Connected++
		}
		if i, ok := idx[v.VoteFor]; ok {
			st.Masters[i].Votes++
		}
		if i, ok := idx[v.Promised]; ok {
			st.Masters[i].Promises++
		}
	}
	return st
}

func (s *swarm) serveStatus(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.status())
}

// raiseNoFile raises RLIMIT_NOFILE, soft and hard, to what n voters of
// masters links each want (cluster.SwarmFiles: a descriptor a link, one
// more a voter, and slack for the process). Where the hard limit cannot be
// raised (no CAP_SYS_RESOURCE), the soft one goes up to it, which is
// enough while it covers a descriptor a link and the slack.
func raiseNoFile(n, masters int) error {
	want, need := uint64(cluster.SwarmFiles(n, masters)), uint64(n*masters+cluster.SwarmFileSlack)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur >= want {
		return nil
	}
	err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: max(lim.Max, want)})
	if err == nil {
		return nil
	}
	if lim.Max >= need {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: min(want, lim.Max), Max: lim.Max}); err == nil {
			return nil
		}
	}
	nrOpen, _ := os.ReadFile("/proc/sys/fs/nr_open")
	return fmt.Errorf("RLIMIT_NOFILE (open files): %d voters of %d masters need %d descriptors (%d wanted), the limit is %d (hard %d), and raising it failed: %w "+
		"(run as root with CAP_SYS_RESOURCE, raise `ulimit -Hn`, or split the voters over several processes with -first; the kernel's ceiling fs.nr_open is %s)",
		n, masters, need, want, lim.Cur, lim.Max, err, strings.TrimSpace(string(nrOpen)))
}
