package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// Scale (issue 13): 3 real masters and one mfsswarm process of N real
// chunkserver drivers in L locations (cluster.SwarmLocations), each voter
// on its own loopback address. The registry is written at init
// (cluster.Spec.Members, mfsswarm -cluster): registering N voters one
// config change at a time would take N heartbeat rounds and more.

// scaleOpts are the scale kind's flags.
type scaleOpts struct {
	ns, locs []int
	trials   int           // kill -9, SIGSTOP and 200 ms stall trials at each point
	cold     int           // cold elections at each point
	rate     int           // voters the swarm starts per second
	steady   time.Duration // the steady-state window (CPU, wire, heartbeat rounds)
	idle     time.Duration // the idle mfschunkserver's window
	reg      int           // voters of the registration run (0: none)
	regRate  int           // voters the registration run's swarm starts a second
	profile  string        // where CPU profiles go ("": none taken)
	noStorm  bool          // skip the reconnect storm
}

// scalePoint is what one (N, L) point measured; errs say what could not be.
type scalePoint struct {
	n, locs   int
	procs     int // swarm processes (each within its RLIMIT_NOFILE)
	errs      []string
	startTook time.Duration // swarm start -> every link up and a LEADER counting N
	// Cold elections: from the masters' start, until every voter's links
	// are up and until a LEADER counts N; and the second minus the first.
	coldLinks, coldLeader, coldAfterLinks series
	coldEarly                             int // LEADER counting N before the last link was up
	kill, freeze                          series
	stalls, stallsKept                    int
	cpuLeader, cpuFollower, cpuSwarm      float64
	rssLeader, rssFollower, rssSwarm      uint64
	wire                                  float64 // LEADER bytes/s through read/write syscalls
	hbMean                                time.Duration
	hbMeanOK                              bool
	hbVoters                              float64
	hbVotersOK                            bool
	storm                                 *stormResult
	leaderless                            string // what the processes cost while no LEADER could be elected
}

type stormResult struct {
	kept      bool          // the LEADER answered LEADER at its epoch at every poll
	recovered time.Duration // until every link was up and the LEADER counted N votes over N connections
	gap       time.Duration // longest time without a status answer from the LEADER
	polls     int
	// unseen: no poll saw the storm at all (every link up and every vote
	// counted at the first one): recovered is then the first poll's time,
	// an upper bound.
	unseen bool
}

func (p *scalePoint) fail(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	p.errs = append(p.errs, msg)
	fmt.Printf("scale N=%d L=%d: %s\n", p.n, p.locs, msg)
}

// idleCS is the make run topology's chunkservers at rest.
type idleCS struct {
	cpuMean, cpuMax float64
	rssMean, rssMax uint64
	window          time.Duration
	err             error
}

// regRun is a registration from an empty registry.
type regRun struct {
	n, rate int // voters, and how many the swarm starts a second
	took    time.Duration
	err     error
}

// scaleResults is the scale section's content.
type scaleResults struct {
	opts   scaleOpts
	points []*scalePoint
	idle   *idleCS
	reg    *regRun
	start  time.Time
	load   string
}

// parseInts reads "100,1000".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// scalePhase runs every point, the idle chunkserver and the registration
// run. work holds the clusters' directories, bin the binaries.
func scalePhase(work, bin string, base uint8, o scaleOpts) scaleResults {
	_, _, load := machine()
	r := scaleResults{opts: o, start: time.Now(), load: load}
	for _, l := range o.locs {
		for _, n := range o.ns {
			p := scaleRun(work, bin, base, n, l, o)
			r.points = append(r.points, p)
			fmt.Println(scaleRows(p))
		}
	}
	if o.idle > 0 {
		r.idle = idlePhase(work, bin, base, o.idle)
	}
	if o.reg > 0 {
		r.reg = regPhase(work, bin, base, o.reg, o.regRate)
	}
	return r
}

// scaleSpec is the masters of a point: 127.B.0.11-13, the swarm's
// locations at B+1.
func scaleSpec(dir, bin string, base uint8, locs int) cluster.Spec {
	s := cluster.Spec{Dir: dir, Bin: bin, Locations: cluster.SwarmLocations(base+1, locs),
		MasterCfg: map[string]string{"SELF_NOMINATE_AFTER": "1s"}}
	for i := byte(0); i < 3; i++ {
		s.Masters = append(s.Masters, netip.AddrFrom4([4]byte{127, base, 0, 11 + i}))
	}
	return s
}

func swarmSpec(dir, bin string, s cluster.Spec, base uint8, n, locs int, clusterID string, rate int) cluster.SwarmSpec {
	return cluster.SwarmSpec{Dir: dir, Bin: bin, Masters: s.Masters, Voters: n, Locations: locs, Base: base + 1,
		Status: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, base, 0, 20}), 9400), ClusterID: clusterID,
		Args: append([]string{"-rate", strconv.Itoa(rate)}, swarmLog()...)}
}

