package drivers

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"
)

// shape is what a seed draws before the run: the cluster's size and the
// network's quality.
type shape struct {
	masters, voters, clients int
	datagrams                bool // HEARTBEAT_UDP: the datagram path beside TCP
	loss                     float64
	latency                  time.Duration
	snapshotEvery            uint64 // small, so that snapshots are made and sent
}

func drawShape(rng *rand.Rand) shape {
	return shape{
		masters: 3, voters: 3 + rng.IntN(4), clients: 1 + rng.IntN(3),
		datagrams:     rng.IntN(4) != 0,
		loss:          []float64{0, 0, 0.05, 0.2}[rng.IntN(4)],
		latency:       []time.Duration{0, 0, 200 * time.Microsecond, 2 * time.Millisecond}[rng.IntN(4)],
		snapshotEvery: uint64(20 + rng.IntN(100)),
	}
}

// faultKind is one entry of the drivers' fault menu.
type faultKind uint8

const (
	fKillMaster  faultKind = iota // kill -9 of a master (the LEADER, mostly), restarted later
	fStopMaster                   // SIGTERM: goodbyes sent, restarted later
	fKillCS                       // kill -9 of a chunkserver, restarted later
	fIsolate                      // a master cut off from every host both ways
	fDeaf                         // a master that sends but hears nothing
	fMute                         // a master that hears but whose sends are held
	fSplitVoters                  // half the voters cut off from a master
	fCutVoters                    // every voter's connections to a master reset (a reconnect storm)
	fLatency                      // a slow network for a while
	fLoss                         // datagrams lost for a while
	fPauseMaster                  // SIGSTOP of a master: its loop held and its host cut off, then SIGCONT
	fPauseCS                      // SIGSTOP of a chunkserver
	numFaults
)

var faultNames = [numFaults]string{"kill_master", "stop_master", "kill_cs", "isolate_master", "deaf_master",
	"mute_master", "split_voters", "cut_voters", "latency", "datagram_loss", "pause_master", "pause_cs"}

func (k faultKind) String() string { return faultNames[k] }

// fault is one scheduled fault: what, on which host, for how long.
type fault struct {
	kind   faultKind
	target int // a master's or chunkserver's index; -1: the LEADER when it starts
	hold   time.Duration
	gap    time.Duration // quiet time after it is undone
}

func drawSchedule(rng *rand.Rand, n int) []fault {
	var fs []fault
	for range n {
		fs = append(fs, fault{
			kind:   faultKind(rng.IntN(int(numFaults))),
			target: -1 + rng.IntN(2)*rng.IntN(3), // half on the LEADER
			hold:   time.Duration(200+rng.IntN(2300)) * time.Millisecond,
			gap:    time.Duration(100+rng.IntN(1500)) * time.Millisecond,
		})
	}
	return fs
}

// apply does f with master lead as the LEADER (-1: none now) and returns
// what undoes it, and a line for the report.
func (w *world) apply(f fault, lead int, rng *rand.Rand) (undo func() error, what string) {
	m := f.target
	if m < 0 || m >= len(w.masters) {
		m = lead
	}
	if m < 0 {
		m = rng.IntN(len(w.masters))
	}
	ma := w.masters[m].addr
	switch f.kind {
	case fKillMaster, fStopMaster:
		w.stopMaster(m, f.kind == fKillMaster)
		return func() error { return w.restartMaster(m) }, fmt.Sprintf("%v M%d", f.kind, m)
	case fKillCS:
		c := rng.IntN(len(w.css))
		w.stopCS(c, true)
		return func() error { return w.restartCS(c) }, fmt.Sprintf("%v CS%d", f.kind, c)
	case fIsolate:
		w.net.Partition([]netip.Addr{ma}, w.others(ma))
	case fDeaf, fMute:
		for _, o := range w.others(ma) {
			if f.kind == fDeaf {
				w.net.Block(o, ma)
			} else {
				w.net.Block(ma, o)
			}
		}
	case fSplitVoters:
		var half []netip.Addr
		for i, c := range w.css {
			if i%2 == 0 {
				half = append(half, c.addr)
			}
		}
		w.net.Partition([]netip.Addr{ma}, half)
	case fCutVoters:
		for _, c := range w.css {
			w.net.Cut(c.addr, ma)
		}
		return func() error { return nil }, fmt.Sprintf("%v M%d", f.kind, m)
	case fPauseMaster:
		n := w.masters[m].node.Load()
		if n == nil {
			return func() error { return nil }, fmt.Sprintf("%v M%d (not running)", f.kind, m)
		}
		n.Pause()
		w.net.Partition([]netip.Addr{ma}, w.others(ma))
		return func() error { n.Resume(); w.net.Heal(); return nil }, fmt.Sprintf("%v M%d", f.kind, m)
	case fPauseCS:
		c := rng.IntN(len(w.css))
		n := w.css[c].node.Load()
		if n == nil {
			return func() error { return nil }, fmt.Sprintf("%v CS%d (not running)", f.kind, c)
		}
		n.Pause()
		w.net.Partition([]netip.Addr{w.css[c].addr}, w.others(w.css[c].addr))
		return func() error { n.Resume(); w.net.Heal(); return nil }, fmt.Sprintf("%v CS%d", f.kind, c)
	case fLatency:
		w.net.SetLatency(time.Duration(5+rng.IntN(60)) * time.Millisecond)
		return func() error { w.net.SetLatency(w.shape.latency); return nil }, f.kind.String()
	case fLoss:
		w.net.SetLoss(0.3 + 0.6*rng.Float64())
		return func() error { w.net.SetLoss(w.shape.loss); return nil }, f.kind.String()
	}
	return func() error { w.net.Heal(); return nil }, fmt.Sprintf("%v M%d", f.kind, m)
}

// others is every host but a: the other masters, the chunkservers and the
// clients.
func (w *world) others(a netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, m := range w.masters {
		if m.addr != a {
			out = append(out, m.addr)
		}
	}
	for _, c := range w.css {
		out = append(out, c.addr)
	}
	for i := range w.shape.clients {
		out = append(out, clientAddr(i))
	}
	return out
}

// heal undoes every fault: the network whole and quiet again, every
// process running.
func (w *world) heal() error {
	w.net.Heal()
	w.net.SetLatency(w.shape.latency)
	w.net.SetLoss(w.shape.loss)
	for i := range w.masters {
		if err := w.restartMaster(i); err != nil {
			return err
		}
	}
	for i := range w.css {
		if err := w.restartCS(i); err != nil {
			return err
		}
	}
	return nil
}
