package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// Packet loss on the LEADER's links: 20% of the packets from and to it
// dropped, both ways, for lossFor (iptables in a network namespace), and
// what it cost: LEADER changes, and the longest time without a LEADER,
// from the loss's start to lossAfter past its end. Ours read from the
// masters' logs (cluster.LeaderTerms); etcd beside it, 3 members with its
// default settings, the loss on its leader, read from its members' logs.

const (
	lossBegin = "<!-- loss:begin -->"
	lossEnd   = "<!-- loss:end -->"
	lossRate  = 0.2
	lossFor   = 8 * time.Second
	lossAfter = 3 * time.Second
)

type lossTrial struct {
	changes int
	gap     time.Duration
}

type lossRun struct {
	ours, tcp, etcd          []lossTrial
	oursErr, tcpErr, etcdErr error
	etcdVersion              string
	// freeze: SIGSTOP of the LEADER -> new LEADER on the default
	// cluster, after its loss trials (no loss): what the datagram path
	// must not slow.
	freeze series
}

// lossTCP turns the datagram path off: votes renewed on TCP alone, as
// before HEARTBEAT_UDP, measured beside the defaults in the same run.
var lossTCP = map[string]string{"HEARTBEAT_UDP": "0"}

// lossPhase runs trials of each, in a namespace of its own.
func lossPhase(work, bin string, base uint8, trials int, spec func(dir string, masterCfg map[string]string) cluster.Spec) lossRun {
	var r lossRun
	ns := fmt.Sprintf("mfs-bench-loss-%d", os.Getpid())
	if err := cluster.NewNetns(ns); err != nil {
		r.oursErr, r.etcdErr = err, err
		return r
	}
	defer func() { _ = cluster.DeleteNetns(ns) }()
	ours := func(name string, cfg map[string]string, out *[]lossTrial, freeze *series) error {
		s := spec(name, cfg)
		s.Netns = ns
		return withCluster(s, func(c *cluster.Cluster) error {
			if err := settle(c, -1); err != nil {
				return err
			}
			for i := range trials {
				t, err := lossOurs(c, ns)
				if err != nil {
					return fmt.Errorf("trial %d: %w", i+1, err)
				}
				*out = append(*out, t)
				fmt.Printf("loss trial %d (%s): %d LEADER changes, longest without a LEADER %v\n", i+1, name, t.changes, ms(t.gap))
				if err := settle(c, -1); err != nil {
					return err
				}
			}
			for i := 0; freeze != nil && i < trials; i++ {
				d, err := trial(c, true)
				if err != nil {
					return fmt.Errorf("SIGSTOP trial %d: %w", i+1, err)
				}
				freeze.d = append(freeze.d, d)
			}
			return nil
		})
	}
	r.oursErr = ours("mfs-loss", nil, &r.ours, &r.freeze)
	r.tcpErr = ours("mfs-loss-tcp", lossTCP, &r.tcp, nil)
	members, version, err := etcdStartIn(filepath.Join(work, "etcd-loss"), base, ns)
	r.etcdVersion = version
	if err != nil {
		r.etcdErr = err
		return r
	}
	defer etcdStop(members)
	for i := range trials {
		t, err := lossEtcd(members, ns)
		if err != nil {
			r.etcdErr = fmt.Errorf("trial %d: %w", i+1, err)
			break
		}
		r.etcd = append(r.etcd, t)
		fmt.Printf("loss trial %d (etcd): %d leader changes, longest without a leader %v\n", i+1, t.changes, ms(t.gap))
		time.Sleep(2 * time.Second)
	}
	return r
}

func lossOurs(c *cluster.Cluster, ns string) (lossTrial, error) {
	ls := leaders(c, time.Second)
	if len(ls) != 1 {
		return lossTrial{}, fmt.Errorf("%d LEADERs before the loss", len(ls))
	}
	from, end, err := faultWindow(func() (func() error, error) { return cluster.Lossy(ns, c.Masters[ls[0]].Addr, lossRate) }, lossFor)
	if err != nil {
		return lossTrial{}, err
	}
	return oursTrial(c, from, end), nil
}

func lossEtcd(ms []*etcdMember, ns string) (lossTrial, error) {
	lead := etcdLogLeader(ms)
	if lead < 0 {
		return lossTrial{}, fmt.Errorf("no etcd leader in the logs")
	}
	from, end, err := faultWindow(func() (func() error, error) {
		return cluster.Lossy(ns, netip.MustParseAddr(ms[lead].addr), lossRate)
	}, lossFor)
	if err != nil {
		return lossTrial{}, err
	}
	return etcdTrial(ms, from, end), nil
}

// faultWindow starts a fault, holds it for hold, ends it, and waits
// lossAfter for what it set off: the window [from, end] to read the logs
// over.
func faultWindow(start func() (stop func() error, err error), hold time.Duration) (from, end time.Time, err error) {
	stop, err := start()
	if err != nil {
		return from, end, err
	}
	from = time.Now()
	time.Sleep(hold)
	if err := stop(); err != nil {
		return from, end, err
	}
	time.Sleep(lossAfter)
	return from, time.Now(), nil
}

// oursTrial is what the masters' logs say of [from, end].
func oursTrial(c *cluster.Cluster, from, end time.Time) lossTrial {
	var logs []string
	for _, m := range c.Masters {
		logs = append(logs, m.Log)
	}
	changes, gap := cluster.Leadership(cluster.LeaderTerms(logs, from), from, end)
	return lossTrial{changes, gap}
}

