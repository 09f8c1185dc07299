package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// What the adversary tests need from a running cluster: a watch for two
// LEADERs, memory and metric readings, a cloned chunkserver and log scans.

// Watch polls every master's status until Stop, and records every poll in
// which two masters report LEADER holding quorum at once.
type Watch struct {
	c      *Cluster
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	report WatchReport
}

// WatchReport is what a Watch saw.
type WatchReport struct {
	Polls int
	// Double lists the polls with two LEADERs holding quorum ("addr@epoch
	// addr@epoch" each); it must stay empty.
	Double []string
	// Epochs is the highest epoch each master reported.
	Epochs []uint64
	// Leaders counts, per master, the polls in which it was LEADER with
	// quorum.
	Leaders []int
}

// WatchLeaders starts polling every poll (a status round takes at most
// poll+300 ms per master that hangs).
func (c *Cluster) WatchLeaders(poll time.Duration) *Watch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watch{c: c, cancel: cancel, done: make(chan struct{})}
	w.report.Epochs = make([]uint64, len(c.Masters))
	w.report.Leaders = make([]int, len(c.Masters))
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			st, errs := c.Statuses(poll + 300*time.Millisecond)
			var lead []string
			w.mu.Lock()
			w.report.Polls++
			for i := range st {
				if errs[i] != nil {
					continue
				}
				w.report.Epochs[i] = max(w.report.Epochs[i], st[i].Epoch)
				if st[i].Role == roles.Leader && st[i].HoldsQuorum {
					w.report.Leaders[i]++
					lead = append(lead, fmt.Sprintf("%s@%d", st[i].Addr, st[i].Epoch))
				}
			}
			if len(lead) > 1 {
				w.report.Double = append(w.report.Double, time.Now().Format("15:04:05.000")+" "+strings.Join(lead, " "))
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(poll):
			}
		}
	}()
	return w
}

// Report is what the watch has seen so far.
func (w *Watch) Report() WatchReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.report
	r.Double = append([]string(nil), r.Double...)
	r.Epochs = append([]uint64(nil), r.Epochs...)
	r.Leaders = append([]int(nil), r.Leaders...)
	return r
}

// Stop ends the polling and returns the report.
func (w *Watch) Stop() WatchReport {
	w.cancel()
	<-w.done
	return w.Report()
}

// RSS is a process's resident memory (VmRSS of /proc/PID/status), in bytes.
func RSS(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// Metric reads one sample (e.g. go_memstats_heap_inuse_bytes,
// mfs_chunkserver_max_epoch, or a labelled one written as /metrics shows
// it) from a daemon's /metrics at addr.
func Metric(addr netip.AddrPort, name string, timeout time.Duration) (float64, error) {
	nc, err := net.DialTimeout("tcp", addr.String(), timeout)
	if err != nil {
		return 0, err
	}
	return metricOver(nc, addr, name, timeout)
}

// MetricIn is Metric for a daemon in network namespace ns: the
// connection is made from inside it (an http.Client dials on goroutines of
// its own, outside it).
func MetricIn(ns string, addr netip.AddrPort, name string, timeout time.Duration) (float64, error) {
	var nc net.Conn
	var derr error
	if err := InNetns(ns, func() { nc, derr = net.DialTimeout("tcp", addr.String(), timeout) }); err != nil {
		return 0, err
	}
	if derr != nil {
		return 0, derr
	}
	return metricOver(nc, addr, name, timeout)
}

// metricOver asks for /metrics on nc (closed after) and finds name.
func metricOver(nc net.Conn, addr netip.AddrPort, name string, timeout time.Duration) (float64, error) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(timeout))
	req, err := http.NewRequest(http.MethodGet, "http://"+addr.String()+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Close = true
	if err := req.Write(nc); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", addr, name)
}

// MasterHTTP is a master's metrics address (HTTP_LISTEN_PORT 9425).
func MasterHTTP(a netip.Addr) netip.AddrPort { return netip.AddrPortFrom(a, 9425) }

// CSHTTP is a chunkserver's metrics address (HTTP_LISTEN_PORT 9426).
func CSHTTP(a netip.Addr) netip.AddrPort { return netip.AddrPortFrom(a, 9426) }

// CloneCS starts a chunkserver with a copy of orig's data directory (its
// identity and voter record: a cloned VM) at cs.Addr, with extra config
// keys cfg (e.g. BIND_HOST = * so that it keeps the copied identity).
func (c *Cluster) CloneCS(orig *Proc, cs CS, cfg map[string]string) (*Proc, error) {
	src := filepath.Join(filepath.Dir(orig.Cfg), metadata.ChunkserverFile)
	return c.AddCSWith(cs, cfg, func(dir string) error {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, metadata.ChunkserverFile), b, 0o600)
	})
}

// LogLines returns the lines of a daemon's log that contain every one of
// needles (at most max of them).
func LogLines(path string, max int, needles ...string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() && len(out) < max {
		line := sc.Text()
		all := true
		for _, n := range needles {
			if !strings.Contains(line, n) {
				all = false
				break
			}
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}
