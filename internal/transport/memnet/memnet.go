// Package memnet is an in-memory network with faults: a transport.Transport
// per host, so the real daemon drivers run in one process over links a seeded
// test schedule blocks, cuts, crashes and slows down.
//
// The drivers were written against the kernel's sockets, and they read its
// signals: deadlines, EOF after a FIN, ECONNRESET after a RST, refused dials,
// true local and remote addresses. memnet gives the same signals for the same
// causes, and only through links that would carry them: a host behind a
// block learns nothing of what happens on the far side (a FIN or a crash's
// RST waits for the Unblock), so no test passes by a shortcut the kernel
// would not take.
//
// Time is the wall clock: latency and deadlines are timers. Every queue is
// bounded (stream buffers, accept backlogs, datagram queues), so a writer
// that outruns its reader blocks or loses datagrams, as it would on a kernel.
//
// Lock order: Network.mu, then a pipe's or a socket's mutex. Work that a
// delivery sets off on the other end of a stream (a FIN's EPIPE, a RST's
// reset) runs after every lock is released.
package memnet

import (
	"math/rand"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Network is the set of hosts and the links between them. Its zero value is
// not usable: call New.
type Network struct {
	latency atomic.Int64 // one-way delay between two hosts, in nanoseconds

	mu      sync.Mutex
	closed  bool
	done    chan struct{} // closed by Close: waiting dials give up
	changed chan struct{} // closed and replaced when a waiting dial may go on
	rng     *rand.Rand    // the datagram loss rolls
	loss    float64
	hosts   map[netip.Addr]*Host
	blocked map[link]bool
	streams map[*stream]struct{}

	connsOpened, resets                    atomic.Int64
	dgSent, dgLost, dgDropped, dgDelivered atomic.Int64
}

// link is one direction between two hosts.
type link struct{ from, to netip.Addr }

// Stats are the network's counters since New.
type Stats struct {
	ConnsOpened int64 // streams a listener's backlog took in
	Resets      int64 // conn ends reset: Cut, Crash, a listener closed on its backlog
	// DatagramsSent = DatagramsLost + DatagramsDropped + DatagramsDelivered.
	DatagramsSent      int64
	DatagramsLost      int64 // the loss roll (SetLoss)
	DatagramsDropped   int64 // path blocked, nothing bound at the destination, its queue full
	DatagramsDelivered int64 // queued at the destination socket
	BytesHeld          int64 // stream bytes waiting behind a block now
}

// New returns an empty network with no latency, no loss and no blocks. The
// seed drives the datagram loss rolls: one seed, one sequence of rolls.
func New(seed int64) *Network {
	return &Network{
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		rng:     rand.New(rand.NewSource(seed)),
		hosts:   make(map[netip.Addr]*Host),
		blocked: make(map[link]bool),
		streams: make(map[*stream]struct{}),
	}
}

// Host returns the host with address addr, made on first use. A host exists
// from then on: dials to it are answered (refused when nothing listens),
// while dials to an address no Host call named wait out their timeout, as
// for a machine that is down. It panics on an invalid or unspecified addr.
func (n *Network) Host(addr netip.Addr) *Host {
	addr = norm(addr)
	if !addr.IsValid() || addr.IsUnspecified() {
		panic("memnet: Host needs a specific address, got " + addr.String())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.hosts[addr]
	if h == nil {
		h = &Host{
			n:         n,
			addr:      addr,
			listeners: make(map[uint16]*listener),
			packets:   make(map[uint16]*packetConn),
			dialPorts: make(map[uint16]bool),
			nextTCP:   ephemeralLow,
			nextUDP:   ephemeralLow,
		}
		n.hosts[addr] = h
		n.notifyLocked()
	}
	return h
}

// Close closes every listener, conn and packet socket and makes waiting
// dials fail; later calls on any host fail with net.ErrClosed. It leaves no
// goroutine or timer behind.
func (n *Network) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	close(n.done)
	var ls []*listener
	var ps []*packetConn
	for _, h := range n.hosts {
		for _, l := range h.listeners {
			ls = append(ls, l)
		}
		for _, p := range h.packets {
			ps = append(ps, p)
		}
	}
	ss := n.streamsLocked(func(*stream) bool { return true })
	n.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
	for _, p := range ps {
		_ = p.Close()
	}
	for _, s := range ss {
		for _, c := range s.ends {
			_ = c.Close()
		}
	}
}

// Block holds everything from from to to: stream bytes (and FINs and RSTs)
// wait, counted against their buffers, until Unblock; datagrams are dropped;
// dials between the two wait. It is one direction: Block(b, a) is the other.
func (n *Network) Block(from, to netip.Addr) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.setBlockedLocked(link{norm(from), norm(to)}, true)
}

