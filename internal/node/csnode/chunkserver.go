package csnode

import (
	"cmp"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/transport"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/secret"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// ChunkserverOptions is what mfschunkserver hands its driver.
type ChunkserverOptions struct {
	Masters []masterhost.Master // every master's chunkserver port (9420), at the start
	// MasterHost is MASTER_HOST, resolved again every ResolveInterval (0:
	// only when asked: Resolve), through HostsFile when set, with
	// MasterPort where an entry names no port: masters added and removed
	// while it runs (docs/architecture.md §5.3). Empty: Masters for good.
	MasterHost      string
	HostsFile       string
	ResolveInterval time.Duration
	MasterPort      uint16
	Bind            netip.Addr // BIND_HOST: decides the location; invalid = kernel's choice
	Listen          string     // CSSERV_LISTEN host:port: with the address, its identity
	// Port, when not 0, is the CSSERV port this chunkserver names as its
	// identity without listening on it (Listen is then unused): for
	// internal/cluster/swarm, thousands of voters in one process that serve
	// no data and share one address-less port. mfschunkserver leaves it 0:
	// the port it holds open is its identity, as in MooseFS.
	Port uint16
	// Voter carries the timings; ID, Addr, Port, VoterOnly and Masters are
	// filled in by the driver.
	Voter          voter.Config
	AuthCode       string
	Labels         string
	Disks          []string // from HDD_CONF_FILENAME; none = voter only
	ReconnectDelay time.Duration
	// TrustRefused: "connection refused" from a master's port releases the
	// promise at once (the kill -9 fast path). Turn it off where something
	// between the machines may answer for a dead port.
	TrustRefused bool
	Version      string
	Log          zerolog.Logger
	// Metrics: where the mfs_chunkserver_* gauges are registered; nil
	// exports none (the swarm's voters, which State reports instead).
	Metrics prometheus.Registerer
	// RecordVerify: how often the voter record is read back from the disk
	// and compared with what was written (metadata.ChunkserverStore.Verify;
	// 0: never). A store without Verify is never checked.
	RecordVerify time.Duration
	// Inbox is how many inputs the links may queue for the loop (0:
	// csInbox, mfschunkserver's). A link whose input finds the inbox full
	// waits (nothing is dropped), so the length only bounds how far the
	// readers run ahead of the loop; the swarm gives each of its thousands
	// of voters a short one (a slot is 80 bytes, allocated up front).
	Inbox int
	// Datagrams (HEARTBEAT_UDP): each vote session opens a datagram path
	// beside its connection (datagram.go), from a UDP port of the CSSERV
	// port's number where it is free.
	Datagrams bool
	// Transport is the network (nil: the kernel's, transport.OS).
	Transport transport.Transport
}

// csInbox is the loop's inbox unless ChunkserverOptions.Inbox says otherwise.
const csInbox = 1024

// ChunkserverNode runs one chunkserver's voter. Only its loop goroutine
// touches the voter and the store.
type ChunkserverNode struct {
	opt     ChunkserverOptions
	log     zerolog.Logger
	store   ChunkserverStore
	voter   *voter.Voter
	pending []voter.Batch           // the group being stepped (flush carries it out)
	metrics *obs.ChunkserverMetrics // nil: Metrics was nil
	clock   node.Clock              // the core's time (node.NewVoterClock)
	tr      transport.Transport     // opt.Transport, or the kernel's
	ln      net.Listener            // nil: Port was given, nothing listens
	// at is the time of the newest step, and stepped says a step ran since
	// the loop last set its timer: the timer and the metrics read the
	// step's time rather than the clock again (a voter's loop runs on
	// every heartbeat).
	at      roles.Instant
	stepped bool
	port    uint16

	inbox chan csInput
	life  node.Lifecycle // Stop, Done, Err (node.Lifecycle)

	links   map[wire.MasterID]*node.Link
	masters []masterhost.Master // the set now (loop only)
	host    *node.HostSpec      // MASTER_HOST, resolved again (node.ResolveLoop)
	addrOf  map[wire.MasterID]netip.Addr
	named   map[wire.MasterID]string // addrOf as the metrics' labels
	conns   map[string]bool          // observe's, reused

	idMu sync.Mutex
	id   metadata.Identity // zero before registration

	stMu  sync.Mutex
	state ChunkserverState // as of the last flush (observe)

	regAt time.Time

	// damaged: the store opened from the older copy of the record (its
	// Damage), not yet told to a voter (RecordDamaged). uncertain: what
	// the CSInfo last said (loop only).
	damaged   bool
	uncertain bool
	trusted   wire.MasterID // the master an operator's TrustRecord came through, until it is stepped

	// udp is the datagram socket (nil: Datagrams off, or none could be
	// opened) and udpPort its port; dg the sessions' keys by master,
	// hbSeen the heartbeats' filter (loop only), dgStats what was received.
	udp     transport.PacketConn
	udpPort uint16
	dg      *node.DgKeys
	hbSeen  node.SeqFilter
	dgStats *obs.Datagrams
}

// ChunkserverState is what a chunkserver's loop saw at its last flush: for
// a caller that watches many voters in one process (the swarm's status)
// rather than one through its metrics.
type ChunkserverState struct {
	Registered bool          // the voter runs: the chunkserver has an id
	VoteFor    wire.MasterID // the master its vote is for (NoMaster: none)
	Promised   wire.MasterID // the master its standing promise binds it to (NoMaster: none)
	Crowd      int           // the most chunkservers a master said its registry holds
	InCrowd    bool          // more than PROBE_VOTERS of them (voter.Voter.InCrowd)
	Up         []bool        // by index in the set of masters now (Masters at the start): the link is connected
	// Record: what was found wrong with the voter record this run (empty:
	// nothing); Uncertain: the voter grants nothing until a LEADER
	// restores its record (voter.Voter.Uncertain). CSInfo tells both.
	Record    string
	Uncertain bool
}

type csInput struct {
	from    wire.MasterID
	ev      roles.Event // a core event (message, Refused, VoteConnLost)
	reply   *protocol.RegisterReply
	cluster string // the master's cluster id, with reply
	local   netip.Addr
	up      bool // the link just came up
	// masters: MASTER_HOST resolved again (the rest is unset).
	masters []masterhost.Master
	// record: the voter record was found changed on the disk (Verify's
	// report; the rest is unset).
	record string
	// dgram: ev (a heartbeat or a release) came as a datagram.
	dgram bool
	// ping: closed when the loop takes this input (Ping; the rest is
	// unset).
	ping chan struct{}
}

// StartChunkserver listens on the CSSERV port (unless opt.Port names it),
// connects to every master and starts the voter once it has an id.
func StartChunkserver(opt ChunkserverOptions, store ChunkserverStore) (*ChunkserverNode, error) {
	n := &ChunkserverNode{
		opt: opt, log: opt.Log, store: store, clock: node.NewVoterClock(), tr: transport.Or(opt.Transport),
		inbox: make(chan csInput, cmp.Or(opt.Inbox, csInbox)), life: node.NewLifecycle(),
		links: map[wire.MasterID]*node.Link{}, addrOf: map[wire.MasterID]netip.Addr{}, masters: slices.Clone(opt.Masters),
		host:  node.NewHostSpec(opt.MasterHost),
		named: map[wire.MasterID]string{}, conns: map[string]bool{},
		state: ChunkserverState{Up: make([]bool, len(opt.Masters))},
		dg:    node.NewDgKeys(), hbSeen: node.SeqFilter{},
	}
	var names []string
	for _, m := range opt.Masters {
		n.addrOf[m.ID] = m.Addr.Addr()
		n.named[m.ID] = m.Addr.Addr().String()
		names = append(names, n.named[m.ID])
	}
	if opt.Metrics != nil {
		n.metrics = obs.NewChunkserverMetrics(opt.Metrics, names)
		if c, ok := store.(interface{ Commits() uint64 }); ok {
			obs.RegisterStoreCommits(opt.Metrics, "chunkserver", c.Commits)
		}
	}
	if err := n.listen(); err != nil {
		return nil, err
	}
	n.openDatagramPort()
	if d, ok := store.(interface{ Damage() string }); ok && d.Damage() != "" {
		n.damaged = true
		n.state.Record = d.Damage()
		n.log.Error().Str("file", n.recordPath()).Msg("voter record damaged: " + d.Damage() +
			". The chunkserver runs, but its voter grants no vote until a LEADER's heartbeat has restored what the record may have lost (mfscli -SCS shows it)")
		if n.metrics != nil {
			n.metrics.RecordDamaged()
		}
	}
	if err := n.takeIdentity(); err != nil {
		return nil, err
	}
	for _, m := range opt.Masters {
		n.links[m.ID] = startCSLink(n, m)
	}
	go n.loop()
	if v, ok := store.(interface{ Verify() (string, error) }); ok && opt.RecordVerify > 0 {
		go n.verifyLoop(v.Verify)
	}
	if opt.MasterHost != "" {
		go node.ResolveLoop(n.log, n.host, opt.HostsFile, opt.MasterPort, opt.ResolveInterval, n.life.Done(),
			func(list []masterhost.Master) bool {
				select {
				case n.inbox <- csInput{masters: list}:
					return true
				case <-n.life.Done():
					return false
				}
			})
	}
	return n, nil
}

// listen holds the CSSERV port open (its number is this chunkserver's
// identity), unless Port names it.
func (n *ChunkserverNode) listen() error {
	if n.opt.Port != 0 {
		n.port = n.opt.Port
	} else {
		ln, err := n.tr.Listen(n.opt.Listen)
		if err != nil {
			return err
		}
		n.ln = ln
		ap, _ := netip.ParseAddrPort(ln.Addr().String())
		n.port = ap.Port()
		go func() {
			// The data port serves no chunks here; holding it keeps the
			// ip:port identity real, as in MooseFS.
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
	}
	return nil
}

// takeIdentity takes the identity the store holds, if any: one of
// another port is forgotten (this chunkserver registers again), one of
// another address is kept (the masters tell a clone from a chunkserver
// that moved).
func (n *ChunkserverNode) takeIdentity() error {
	if id, ok := n.store.Identity(); ok {
		switch {
		case id.Addr.Port() != n.port:
			// Another port is another identity (ip:port, as in MooseFS).
			n.log.Warn().Str("was", id.Addr.String()).Str("now", netip.AddrPortFrom(n.opt.Bind, n.port).String()).
				Msg("port changed since registration: registering again")
			if err := n.store.ForgetIdentity(); err != nil {
				n.closeListener() // the datagram socket too
				return err
			}
		default:
			if n.opt.Bind.IsValid() && id.Addr.Addr() != n.opt.Bind {
				// Kept, so that the masters can tell what happened: a copy
				// of a running chunkserver (a cloned VM or data directory)
				// is refused as a clone and named while the original is
				// connected; a chunkserver that really moved is told its
				// id is taken (IDTaken) and registers again.
				n.log.Warn().Str("was", id.Addr.String()).Str("now", netip.AddrPortFrom(n.opt.Bind, n.port).String()).Uint32("id", uint32(id.CS)).
					Msg("address changed since registration: keeping the id; the masters refuse this chunkserver as a clone while the one registered at the old address is connected, and tell it to register again otherwise")
			}
			n.id = id
			// The slow key derivation now, not in the first handshake.
			secret.Warm(n.opt.AuthCode, id.ClusterID)
		}
	}
	return nil
}

// SetMasterHost puts a new MASTER_HOST in force (a reload) and resolves
// it now.
func (n *ChunkserverNode) SetMasterHost(spec string) { n.host.Set(spec) }

// Reload resolves MASTER_HOST again (SIGHUP: service.Serve calls it).
func (n *ChunkserverNode) Reload() { n.Resolve() }

// Resolve asks for MASTER_HOST to be resolved again now (SIGHUP); it does
// not wait.
func (n *ChunkserverNode) Resolve() { n.host.Ask() }

// takeMasters puts a resolved list in force (loop only): links to the
// masters added, none to those gone, the voter told. A master gone may
// still hold this chunkserver's promise: the voter keeps it until it
// lapses or is released, whoever it was made to.
func (n *ChunkserverNode) takeMasters(list []masterhost.Master) error {
	if slices.Equal(list, n.masters) {
		return nil
	}
	var added, removed []string
	for _, m := range list {
		if n.links[m.ID] == nil {
			added = append(added, m.Addr.String())
			n.addrOf[m.ID] = m.Addr.Addr()
			n.named[m.ID] = m.Addr.Addr().String()
			n.links[m.ID] = startCSLink(n, m)
		}
	}
	var ids []wire.MasterID
	for _, m := range list {
		ids = append(ids, m.ID)
	}
	n.masters = slices.Clone(list)
	n.stMu.Lock()
	n.state.Up = make([]bool, len(list))
	n.stMu.Unlock()
	var err error
	if n.voter != nil {
		// Told before its links close: a bye to a master gone still leaves.
		err = n.step(roles.MasterSet{Masters: ids, Member: true})
		if err == nil {
			err = n.flush()
		}
	}
	for id, l := range n.links {
		if !slices.Contains(ids, id) {
			removed = append(removed, n.addrOf[id].String())
			l.Stop()
			delete(n.links, id)
			n.forgetDatagrams(id)
		}
	}
	n.log.Info().Strs("added", added).Strs("removed", removed).Int("masters", len(list)).Msg("set of masters changed (MASTER_HOST resolved again)")
	return err
}

// Identity is the registered identity (zero before registration).
func (n *ChunkserverNode) Identity() metadata.Identity {
	n.idMu.Lock()
	defer n.idMu.Unlock()
	return n.id
}

// Stop asks the loop to end in order and waits for it, at most timeout;
// it returns Err. A chunkserver sends a VoteBye to the master it votes
// for, then closes every connection.
func (n *ChunkserverNode) Stop(timeout time.Duration) error { return n.life.Stop(timeout) }

// Done is closed when the loop has ended; Err then says why (nil: stopped).
func (n *ChunkserverNode) Done() <-chan struct{} { return n.life.Done() }

// Err is why the loop ended (nil while running or after an orderly stop).
func (n *ChunkserverNode) Err() error { return n.life.Err() }

// Pause holds the loop at its next input until Resume (node.Lifecycle.Pause:
// the driver simulation's SIGSTOP).
func (n *ChunkserverNode) Pause() { n.life.Pause() }

// Resume lets a paused loop go on.
func (n *ChunkserverNode) Resume() { n.life.Resume() }

func (n *ChunkserverNode) now() roles.Instant { return roles.Instant(n.clock.Since()) }

func (n *ChunkserverNode) hello() frame.Hello {
	id := n.Identity()
	h := frame.Ours(frame.KindChunkserver)
	h.Cluster, h.ID = id.ClusterID, uint32(id.CS)
	return h
}

// Reconnect closes every master connection at once; each link dials again
// at once, as after any connection it lost that had lived (the voter sees
// VoteConnLost, not closed by the master). The swarm's reconnect storm.
func (n *ChunkserverNode) Reconnect() {
	for _, l := range n.links {
		l.Reconnect()
	}
}

// State is what the loop saw at its last flush (a copy).
func (n *ChunkserverNode) State() ChunkserverState {
	n.stMu.Lock()
	defer n.stMu.Unlock()
	s := n.state
	s.Up = append([]bool(nil), s.Up...)
	return s
}

// recordPath names the voter record's file for the log.
func (n *ChunkserverNode) recordPath() string {
	if p, ok := n.store.(interface{ Path() string }); ok {
		return p.Path()
	}
	return metadata.ChunkserverFile
}

// verifyLoop reads the voter record back every RecordVerify and hands
// what it found changed to the loop (Verify rewrote it already).
func (n *ChunkserverNode) verifyLoop(verify func() (string, error)) {
	t := time.NewTicker(n.opt.RecordVerify)
	defer t.Stop()
	for {
		select {
		case <-n.life.Done():
			return
		case <-t.C:
		}
		report, err := verify()
		if err != nil {
			n.log.Error().Err(err).Msg("voter record could not be read back")
			continue
		}
		if report == "" {
			continue
		}
		select {
		case n.inbox <- csInput{record: report}:
		case <-n.life.Done():
			return
		}
	}
}
