package main

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// profilePort is where each master of a profiled point serves its
// profiles (PPROF_LISTEN on its own loopback address).
const profilePort = 6060

// profileWindow is how long each CPU profile runs.
const profileWindow = 10 * time.Second

// fetchProfile takes a CPU profile of secs from a pprof endpoint into
// path.
func fetchProfile(base, path string, d time.Duration) error {
	hc := &http.Client{Timeout: d + 30*time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", base, int(d/time.Second)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s %s", base, resp.Status, strings.TrimSpace(string(b)))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// topOf is `go tool pprof -top` of a profile: its header and n lines.
func topOf(path string, n int) string {
	out, err := exec.Command("go", "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", n), path).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(go tool pprof: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	return strings.TrimRight(string(out), "\n")
}

// profileSteady profiles the LEADER at rest and prints its top 15.
func profileSteady(c *cluster.Cluster, n, locs int, o scaleOpts, st time.Duration) {
	lead, err := leaderOf(c, st)
	if err != nil {
		fmt.Printf("scale N=%d L=%d: no profile at rest: %v\n", n, locs, err)
		return
	}
	path := filepath.Join(o.profile, fmt.Sprintf("leader-rest-%d-%d.pprof", n, locs))
	if err := fetchProfile(netip.AddrPortFrom(c.Masters[lead].Addr, profilePort).String(), path, profileWindow); err != nil {
		fmt.Printf("scale N=%d L=%d: no profile at rest: %v\n", n, locs, err)
		return
	}
	fmt.Printf("scale N=%d L=%d: the LEADER at rest, %v CPU profile (%s):\n%s\n", n, locs, profileWindow, path, topOf(path, 15))
}

// profileFailover starts CPU profiles of every master but the LEADER and
// of every swarm process, to run over the failover about to start; the
// function it returns waits for them and prints each top 15.
func profileFailover(c *cluster.Cluster, w cluster.Swarms, n, locs int, freeze bool, o scaleOpts, st time.Duration) func() {
	what := "kill"
	if freeze {
		what = "stop"
	}
	return profileAround(c, w, n, locs, what, what+" failover", false, o, st)
}

// profileStorm is profileFailover for the reconnect storm about to start,
// the LEADER included: it is the one that must keep its quorum.
func profileStorm(c *cluster.Cluster, w cluster.Swarms, n, locs int, o scaleOpts, st time.Duration) func() {
	return profileAround(c, w, n, locs, "storm", "reconnect storm", true, o, st)
}

// profileAround starts CPU profiles of the masters (the LEADER too when
// withLeader) and of every swarm process over the event about to start
// (what names the files, label the printout); the function it returns
// waits for them and prints each top 15.
func profileAround(c *cluster.Cluster, w cluster.Swarms, n, locs int, what, label string, withLeader bool, o scaleOpts, st time.Duration) func() {
	lead, err := leaderOf(c, st)
	if err != nil {
		fmt.Printf("scale N=%d L=%d: no %s profile: %v\n", n, locs, what, err)
		return nil
	}
	type job struct{ name, base, path string }
	var jobs []job
	for i, m := range c.Masters {
		if i != lead || withLeader {
			jobs = append(jobs, job{m.Name, netip.AddrPortFrom(m.Addr, profilePort).String(),
				filepath.Join(o.profile, fmt.Sprintf("%s-%s-%d-%d-%s.pprof", what, m.Name, n, locs, m.Addr))})
		}
	}
	for i, sw := range w {
		jobs = append(jobs, job{fmt.Sprintf("swarm%d", i+1), sw.Spec.Status.String(),
			filepath.Join(o.profile, fmt.Sprintf("%s-swarm%d-%d-%d.pprof", what, i+1, n, locs))})
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { errs[i] = fetchProfile(j.base, j.path, profileWindow) })
	}
	time.Sleep(500 * time.Millisecond) // the profiles are running before the fault
	return func() {
		wg.Wait()
		for i, j := range jobs {
			if errs[i] != nil {
				fmt.Printf("scale N=%d L=%d: %s profile of %s: %v\n", n, locs, what, j.name, errs[i])
				continue
			}
			fmt.Printf("scale N=%d L=%d: %s over the first %s, %v CPU profile (%s):\n%s\n", n, locs, j.name, label, profileWindow, j.path, topOf(j.path, 15))
		}
	}
}

// profileLeader starts a CPU profile of the LEADER over d (PPROF_LISTEN
// on profilePort) into path; the function it returns waits for it and
// puts its top 15 in *top (nil: there was no LEADER; *top says so).
func profileLeader(c *cluster.Cluster, path string, d time.Duration, top *string) func() {
	lead, err := leaderOf(c, 2*time.Second)
	if err != nil {
		*top = fmt.Sprintf("(not profiled: %v)", err)
		return nil
	}
	return profileAt(netip.AddrPortFrom(c.Masters[lead].Addr, profilePort).String(), path, d, top)
}

// profileAt starts a CPU profile over d of the process serving pprof at
// base into path; the function it returns waits for it and puts its top
// 15 in *top.
func profileAt(base, path string, d time.Duration, top *string) func() {
	done := make(chan error, 1)
	go func() { done <- fetchProfile(base, path, d) }()
	return func() {
		if err := <-done; err != nil {
			*top = fmt.Sprintf("(not profiled: %v)", err)
			return
		}
		*top = topOf(path, 15)
	}
}
