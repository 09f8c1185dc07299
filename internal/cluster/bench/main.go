// Command bench is `make bench`: failover of the make run topology under
// kill -9 and SIGSTOP, 200 ms stalls that must depose nobody, and a
// 3-member etcd cluster's kill -9 failover with its default settings in the
// same run. It writes docs/benchmarks.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
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
	only := flag.String("only", "", "run one kind only: kill, freeze or etcd (for a look; the doc is not written)")
	flag.Parse()
	if err := run(*trials, *doc, uint8(*base), *keep, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type series struct {
	name string
	d    []time.Duration
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

func run(trials int, doc string, base uint8, keep, only string) error {
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
	s := cluster.Local(filepath.Join(work, "mfs"), bin, base)
	s.MasterCfg = map[string]string{"SELF_NOMINATE_AFTER": "1s"}
	if keep != "" {
		s.CSCfg = map[string]string{"LOG_LEVEL": "debug"}
	}
	c, err := cluster.Start(s)
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := settle(c, -1); err != nil {
		return err
	}
	kill := series{name: "kill -9 of the LEADER -> new LEADER"}
	freeze := series{name: "SIGSTOP of the LEADER -> new LEADER"}
	deposed, doubles := 0, 0
	for i := 0; i < trials && (only == "" || only == "kill"); i++ {
		d, err := trial(c, false)
		if err != nil {
			return fmt.Errorf("kill trial %d: %w", i+1, err)
		}
		kill.d = append(kill.d, d)
		fmt.Printf("kill -9 #%d: %v\n", i+1, d.Round(time.Millisecond))
	}
	for i := 0; i < trials && (only == "" || only == "freeze"); i++ {
		d, err := trial(c, true)
		if err != nil {
			return fmt.Errorf("freeze trial %d: %w", i+1, err)
		}
		freeze.d = append(freeze.d, d)
		fmt.Printf("SIGSTOP #%d: %v\n", i+1, d.Round(time.Millisecond))
	}
	for i := 0; i < trials && only == ""; i++ {
		dep, dbl, err := stall(c, 200*time.Millisecond)
		if err != nil {
			return fmt.Errorf("stall trial %d: %w", i+1, err)
		}
		deposed += dep
		doubles += dbl
	}
	fmt.Printf("200 ms stalls: %d of %d deposed the LEADER; %d polls saw two LEADERs holding quorum\n", deposed, trials, doubles)
	c.Stop()

	if only != "" && only != "etcd" {
		return nil
	}
	etcdKill := series{name: "etcd (3 members, default settings): kill -9 of the leader -> new leader"}
	etcdVersion, etcdErr := etcdBench(work, base, trials, &etcdKill)
	if etcdErr != nil {
		fmt.Println("etcd:", etcdErr)
	}
	if only != "" {
		return etcdErr
	}
	return write(doc, trials, kill, freeze, etcdKill, etcdVersion, etcdErr, deposed, doubles)
}

// settle waits until a LEADER counts every chunkserver and every master
// answers as LEADER or a synced FOLLOWER, then a little longer so restarted
// chunkservers are past their quiet time.
func settle(c *cluster.Cluster, not int) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st, errs := c.Statuses(time.Second)
		ok := true
		leaders := 0
		for i := range st {
			if errs[i] != nil {
				ok = false
				continue
			}
			switch {
			case st[i].Role == roles.Leader && st[i].HoldsQuorum && st[i].Voters == len(c.CS):
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
	return fmt.Errorf("cluster did not settle within 60 s")
}

// trial kills (or freezes) the LEADER and measures until another master
// logs that it became LEADER; then it brings the old one back and settles.
func trial(c *cluster.Cluster, freeze bool) (time.Duration, error) {
	ls := c.Leaders()
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
	next, _, err := c.WaitLeader(15*time.Second, 20*time.Millisecond, lead)
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
	return at.Sub(t0), settle(c, -1)
}

// stall freezes the LEADER for d and checks it is still LEADER at the same
// epoch afterwards; it also counts polls that saw two LEADERs with quorum.
func stall(c *cluster.Cluster, d time.Duration) (deposed, doubles int, err error) {
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
		if err := settle(c, -1); err != nil {
			return deposed, doubles, err
		}
	}
	return deposed, doubles, nil
}

func write(doc string, trials int, kill, freeze, etcdKill series, etcdVersion string, etcdErr error, deposed, doubles int) error {
	var b strings.Builder
	now := time.Now().UTC().Format("2006-01-02 15:04 UTC")
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` (internal/cluster/bench) on %s, %d cores, %s/%s. ", now, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "Reproduce with `make bench` (TRIALS=N for another count); it needs nothing but Go, and installs etcd from Debian's packages when it is missing.\n\n")
	b.WriteString("## Failover\n\n")
	b.WriteString("The `make run` topology on loopback: 3 masters, 6 chunkservers in 3 locations (one voter-only in each), all real processes. ")
	b.WriteString("A trial signals the LEADER and measures until another master logs its `ELECT -> LEADER` role change (the same clock: one machine). ")
	b.WriteString("After each trial the old LEADER is restarted (kill) or resumed (SIGSTOP) and the cluster settles (a LEADER counting all 6 votes, the others synced FOLLOWERs) before the next.\n\n")
	b.WriteString("Settings: the defaults (VOTE_LEASE 800ms, HEARTBEAT_INTERVAL 100ms, MAX_CLOCK_DRIFT 0.01, LEASE_MARGIN 10ms; chunkservers PROBE_INTERVAL 50ms, NOMINATE_SLOT 60ms, MAX_PROMISE 2s, TRUST_REFUSED 1).\n\n")
	b.WriteString("| what | trials | median | p90 | max |\n|---|---|---|---|---|\n")
	row := func(s series) {
		med, p90, mx := s.stats()
		fmt.Fprintf(&b, "| %s | %d | %v | %v | %v |\n", s.name, len(s.d), ms(med), ms(p90), ms(mx))
	}
	row(kill)
	row(freeze)
	if etcdErr == nil {
		row(etcdKill)
	}
	b.WriteString("\n")
	if etcdErr == nil {
		km, _, _ := kill.stats()
		em, _, _ := etcdKill.stats()
		fm, _, _ := freeze.stats()
		fmt.Fprintf(&b, "Ratios of medians: etcd kill -9 / ours kill -9 = %.1fx; etcd kill -9 / ours SIGSTOP = %.2fx. ", float64(em)/float64(km), float64(em)/float64(fm))
		fmt.Fprintf(&b, "etcd %s, 3 members on loopback with its default settings (heartbeat 100 ms, election timeout 1000 ms), measured from the kill to the `became leader` line in a survivor's log.\n\n", etcdVersion)
	} else {
		fmt.Fprintf(&b, "etcd was not measured in this run: %v\n\n", etcdErr)
	}
	fmt.Fprintf(&b, "Stability: %d trials of a 200 ms SIGSTOP of the LEADER (two heartbeats lost): %d deposed it. ", trials, deposed)
	fmt.Fprintf(&b, "Polls every 50 ms during and after them that saw two masters report LEADER holding quorum: %d.\n\n", doubles)
	b.WriteString("Why the figures are what they are: a killed LEADER's port refuses the chunkservers' next dial at once, which releases their promises (the kill -9 fast path, docs/architecture.md); ")
	b.WriteString("a frozen one keeps its connections open and says nothing, so its voters wait out the promise (VOTE_LEASE from the last heartbeat they received) before they nominate and vote again.\n")
	if err := os.MkdirAll(filepath.Dir(doc), 0o755); err != nil {
		return err
	}
	fmt.Print("\n" + b.String())
	return os.WriteFile(doc, []byte(b.String()), 0o644)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
