package main

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// A failover as its watchers see it: the LEADER killed (-9) or frozen
// (SIGSTOP), and pollers of every other master's /metrics and /healthz,
// each port in a loop of its own every 5 ms, time the first answer that
// shows a new LEADER, beside the new LEADER's own log line. What a
// monitoring system, an alert or a load balancer acts on is what those
// ports say, so the two should differ by a poll, not by a timeout.

// The markers of the section in docs/benchmarks.md (-only seen rewrites
// it alone).
const (
	seenBegin = "<!-- seen:begin -->"
	seenEnd   = "<!-- seen:end -->"
)

// seenPoll is how often each poller asks.
const seenPoll = 5 * time.Millisecond

// seenFault is one kind of fault's trials: from the fault to the log's
// transition, to the first /metrics and the first /healthz that showed it,
// and the slowest answer of each port over the trials.
type seenFault struct {
	name                   string
	log, metrics, healthz  series
	lagMetrics, lagHealthz series // seen minus the log
	slowestM, slowestH     time.Duration
	polls                  int
}

type seenRun struct {
	faults []seenFault
	err    error
}

// seenPhase runs trials of each fault on c.
func seenPhase(c *cluster.Cluster, trials int) seenRun {
	var r seenRun
	for _, freeze := range []bool{false, true} {
		f := seenFault{name: "kill -9 of the LEADER"}
		if freeze {
			f.name = "SIGSTOP of the LEADER"
		}
		for i := range trials {
			if err := seenTrial(c, freeze, &f); err != nil {
				r.err = fmt.Errorf("%s, trial %d: %w", f.name, i+1, err)
				r.faults = append(r.faults, f)
				return r
			}
		}
		r.faults = append(r.faults, f)
	}
	return r
}

func seenTrial(c *cluster.Cluster, freeze bool, f *seenFault) error {
	ls := leaders(c, time.Second)
	if len(ls) != 1 {
		return fmt.Errorf("%d LEADERs before the trial", len(ls))
	}
	lead := ls[0]
	p := c.Masters[lead]
	w := cluster.StartRoleWatch(c, lead, seenPoll)
	time.Sleep(300 * time.Millisecond) // the pollers under way
	t0 := time.Now()
	if freeze {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
	} else {
		p.Kill()
	}
	s := w.Wait(15 * time.Second)
	if freeze {
		_ = p.Signal(syscall.SIGCONT)
	} else if err := p.Start(); err != nil {
		return err
	}
	if s.Metrics.IsZero() || s.Healthz.IsZero() {
		return fmt.Errorf("no new LEADER seen on both ports within 15 s: %+v", s)
	}
	at := cluster.BecameLeader(c.Masters[s.MetricsMaster].Log, t0)
	if at.IsZero() {
		return fmt.Errorf("%s's /metrics said LEADER, its log has no role change since the fault", c.Masters[s.MetricsMaster].Addr)
	}
	f.log.d = append(f.log.d, at.Sub(t0))
	f.metrics.d = append(f.metrics.d, s.Metrics.Sub(t0))
	f.healthz.d = append(f.healthz.d, s.Healthz.Sub(t0))
	f.lagMetrics.d = append(f.lagMetrics.d, s.Metrics.Sub(at))
	f.lagHealthz.d = append(f.lagHealthz.d, s.Healthz.Sub(at))
	f.slowestM, f.slowestH = max(f.slowestM, s.SlowestMetrics), max(f.slowestH, s.SlowestHealthz)
	f.polls += s.Polls
	return settle(c, -1)
}

// seenSection is the section of docs/benchmarks.md, markers excluded.
func seenSection(r seenRun, trials int) string {
	var b strings.Builder
	b.WriteString("## Seen by a poller\n\n")
	b.WriteString("The `make run` topology (3 masters, 6 chunkservers in 3 locations). Pollers of every master but the LEADER, one loop per port each asking every 5 ms (`cluster.RoleWatch`), ")
	b.WriteString("time the first `/metrics` answer with `mfs_master_role{role=\"LEADER\"} 1` and the first `/healthz` 200 after the fault; the log column is the new LEADER's own `ELECT -> LEADER` line. ")
	b.WriteString("Goal: a poller sees the failover less than 50 ms after the log does. ")
	fmt.Fprintf(&b, "Reproduce: `go run ./internal/cluster/bench -only seen -trials=%d`.\n\n", trials)
	if len(r.faults) == 0 {
		fmt.Fprintf(&b, "Not measured in this run: %v\n\n", r.err)
		return b.String()
	}
	b.WriteString("| fault | trials | in the log (median / p90) | on /metrics | on /healthz | /metrics after the log (median / max) | /healthz after the log (median / max) | slowest answer /metrics, /healthz |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range r.faults {
		mp := func(s series) string { m, p, _ := s.stats(); return ms(m) + " / " + ms(p) }
		mx := func(s series) string { m, _, x := s.stats(); return ms(m) + " / " + ms(x) }
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s, %s |\n", f.name, len(f.log.d), mp(f.log), mp(f.metrics), mp(f.healthz),
			mx(f.lagMetrics), mx(f.lagHealthz), ms(f.slowestM), ms(f.slowestH))
	}
	if r.err != nil {
		fmt.Fprintf(&b, "\nThe run stopped early: %v\n", r.err)
	}
	b.WriteString("\nEach master's `/metrics` and `/healthz` are computed from its own state; the cluster alarms on `/metrics` come from status rounds the master runs in the background (docs/operations.md, \"Alarms\"), so a frozen peer delays no answer.\n\n")
	return b.String()
}
