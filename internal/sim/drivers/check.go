package drivers

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/mfs-election/mfs-election/internal/linearize"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
)

// watcher reads every master's fenced role (MasterNode.Role, what
// /healthz and the status answer say) in passes, as fast as it can, and
// records any overlap of two LEADERs.
//
// Two passes read masters 0..n-1 in order. When master i says LEADER of
// epoch e in both, it was LEADER throughout the time between its two
// readings (a LEADER that lapses comes back only in a later epoch), and
// every other master's reading in between (j > i in the first pass, j < i
// in the second) must not say LEADER too.
type watcher struct {
	w    *world
	stop atomic.Bool
	done chan struct{}

	mu        sync.Mutex
	overlaps  []string
	terms     map[uint64]int // epoch -> the master (index) that led it
	passes    int
	sameEpoch []string
}

func startWatcher(w *world) *watcher {
	x := &watcher{w: w, done: make(chan struct{}), terms: map[uint64]int{}}
	go x.run()
	return x
}

func (x *watcher) read() []master.RoleReport {
	out := make([]master.RoleReport, len(x.w.masters))
	for i, m := range x.w.masters {
		if n := m.node.Load(); n != nil {
			out[i] = n.Role()
		}
	}
	return out
}

func (x *watcher) run() {
	defer close(x.done)
	prev := x.read()
	for !x.stop.Load() {
		cur := x.read()
		x.judge(prev, cur)
		prev = cur
		time.Sleep(200 * time.Microsecond)
	}
}

func (x *watcher) judge(a, b []master.RoleReport) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.passes++
	for i := range a {
		for _, r := range []master.RoleReport{a[i], b[i]} {
			if r.Role != roles.Leader {
				continue
			}
			if had, ok := x.terms[r.Epoch]; ok && had != i && len(x.sameEpoch) < 10 {
				x.sameEpoch = append(x.sameEpoch, fmt.Sprintf("epoch %d led by M%d and M%d", r.Epoch, had, i))
			}
			x.terms[r.Epoch] = i
		}
		if a[i].Role != roles.Leader || b[i] != a[i] {
			continue
		}
		for j := range a {
			between := a[j]
			if j < i {
				between = b[j]
			}
			if j != i && between.Role == roles.Leader && len(x.overlaps) < 10 {
				x.overlaps = append(x.overlaps, fmt.Sprintf("M%d LEADER of epoch %d while M%d was LEADER of epoch %d",
					j, between.Epoch, i, a[i].Epoch))
			}
		}
	}
}

func (x *watcher) finish() (overlaps []string, terms, passes int) {
	x.stop.Store(true)
	<-x.done
	x.mu.Lock()
	defer x.mu.Unlock()
	return append(x.overlaps, x.sameEpoch...), len(x.terms), x.passes
}

// startLoad starts the clients: each writes and reads three keys through
// pkg/client over memnet (linearize.Load), every operation with a known
// effect recorded for porcupine.
func startLoad(w *world, seed int64) (*linearize.Load, error) {
	ld := linearize.NewLoad(linearize.LoadOptions{Timeout: 3 * time.Second, Pace: 3 * time.Millisecond, ErrPause: 5 * time.Millisecond,
		Unknown: func(err error) bool { return errors.Is(err, client.ErrUnknown) }})
	var hosts []string
	for _, m := range w.masters {
		hosts = append(hosts, m.addr.String())
	}
	for i := range w.shape.clients {
		tr := w.net.Host(clientAddr(i))
		cl, err := client.New(client.Config{
			MasterHost: strings.Join(hosts, ","), Port: portCL, Attempt: 300 * time.Millisecond,
			Dial: func(addr netip.AddrPort, deadline time.Time) (net.Conn, error) {
				return tr.Dial(netip.Addr{}, addr, time.Until(deadline))
			},
		})
		if err != nil {
			ld.Stop()
			return nil, err
		}
		ld.Go(cl, i, rand.New(rand.NewPCG(uint64(seed), uint64(i))), func() { cl.Close() })
	}
	return ld, nil
}

// linearizable checks the history; a history that is not is written to
// an HTML file (its path returned) for porcupine's visualisation.
func linearizable(h []porcupine.Operation, dir string) (ok bool, why string) {
	res, info := porcupine.CheckOperationsVerbose(linearize.KV, h, 60*time.Second)
	switch res {
	case porcupine.Ok:
		return true, ""
	case porcupine.Unknown:
		return false, "the linearizability check timed out"
	}
	why = "the client history is not linearizable"
	if path, err := linearize.Visualize(info, dir); err == nil {
		why += ": " + path
	}
	return false, why
}
