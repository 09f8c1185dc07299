// Command bench is `make bench`: failover of the make run topology under
// kill -9 (with the fast path, and with TRUST_REFUSED = 0) and SIGSTOP,
// 200 ms stalls that must depose nobody, change throughput, read
// throughput (confirmed by a heartbeat round, and with LEASE_READS = 1),
// a 3-member etcd cluster's kill -9 failover, changes and linearizable
// reads with its default settings in the same run, whole-cluster cold
// starts (coldstart.go), and the scale table: up to 10,000 voters of an
// mfsswarm in front of 3 masters (scale.go). It writes docs/benchmarks.md.
package main

import (
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

func main() {
	trials := flag.Int("trials", 20, "trials of each kind")
	doc := flag.String("doc", "docs/benchmarks.md", "where to write the results")
	base := flag.Int("base", 60, "second octet of the loopback addresses used (127.B.x.y)")
	keep := flag.String("keep", "", "keep configs, data and logs in this directory")
	only := flag.String("only", "", "run one kind only: "+strings.Join(kinds, ", ")+" (freeze: the SIGSTOP trials and the 200 ms stalls; for a look; the doc is not written, but for coldstart, scale, sites and storelog, which rewrite their own section; -doc '' writes nothing)")
	vgw := flag.String("versitygw", ".bin/versitygw", "the versitygw binary, the witness's store in the two-location part (make versitygw installs it)")
	coldTrials := flag.Int("cold-trials", 7, "cold starts of each way down (planned restart, power cut)")
	before := flag.String("before", "", "a directory with an older build's mfsmaster and mfschunkserver: the cold start is measured with them too")
	scaleN := flag.String("scale-n", "100,1000,5000,10000", "scale: the voter counts (comma-separated)")
	scaleL := flag.String("scale-locations", "3,8", "scale: the location counts (comma-separated), each with every voter count")
	var so scaleOpts
	flag.IntVar(&so.trials, "scale-trials", 5, "scale: kill -9, SIGSTOP and 200 ms stall trials at each point")
	flag.IntVar(&so.cold, "scale-cold", 3, "scale: cold elections at each point")
	flag.IntVar(&so.rate, "scale-rate", 250, "scale: voters the swarm starts per second")
	flag.DurationVar(&so.steady, "scale-steady", 10*time.Second, "scale: the steady-state window (CPU, RSS, bytes, heartbeat rounds)")
	flag.DurationVar(&so.idle, "scale-idle", 30*time.Second, "scale: the window of the idle mfschunkserver measure (0: skip it)")
	flag.IntVar(&so.reg, "scale-register", 100, "scale: fresh voters of the registration run (0: skip it)")
	flag.IntVar(&so.regRate, "scale-register-rate", 100, "scale: voters the registration run's swarm starts per second")
	storm := flag.Bool("scale-storm", true, "scale: run the reconnect storm at each point (false: skip it, for a look at the failovers after it)")
	flag.StringVar(&so.profile, "scale-profile", "", "scale: a directory for CPU profiles (pprof) of the LEADER at rest and of the masters and the swarm over the first kill -9 and SIGSTOP of each point, with their top 15 printed (empty: none)")
	flag.Parse()
	so.noStorm = !*storm
	var err error
	if so.ns, err = parseInts(*scaleN); err == nil {
		so.locs, err = parseInts(*scaleL)
	}
	if err == nil && so.profile != "" {
		err = os.MkdirAll(so.profile, 0o755)
	}
	if err == nil && (so.rate < 1 || so.regRate < 1 || so.trials < 0 || so.cold < 0) {
		err = fmt.Errorf("-scale-rate and -scale-register-rate must be positive, -scale-trials and -scale-cold not negative")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: -scale-n / -scale-locations:", err)
		os.Exit(2)
	}
	if err := run(*trials, *doc, uint8(*base), *keep, *only, *coldTrials, *before, *vgw, so); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type series struct {
	name string
	d    []time.Duration
}

// pct is the p-quantile (0 when empty).
func (s series) pct(p float64) time.Duration {
	d := append([]time.Duration(nil), s.d...)
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(p*float64(len(d)-1)+0.5))]
}

func (s series) stats() (med, p90, max time.Duration) {
	d := append([]time.Duration(nil), s.d...)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d) == 0 {
		return
	}
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d)-1)+0.5))] }
	return q(0.5), q(0.9), d[len(d)-1]
}

// kinds are the values of -only.
var kinds = []string{"kill", "kill-notrust", "freeze", "seen", "loss", "load", "oneway", "changes", "writes", "reads", "etcd", "sites", "storelog", "coldstart", "scale"}

