// Package drivers runs the real drivers of internal/node, three masters and
// a few chunkservers with their bbolt stores, in one process on an
// in-memory network (internal/transport/memnet), under a fault schedule
// drawn from a seed, with clients writing and reading through pkg/client.
//
// The simulator of internal/sim steps the pure machines and replaces the
// drivers; this package runs what it replaces: the acceptor and its
// guards, the per-port demultiplexing and sender stamping, client
// admission, group commit and its fsyncs, the links and their back-offs,
// the datagram path and the fence the reports publish. It checks the two
// promises that matter most at that level: never two masters that may
// claim LEADER at once (watched on MasterNode.Role, the fenced report), and
// a linearizable client history (porcupine), so no acknowledged change
// lost.
//
// Unlike internal/sim a run is not deterministic: the drivers' goroutines
// and timers run on the real clock. The seed fixes the cluster's shape and
// the fault schedule, not the interleaving, so a failing seed is a lead to
// follow rather than a replay. A pause (SIGSTOP) holds a driver's loop
// (Pause) and cuts its host off; clock faults are not modelled here (the
// daemons read their own clocks): internal/sim does those.
package drivers

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/csnode"
	"github.com/mfs-election/mfs-election/internal/node/masternode"
	"github.com/mfs-election/mfs-election/internal/transport/memnet"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// The daemons' ports, the same on every host: each host of memnet has its
// own port space, as separate machines do.
const (
	portML, portCS, portCL, portCSServ = 9419, 9420, 9421, 9422
)

// authCode is the cluster's AUTH_CODE in every run.
const authCode = "drivers-simulation-auth-code"

// masterAddr, csAddr and clientAddr are the hosts' addresses on memnet.
// Nothing leaves the process: they are names on the in-memory network.
func masterAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{127, 77, 0, byte(i + 1)}) }
func csAddr(i int) netip.Addr     { return netip.AddrFrom4([4]byte{127, 77, 1, byte(i + 1)}) }
func clientAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{127, 77, 2, byte(i + 1)}) }

// masterProc is one master: its data directory and, while it runs, its
// driver and store. node is read by the watcher at any time.
type masterProc struct {
	addr  netip.Addr
	dir   string
	node  atomic.Pointer[masternode.MasterNode]
	store *metadata.MasterStore
}

// csProc is one chunkserver, a voter on a bbolt record of its own.
type csProc struct {
	addr  netip.Addr
	dir   string
	node  atomic.Pointer[csnode.ChunkserverNode]
	store *metadata.ChunkserverStore
}

// world is one run's cluster.
type world struct {
	spec    Spec
	shape   shape
	net     *memnet.Network
	masters []*masterProc
	css     []*csProc
	log     zerolog.Logger
}

