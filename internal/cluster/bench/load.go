package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// A busy host: two busy loops per core, at the daemons' own nice level,
// for loadFor, on an otherwise idle cluster; the LEADER changes and the
// longest time without a LEADER, from loadFor's start to lossAfter past
// its end, read from the logs as for packet loss. etcd beside it under
// the same load.

const (
	loadBegin = "<!-- load:begin -->"
	loadEnd   = "<!-- load:end -->"
	loadFor   = 10 * time.Second
)

type loadRun struct {
	ours, etcd       []lossTrial
	oursErr, etcdErr error
	etcdVersion      string
	loops            int
}

// busy starts r.loops busy loops (sh), each its own process group, and
// returns their stop.
func (r loadRun) busy() (stop func() error, err error) {
	var cmds []*exec.Cmd
	stop = func() error {
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
		return nil
	}
	for range r.loops {
		c := exec.Command("sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			stop()
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

func loadPhase(work string, base uint8, trials int, spec func(dir string) cluster.Spec) loadRun {
	r := loadRun{loops: 2 * runtime.NumCPU()}
	r.oursErr = withCluster(spec("mfs-load"), func(c *cluster.Cluster) error {
		if err := settle(c, -1); err != nil {
			return err
		}
		for i := range trials {
			from, end, err := faultWindow(r.busy, loadFor)
			if err != nil {
				return err
			}
			t := oursTrial(c, from, end)
			r.ours = append(r.ours, t)
			fmt.Printf("load trial %d (ours): %d LEADER changes, longest without a LEADER %v\n", i+1, t.changes, ms(t.gap))
			if err := settle(c, -1); err != nil {
				return err
			}
		}
		return nil
	})
	members, version, err := etcdStartIn(filepath.Join(work, "etcd-load"), base, "")
	r.etcdVersion = version
	if err != nil {
		r.etcdErr = err
		return r
	}
	defer etcdStop(members)
	time.Sleep(2 * time.Second)
	for i := range trials {
		from, end, err := faultWindow(r.busy, loadFor)
		if err != nil {
			r.etcdErr = err
			break
		}
		t := etcdTrial(members, from, end)
		r.etcd = append(r.etcd, t)
		fmt.Printf("load trial %d (etcd): %d leader changes, longest without a leader %v\n", i+1, t.changes, ms(t.gap))
		time.Sleep(2 * time.Second)
	}
	return r
}

// loadSection is the section of docs/benchmarks.md, markers excluded.
func loadSection(r loadRun, trials int) string {
	var b strings.Builder
	b.WriteString("## A busy host\n\n")
	fmt.Fprintf(&b, "The `make run` topology, at rest; %d busy loops (`sh -c 'while :; do :; done'`, two per core, at the daemons' own nice level) for %v; ", r.loops, loadFor)
	fmt.Fprintf(&b, "counted from the load's start to %v after its end, from the masters' own logs: the LEADER changes, and the longest time no master was LEADER. etcd beside it under the same load: 3 members with default settings, from its members' logs. Goal: a LEADER that still runs keeps its role. Reproduce: `go run ./internal/cluster/bench -only load -trials=%d`.\n\n", lossAfter, trials)
	b.WriteString("| system | trials | LEADER changes per trial | trials with no change | longest without a LEADER (median) | (max) |\n|---|---|---|---|---|---|\n")
	lossRows(&b, "ours, the defaults", r.ours, r.oursErr)
	lossRows(&b, "etcd "+r.etcdVersion, r.etcd, r.etcdErr)
	b.WriteString("\n")
	return b.String()
}
