package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// Asymmetric cuts: the LEADER cut off one way only (iptables in a network
// namespace): it cannot receive (its heartbeats still reach the voters,
// their answers do not reach it), or it cannot send. Timed from the cut:
// its own step-down (its log's LEADER -> line) and the next LEADER's
// ELECT -> LEADER line.

const (
	onewayBegin = "<!-- oneway:begin -->"
	onewayEnd   = "<!-- oneway:end -->"
)

type onewayDir struct {
	name       string
	in         bool
	step, next series
}

type onewayRun struct {
	dirs []onewayDir
	err  error
}

func onewayPhase(trials int, spec func(dir string) cluster.Spec) onewayRun {
	r := onewayRun{dirs: []onewayDir{{name: "the LEADER cannot receive", in: true}, {name: "the LEADER cannot send"}}}
	ns := fmt.Sprintf("mfs-bench-oneway-%d", os.Getpid())
	if err := cluster.NewNetns(ns); err != nil {
		r.err = err
		return r
	}
	defer func() { _ = cluster.DeleteNetns(ns) }()
	s := spec("mfs-oneway")
	s.Netns = ns
	r.err = withCluster(s, func(c *cluster.Cluster) error {
		if err := settle(c, -1); err != nil {
			return err
		}
		for i := range trials {
			for d := range r.dirs {
				dir := &r.dirs[d]
				if err := onewayTrial(c, ns, dir); err != nil {
					return fmt.Errorf("%s, trial %d: %w", dir.name, i+1, err)
				}
				if err := settle(c, -1); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return r
}

func onewayTrial(c *cluster.Cluster, ns string, dir *onewayDir) error {
	ls := leaders(c, time.Second)
	if len(ls) != 1 {
		return fmt.Errorf("%d LEADERs before the cut", len(ls))
	}
	old := c.Masters[ls[0]]
	heal, err := cluster.OneWay(ns, old.Addr, dir.in)
	if err != nil {
		return err
	}
	from := time.Now()
	next, _, err := c.WaitLeader(10*time.Second, 20*time.Millisecond, ls[0])
	var left time.Time
	for end := time.Now().Add(5 * time.Second); err == nil && left.IsZero() && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		left = cluster.LeftLeader(old.Log, from)
	}
	if herr := heal(); herr != nil {
		return herr
	}
	if err != nil {
		return err
	}
	came := cluster.BecameLeader(c.Masters[next].Log, from)
	if left.IsZero() || came.IsZero() {
		return fmt.Errorf("no step-down (%v) or no new LEADER (%v) in the logs", left, came)
	}
	dir.step.d = append(dir.step.d, left.Sub(from))
	dir.next.d = append(dir.next.d, came.Sub(from))
	return nil
}

func onewaySection(r onewayRun, trials int) string {
	var b strings.Builder
	b.WriteString("## Asymmetric cuts\n\n")
	fmt.Fprintf(&b, "The `make run` topology inside a network namespace; every packet to the LEADER dropped (it cannot receive) or every packet from it (it cannot send), the other way untouched (iptables), until another master leads; timed from the cut to the old LEADER's own step-down in its log and to the new LEADER's `ELECT -> LEADER` line. Goal: the step-down within the lease (0.5 s), the new LEADER within 1 s. Reproduce: `go run ./internal/cluster/bench -only oneway -trials=%d`.\n\n", trials)
	b.WriteString("| cut | trials | step-down (median / p90 / max) | new LEADER (median / p90 / max) |\n|---|---|---|---|\n")
	for _, d := range r.dirs {
		f := func(s series) string { m, p, x := s.stats(); return ms(m) + " / " + ms(p) + " / " + ms(x) }
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", d.name, len(d.step.d), f(d.step), f(d.next))
	}
	if r.err != nil {
		fmt.Fprintf(&b, "\nThe run stopped early: %v\n", r.err)
	}
	b.WriteString("\n")
	return b.String()
}