// Unblock lets from->to carry again: the held bytes arrive in order after
// the latency, as a retransmission would.
func (n *Network) Unblock(from, to netip.Addr) {
	n.mu.Lock()
	evs := n.setBlockedLocked(link{norm(from), norm(to)}, false)
	n.mu.Unlock()
	evs.dispatch()
}

// Partition blocks both ways between every two hosts of different groups.
// It adds to the blocks in force; hosts in no group keep their links. Call
// Heal first for a partition that replaces the last one.
func (n *Network) Partition(groups ...[]netip.Addr) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, g := range groups {
		for j, o := range groups {
			if i == j {
				continue
			}
			for _, a := range g {
				for _, b := range o {
					if norm(a) != norm(b) {
						n.setBlockedLocked(link{norm(a), norm(b)}, true)
					}
				}
			}
		}
	}
}

// Heal lifts every block.
func (n *Network) Heal() {
	n.mu.Lock()
	var evs events
	for l := range n.blocked {
		evs = append(evs, n.setBlockedLocked(l, false)...)
	}
	n.mu.Unlock()
	evs.dispatch()
}

// setBlockedLocked records the block of l and holds or releases the stream
// pipes along it; the deliveries a release makes are returned for dispatch
// once n.mu is released.
func (n *Network) setBlockedLocked(l link, on bool) events {
	if l.from == l.to || n.blocked[l] == on {
		return nil
	}
	if on {
		n.blocked[l] = true
	} else {
		delete(n.blocked, l)
		n.notifyLocked()
	}
	var evs events
	for s := range n.streams {
		for _, p := range s.pipes {
			if p.from == l.from && p.to == l.to {
				evs = append(evs, p.setHeld(on)...)
			}
		}
	}
	return evs
}

// Cut resets every stream between a and b, as a RST injected on the path:
// both ends fail with ECONNRESET at once, whatever blocks are in force.
func (n *Network) Cut(a, b netip.Addr) {
	a, b = norm(a), norm(b)
	n.mu.Lock()
	ss := n.streamsLocked(func(s *stream) bool {
		return s.hosts[0] == a && s.hosts[1] == b || s.hosts[0] == b && s.hosts[1] == a
	})
	n.mu.Unlock()
	for _, s := range ss {
		s.reset(0, false)
		s.reset(1, false)
	}
}

// Crash kills the process on a while its kernel lives: its listeners and
// packet sockets close (later dials to a are refused at once), and each of
// its open conns is reset. The conn's own end fails at once; the far end
// fails when the kernel's RST reaches it, one latency later, or at Unblock
// if the path is blocked. The Host stays usable: a restarted process
// listens again.
func (n *Network) Crash(a netip.Addr) {
	a = norm(a)
	n.mu.Lock()
	var ls []*listener
	var ps []*packetConn
	if h := n.hosts[a]; h != nil {
		for _, l := range h.listeners {
			ls = append(ls, l)
		}
		for _, p := range h.packets {
			ps = append(ps, p)
		}
	}
	ss := n.streamsLocked(func(s *stream) bool { return s.hosts[0] == a || s.hosts[1] == a })
	n.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
	for _, p := range ps {
		_ = p.Close()
	}
	for _, s := range ss {
		for i := range s.ends {
			if s.hosts[i] == a {
				s.reset(i, true)
			}
		}
	}
}