func run(trials int, doc string, base uint8, keep, only string, coldTrials int, before, vgw string, so scaleOpts) error {
	if only != "" && !slices.Contains(kinds, only) {
		return fmt.Errorf("-only %q: one of %s", only, strings.Join(kinds, ", "))
	}
	if only == "changes" {
		only = "writes" // the same part: changes are writes to the namespace
	}
	want := func(ks ...string) bool { return only == "" || slices.Contains(ks, only) }
	work := keep
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "mfs-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	} else if err := os.RemoveAll(work); err != nil {
		return err
	}
	bin := filepath.Join(work, "bin")
	root, _ := os.Getwd()
	if err := cluster.Build(bin, root); err != nil {
		return err
	}
	// spec is the make run topology with the bench's settings and extra
	// keys; every cluster of the run uses the same addresses, one at a time.
	spec := func(dir string, masterCfg, csCfg map[string]string) cluster.Spec {
		s := cluster.Local(filepath.Join(work, dir), bin, base)
		s.MasterCfg = map[string]string{"SELF_NOMINATE_AFTER": "1s"}
		maps.Copy(s.MasterCfg, masterCfg)
		s.CSCfg = map[string]string{}
		if keep != "" {
			s.CSCfg["LOG_LEVEL"] = "debug"
		}
		maps.Copy(s.CSCfg, csCfg)
		return s
	}
	res := results{trials: trials, work: work}
	res.kill = series{name: "kill -9 of the LEADER -> new LEADER"}
	res.killNoTrust = series{name: "kill -9 of the LEADER, chunkservers with TRUST_REFUSED = 0 -> new LEADER"}
	res.freeze = series{name: "SIGSTOP of the LEADER -> new LEADER"}

	if want("kill", "freeze", "writes", "reads") {
		s := spec("mfs", nil, nil)
		for _, a := range s.Masters { // the LEADER's profile at 64 clients
			s.PerMaster = append(s.PerMaster, map[string]string{"PPROF_LISTEN": netip.AddrPortFrom(a, profilePort).String()})
		}
		for _, cs := range s.CS { // and a chunkserver's
			s.PerCS = append(s.PerCS, map[string]string{"PPROF_LISTEN": netip.AddrPortFrom(cs.Addr, profilePort).String()})
		}
		err := withCluster(s, func(c *cluster.Cluster) error {
			return defaultPhases(c, trials, want, &res)
		})
		if err != nil {
			return err
		}
	}
	if want("writes") {
		err := withCluster(spec("mfs-overload", map[string]string{"MAX_PENDING": strconv.Itoa(overloadPending)}, nil), func(c *cluster.Cluster) error {
			o, err := overloadPhase(c)
			res.overload = &o
			return err
		})
		if err != nil {
			return fmt.Errorf("overload: %w", err)
		}
	}
	if want("reads") {
		// The same topology with LEASE_READS = 1 on every master, fresh as
		// the default cluster was when its reads ran.
		err := withCluster(spec("mfs-lease", map[string]string{"LEASE_READS": "1"}, nil), func(c *cluster.Cluster) error {
			l, err := readPhase("lease", oursPut(c), oursGet(c))
			res.lease = l
			return err
		})
		if err != nil {
			return err
		}
	}
	if want("kill-notrust") {
		// The same topology with the kill -9 fast path off on every
		// chunkserver.
		err := withCluster(spec("mfs-notrust", nil, map[string]string{"TRUST_REFUSED": "0"}), func(c *cluster.Cluster) error {
			for i := 0; i < trials; i++ {
				d, err := trial(c, false)
				if err != nil {
					return fmt.Errorf("kill trial with TRUST_REFUSED = 0 %d: %w", i+1, err)
				}
				res.killNoTrust.d = append(res.killNoTrust.d, d)
				fmt.Printf("kill -9, TRUST_REFUSED = 0 #%d: %v\n", i+1, d.Round(time.Millisecond))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}

	if want("coldstart") {
		if before != "" {
			s := spec("mfs-cold-before", nil, nil)
			s.Bin = before
			err := withCluster(s, func(c *cluster.Cluster) error {
				r, err := coldPhase(c, coldTrials, "before ("+filepath.Base(before)+")")
				res.cold = append(res.cold, r)
				return err
			})
			if err != nil {
				return fmt.Errorf("cold start with %s: %w", before, err)
			}
		}
		err := withCluster(spec("mfs-cold", nil, nil), func(c *cluster.Cluster) error {
			r, err := coldPhase(c, coldTrials, "this build")
			res.cold = append(res.cold, r)
			return err
		})
		if err != nil {
			return err
		}
	}
	if only == "coldstart" {
		section := coldSection(res.cold)
		fmt.Print("\n" + section)
		if doc == "" {
			return nil
		}
		return spliceCold(doc, section)
	}
	if want("scale") {
		sr := scalePhase(work, bin, base, so)
		res.scale = &sr
	}
	if only == "scale" {
		if doc == "" {
			return nil // make scale: the rows were printed
		}
		section := scaleSection(*res.scale)
		fmt.Print("\n" + section)
		return splice(doc, section, scaleBegin, scaleEnd)
	}

	if want("storelog") {
		sr := storelogPhase(work, bin, base, vgw, trials, keep != "")
		res.storelog = &sr
	}
	if only == "storelog" {
		return printSection(doc, storelogBegin, storelogSection(*res.storelog), storelogEnd)
	}

	if want("seen") {
		var sr seenRun
		if err := withCluster(spec("mfs-seen", nil, nil), func(c *cluster.Cluster) error {
			sr = seenPhase(c, trials)
			return nil
		}); err != nil && sr.err == nil {
			sr.err = err
		}
		res.seen = &sr
	}
	if only == "seen" {
		return printSection(doc, seenBegin, seenSection(*res.seen, trials), seenEnd)
	}

	if want("loss") {
		lr := lossPhase(work, bin, base, trials, func(dir string, masterCfg map[string]string) cluster.Spec { return spec(dir, masterCfg, nil) })
		res.loss = &lr
	}
	if only == "loss" {
		return printSection(doc, lossBegin, lossSection(*res.loss, trials), lossEnd)
	}

	if want("load") {
		lr := loadPhase(work, base, trials, func(dir string) cluster.Spec { return spec(dir, nil, nil) })
		res.load = &lr
	}
	if only == "load" {
		return printSection(doc, loadBegin, loadSection(*res.load, trials), loadEnd)
	}

	if want("oneway") {
		or := onewayPhase(trials, func(dir string) cluster.Spec { return spec(dir, nil, nil) })
		res.oneway = &or
	}
	if only == "oneway" {
		return printSection(doc, onewayBegin, onewaySection(*res.oneway, trials), onewayEnd)
	}

	if want("sites") {
		sr := sitesPhase(work, bin, base, vgw, trials, keep != "")
		res.sites = &sr
	}

	et := etcdWants{kill: want("etcd", "kill-notrust", "sites"), writes: want("etcd", "writes"), reads: want("etcd", "reads")}
	if et.kill || et.writes || et.reads {
		res.etcdKill = series{name: "etcd (3 members, default settings): kill -9 of the leader -> new leader"}
		ms, version, err := etcdStart(work, base)
		res.etcdVersion, res.etcdErr = version, err
		if err == nil {
			res.etcdErr = etcdPhases(ms, trials, et, &res)
			etcdStop(ms)
		}
		if res.etcdErr != nil {
			fmt.Println("etcd:", res.etcdErr)
		}
	}
	if only == "sites" {
		return printSection(doc, sitesBegin, sitesSection(*res.sites, res.etcdKill, res.etcdVersion), sitesEnd)
	}
	if only != "" {
		summary(res)
		if only == "writes" {
			fmt.Print(changesSection(res))
		}
		return res.etcdErr
	}
	return write(doc, res)
}

// withCluster starts s, waits until it settles, runs f and stops it.
func withCluster(s cluster.Spec, f func(c *cluster.Cluster) error) error {
	c, err := cluster.Start(s)
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := settle(c, -1); err != nil {
		return err
	}
	return f(c)
}

// defaultPhases runs, on the cluster with the default settings: confirmed
// reads (first, while it is as fresh as the LEASE_READS one), kill -9 and
// SIGSTOP trials, 200 ms stalls, changes, and the first change after a
// kill -9.
func defaultPhases(c *cluster.Cluster, trials int, want func(...string) bool, res *results) error {
	if want("reads") {
		l, err := readPhase("confirmed", oursPut(c), oursGet(c))
		res.confirmed = l
		if err != nil {
			return err
		}
	}
	for i := 0; i < trials && want("kill"); i++ {
		d, err := trial(c, false)
		if err != nil {
			return fmt.Errorf("kill trial %d: %w", i+1, err)
		}
		res.kill.d = append(res.kill.d, d)
		fmt.Printf("kill -9 #%d: %v\n", i+1, d.Round(time.Millisecond))
	}
	for i := 0; i < trials && want("freeze"); i++ {
		d, err := trial(c, true)
		if err != nil {
			return fmt.Errorf("freeze trial %d: %w", i+1, err)
		}
		res.freeze.d = append(res.freeze.d, d)
		fmt.Printf("SIGSTOP #%d: %v\n", i+1, d.Round(time.Millisecond))
	}
	// The stalls go with the SIGSTOP trials (-only freeze): a shorter
	// failover is worth having only while a 200 ms stall deposes nobody.
	for i := 0; i < trials && want("freeze"); i++ {
		dep, dbl, err := stall(c, 200*time.Millisecond)
		if err != nil {
			return fmt.Errorf("stall trial %d: %w", i+1, err)
		}
		res.deposed += dep
		res.doubles += dbl
	}
	if want("freeze") {
		fmt.Printf("200 ms stalls: %d of %d deposed the LEADER; %d polls saw two LEADERs holding quorum\n", res.deposed, trials, res.doubles)
	}
	if !want("writes") {
		return nil
	}
	for _, n := range writeConcs {
		var l load
		var profiled func()
		if n == 64 {
			profiled = profileLeader(c, filepath.Join(res.work, "leader-64-clients.pprof"), writeFor, &res.profile64)
			csDone := profileAt(netip.AddrPortFrom(c.CS[0].Addr, profilePort).String(), filepath.Join(res.work, "cs1-64-clients.pprof"), writeFor, &res.profile64CS)
			if leaderDone := profiled; leaderDone != nil {
				profiled = func() { leaderDone(); csDone() }
			} else {
				profiled = csDone
			}
		}
		var cpu *cpuCost
		disk, err := measureDisk(c, func() (int, error) {
			var err error
			cpu, err = measureCPU(oursGroups(c), func() (int, error) {
				l, err = runLoad(n, writeFor, oursPut(c))
				return l.ops, err
			})
			return l.ops, err
		})
		if profiled != nil {
			profiled()
		}
		if err != nil {
			return fmt.Errorf("writes, %d clients: %w", n, err)
		}
		l.disk, l.cpu = disk, cpu
		res.ours = append(res.ours, l)
		fmt.Printf("ours, %d clients: %.0f changes/s", n, l.rate())
		if disk != nil {
			fmt.Printf("; durable writes per change: LEADER %.2f, follower %.2f, chunkserver %.2f", disk.leader, disk.follower, disk.cs)
			if disk.stages != nil {
				fmt.Print("; mean by stage:")
				for _, st := range changeStages {
					fmt.Printf(" %s %s", st, us(disk.stages[st]))
				}
			}
		}
		if cpu != nil {
			fmt.Printf("; CPU per change: %s", cpu)
		}
		fmt.Println()
	}
	first, err := firstWrite(max(trials/2, 1), oursPut(c), killOurs(c), func() error { return settle(c, -1) })
	if err != nil {
		return fmt.Errorf("first change after kill: %w", err)
	}
	res.oursFirst = first
	return nil
}

// writeConcs are the client counts of the change runs, ours and etcd's.
var writeConcs = []int{1, 16, 64, 256}

// writeFor is how long each throughput run lasts.
const writeFor = 3 * time.Second

// results is everything one bench run measured.
type results struct {
	trials                              int
	kill, killNoTrust, freeze, etcdKill series
	deposed, doubles                    int
	ours, etcd                          []load
	oursFirst, etcdFirst                series
	confirmed, lease, etcdReads         []load
	etcdVersion                         string
	etcdErr                             error
	cold                                []coldRun // this build's, after an older one's (-before)
	scale                               *scaleResults
	sites                               *sitesRun
	storelog                            *storelogRun
	seen                                *seenRun
	loss                                *lossRun
	load                                *loadRun
	oneway                              *onewayRun
	overload                            *overloadRun
	profile64                           string // pprof top 15 of the LEADER at 64 clients
	profile64CS                         string // and of one chunkserver
	work                                string // the bench's directory
}

// etcdWants says which etcd phases a run needs.
type etcdWants struct{ kill, writes, reads bool }

func etcdPhases(ms []*etcdMember, trials int, want etcdWants, res *results) error {
	if want.kill {
		if err := etcdKillTrials(ms, trials, &res.etcdKill); err != nil {
			return err
		}
	}
	if want.writes {
		for _, n := range writeConcs {
			var l load
			cpu, err := measureCPU(etcdGroups(ms), func() (int, error) {
				var err error
				l, err = runLoad(n, writeFor, etcdPut(ms))
				return l.ops, err
			})
			if err != nil {
				return fmt.Errorf("etcd writes, %d clients: %w", n, err)
			}
			l.cpu = cpu
			res.etcd = append(res.etcd, l)
			fmt.Printf("etcd, %d clients: %.0f changes/s", n, l.rate())
			if cpu != nil {
				fmt.Printf("; CPU per change: %s", cpu)
			}
			fmt.Println()
		}
		first, err := firstWrite(max(trials/2, 1), etcdPut(ms), killEtcd(ms), func() error {
			time.Sleep(time.Second)
			_, err := etcdLeader(ms, -1, 30*time.Second)
			return err
		})
		res.etcdFirst = first
		if err != nil {
			return err
		}
	}
	if want.reads {
		l, err := readPhase("etcd", etcdPut(ms), etcdGet(ms))
		res.etcdReads = l
		if err != nil {
			return err
		}
	}
	return nil
}

// summary prints, for an -only run, the figures the doc would compare.
func summary(r results) {
	fmt.Println()
	for _, s := range []series{r.kill, r.killNoTrust, r.freeze, r.etcdKill} {
		if len(s.d) > 0 {
			med, p90, mx := s.stats()
			fmt.Printf("%s: %d trials, median %s, p90 %s, max %s\n", s.name, len(s.d), ms(med), ms(p90), ms(mx))
		}
	}
	em, _, _ := r.etcdKill.stats()
	if nm, _, _ := r.killNoTrust.stats(); nm > 0 && em > 0 {
		fmt.Printf("etcd kill -9 / ours kill -9 with TRUST_REFUSED = 0 (medians): %.2fx\n", float64(em)/float64(nm))
	}
	for i, c := range r.confirmed {
		if i >= len(r.lease) {
			break
		}
		l := r.lease[i]
		cm, _, _ := c.lat.stats()
		lm, _, _ := l.lat.stats()
		fmt.Printf("reads, %d clients: confirmed %.0f/s median %s p99 %s; lease %.0f/s median %s p99 %s; median confirmed/lease %.2fx, reads/s confirmed/lease %.2f",
			c.conc, c.rate(), us(cm), us(c.lat.pct(0.99)), l.rate(), us(lm), us(l.lat.pct(0.99)), float64(cm)/float64(lm), c.rate()/l.rate())
		if i < len(r.etcdReads) {
			e := r.etcdReads[i]
			emd, _, _ := e.lat.stats()
			fmt.Printf("; etcd %.0f/s median %s p99 %s", e.rate(), us(emd), us(e.lat.pct(0.99)))
		}
		fmt.Println()
	}
}

// settle waits until a LEADER counts every chunkserver and every master
// answers as LEADER or a synced FOLLOWER, then a little longer so restarted
// chunkservers are past their quiet time.
func settle(c *cluster.Cluster, not int) error {
	return settleN(c, len(c.CS), 60*time.Second)
}

// settleN is settle for a LEADER counting n votes, within bound.
func settleN(c *cluster.Cluster, n int, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		st, errs := c.Statuses(max(time.Second, bound/60))
		ok := true
		leaders := 0
		for i := range st {
			if errs[i] != nil {
				ok = false
				continue
			}
			switch {
			case st[i].Role == roles.Leader && st[i].HoldsQuorum && st[i].Voters == n:
				leaders++
			case st[i].Role == roles.Follower && st[i].Sync == roles.Synced:
			default:
				ok = false
			}
		}
		if ok && leaders == 1 {
			time.Sleep(500 * time.Millisecond)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("cluster did not settle (a LEADER counting %d votes, synced FOLLOWERs) within %v", n, bound)
}

// trial kills (or freezes) the LEADER and measures until another master
// logs that it became LEADER; then it brings the old one back and settles.
func trial(c *cluster.Cluster, freeze bool) (time.Duration, error) {
	return trialWith(c, freeze, trialLimits{failover: 15 * time.Second, poll: 20 * time.Millisecond}, func() error { return settle(c, -1) })
}

// trialLimits bound a trial: the wait for a new LEADER, polled every poll
// (each status asked within poll + 200 ms).
type trialLimits struct{ failover, poll time.Duration }

// trialWith is trial with its bounds and its settling given.
func trialWith(c *cluster.Cluster, freeze bool, lim trialLimits, settle func() error) (time.Duration, error) {
	ls := leaders(c, lim.poll+time.Second)
	if len(ls) != 1 {
		return 0, fmt.Errorf("%d LEADERs before the trial", len(ls))
	}
	lead := ls[0]
	p := c.Masters[lead]
	t0 := time.Now()
	if freeze {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			return 0, err
		}
	} else {
		p.Kill()
	}
	next, _, err := c.WaitLeader(lim.failover, lim.poll, lead)
	if err != nil {
		_ = p.Signal(syscall.SIGCONT)
		return 0, err
	}
	at := cluster.BecameLeader(c.Masters[next].Log, t0)
	if at.IsZero() {
		return 0, fmt.Errorf("no role change in %s", c.Masters[next].Log)
	}
	if freeze {
		_ = p.Signal(syscall.SIGCONT)
	} else if err := p.Start(); err != nil {
		return 0, err
	}
	return at.Sub(t0), settle()
}

// leaders lists the masters that report LEADER, each asked within timeout
// (cluster.Leaders allows 300 ms: a status listing thousands of
// chunkservers may take longer).
func leaders(c *cluster.Cluster, timeout time.Duration) []int {
	st, errs := c.Statuses(timeout)
	var out []int
	for i := range st {
		if errs[i] == nil && st[i].Role == roles.Leader {
			out = append(out, i)
		}
	}
	return out
}

// stall freezes the LEADER for d and checks it is still LEADER at the same
// epoch afterwards; it also counts polls that saw two LEADERs with quorum.
func stall(c *cluster.Cluster, d time.Duration) (deposed, doubles int, err error) {
	return stallWith(c, d, func() error { return settle(c, -1) })
}

// stallWith is stall with its settling given.
func stallWith(c *cluster.Cluster, d time.Duration, settle func() error) (deposed, doubles int, err error) {
	st, errs := c.Statuses(time.Second)
	lead := -1
	for i := range st {
		if errs[i] == nil && st[i].Role == roles.Leader {
			lead = i
		}
	}
	if lead < 0 {
		return 0, 0, fmt.Errorf("no LEADER")
	}
	epoch := st[lead].Epoch
	p := c.Masters[lead]
	_ = p.Signal(syscall.SIGSTOP)
	time.Sleep(d)
	_ = p.Signal(syscall.SIGCONT)
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		st, errs := c.Statuses(time.Second)
		n := 0
		for i := range st {
			if errs[i] == nil && st[i].Role == roles.Leader && st[i].HoldsQuorum {
				n++
			}
		}
		if n > 1 {
			doubles++
		}
	}
	st, errs = c.Statuses(time.Second)
	if errs[lead] != nil || st[lead].Role != roles.Leader || st[lead].Epoch != epoch {
		deposed = 1
		if err := settle(); err != nil {
			return deposed, doubles, err
		}
	}
	return deposed, doubles, nil
}

func write(doc string, r results) error {
	var b strings.Builder
	now := time.Now().UTC().Format("2006-01-02 15:04 UTC")
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` (internal/cluster/bench) on %s, %d cores, %s/%s. ", now, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "Reproduce with `make bench` (TRIALS=N for another count); it needs nothing but Go, and installs etcd from Debian's packages when it is missing.\n\n")
	b.WriteString("## Failover\n\n")
	b.WriteString("The `make run` topology on loopback: 3 masters, 6 chunkservers in 3 locations (one voter-only in each), all real processes. ")
	b.WriteString("A trial signals the LEADER and measures until another master logs its `ELECT -> LEADER` role change (the same clock: one machine). ")
	b.WriteString("After each trial the old LEADER is restarted (kill) or resumed (SIGSTOP) and the cluster settles (a LEADER counting all 6 votes, the others synced FOLLOWERs) before the next.\n\n")
	b.WriteString("Settings: the defaults (VOTE_LEASE 500ms, HEARTBEAT_INTERVAL 150ms, MAX_CLOCK_DRIFT 0.01, LEASE_MARGIN 10ms, LEASE_READS 0; chunkservers PROBE_INTERVAL 50ms, NOMINATE_SLOT 60ms, MAX_PROMISE 2s, TRUST_REFUSED 1). ")
	b.WriteString("The TRUST_REFUSED = 0 row is a second cluster of the same topology, started in the same run with that key in every chunkserver's config and nothing else changed.\n\n")
	b.WriteString("| what | trials | median | p90 | max |\n|---|---|---|---|---|\n")
	row := func(s series) {
		med, p90, mx := s.stats()
		fmt.Fprintf(&b, "| %s | %d | %v | %v | %v |\n", s.name, len(s.d), ms(med), ms(p90), ms(mx))
	}
	row(r.kill)
	row(r.killNoTrust)
	row(r.freeze)
	if r.etcdErr == nil {
		row(r.etcdKill)
	}
	b.WriteString("\n")
	if r.etcdErr == nil {
		km, _, _ := r.kill.stats()
		nm, _, _ := r.killNoTrust.stats()
		em, _, _ := r.etcdKill.stats()
		fm, _, _ := r.freeze.stats()
		fmt.Fprintf(&b, "Ratios of medians: etcd kill -9 / ours kill -9 = %.1fx; etcd kill -9 / ours kill -9 with TRUST_REFUSED = 0 = %.2fx; etcd kill -9 / ours SIGSTOP = %.2fx. ",
			float64(em)/float64(km), float64(em)/float64(nm), float64(em)/float64(fm))
		fmt.Fprintf(&b, "etcd %s, 3 members on loopback with its default settings (heartbeat 100 ms, election timeout 1000 ms), measured from the kill to the `became leader` line in a survivor's log.\n\n", r.etcdVersion)
	} else {
		fmt.Fprintf(&b, "etcd was not measured in this run: %v\n\n", r.etcdErr)
	}
	fmt.Fprintf(&b, "Stability: %d trials of a 200 ms SIGSTOP of the LEADER (two heartbeats lost): %d deposed it. ", r.trials, r.deposed)
	fmt.Fprintf(&b, "Polls every 50 ms during and after them that saw two masters report LEADER holding quorum: %d.\n\n", r.doubles)
	b.WriteString("Why the figures are what they are: when a LEADER is killed, its host's kernel closes the connections the chunkservers' promises were granted over (a FIN or RST reaches each) and refuses their next dial; ")
	b.WriteString("the close and then a refusal of a dial sent after it together show that the process is gone, and release the promise at once (the kill -9 fast path, docs/architecture.md §3). ")
	b.WriteString("A refusal alone proves nothing (a default `iptables -j REJECT` refuses dials while the master lives, and closes nothing), so it releases nothing. ")
	b.WriteString("A frozen LEADER keeps its connections open and says nothing, so its voters wait out the promise (VOTE_LEASE from the last heartbeat they received) before they nominate and vote again. ")
	b.WriteString("With TRUST_REFUSED = 0 (for a REJECT rule with tcp-reset between chunkservers and masters, or a master address that may move to another host while the old process lives: docs/operations.md) neither the close nor the refusal counts, ")
	b.WriteString("so a killed LEADER is replaced as a frozen one is, after the promise: that row is the price of a crash on such a site, to be read beside the SIGSTOP row, not the kill -9 one.\n")
	if r.sites != nil {
		b.WriteString("\n" + sitesBegin + "\n" + sitesSection(*r.sites, r.etcdKill, r.etcdVersion) + sitesEnd + "\n")
	}
	if r.seen != nil {
		b.WriteString("\n" + seenBegin + "\n" + seenSection(*r.seen, r.trials) + seenEnd + "\n")
	}
	if r.loss != nil {
		b.WriteString("\n" + lossBegin + "\n" + lossSection(*r.loss, r.trials) + lossEnd + "\n")
	}
	if r.load != nil {
		b.WriteString("\n" + loadBegin + "\n" + loadSection(*r.load, r.trials) + loadEnd + "\n")
	}
	if r.oneway != nil {
		b.WriteString("\n" + onewayBegin + "\n" + onewaySection(*r.oneway, r.trials) + onewayEnd + "\n")
	}
	if r.storelog != nil {
		b.WriteString("\n" + storelogBegin + "\n" + storelogSection(*r.storelog) + storelogEnd + "\n")
	}
	b.WriteString(changesSection(r))
	if len(r.confirmed) > 0 && len(r.lease) > 0 {
		b.WriteString("\n## Reads\n\n")
		fmt.Fprintf(&b, "Each client reads the same existing key, one read at a time, for %v. ", readFor)
		b.WriteString("Ours: `Get` through `pkg/client` at the LEADER, each client a session of its own, on two clusters of the `make run` topology started in the same run, each fresh when its reads ran: ")
		b.WriteString("confirmed, the default (LEASE_READS = 0), and lease (LEASE_READS = 1 in every master's config, nothing else changed). ")
		b.WriteString("etcd: `/v3/kv/range` through its JSON gateway with its default `serializable: false`, a linearizable read, on kept-alive HTTP connections spread over the members as for the changes.\n\n")
		b.WriteString("| clients | confirmed reads/s | confirmed median | confirmed p99 | lease reads/s | lease median | lease p99 | etcd reads/s | etcd median | etcd p99 | median confirmed/lease | reads/s confirmed/lease |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for i, c := range r.confirmed {
			if i >= len(r.lease) {
				break
			}
			l := r.lease[i]
			cm, _, _ := c.lat.stats()
			lm, _, _ := l.lat.stats()
			et := "- | - | -"
			if i < len(r.etcdReads) {
				e := r.etcdReads[i]
				em, _, _ := e.lat.stats()
				et = fmt.Sprintf("%.0f | %s | %s", e.rate(), us(em), us(e.lat.pct(0.99)))
			}
			fmt.Fprintf(&b, "| %d | %.0f | %s | %s | %.0f | %s | %s | %s | %.2f | %.2f |\n", c.conc, c.rate(), us(cm), us(c.lat.pct(0.99)),
				l.rate(), us(lm), us(l.lat.pct(0.99)), et, float64(cm)/float64(lm), c.rate()/l.rate())
		}
		b.WriteString("\nWhat a read waits for, in ours. Confirmed (the default): the LEADER notes the newest heartbeat it has sent when the read arrives; ")
		b.WriteString("if no read round is in flight, the arrival makes the next heartbeat broadcast to every chunkserver leave at once (after the inputs handled with the read, not at the next HEARTBEAT_INTERVAL tick) and makes it the round. ")
		b.WriteString("The read is answered once everything in the log at its arrival is acknowledged (at once here: nothing is being written) and a quorum of chunkservers (here both chunkservers of two of the three locations) has acknowledged that heartbeat or a later one. ")
		b.WriteString("Such a heartbeat changes nothing a chunkserver must remember (same epoch, same commit point, no promise longer than one it made before), so it answers without writing anything: no fsync anywhere, one round trip from the LEADER to the chunkservers and back on top of the client's own. On loopback that round trip is mostly scheduling: the LEADER and every chunkserver of the quorum must be woken, read the frame and answer, so the figure for one client measures wake-ups more than a network, and grows with the machine's load. ")
		b.WriteString("Reads that arrive while a round is in flight wait for the next one, which leaves as soon as that one completes: one round confirms every read of a burst, so with many clients a read waits between one and two rounds, and throughput grows with the number of clients. ")
		b.WriteString("A chunkserver that has promised a newer LEADER refuses that heartbeat, so a LEADER resumed from a pause its clock did not count steps down instead of answering from an old state. ")
		b.WriteString("Lease (LEASE_READS = 1): the read is answered in the step it arrives in, once everything before it is acknowledged, while the LEADER's vote leases still make a quorum, and no heartbeat is sent for it; ")
		b.WriteString("it trusts the LEADER's monotonic clock to have counted every moment the process was stopped, which a paused VM breaks (docs/architecture.md §7, Reads): that is why it is not the default. ")
		b.WriteString("etcd's linearizable read is a round of the same kind (Raft ReadIndex: the leader confirms with a heartbeat round to a majority that it still leads, batching the reads that wait; a follower first asks the leader for the index), then served once the member has applied up to it; the JSON gateway adds its own HTTP-to-gRPC hop to every etcd figure.\n")
	}
	if len(r.cold) > 0 {
		b.WriteString("\n" + coldSection(r.cold))
	}
	if r.scale != nil {
		b.WriteString("\n" + scaleSection(*r.scale))
	}
	if err := os.MkdirAll(filepath.Dir(doc), 0o755); err != nil {
		return err
	}
	fmt.Print("\n" + b.String())
	return os.WriteFile(doc, []byte(b.String()), 0o644)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// changesSection is the Changes section of docs/benchmarks.md ("" without
// our change runs); BENCH=changes prints it.
func changesSection(r results) string {
	if len(r.ours) == 0 {
		return ""
	}
	var b strings.Builder
	row := func(s series) {
		med, p90, mx := s.stats()
		fmt.Fprintf(&b, "| %s | %d | %v | %v | %v |\n", s.name, len(s.d), ms(med), ms(p90), ms(mx))
	}
	b.WriteString("\n## Changes\n\n")
	fmt.Fprintf(&b, "Each client writes its own keys, one change at a time, for %v; every change is acknowledged only once it is durable (fsync) where the system's rule says. ", writeFor)
	b.WriteString("Ours: through `pkg/client` to the LEADER; a change is acknowledged once it is durable on the LEADER and on ACK_REPLICAS (1) other master, and a quorum of chunkservers has been told it is committed (docs/architecture.md §7). ")
	b.WriteString("etcd: `/v3/kv/put` through its JSON gateway on kept-alive HTTP connections spread over the members; a put is acknowledged once a majority has it in its fsynced WAL.\n\n")
	b.WriteString("| clients | ours changes/s | ours median | ours p99 | etcd changes/s | etcd median | etcd p99 | throughput ours/etcd |\n|---|---|---|---|---|---|---|---|\n")
	for i, l := range r.ours {
		om, _, _ := l.lat.stats()
		op := l.lat.pct(0.99)
		if i < len(r.etcd) {
			e := r.etcd[i]
			em, _, _ := e.lat.stats()
			fmt.Fprintf(&b, "| %d | %.0f | %s | %s | %.0f | %s | %s | %.2f |\n", l.conc, l.rate(), ms(om), ms(op), e.rate(), ms(em), ms(e.lat.pct(0.99)), l.rate()/e.rate())
		} else {
			fmt.Fprintf(&b, "| %d | %.0f | %s | %s | - | - | - | - |\n", l.conc, l.rate(), ms(om), ms(op))
		}
	}
	b.WriteString("\nWhat each acknowledged change cost the disks in ours (the runs above): durable writes of the metadata file, from `mfs_master_store_commits_total` and `mfs_chunkserver_store_commits_total` read before and after each run, divided by the changes acknowledged. A master's is one bbolt commit, two fdatasyncs (the pages, then the meta page); a chunkserver's one slot of its record file, one fdatasync. A follower is the mean of the two, a chunkserver the mean of the six (three of them voter-only).\n\n")
	b.WriteString("| clients | LEADER | follower | chunkserver |\n|---|---|---|---|\n")
	for _, l := range r.ours {
		if l.disk == nil {
			fmt.Fprintf(&b, "| %d | - | - | - |\n", l.conc)
			continue
		}
		fmt.Fprintf(&b, "| %d | %.2f | %.2f | %.2f |\n", l.conc, l.disk.leader, l.disk.follower, l.disk.cs)
	}
	b.WriteString("\nWhere one change's time goes in ours, on the LEADER (the mean of each stage over the runs above, from `mfs_master_change_stage_seconds`: the driver's clock at each step of the ack rule, docs/architecture.md §7): leader_write, from the step that appended it to its Persist durable, (a); replication, to the first follower's acknowledgement, (b); commit_send, to the heartbeat telling the chunkservers it is committed; voter_round, to the reply, once a quorum of chunkservers stored that, (c); total. What the client's own round trip adds is the median above minus total.\n\n")
	b.WriteString("| clients | leader_write | replication | commit_send | voter_round | total |\n|---|---|---|---|---|---|\n")
	for _, l := range r.ours {
		if l.disk == nil || l.disk.stages == nil {
			fmt.Fprintf(&b, "| %d | - | - | - | - | - |\n", l.conc)
			continue
		}
		s := l.disk.stages
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s |\n", l.conc, us(s["leader_write"]), us(s["replication"]), us(s["commit_send"]), us(s["voter_round"]), us(s["total"]))
	}
	b.WriteString("\nWhat each acknowledged change cost the processors (the runs above): the CPU time (utime + stime from /proc/PID/stat, getrusage for the bench's own clients) each part spent over the run, divided by the changes acknowledged. Every process of both systems runs on the same 2 cores, so at 16 clients and more this, not a disk, is what bounds a closed loop: changes/s is about the cores' time over the CPU per change. The kernel's own threads (block I/O completion, softirqs) are not in it.\n\n")
	b.WriteString("| clients | ours: LEADER | followers (2) | chunkservers (6) | clients | ours total | etcd: members (3) | clients | etcd total |\n|---|---|---|---|---|---|---|---|---|\n")
	for i, l := range r.ours {
		part := func(c *cpuCost, name string) string {
			if c == nil {
				return "-"
			}
			for _, p := range c.parts {
				if p.name == name {
					return us(p.per)
				}
			}
			return "-"
		}
		tot := func(c *cpuCost) string {
			if c == nil {
				return "-"
			}
			return us(c.total())
		}
		var e *cpuCost
		if i < len(r.etcd) {
			e = r.etcd[i].cpu
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.conc, part(l.cpu, "LEADER"), part(l.cpu, "followers"), part(l.cpu, "chunkservers"), part(l.cpu, "clients"), tot(l.cpu), part(e, "etcd"), part(e, "clients"), tot(e))
	}
	if o := r.overload; o != nil {
		fmt.Fprintf(&b, "\nOverload: %d clients (`pkg/client`, 32 to a source address) against a cluster of the same topology whose masters take at most MAX_PENDING = %d operations waiting for their acknowledgement, each client changing a counter of its own by compare-and-set, one change at a time, for %v. ", o.clients, o.maxPending, o.d)
		fmt.Fprintf(&b, "The LEADER acknowledged %d changes (%.0f/s) and answered %.0f BUSY (the clients asked again after a jittered back-off); its RSS went from %s to at most %s. ", o.acked, float64(o.acked)/o.d.Seconds(), o.busy, mib(o.rssBefore), mib(o.rssMax))
		if len(o.wrong) == 0 {
			fmt.Fprintf(&b, "Every counter read back at the number of changes its client saw acknowledged (or one more, for the %d clients whose last change timed out): none lost, none applied twice.\n", o.unknown)
		} else {
			fmt.Fprintf(&b, "%d counters were wrong (e.g. %s).\n", len(o.wrong), o.wrong[0])
		}
	}
	if r.profile64 != "" {
		fmt.Fprintf(&b, "\nThe LEADER's processor at 64 clients: a CPU profile over that run (`PPROF_LISTEN` on every master of the bench cluster), `go tool pprof -top`, the first 15:\n\n```\n%s\n```\n", r.profile64)
	}
	if r.profile64CS != "" {
		fmt.Fprintf(&b, "\nAnd one chunkserver's (cs1) over the same run:\n\n```\n%s\n```\n", r.profile64CS)
	}
	b.WriteString("\nkill -9 of the LEADER -> first change acknowledged after it (one writer changing one key in a loop):\n\n")
	b.WriteString("| system | trials | median | p90 | max |\n|---|---|---|---|---|\n")
	r.oursFirst.name = "ours"
	row(r.oursFirst)
	if len(r.etcdFirst.d) > 0 {
		r.etcdFirst.name = "etcd"
		row(r.etcdFirst)
	}
	b.WriteString("\nWhat a change waits for, in ours: the LEADER's fsync and a follower's side by side (the LEADER's Append leaves as its own write begins: docs/architecture.md §7, Overlap), then a heartbeat to every chunkserver with the new commit point, each of which fsyncs it before it answers; two fsyncs in a row and three round trips. One commit round and one Append to each follower are in flight at a time (§7, One round in flight): the changes that arrive meanwhile leave together when the one out is answered, so rounds grow with the load instead of their number, and throughput with the number of clients. etcd waits for its leader's and a follower's WAL fsync (in parallel) and one round trip.\n")
	return b.String()
}

// printSection prints one kind's section (for -only) and, unless doc is
// "", splices it into doc between its markers.
func printSection(doc, begin, body, end string) error {
	section := begin + "\n" + body + end + "\n\n"
	fmt.Print("\n" + section)
	if doc == "" {
		return nil
	}
	return splice(doc, section, begin, end)
}