func newWorld(spec Spec, sh shape) (*world, error) {
	w := &world{spec: spec, shape: sh, net: memnet.New(spec.Seed), log: zerolog.Nop()}
	if spec.Log != nil {
		w.log = zerolog.New(spec.Log).With().Timestamp().Int64("seed", spec.Seed).Logger()
	}
	for i := range sh.masters {
		w.masters = append(w.masters, &masterProc{addr: masterAddr(i), dir: filepath.Join(spec.Dir, fmt.Sprintf("master%d", i))})
	}
	for i := range sh.voters {
		w.css = append(w.css, &csProc{addr: csAddr(i), dir: filepath.Join(spec.Dir, fmt.Sprintf("cs%d", i))})
	}
	for _, d := range w.dirs() {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	// The founder's metadata, as `mfsmaster init` writes it; the others
	// start empty, as with -e, and take a snapshot from the LEADER.
	st, err := metadata.OpenMaster(w.masters[0].dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.Init(fmt.Sprintf("D%08X", uint32(spec.Seed)), changelog.Genesis(masterhost.IDOf(w.masters[0].addr))); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *world) dirs() []string {
	var ds []string
	for _, m := range w.masters {
		ds = append(ds, m.dir)
	}
	for _, c := range w.css {
		ds = append(ds, c.dir)
	}
	return ds
}

// roster is every master's id and its address on port.
func (w *world) roster(port uint16) []masterhost.Master {
	var ms []masterhost.Master
	for _, m := range w.masters {
		ms = append(ms, masterhost.Master{ID: masterhost.IDOf(m.addr), Addr: netip.AddrPortFrom(m.addr, port)})
	}
	return ms
}

// startMaster starts master i's driver over its store.
func (w *world) startMaster(i int) error {
	m := w.masters[i]
	st, err := metadata.OpenMaster(m.dir)
	if err != nil {
		return err
	}
	var ids []wire.MasterID
	for _, x := range w.roster(portML) {
		ids = append(ids, x.ID)
	}
	core := master.DefaultConfig(masterhost.IDOf(m.addr), ids)
	core.SnapshotEvery, core.LogRetain = w.shape.snapshotEvery, w.shape.snapshotEvery/2
	opt := masternode.MasterOptions{
		Core: core, Self: m.addr, Masters: w.roster(portML), Bind: m.addr,
		ListenML: netip.AddrPortFrom(m.addr, portML).String(),
		ListenCS: netip.AddrPortFrom(m.addr, portCS).String(),
		ListenCL: netip.AddrPortFrom(m.addr, portCL).String(),
		AuthCode: authCode, Version: "drivers", Datagrams: w.shape.datagrams,
		Log:       w.log.With().Str("master", m.addr.String()).Logger(),
		Transport: w.net.Host(m.addr), Metrics: prometheus.NewRegistry(),
	}
	n, err := masternode.StartMaster(opt, st)
	if err != nil {
		st.Close()
		return fmt.Errorf("master %v: %w", m.addr, err)
	}
	m.store = st
	m.node.Store(n)
	return nil
}

// startCS starts chunkserver i's driver over its record.
func (w *world) startCS(i int) error {
	c := w.css[i]
	st, err := metadata.OpenChunkserver(c.dir)
	if err != nil {
		return err
	}
	opt := csnode.ChunkserverOptions{
		Masters: w.roster(portCS), Bind: c.addr, Listen: netip.AddrPortFrom(c.addr, portCSServ).String(),
		Voter:    voter.DefaultConfig(0, netip.Addr{}, nil),
		AuthCode: authCode, TrustRefused: true, Version: "drivers", Datagrams: w.shape.datagrams,
		Log:       w.log.With().Str("cs", c.addr.String()).Logger(),
		Transport: w.net.Host(c.addr), Metrics: prometheus.NewRegistry(),
	}
	opt.Voter.Seed = uint64(w.spec.Seed)<<8 + uint64(i)
	n, err := csnode.StartChunkserver(opt, st)
	if err != nil {
		st.Close()
		return fmt.Errorf("chunkserver %v: %w", c.addr, err)
	}
	c.store = st
	c.node.Store(n)
	return nil
}

// stopMaster ends master i: at once with its connections reset and
// nothing more sent (crash: kill -9; its kernel lives on and refuses
// dials), or in order, its goodbyes sent (SIGTERM). Its store is closed
// only after its loop ended.
func (w *world) stopMaster(i int, crash bool) {
	m := w.masters[i]
	n := m.node.Swap(nil)
	if n == nil {
		return
	}
	if crash {
		w.net.Down(m.addr)
	}
	_ = n.Stop(5 * time.Second)
	<-n.Done()
	_ = m.store.Close()
	m.store = nil
}

// stopCS is stopMaster for chunkserver i.
func (w *world) stopCS(i int, crash bool) {
	c := w.css[i]
	n := c.node.Swap(nil)
	if n == nil {
		return
	}
	if crash {
		w.net.Down(c.addr)
	}
	_ = n.Stop(5 * time.Second)
	<-n.Done()
	_ = c.store.Close()
	c.store = nil
}

// restartMaster brings a stopped master back; its host is up again first.
func (w *world) restartMaster(i int) error {
	if w.masters[i].node.Load() != nil {
		return nil
	}
	w.net.Up(w.masters[i].addr)
	return w.startMaster(i)
}

func (w *world) restartCS(i int) error {
	if w.css[i].node.Load() != nil {
		return nil
	}
	w.net.Up(w.css[i].addr)
	return w.startCS(i)
}

// close stops everything in order and closes the network.
func (w *world) close() {
	for i := range w.css {
		w.stopCS(i, false)
	}
	for i := range w.masters {
		w.stopMaster(i, false)
	}
	w.net.Close()
}

// leader is the index of a master that claims LEADER now, or -1.
func (w *world) leader() int {
	for i, m := range w.masters {
		if n := m.node.Load(); n != nil && n.Role().Role == roles.Leader {
			return i
		}
	}
	return -1
}

// voting reports whether every running chunkserver is registered and
// votes for master id.
func (w *world) voting(id wire.MasterID) bool {
	for _, c := range w.css {
		n := c.node.Load()
		if n == nil {
			continue
		}
		if s := n.State(); !s.Registered || s.VoteFor != id {
			return false
		}
	}
	return true
}

// waitFor polls cond every 10 ms for at most d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}