// swarmLog: SWARM_LOG_LEVEL (debug, info, warn) passes the voters' log
// level to the swarm, for a look at a point that goes wrong (-keep keeps
// swarm.log).
func swarmLog() []string {
	if l := os.Getenv("SWARM_LOG_LEVEL"); l != "" {
		return []string{"-log-level", l}
	}
	return nil
}

// Bounds of a point, growing with N.
func (o scaleOpts) startBound(n int) time.Duration {
	return 60*time.Second + time.Duration(2*n/o.rate)*time.Second
}
func settleBound(n int) time.Duration { return 60*time.Second + time.Duration(n)*10*time.Millisecond }
func electBound(n int) time.Duration  { return 30*time.Second + time.Duration(n)*5*time.Millisecond }
func statusTimeout(n int) time.Duration {
	return time.Second + time.Duration(n)*200*time.Microsecond
}

// scaleRun measures one point.
func scaleRun(work, bin string, base uint8, n, locs int, o scaleOpts) *scalePoint {
	p := &scalePoint{n: n, locs: locs,
		coldLinks: series{name: "cold: masters' start -> every link up"}, coldLeader: series{name: "cold: masters' start -> LEADER counting N"},
		coldAfterLinks: series{name: "cold: every link up -> LEADER counting N"},
		kill:           series{name: "kill -9"}, freeze: series{name: "SIGSTOP"}}
	dir := filepath.Join(work, fmt.Sprintf("scale-%d-%d", n, locs))
	s := scaleSpec(dir, bin, base, locs)
	s.Members = cluster.SwarmMembers(base+1, locs, n, 9422)
	if o.profile != "" {
		for _, a := range s.Masters {
			s.PerMaster = append(s.PerMaster, map[string]string{"PPROF_LISTEN": netip.AddrPortFrom(a, profilePort).String()})
		}
	}
	fmt.Printf("scale N=%d L=%d: starting\n", n, locs)
	c, err := cluster.Start(s)
	if err != nil {
		p.fail("masters did not start: %v", err)
		return p
	}
	defer c.Stop()
	t0 := time.Now()
	per := cluster.SwarmPerProcess(len(s.Masters))
	w, err := cluster.StartSwarms(swarmSpec(dir, bin, s, base, n, locs, c.ClusterID, o.rate), per)
	if err != nil {
		p.fail("swarm did not start: %v", err)
		return p
	}
	p.procs = len(w)
	defer w.Term(15 * time.Second)
	st := statusTimeout(n)
	if _, err := w.WaitSwarm(o.startBound(n), 200*time.Millisecond, "every voter started with every link up", cluster.SwarmStatus.AllUp); err != nil {
		p.fail("%v%s", err, refusedHint(c))
		if w.Running() {
			p.leaderless = leaderless(c, w, o.steady)
		}
		return p
	}
	links := time.Since(t0)
	if err := waitCounting(c, n, electBound(n), st); err != nil {
		p.fail("every link was up %v after the swarm started, then %v", links.Round(time.Millisecond), err)
		p.leaderless = leaderless(c, w, o.steady)
		return p
	}
	p.startTook = time.Since(t0)
	fmt.Printf("scale N=%d L=%d: every link up and a LEADER counting %d after %v\n", n, locs, n, p.startTook.Round(time.Millisecond))
	settle := func() error { return settleN(c, n, settleBound(n)) }
	if err := settle(); err != nil {
		p.fail("%v", err)
		return p
	}
	if err := steadyState(c, w, n, o.steady, st, p); err != nil {
		p.fail("steady state: %v", err)
	}
	if o.profile != "" {
		profileSteady(c, n, locs, o, st)
	}
	if o.noStorm {
		fmt.Printf("scale N=%d L=%d: no storm (-scale-storm=false)\n", n, locs)
	} else if s, err := profiledStorm(c, w, n, locs, o, st); err != nil {
		p.fail("reconnect storm: %v", err)
	} else {
		p.storm = s
		by := ""
		if s.unseen {
			by = " (by the first poll)"
		}
		fmt.Printf("scale N=%d L=%d: storm: LEADER kept %v, all counted again after %v%s, longest status gap %v\n", n, locs, s.kept, s.recovered.Round(time.Millisecond), by, s.gap.Round(time.Millisecond))
	}
	if err := settle(); err != nil {
		p.fail("after the storm: %v", err)
		return p
	}
	for i := 0; i < o.trials; i++ {
		dep, _, err := stallWith(c, 200*time.Millisecond, settle)
		if err != nil {
			p.fail("200 ms stall %d: %v", i+1, err)
			return p
		}
		p.stalls++
		p.stallsKept += 1 - dep
	}
	lim := trialLimits{failover: 30 * time.Second, poll: 100 * time.Millisecond}
	for _, freeze := range []bool{false, true} {
		if o.profile != "" && o.trials > 0 {
			// One more trial, under the profilers and not counted: a
			// profile costs its process a few percent.
			done := profileFailover(c, w, n, locs, freeze, o, st)
			d, err := trialWith(c, freeze, lim, settle)
			if done != nil {
				done()
			}
			fmt.Printf("scale N=%d L=%d: profiled trial (not counted): %v %v\n", n, locs, d.Round(time.Millisecond), err)
		}
		for i := 0; i < o.trials; i++ {
			d, err := trialWith(c, freeze, lim, settle)
			what, sr := "kill -9", &p.kill
			if freeze {
				what, sr = "SIGSTOP", &p.freeze
			}
			if err != nil {
				p.fail("%s trial %d: %v", what, i+1, err)
				return p
			}
			sr.d = append(sr.d, d)
			fmt.Printf("scale N=%d L=%d: %s #%d: %v\n", n, locs, what, i+1, d.Round(time.Millisecond))
		}
	}
	for i := 0; i < o.cold; i++ {
		if err := coldElection(c, w, n, st, p); err != nil {
			p.fail("cold election %d: %v", i+1, err)
			return p
		}
		if err := settle(); err != nil {
			p.fail("after cold election %d: %v", i+1, err)
			return p
		}
	}
	return p
}

