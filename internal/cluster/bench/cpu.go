package main

import (
	"fmt"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// cpuCost is the CPU time one acknowledged change cost each part of a
// system during a run (utime+stime from /proc, getrusage for the bench
// process itself): on a 2-core host every process competes for the same
// two cores, so this, not the disk, bounds a closed loop's throughput.
type cpuCost struct {
	parts []cpuPart
}

type cpuPart struct {
	name string
	per  time.Duration // per acknowledged change, all processes of the part together
}

func (c cpuCost) total() time.Duration {
	var t time.Duration
	for _, p := range c.parts {
		t += p.per
	}
	return t
}

func (c cpuCost) String() string {
	s := ""
	for _, p := range c.parts {
		s += fmt.Sprintf("%s %s, ", p.name, us(p.per))
	}
	return s + "total " + us(c.total())
}

// cpuGroup names a set of processes measured together.
type cpuGroup struct {
	name string
	pids []int
}

// selfCPU is the bench process's own CPU time (its clients).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureCPU runs f and returns the CPU each group (and the bench's
// clients) spent per change f acknowledged; nil when a process could not
// be read before and after, or nothing was acknowledged.
func measureCPU(groups []cpuGroup, f func() (ops int, err error)) (*cpuCost, error) {
	read := func() ([]time.Duration, bool) {
		out := make([]time.Duration, len(groups))
		for i, g := range groups {
			for _, pid := range g.pids {
				s, err := sampleProc(pid)
				if err != nil {
					return nil, false
				}
				out[i] += s.cpu
			}
		}
		return out, true
	}
	a, okA := read()
	selfA := selfCPU()
	ops, err := f()
	selfB := selfCPU()
	b, okB := read()
	if err != nil || !okA || !okB || ops == 0 {
		return nil, err
	}
	var c cpuCost
	for i, g := range groups {
		c.parts = append(c.parts, cpuPart{g.name, (b[i] - a[i]) / time.Duration(ops)})
	}
	c.parts = append(c.parts, cpuPart{"clients", (selfB - selfA) / time.Duration(ops)})
	return &c, nil
}

// oursGroups: the LEADER, the other masters, the chunkservers (nil
// groups when the LEADER is not known: measureCPU then reports only the
// clients' part, which is better than none).
func oursGroups(c *cluster.Cluster) []cpuGroup {
	lead, err := leaderOf(c, 2*time.Second)
	if err != nil {
		return nil
	}
	g := []cpuGroup{{name: "LEADER"}, {name: "followers"}, {name: "chunkservers"}}
	for i, m := range c.Masters {
		if i == lead {
			g[0].pids = append(g[0].pids, m.Pid())
		} else {
			g[1].pids = append(g[1].pids, m.Pid())
		}
	}
	for _, p := range c.CS {
		g[2].pids = append(g[2].pids, p.Pid())
	}
	return g
}

// etcdGroups: every etcd member together (etcd's leader forwards nothing
// here: the clients spread over all members, as etcd's benchmark does).
func etcdGroups(ms []*etcdMember) []cpuGroup {
	g := cpuGroup{name: "etcd"}
	for _, m := range ms {
		if m.cmd != nil && m.cmd.Process != nil {
			g.pids = append(g.pids, m.cmd.Process.Pid)
		}
	}
	return []cpuGroup{g}
}