// etcdTrial is what the etcd members' logs say of [from, end].
func etcdTrial(ms []*etcdMember, from, end time.Time) lossTrial {
	var t lossTrial
	for _, m := range ms {
		t.changes += etcdCount(m.log, from, "became leader")
		t.gap = max(t.gap, etcdLeaderless(m.log, from, end))
	}
	return t
}

// etcdLine is one zap log line's time and message.
func etcdLines(path string, since time.Time, f func(ts time.Time, msg string)) {
	cluster.LastLogTime(path, since, func(line []byte) (time.Time, bool) {
		var l struct {
			TS  string `json:"ts"`
			Msg string `json:"msg"`
		}
		if json.Unmarshal(line, &l) != nil {
			return time.Time{}, false
		}
		t, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", l.TS)
		if err != nil || t.Before(since) {
			return time.Time{}, false
		}
		f(t, l.Msg)
		return t, true
	})
}

// etcdCount counts the lines at or after since whose message holds what.
func etcdCount(path string, since time.Time, what string) int {
	n := 0
	etcdLines(path, since, func(_ time.Time, msg string) {
		if strings.Contains(msg, what) {
			n++
		}
	})
	return n
}

// etcdLeaderless is the longest time in [since, end] a member's log says
// it had no leader: from a "lost leader" line to the next "elected
// leader" (or end).
func etcdLeaderless(path string, since, end time.Time) time.Duration {
	var lost time.Time
	var longest time.Duration
	etcdLines(path, since, func(ts time.Time, msg string) {
		switch {
		case strings.Contains(msg, "lost leader") && lost.IsZero():
			lost = ts
		case strings.Contains(msg, "elected leader") && !lost.IsZero():
			longest, lost = max(longest, ts.Sub(lost)), time.Time{}
		}
	})
	if !lost.IsZero() {
		longest = max(longest, end.Sub(lost))
	}
	return longest
}

// etcdLogLeader is the member that logged the newest "became leader"
// (-1: none).
func etcdLogLeader(ms []*etcdMember) int {
	best, at := -1, time.Time{}
	for i, m := range ms {
		if t := becameLeaderEtcd(m.log, time.Time{}); !t.IsZero() && t.After(at) {
			best, at = i, t
		}
	}
	return best
}

// lossSection is the section of docs/benchmarks.md, markers excluded.
func lossSection(r lossRun, trials int) string {
	var b strings.Builder
	b.WriteString("## Packet loss on the LEADER's links\n\n")
	fmt.Fprintf(&b, "The `make run` topology inside a network namespace; %.0f%% of the packets from and to the LEADER dropped, both ways (iptables' statistic match), for %v; ", lossRate*100, lossFor)
	fmt.Fprintf(&b, "counted from the loss's start to %v after its end, from the masters' own logs: the LEADER changes, and the longest time no master was LEADER. ", lossAfter)
	fmt.Fprintf(&b, "etcd beside it, in the same namespace: 3 members with default settings, the loss on its leader, from its members' logs (`became leader`; `lost leader` to `elected leader`). Goal: no change, never over 0.5 s without a LEADER. Reproduce: `go run ./internal/cluster/bench -only loss -trials=%d`.\n\n", trials)
	b.WriteString("| system | trials | LEADER changes per trial | trials with no change | longest without a LEADER (median) | (max) |\n|---|---|---|---|---|---|\n")
	lossRows(&b, "ours, the defaults (heartbeats also as datagrams)", r.ours, r.oursErr)
	lossRows(&b, "ours, "+tcpWords()+" (TCP alone, as before)", r.tcp, r.tcpErr)
	lossRows(&b, "etcd "+r.etcdVersion, r.etcd, r.etcdErr)
	if len(r.freeze.d) > 0 {
		med, p90, mx := r.freeze.stats()
		fmt.Fprintf(&b, "\nFailover is not slowed: SIGSTOP of the LEADER -> new LEADER on the default cluster after its loss trials (no loss), %d trials: median %s, p90 %s, max %s (the Failover table has more).\n", len(r.freeze.d), ms(med), ms(p90), ms(mx))
	}
	if r.oursErr != nil && len(r.ours) > 0 {
		fmt.Fprintf(&b, "\nOurs stopped early: %v\n", r.oursErr)
	}
	if r.etcdErr != nil && len(r.etcd) > 0 {
		fmt.Fprintf(&b, "\netcd stopped early: %v\n", r.etcdErr)
	}
	b.WriteString("\n")
	return b.String()
}

// tcpWords names lossTCP's settings.
func tcpWords() string {
	var kv []string
	for k, v := range lossTCP {
		kv = append(kv, k+" = "+v)
	}
	slices.Sort(kv)
	return strings.Join(kv, ", ")
}

// lossRows writes one row of trials (the LEADER changes and the longest
// time without a LEADER) into b.
func lossRows(b *strings.Builder, name string, ts []lossTrial, err error) {
	if len(ts) == 0 {
		fmt.Fprintf(b, "| %s | 0 | not measured: %v | | | |\n", name, err)
		return
	}
	var changes []string
	kept := 0
	var gaps series
	for _, t := range ts {
		changes = append(changes, fmt.Sprint(t.changes))
		if t.changes == 0 {
			kept++
		}
		gaps.d = append(gaps.d, t.gap)
	}
	med, _, mx := gaps.stats()
	fmt.Fprintf(b, "| %s | %d | %s | %d of %d | %s | %s |\n", name, len(ts), strings.Join(changes, ", "), kept, len(ts), ms(med), ms(mx))
}