// refusedHint names the master's connection cap when a master's log shows
// chunkserver connections refused for it.
func refusedHint(c *cluster.Cluster) string {
	for _, m := range c.Masters {
		raw, err := os.ReadFile(m.Log)
		if err != nil {
			continue
		}
		if i := strings.Index(string(raw), "connections on the port"); i >= 0 {
			return fmt.Sprintf(" (%s refused chunkserver connections over its cap on port 9420: \"connections on the port\" in %s)", m.Name, m.Log)
		}
	}
	return ""
}

// waitCounting waits until one master is LEADER holding quorum and counting
// n votes.
func waitCounting(c *cluster.Cluster, n int, bound, timeout time.Duration) error {
	end := time.Now().Add(bound)
	best := -1
	for {
		st, errs := c.Statuses(timeout)
		for i := range st {
			if errs[i] != nil || st[i].Role != roles.Leader {
				continue
			}
			if st[i].HoldsQuorum && st[i].Voters == n {
				return nil
			}
			best = max(best, st[i].Voters)
		}
		if time.Now().After(end) {
			if best < 0 {
				return fmt.Errorf("no LEADER within %v", bound)
			}
			return fmt.Errorf("no LEADER counting all %d votes within %v (at most %d)", n, bound, best)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leaderOf is the index and status of the one master reporting LEADER.
func leaderOf(c *cluster.Cluster, timeout time.Duration) (int, error) {
	ls := leaders(c, timeout)
	if len(ls) != 1 {
		return -1, fmt.Errorf("%d masters report LEADER", len(ls))
	}
	return ls[0], nil
}

// steadyState samples CPU, RSS and the LEADER's syscall bytes and
// heartbeat rounds over d, asking nothing of the masters meanwhile.
func steadyState(c *cluster.Cluster, w cluster.Swarms, n int, d, timeout time.Duration, p *scalePoint) error {
	lead, err := leaderOf(c, timeout)
	if err != nil {
		return err
	}
	type proc struct {
		pid  int
		a, b procSample
	}
	procs := []*proc{{pid: c.Masters[lead].Pid()}}
	for i, m := range c.Masters {
		if i != lead {
			procs = append(procs, &proc{pid: m.Pid()})
		}
	}
	followers := procs[1:]
	for _, pid := range w.Pids() {
		procs = append(procs, &proc{pid: pid})
	}
	swarm := procs[len(followers)+1:]
	m0, merr0 := scrape(c.Masters[lead].Addr)
	for _, pr := range procs {
		if pr.a, err = sampleProc(pr.pid); err != nil {
			return err
		}
	}
	time.Sleep(d)
	for _, pr := range procs {
		if pr.b, err = sampleProc(pr.pid); err != nil {
			return err
		}
	}
	m1, merr1 := scrape(c.Masters[lead].Addr)
	if now, err := leaderOf(c, timeout); err != nil || now != lead {
		return fmt.Errorf("the LEADER changed during the window (%v)", err)
	}
	p.cpuLeader = cpuPct(procs[0].a, procs[0].b)
	p.wire = ioRate(procs[0].a, procs[0].b)
	p.rssLeader, _ = rssOf(procs[0].pid)
	for _, pr := range followers {
		p.cpuFollower += cpuPct(pr.a, pr.b) / float64(len(followers))
		r, _ := rssOf(pr.pid)
		p.rssFollower += r / uint64(len(followers))
	}
	for _, pr := range swarm { // every swarm process, summed
		p.cpuSwarm += cpuPct(pr.a, pr.b)
		r, _ := rssOf(pr.pid)
		p.rssSwarm += r
	}
	if merr0 == nil && merr1 == nil {
		const sum, count = "mfs_master_heartbeat_round_seconds_sum", "mfs_master_heartbeat_round_seconds_count"
		s0, ok0 := m0[sum]
		s1, ok1 := m1[sum]
		c0, c1 := m0[count], m1[count]
		if ok0 && ok1 && c1 > c0 {
			p.hbMean, p.hbMeanOK = time.Duration((s1-s0)/(c1-c0)*float64(time.Second)), true
		}
		p.hbVoters, p.hbVotersOK = m1["mfs_master_heartbeat_round_voters"]
	}
	fmt.Printf("scale N=%d L=%d: steady %v: LEADER %.0f%% CPU %s, followers %.0f%% %s, swarm %.0f%% %s, LEADER %s/s through syscalls\n",
		n, p.locs, d, p.cpuLeader, mib(p.rssLeader), p.cpuFollower, mib(p.rssFollower), p.cpuSwarm, mib(p.rssSwarm), kib(p.wire))
	return nil
}

// leaderless samples every master's and the swarm's CPU and RSS over d,
// for a point where no LEADER counting every vote was elected: what the
// attempt costs.
func leaderless(c *cluster.Cluster, w cluster.Swarms, d time.Duration) string {
	pids := w.Pids()
	for _, m := range c.Masters {
		pids = append(pids, m.Pid())
	}
	a := make([]procSample, len(pids))
	for i, pid := range pids {
		a[i], _ = sampleProc(pid)
	}
	time.Sleep(d)
	var swarmCPU float64
	var swarmRSS uint64
	var masters []string
	for i, pid := range pids {
		b, err := sampleProc(pid)
		if err != nil {
			return fmt.Sprintf("(not sampled: %v)", err)
		}
		rss, _ := rssOf(pid)
		if i < len(w) {
			swarmCPU += cpuPct(a[i], b)
			swarmRSS += rss
			continue
		}
		masters = append(masters, fmt.Sprintf("%.0f%% %s", cpuPct(a[i], b), mib(rss)))
	}
	st, errs := c.Statuses(5 * time.Second)
	var roles []string
	for i := range st {
		if errs[i] != nil {
			roles = append(roles, "no answer")
		} else {
			roles = append(roles, fmt.Sprintf("%v epoch %d", st[i].Role, st[i].Epoch))
		}
	}
	sw, _ := w.Status()
	out := fmt.Sprintf("meanwhile, over %v: the masters (%s) used %s of a core and RSS; the swarm %.0f%% and %s (%d processes); its voters' votes by master %v, promises %v",
		d, strings.Join(roles, ", "), strings.Join(masters, ", "), swarmCPU, mib(swarmRSS), len(w), votesOf(sw, false), votesOf(sw, true))
	fmt.Println("scale:", out)
	return out
}

func votesOf(s cluster.SwarmStatus, promises bool) []int {
	var out []int
	for _, m := range s.Masters {
		if promises {
			out = append(out, m.Promises)
		} else {
			out = append(out, m.Votes)
		}
	}
	return out
}

// profiledStorm is storm, under the profilers when o asks for them.
func profiledStorm(c *cluster.Cluster, w cluster.Swarms, n, locs int, o scaleOpts, st time.Duration) (*stormResult, error) {
	if o.profile == "" {
		return storm(c, w, n, st)
	}
	done := profileStorm(c, w, n, locs, o, st)
	r, err := storm(c, w, n, st)
	if done != nil {
		done()
	}
	return r, err
}

// storm sends the swarm SIGUSR1 (every voter closes every connection at
// once and dials again) and polls the LEADER's status every 50 ms.
func storm(c *cluster.Cluster, w cluster.Swarms, n int, timeout time.Duration) (*stormResult, error) {
	lead, err := leaderOf(c, timeout)
	if err != nil {
		return nil, err
	}
	addr := cluster.ClientAddr(c.Masters[lead].Addr)
	before, err := client.Status(addr, timeout)
	if err != nil {
		return nil, err
	}
	r := &stormResult{kept: true}
	t0 := time.Now()
	if err := w.Signal(syscall.SIGUSR1); err != nil {
		return nil, err
	}
	last := t0
	disturbed := false
	var firstAll time.Duration // the first poll that found all, while none found less
	bound := 30*time.Second + time.Duration(n)*5*time.Millisecond
	for time.Since(t0) < bound {
		time.Sleep(50 * time.Millisecond)
		st, err := client.Status(addr, timeout)
		now := time.Now()
		if err != nil {
			continue
		}
		r.polls++
		r.gap = max(r.gap, now.Sub(last))
		last = now
		if st.Role != roles.Leader || st.Epoch != before.Epoch {
			r.kept = false
		}
		sw, serr := w.Status()
		all := serr == nil && sw.AllUp() && st.Role == roles.Leader && st.Voters == n && st.Connected == n
		if !all {
			disturbed = true
		}
		if all && !disturbed && firstAll == 0 {
			firstAll = now.Sub(t0)
		}
		// A storm no poll saw is over by the first: it is reported as
		// that poll's time (it was once the 2 s this loop waits for a
		// late disturbance, read as a slow recovery).
		if all && (disturbed || now.Sub(t0) > 2*time.Second) {
			r.recovered = now.Sub(t0)
			if !disturbed {
				r.recovered, r.unseen = firstAll, true
			}
			return r, nil
		}
	}
	r.gap = max(r.gap, time.Since(last))
	return r, fmt.Errorf("not every vote counted again within %v (LEADER kept %v, longest status gap %v)", bound, r.kept, r.gap.Round(time.Millisecond))
}

// coldElection stops every master in order, starts them all at once, and
// times every link up (the swarm's status, every 20 ms) and a LEADER
// counting n (every master's status, every 20 ms), from the starts.
func coldElection(c *cluster.Cluster, w cluster.Swarms, n int, timeout time.Duration, p *scalePoint) error {
	var wg sync.WaitGroup
	for _, m := range c.Masters {
		wg.Add(1)
		go func() { defer wg.Done(); m.Term(10 * time.Second) }()
	}
	wg.Wait()
	// The voters have noticed: wait until no link is up.
	if _, err := w.WaitSwarm(30*time.Second, 50*time.Millisecond, "every link down", func(s cluster.SwarmStatus) bool {
		for _, m := range s.Masters {
			if m.LinksUp > 0 {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	t0 := time.Now()
	for _, m := range c.Masters {
		if err := m.Start(); err != nil {
			return err
		}
	}
	var links, leader time.Duration
	bound := settleBound(n)
	for time.Since(t0) < bound && (links == 0 || leader == 0) {
		if links == 0 {
			if s, err := w.Status(); err == nil && s.AllUp() {
				links = time.Since(t0)
			}
		}
		if leader == 0 {
			st, errs := c.Statuses(timeout)
			for i := range st {
				if errs[i] == nil && st[i].Role == roles.Leader && st[i].HoldsQuorum && st[i].Voters == n {
					leader = time.Since(t0)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if links == 0 || leader == 0 {
		return fmt.Errorf("within %v: every link up after %v, a LEADER counting %d after %v (0: not seen)", bound, links, n, leader)
	}
	p.coldLinks.d = append(p.coldLinks.d, links)
	p.coldLeader.d = append(p.coldLeader.d, leader)
	p.coldAfterLinks.d = append(p.coldAfterLinks.d, max(leader-links, 0))
	if leader < links {
		p.coldEarly++
	}
	fmt.Printf("scale N=%d L=%d: cold election: every link up after %v, a LEADER counting %d after %v\n", n, p.locs, links.Round(time.Millisecond), n, leader.Round(time.Millisecond))
	return nil
}

// idlePhase: the make run topology (3 masters, 6 chunkservers), settled,
// then every chunkserver's CPU and RSS over d.
func idlePhase(work, bin string, base uint8, d time.Duration) *idleCS {
	r := &idleCS{window: d}
	s := cluster.Local(filepath.Join(work, "idle"), bin, base)
	s.MasterCfg = map[string]string{"SELF_NOMINATE_AFTER": "1s"}
	r.err = withCluster(s, func(c *cluster.Cluster) error {
		time.Sleep(2 * time.Second)
		var a []procSample
		for _, p := range c.CS {
			x, err := sampleProc(p.Pid())
			if err != nil {
				return err
			}
			a = append(a, x)
		}
		time.Sleep(d)
		for i, p := range c.CS {
			b, err := sampleProc(p.Pid())
			if err != nil {
				return err
			}
			cpu := cpuPct(a[i], b)
			rss, err := rssOf(p.Pid())
			if err != nil {
				return err
			}
			r.cpuMean += cpu / float64(len(c.CS))
			r.cpuMax = max(r.cpuMax, cpu)
			r.rssMean += rss / uint64(len(c.CS))
			r.rssMax = max(r.rssMax, rss)
		}
		return nil
	})
	if r.err != nil {
		fmt.Println("idle chunkserver:", r.err)
	} else {
		fmt.Printf("idle mfschunkserver over %v: CPU mean %.2f%% max %.2f%%, RSS mean %s max %s\n", d, r.cpuMean, r.cpuMax, mib(r.rssMean), mib(r.rssMax))
	}
	return r
}

// regPhase: n fresh voters (no id) against masters with an empty
// registry, the swarm starting rate of them a second, from the swarm's
// start until a LEADER counts all n registered and voting.
func regPhase(work, bin string, base uint8, n, rate int) *regRun {
	r := &regRun{n: n, rate: rate}
	dir := filepath.Join(work, fmt.Sprintf("register-%d", n))
	s := scaleSpec(dir, bin, base, 3)
	c, err := cluster.Start(s)
	if err != nil {
		r.err = err
		return r
	}
	defer c.Stop()
	t0 := time.Now()
	w, err := cluster.StartSwarms(swarmSpec(dir, bin, s, base, n, 3, "", rate), cluster.SwarmPerProcess(len(s.Masters)))
	if err != nil {
		r.err = err
		return r
	}
	defer w.Term(15 * time.Second)
	bound := 60*time.Second + time.Duration(n)*time.Second
	for time.Since(t0) < bound {
		st, errs := c.Statuses(statusTimeout(n))
		for i := range st {
			if errs[i] == nil && st[i].Role == roles.Leader && st[i].HoldsQuorum && st[i].Registered == n && st[i].Voters == n {
				r.took = time.Since(t0)
				fmt.Printf("registration of %d fresh voters: a LEADER counts them all after %v\n", n, r.took.Round(time.Millisecond))
				return r
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.err = fmt.Errorf("no LEADER counting all %d registered within %v", n, bound)
	fmt.Println("registration:", r.err)
	return r
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func kib(b float64) string { return fmt.Sprintf("%.0f KiB", b/1024) }

func nproc() int { return runtime.NumCPU() }

// cell is a series' median and p90, or why it is missing.
func cell(s series) string {
	if len(s.d) == 0 {
		return "n/a"
	}
	med, p90, _ := s.stats()
	return fmt.Sprintf("%s / %s", ms(med), ms(p90))
}

// scaleRows is a point's rows of the three tables, as printed by make
// scale.
func scaleRows(p *scalePoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nN=%d L=%d\n", p.n, p.locs)
	b.WriteString(electionHeader)
	b.WriteString(electionRow(p))
	b.WriteString("\n" + costHeader)
	b.WriteString(costRow(p))
	b.WriteString("\n" + stormHeader)
	b.WriteString(stormRow(p))
	if len(p.errs) > 0 {
		fmt.Fprintf(&b, "\nnot measured in full: %s\n", strings.Join(p.errs, "; "))
	}
	if p.leaderless != "" {
		fmt.Fprintf(&b, "%s\n", p.leaderless)
	}
	return b.String()
}

const (
	electionHeader = "| voters | locations | start: every link up and LEADER counting N | cold: restart -> every link up | cold: every link up -> LEADER counting N | cold: restart -> LEADER counting N | kill -9 -> new LEADER (median / p90) | SIGSTOP -> new LEADER (median / p90) | 200 ms stalls that kept the LEADER |\n|---|---|---|---|---|---|---|---|---|\n"
	costHeader     = "| voters | locations | LEADER CPU | follower CPU | swarm CPU | LEADER RSS | follower RSS | swarm RSS | LEADER bytes/s (syscalls) | heartbeat round (mean) | round voters |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
	stormHeader    = "| voters | locations | LEADER kept (role and epoch) | until every vote counted again | longest gap in LEADER status answers |\n|---|---|---|---|---|\n"
)

// shortWhy is the kind of the first failure of a point that got no
// steady state, for its table cells (the notes say it in full).
func shortWhy(p *scalePoint) string {
	if len(p.errs) == 0 {
		return "n/a"
	}
	e := p.errs[0]
	switch {
	case strings.Contains(e, "masters did not start"):
		return "not measured: the masters did not start (notes)"
	case strings.Contains(e, "connections on the port"):
		return "not measured: a master refused connections over its cap (notes)"
	case strings.Contains(e, "every link up not within"):
		return "not measured: not every voter started and connected in time, no LEADER (notes)"
	case strings.Contains(e, "no LEADER"):
		return "not measured: no LEADER counting all N (notes)"
	}
	return "not measured (notes)"
}

func electionRow(p *scalePoint) string {
	start := "n/a"
	if p.startTook > 0 {
		start = ms(p.startTook)
	} else {
		start = shortWhy(p)
	}
	stalls := "n/a"
	if p.stalls > 0 {
		stalls = fmt.Sprintf("%d of %d", p.stallsKept, p.stalls)
	}
	after := cell(p.coldAfterLinks)
	if p.coldEarly > 0 {
		after += fmt.Sprintf(" (%d of %d: LEADER before the last link, counted 0)", p.coldEarly, len(p.coldAfterLinks.d))
	}
	return fmt.Sprintf("| %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", p.n, p.locs, start, cell(p.coldLinks), after, cell(p.coldLeader),
		cell(p.kill), cell(p.freeze), stalls)
}

func costRow(p *scalePoint) string {
	if p.rssLeader == 0 {
		return fmt.Sprintf("| %d | %d | %s | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a |\n", p.n, p.locs, shortWhy(p))
	}
	hb, hv := "n/a", "n/a"
	if p.hbMeanOK {
		hb = fmt.Sprintf("%.1f ms", float64(p.hbMean)/float64(time.Millisecond))
	}
	if p.hbVotersOK {
		hv = fmt.Sprintf("%.0f", p.hbVoters)
	}
	procs := ""
	if p.procs > 1 {
		procs = fmt.Sprintf(" (%d processes)", p.procs)
	}
	return fmt.Sprintf("| %d | %d | %.0f%% | %.0f%% | %.0f%%%s | %s | %s | %s%s | %s | %s | %s |\n", p.n, p.locs, p.cpuLeader, p.cpuFollower, p.cpuSwarm, procs,
		mib(p.rssLeader), mib(p.rssFollower), mib(p.rssSwarm), procs, kib(p.wire), hb, hv)
}

func stormRow(p *scalePoint) string {
	if p.storm == nil {
		return fmt.Sprintf("| %d | %d | %s | n/a | n/a |\n", p.n, p.locs, shortWhy(p))
	}
	kept := "yes"
	if !p.storm.kept {
		kept = "no"
	}
	rec := ms(p.storm.recovered)
	if p.storm.unseen {
		rec = "under " + rec + " (by the first poll)"
	}
	return fmt.Sprintf("| %d | %d | %s | %s | %s |\n", p.n, p.locs, kept, rec, ms(p.storm.gap))
}

// scaleSection is the doc's Scale section (between its markers).
func scaleSection(r scaleResults) string {
	var b strings.Builder
	cores, model, _ := machine()
	b.WriteString(scaleBegin + "\n## Scale\n\n")
	fmt.Fprintf(&b, "Written by `make bench` on %s: %d cores (%s), %s, %s/%s; load average %s when the section started (other work on the machine shows in every figure). ",
		r.start.UTC().Format("2006-01-02 15:04 UTC"), cores, model, runtime.Version(), runtime.GOOS, runtime.GOARCH, r.load)
	b.WriteString("Reproduce one point with `make scale N=1000 LOCATIONS=3` (it prints that point's rows and writes nothing); `go run ./internal/cluster/bench -only scale` runs the whole table and rewrites only this section.\n\n")
	b.WriteString("Each point: 3 real `mfsmaster` processes on 127.60.0.11-13 with the shipped defaults (SELF_NOMINATE_AFTER 1s, as in every bench cluster) and one `mfsswarm` process (internal/cluster/swarm) running N voters. ")
	b.WriteString("Every voter is the real chunkserver driver (`node.ChunkserverNode`: its links, a dial from its own source address, the hello, the AUTH_CODE challenge, the pure `voter.Voter`) over an in-memory store, with mfschunkserver's default timings; ")
	fmt.Fprintf(&b, "voter i is in location i %% L and leaves from 127.(61+i %% L).x.y, and the masters' location map names those /16s (dc1 .. dc7: a map holds 8 locations with the default one, so with L = 8 the 8th /16 is the default location). The swarm starts %d voters a second. ", r.opts.rate)
	fmt.Fprintf(&b, "One swarm process holds at most %d voters here (a descriptor a link and one more a voter within the hard RLIMIT_NOFILE of %d this machine gives, which a process without CAP_SYS_RESOURCE cannot raise): larger points run several, side by side, and their CPU and RSS are summed. ",
		cluster.SwarmPerProcess(3), hardNoFile())
	b.WriteString("The registry is written into the founder's metadata at init with every voter in it, and the voters start with their ids (cluster.Spec.Members, mfsswarm -cluster): ")
	b.WriteString("registering them one at a time would take a config change each, put in force by a heartbeat round (see the registration run below).\n\n")
	fmt.Fprintf(&b, "Trials at each point: %d kill -9 and %d SIGSTOP of the LEADER (measured as in Failover above, to the new LEADER's `-> LEADER` log line), %d stalls of 200 ms, %d cold elections, one reconnect storm; the cluster settles (a LEADER counting all N, synced FOLLOWERs) after each. ",
		r.opts.trials, r.opts.trials, r.opts.trials, r.opts.cold)
	b.WriteString("Cold election: the 3 masters are stopped in order (SIGTERM) while the voters run; once the swarm shows every link down, all 3 are started at once. ")
	b.WriteString("The clock runs from the starts to the first poll (every 20 ms) of the swarm's status that shows every voter's every link up, and to the first poll of the masters that finds a LEADER holding quorum and counting all N votes; ")
	b.WriteString("the middle column is the second minus the first: the election proper once every voter could reach every master (0 when the LEADER counted all N before the last link was up, which the cell says). ")
	b.WriteString("A point that could not be measured (no LEADER counting all N within its bound, a master refusing connections, the machine saturated) says so below its tables, with the figures it did get.\n\n")
	full, some := 0, 0
	for _, p := range r.points {
		switch {
		case len(p.errs) == 0:
			full++
		case p.startTook > 0:
			some++
		}
	}
	fmt.Fprintf(&b, "Of the %d points, %d were measured in full and %d in part (a LEADER counted all N, then a step ran out of its bound); the rest got no LEADER counting all N, and their notes below say what the processes did meanwhile.\n\n",
		len(r.points), full, some)
	b.WriteString("### Elections\n\n" + electionHeader)
	for _, p := range r.points {
		b.WriteString(electionRow(p))
	}
	fmt.Fprintf(&b, "\n### Cost at rest\n\nOver %v of steady state after settling, with nothing asking the masters anything: CPU in percent of one core from /proc/PID/stat (utime + stime), RSS from /proc/PID/status (VmRSS) at the end, ", r.opts.steady)
	b.WriteString("the LEADER's bytes per second from /proc/PID/io (rchar + wchar: every read and write system call, socket traffic with the chunkservers and the other masters included, and its bbolt file too), ")
	b.WriteString("the heartbeat round from the LEADER's /metrics on port 9425: the mean of `mfs_master_heartbeat_round_seconds` over the window (its _sum and _count deltas) and `mfs_master_heartbeat_round_voters`, n/a where this build does not export them. Follower figures are the two followers' mean.\n\n")
	b.WriteString(costHeader)
	for _, p := range r.points {
		b.WriteString(costRow(p))
	}
	b.WriteString("\n### Reconnect storm\n\nSIGUSR1 to the swarm: every voter closes all its connections at once and dials again at once (the real links). ")
	b.WriteString("The LEADER's status is asked every 50 ms: whether it answered LEADER at the same epoch every time, how long until the swarm shows every link up again and the LEADER counts all N votes over N vote connections, and the longest time between two answers.\n\n")
	b.WriteString(stormHeader)
	for _, p := range r.points {
		b.WriteString(stormRow(p))
	}
	var notes []string
	for _, p := range r.points {
		if len(p.errs) > 0 {
			note := fmt.Sprintf("- N=%d, L=%d: %s", p.n, p.locs, strings.Join(p.errs, "; "))
			if p.leaderless != "" {
				note += "; " + p.leaderless
			}
			notes = append(notes, note+".")
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNot measured in full:\n\n" + strings.Join(notes, "\n") + "\n")
	}
	if r.idle != nil {
		b.WriteString("\n### One real chunkserver at rest\n\n")
		if r.idle.err != nil {
			fmt.Fprintf(&b, "Not measured: %v\n", r.idle.err)
		} else {
			fmt.Fprintf(&b, "The `make run` topology (3 masters, 6 `mfschunkserver` processes, 3 voter-only), settled, then %v: each chunkserver used %.2f%% of one core on average (the busiest %.2f%%), with %s RSS on average (the largest %s).\n",
				r.idle.window, r.idle.cpuMean, r.idle.cpuMax, mib(r.idle.rssMean), mib(r.idle.rssMax))
		}
	}
	if r.reg != nil {
		b.WriteString("\n### Registration from an empty registry\n\n")
		if r.reg.err != nil {
			fmt.Fprintf(&b, "%d fresh voters (no id, 3 locations, started %d a second) against masters just initialised: %v.\n", r.reg.n, r.reg.rate, r.reg.err)
		} else {
			fmt.Fprintf(&b, "%d fresh voters (no id, 3 locations, started %d a second) against masters just initialised: a LEADER counted all of them registered and voting %s after the swarm started, %.1f registrations a second. ",
				r.reg.n, r.reg.rate, ms(r.reg.took), float64(r.reg.n)/r.reg.took.Seconds())
		}
		b.WriteString("A LEADER registers up to 512 chunkservers a config change (docs/architecture.md §5), each change in force (known to a quorum under the old and the new registry, learnt from heartbeats) before the next; the larger points still have their registries written at init, so that they time elections, not registration.\n")
	}
	b.WriteString(scaleEnd + "\n")
	return b.String()
}

const (
	scaleBegin = "<!-- scale:begin -->"
	scaleEnd   = "<!-- scale:end -->"
)

// hardNoFile is this process's hard RLIMIT_NOFILE (0 when unknown).
func hardNoFile() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Max
}