// Down is Crash, and more: the process on a stays dead until Up. Until
// then a's own dials, listens and sockets fail (ENETDOWN), so that a
// dying process's goroutines, still running until its owner has stopped
// them, can neither reach anyone nor be reached: a kill -9 says nothing
// more. Dials to a are refused, as its kernel still answers.
func (n *Network) Down(a netip.Addr) {
	h := n.Host(a)
	n.mu.Lock()
	h.down = true
	n.notifyLocked()
	n.mu.Unlock()
	n.Crash(a)
}

// Up ends Down: a restarted process on a may listen and dial again.
func (n *Network) Up(a netip.Addr) {
	h := n.Host(a)
	n.mu.Lock()
	h.down = false
	n.mu.Unlock()
}

// SetLoss sets the probability that a datagram between two hosts is lost.
func (n *Network) SetLoss(p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.loss = p
}

// SetLatency sets the one-way delay between two different hosts, for stream
// bytes, FINs, RSTs, datagrams and each leg of a dial's handshake. A host's
// traffic to itself has none. Bytes already on the way keep their time.
func (n *Network) SetLatency(d time.Duration) { n.latency.Store(int64(max(d, 0))) }

// Stats returns the counters and the bytes held by blocks now.
func (n *Network) Stats() Stats {
	st := Stats{
		ConnsOpened:        n.connsOpened.Load(),
		Resets:             n.resets.Load(),
		DatagramsSent:      n.dgSent.Load(),
		DatagramsLost:      n.dgLost.Load(),
		DatagramsDropped:   n.dgDropped.Load(),
		DatagramsDelivered: n.dgDelivered.Load(),
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.streams {
		for _, p := range s.pipes {
			st.BytesHeld += int64(p.heldBytes())
		}
	}
	return st
}

// lat is the one-way delay from a to b.
func (n *Network) lat(a, b netip.Addr) time.Duration {
	if a == b {
		return 0
	}
	return time.Duration(n.latency.Load())
}

// cutOffLocked reports that a dial between a and b cannot complete its
// handshake: one of the two directions is blocked.
func (n *Network) cutOffLocked(a, b netip.Addr) bool {
	return n.blocked[link{a, b}] || n.blocked[link{b, a}]
}

// notifyLocked wakes the dials waiting for a change: an unblock, a new host,
// room in a backlog, a listener gone.
func (n *Network) notifyLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// streamsLocked returns the registered streams keep selects.
func (n *Network) streamsLocked(keep func(*stream) bool) []*stream {
	var ss []*stream
	for s := range n.streams {
		if keep(s) {
			ss = append(ss, s)
		}
	}
	return ss
}

// wait blocks until ch closes (a change worth a retry), the deadline passes
// (zero: never) or the network closes.
func (n *Network) wait(ch <-chan struct{}, deadline time.Time) error {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return errTimeout
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
		return nil
	case <-timeout:
		return errTimeout
	case <-n.done:
		return errClosed
	}
}

// sleep waits d, a packet's flight, unless the deadline comes first.
func (n *Network) sleep(d time.Duration, deadline time.Time) error {
	if d <= 0 {
		return nil
	}
	var ch <-chan struct{} // never closes: only the timers and done end the wait
	if deadline.IsZero() || time.Until(deadline) > d {
		deadline = time.Now().Add(d)
		if err := n.wait(ch, deadline); err != errTimeout {
			return err
		}
		return nil
	}
	return n.wait(ch, deadline)
}

// norm drops the IPv4-in-IPv6 mapping and the zone: a host is one address.
func norm(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }
