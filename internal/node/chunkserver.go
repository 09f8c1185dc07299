package node

import (
	"cmp"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

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
	start   time.Time
	clock   clock               // the core's time (newVoterClock)
	tr      transport.Transport // opt.Transport, or the kernel's
	ln      net.Listener        // nil: Port was given, nothing listens
	// at is the time of the newest step, and stepped says a step ran since
	// the loop last set its timer: the timer and the metrics read the
	// step's time rather than the clock again (a voter's loop runs on
	// every heartbeat).
	at      roles.Instant
	stepped bool
	port    uint16

	inbox     chan csInput
	lifecycle // Stop, Done, Err (lifecycle.go)

	links   map[wire.MasterID]*link
	masters []masterhost.Master // the set now (loop only)
	host    *hostSpec           // MASTER_HOST, resolved again (resolveLoop)
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
	dg      *dgKeys
	hbSeen  seqFilter
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
}

// StartChunkserver listens on the CSSERV port (unless opt.Port names it),
// connects to every master and starts the voter once it has an id.
func StartChunkserver(opt ChunkserverOptions, store ChunkserverStore) (*ChunkserverNode, error) {
	n := &ChunkserverNode{
		opt: opt, log: opt.Log, store: store, start: time.Now(), clock: newVoterClock(), tr: transport.Or(opt.Transport),
		inbox: make(chan csInput, cmp.Or(opt.Inbox, csInbox)), lifecycle: newLifecycle(),
		links: map[wire.MasterID]*link{}, addrOf: map[wire.MasterID]netip.Addr{}, masters: slices.Clone(opt.Masters),
		host:  newHostSpec(opt.MasterHost),
		named: map[wire.MasterID]string{}, conns: map[string]bool{},
		state: ChunkserverState{Up: make([]bool, len(opt.Masters))},
		dg:    newDGKeys(), hbSeen: seqFilter{},
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
	if opt.Port != 0 {
		n.port = opt.Port
	} else {
		ln, err := n.tr.Listen(opt.Listen)
		if err != nil {
			return nil, err
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
	if id, ok := store.Identity(); ok {
		switch {
		case id.Addr.Port() != n.port:
			// Another port is another identity (ip:port, as in MooseFS).
			n.log.Warn().Str("was", id.Addr.String()).Str("now", netip.AddrPortFrom(opt.Bind, n.port).String()).
				Msg("port changed since registration: registering again")
			if err := store.ForgetIdentity(); err != nil {
				n.closeListener() // the datagram socket too
				return nil, err
			}
		default:
			if opt.Bind.IsValid() && id.Addr.Addr() != opt.Bind {
				// Kept, so that the masters can tell what happened: a copy
				// of a running chunkserver (a cloned VM or data directory)
				// is refused as a clone and named while the original is
				// connected; a chunkserver that really moved is told its
				// id is taken (IDTaken) and registers again.
				n.log.Warn().Str("was", id.Addr.String()).Str("now", netip.AddrPortFrom(opt.Bind, n.port).String()).Uint32("id", uint32(id.CS)).
					Msg("address changed since registration: keeping the id; the masters refuse this chunkserver as a clone while the one registered at the old address is connected, and tell it to register again otherwise")
			}
			n.id = id
			// The slow key derivation now, not in the first handshake.
			secret.Warm(opt.AuthCode, id.ClusterID)
		}
	}
	for _, m := range opt.Masters {
		n.links[m.ID] = startCSLink(n, m)
	}
	go n.loop()
	if v, ok := store.(interface{ Verify() (string, error) }); ok && opt.RecordVerify > 0 {
		go n.verifyLoop(v.Verify)
	}
	if opt.MasterHost != "" {
		go resolveLoop(n.log, n.host, opt.HostsFile, opt.MasterPort, opt.ResolveInterval, n.done,
			func(list []masterhost.Master) bool {
				select {
				case n.inbox <- csInput{masters: list}:
					return true
				case <-n.done:
					return false
				}
			})
	}
	return n, nil
}

// SetMasterHost puts a new MASTER_HOST in force (a reload) and resolves
// it now.
func (n *ChunkserverNode) SetMasterHost(spec string) { n.host.set(spec) }

// Reload resolves MASTER_HOST again (SIGHUP: service.Serve calls it).
func (n *ChunkserverNode) Reload() { n.Resolve() }

// Resolve asks for MASTER_HOST to be resolved again now (SIGHUP); it does
// not wait.
func (n *ChunkserverNode) Resolve() { n.host.ask() }

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
			l.stop()
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

func (n *ChunkserverNode) now() roles.Instant { return roles.Instant(n.clock.since()) }

func (n *ChunkserverNode) hello() frame.Hello {
	id := n.Identity()
	h := frame.Ours(frame.KindChunkserver)
	h.Cluster, h.ID = id.ClusterID, uint32(id.CS)
	return h
}

func (n *ChunkserverNode) loop() {
	defer close(n.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// An orderly stop: stopReq is set to nil once asked, stopBy bounds the
	// wait for the promise to end.
	stopReq := n.stopReq
	var stopBy <-chan time.Time
	if n.Identity().CS != wire.NoCS {
		if err := n.startVoter(netip.Addr{}, false); err != nil {
			n.fail(err)
			return
		}
	}
	for {
		wait := 200 * time.Millisecond // registration retries
		if n.voter != nil {
			wait = time.Hour
			if d := n.voter.NextDeadline(); d != roles.Never {
				// After a step, from the step's time: the timer then fires
				// late by what the flush took, and a voter's deadlines all
				// allow an act (vote elsewhere, nominate, probe), none
				// obliges one in time.
				now := n.at
				if !n.stepped {
					now = n.now()
				}
				wait = max(time.Duration(d-now), 0)
			}
		}
		// Moved on every heartbeat (a content voter's deadlines all move
		// out with it). Arming it only ever earlier, and stepping a Tick
		// when it fired early, saved an idle chunkserver nothing
		// measurable and cost a swarm a wake-up per voter and round.
		timer.Reset(wait)
		n.stepped = false
		var err error
		select {
		case in := <-n.inbox:
			n.hold()
			// Group commit, as in the master: what is already queued is
			// stepped too, and one write makes the group's record durable
			// before any of its answers leave (a LEADER's heartbeats come
			// in bursts when changes are acknowledged).
			err = group(in, n.inbox, n.handle)
		case <-timer.C:
			n.hold()
			if n.voter != nil {
				err = n.step(roles.Tick{})
			} else {
				n.register()
			}
		case <-stopReq:
			stopReq = nil // asked once
			if n.voter == nil {
				n.goodbye()
				return
			}
			err = n.step(roles.StopRequested{})
			// Bounded: a promise that is neither released nor proven void
			// lapses within the longest ever made; past that the process
			// ends without the mark (and its next start keeps quiet).
			stopBy = time.After(max(n.opt.Voter.MaxPromise, n.voter.Hard().MaxGranted) + 500*time.Millisecond)
		case <-stopBy:
			n.log.Warn().Msg("chunkserver stopped with a promise standing: its next start keeps quiet")
			n.goodbye()
			return
		}
		if err == nil {
			err = n.flush()
		}
		if err != nil {
			n.fail(err)
			return
		}
		if stopReq == nil && (n.voter == nil || n.voter.Stopped()) {
			// The clean-stop mark is durable (flush wrote it before
			// anything else): nothing steps the voter after this.
			n.goodbye()
			return
		}
	}
}

func (n *ChunkserverNode) fail(err error) {
	n.err = err
	n.log.Error().Err(err).Msg("chunkserver stops")
	n.closeAll()
}

// goodbye ends an orderly stop: the voter already said goodbye to the
// master it voted for (StopRequested), and every connection closes.
func (n *ChunkserverNode) goodbye() {
	n.closeAll()
	// Give the goodbye a moment to leave before the process ends.
	deadline := time.Now().Add(500 * time.Millisecond)
	for _, l := range n.links {
		for l.up() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	n.log.Info().Msg("chunkserver stopped")
}

func (n *ChunkserverNode) closeAll() {
	n.closeListener()
	for _, l := range n.links {
		l.stop()
	}
}

func (n *ChunkserverNode) closeListener() {
	if n.ln != nil {
		_ = n.ln.Close()
	}
	n.closeDatagrams()
}

// Reconnect closes every master connection at once; each link dials again
// at once, as after any connection it lost that had lived (the voter sees
// VoteConnLost, not closed by the master). The swarm's reconnect storm.
func (n *ChunkserverNode) Reconnect() {
	for _, l := range n.links {
		l.reconnect()
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

// register asks every connected master for an id; the LEADER answers.
func (n *ChunkserverNode) register() {
	if time.Since(n.regAt) < 200*time.Millisecond {
		return
	}
	n.regAt = time.Now()
	for _, l := range n.links {
		l.send(protocol.RegisterReq{Addr: n.opt.Bind, Port: n.port, VoterOnly: len(n.opt.Disks) == 0})
	}
}

// startVoter starts the voter once the chunkserver has an id. lost: the id
// came back from a registration of this run as a known member while the
// record shows no promise (a wiped data directory: voter.Config).
func (n *ChunkserverNode) startVoter(local netip.Addr, lost bool) error {
	id := n.Identity()
	cfg := n.opt.Voter
	cfg.ID, cfg.Port, cfg.VoterOnly = id.CS, n.port, len(n.opt.Disks) == 0
	cfg.Addr = id.Addr.Addr()
	for _, m := range n.masters {
		cfg.Masters = append(cfg.Masters, m.ID)
	}
	hard, err := n.store.VoterHard()
	if err != nil {
		return err
	}
	cfg.RecordLost = lost && hard.NeverPromised()
	cfg.RecordDamaged, n.damaged = n.damaged, false
	if cfg.RecordLost {
		n.stMu.Lock()
		n.state.Record = n.recordPath() + ": lost (an empty record for an id that was already a member: removed, or a wiped DATA_PATH)"
		n.stMu.Unlock()
		n.log.Error().Str("file", n.recordPath()).Uint32("id", uint32(id.CS)).
			Msg("voter record lost: " + n.state.Record + ". The voter grants no vote until a LEADER's heartbeat has restored what it forgot")
		if n.metrics != nil {
			n.metrics.RecordDamaged()
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := n.flush(); err != nil {
		return err
	}
	v, b := voter.New(cfg, hard, n.now())
	// Carry makes the start's record (the clean-stop mark cleared) durable
	// before anything can be granted: the voter is stepped only after.
	if err := voter.Carry(n.store, csFx{n}, b); err != nil {
		return err
	}
	n.voter = v
	quiet := voter.QuietAfterStart(cfg, hard)
	why := "its last run may have left a promise: quiet until it has lapsed"
	switch {
	case cfg.RecordDamaged:
		why = "its record was read from the older copy (the newer is damaged): quiet as after a crash, then uncertain until a LEADER restores the record"
	case quiet > 0 && cfg.RecordLost:
		why = "an empty record for an id already registered (data directory wiped?): quiet as after a crash, then uncertain until a LEADER restores the record"
	case v.Uncertain():
		why = "its record is still uncertain from an earlier run: it grants no vote until a LEADER restores it"
	case quiet == 0 && hard.CleanStop:
		why = "its last run stopped in order with no promise standing: voting at once"
	case quiet == 0:
		why = "it never promised a vote: voting at once"
	}
	n.log.Info().Str(obs.FieldCS, id.Addr.String()).Uint32("id", uint32(id.CS)).Str("cluster", id.ClusterID).
		Dur("quiet", quiet).Msg("voter started: " + why)
	n.uncertain = v.Uncertain()
	n.stMu.Lock()
	n.state.Uncertain = n.uncertain
	n.stMu.Unlock()
	for _, l := range n.links {
		n.sendInfo(l)
	}
	return nil
}

func (n *ChunkserverNode) handle(in csInput) error {
	if in.masters != nil {
		return n.takeMasters(in.masters)
	}
	if in.record != "" {
		n.stMu.Lock()
		n.state.Record = in.record
		n.stMu.Unlock()
		n.log.Error().Str("file", n.recordPath()).Msg("voter record changed on the disk since it was written (rot, a bad sector, a stray write): " + in.record)
		if n.metrics != nil {
			n.metrics.RecordDamaged()
		}
		for _, l := range n.links {
			n.sendInfo(l)
		}
		return nil
	}
	if in.from != wire.NoMaster && n.links[in.from] == nil {
		return nil // from a link stopped since: that master is gone
	}
	if in.reply != nil {
		if n.voter != nil || in.reply.ID == wire.NoCS {
			return nil
		}
		addr := n.opt.Bind
		if !addr.IsValid() {
			addr = in.local
		}
		id := metadata.Identity{CS: in.reply.ID, ClusterID: in.cluster, Addr: netip.AddrPortFrom(addr, n.port)}
		if err := n.store.SetIdentity(id); err != nil {
			return err
		}
		n.idMu.Lock()
		n.id = id
		n.idMu.Unlock()
		n.log.Info().Uint32("id", uint32(id.CS)).Str("cluster", id.ClusterID).Str("master", n.addrOf[in.from].String()).Msg("registered")
		// Reconnect so every master hears the new id in the hello.
		for _, l := range n.links {
			l.reconnect()
		}
		return n.startVoter(addr, !in.reply.New)
	}
	if in.up {
		if n.voter == nil {
			return nil
		}
		return n.step(roles.LinkUp{Master: in.from})
	}
	if n.voter == nil {
		return nil
	}
	if _, ok := in.ev.(roles.Refused); ok && !n.opt.TrustRefused {
		return nil // the fast path is off: a promise to a dead master lapses
	}
	switch e := in.ev.(type) {
	case roles.Heartbeat:
		if !n.admitHeartbeat(e, in.dgram) {
			return nil
		}
	case roles.VoteRelease:
		if !n.admitRelease(e, in.dgram) {
			return nil
		}
	case roles.Redirect:
		n.dg.forget(uint32(in.from), e.Session)
	case roles.TrustRecord:
		n.trusted = in.from
	case roles.VoteConnLost:
		n.forgetDatagrams(e.Master)
		n.log.Debug().Str("master", n.addrOf[e.Master].String()).Bool("closed", e.Closed).Msg("master connection lost")
	case roles.Refused:
		n.log.Debug().Str("master", n.addrOf[e.Master].String()).Dur("sent_ago", time.Duration(n.now()-e.SentAt)).Msg("dial refused")
	}
	return n.step(in.ev)
}

// step runs one event through the voter; its actions wait for flush.
func (n *ChunkserverNode) step(ev roles.Event) error {
	n.at, n.stepped = n.now(), true
	if b := n.voter.Step(n.at, ev); !b.Empty() {
		n.pending = append(n.pending, b)
	}
	return nil
}

// flush carries out what the steps since the last flush asked for.
func (n *ChunkserverNode) flush() error {
	group := n.pending
	n.pending = nil
	if err := voter.Carry(n.store, csFx{n}, group...); err != nil {
		return err
	}
	n.noteUncertain()
	n.observe()
	return nil
}

// noteUncertain tells the masters and the log when the voter became
// uncertain or stopped being so (loop only, after the record is durable).
func (n *ChunkserverNode) noteUncertain() {
	now := n.voter != nil && n.voter.Uncertain()
	by := n.trusted
	n.trusted = wire.NoMaster
	if now == n.uncertain {
		return
	}
	n.uncertain = now
	n.stMu.Lock()
	n.state.Uncertain = now
	n.stMu.Unlock()
	if !now {
		h := n.voter.Hard()
		ev := n.log.Warn().Str("file", n.recordPath()).Uint64(obs.FieldEpoch, h.MaxEpoch).Str("commit", h.Commit.String())
		if by != wire.NoMaster {
			ev.Str("master", n.addrOf[by].String()).Msg("voter record vouched for by the operator (mfscli -CTRUST): voting on it as it is")
		} else {
			ev.Str("master", n.addrOf[h.EpochOwner].String()).Msg("voter record restored from the LEADER's heartbeat: voting again")
		}
	}
	for _, l := range n.links {
		n.sendInfo(l)
	}
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
		case <-n.done:
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
		case <-n.done:
			return
		}
	}
}

// csFx carries a voter's batch out to the links and the log
// (voter.Effects). The store is the Persister: one fsync for the newest
// voter record of the group, before anything leaves.
type csFx struct{ n *ChunkserverNode }

// Durable: nothing of the chunkserver's reports waits on its disk.
func (fx csFx) Durable() {}

func (fx csFx) WallUnixMs() int64 { return time.Now().UnixMilli() }

func (fx csFx) Send(to roles.Peer, msg wire.Message) {
	n := fx.n
	l := n.links[wire.MasterID(to.ID)]
	switch m := msg.(type) {
	case roles.VoteHello:
		n.log.Debug().Str("master", n.addrOf[wire.MasterID(to.ID)].String()).Bool("nominate", m.Nominate).Msg("vote session opened")
		if l != nil {
			msg = n.openDatagrams(l.to, m)
		}
	case roles.VoteBye:
		n.log.Debug().Str("master", n.addrOf[wire.MasterID(to.ID)].String()).Msg("vote session closed")
		n.dg.forget(uint32(to.ID), m.Session)
	}
	if l != nil {
		l.send(msg)
		if a, ok := msg.(roles.HeartbeatAck); ok {
			n.sendDatagram(l.to.ID, a)
		}
	}
}

// IDTaken: the store forgets the id, and the links reconnect to register
// again; Carry drops whatever the old voter asked for after this.
func (fx csFx) IDTaken(t roles.IDTaken) error {
	n := fx.n
	n.log.Warn().Str("master", n.addrOf[t.Master].String()).Uint32("id", uint32(n.Identity().CS)).
		Msg("the registry gives this id to another chunkserver: registering again")
	if err := n.store.ForgetIdentity(); err != nil {
		return err
	}
	n.idMu.Lock()
	n.id = metadata.Identity{}
	n.idMu.Unlock()
	n.voter = nil
	for _, l := range n.links {
		l.reconnect()
	}
	return nil
}

// Stopped: the loop ends after this flush (it asks voter.Stopped()).
func (fx csFx) Stopped() {}

func (fx csFx) Ignored(reason string) { fx.n.log.Debug().Str(obs.FieldReason, reason).Msg("ignored") }

func (n *ChunkserverNode) observe() {
	n.stMu.Lock()
	st := &n.state
	st.Registered, st.VoteFor, st.Promised = n.voter != nil, wire.NoMaster, wire.NoMaster
	for i, m := range n.masters {
		st.Up[i] = n.links[m.ID].up()
	}
	if n.voter != nil {
		st.VoteFor = n.voter.VoteFor()
		st.Promised, _ = n.voter.Promise()
		st.Crowd, st.InCrowd = n.voter.Crowd(), n.voter.InCrowd()
	}
	n.stMu.Unlock()
	if n.metrics == nil {
		return
	}
	s := obs.ChunkserverSnapshot{Registered: n.voter != nil, Connected: n.conns}
	for id, l := range n.links {
		s.Connected[n.named[id]] = l.up()
	}
	if n.voter != nil {
		if m := n.voter.VoteFor(); m != wire.NoMaster {
			s.VoteFor = n.named[m]
		}
		if m, until := n.voter.Promise(); m != wire.NoMaster {
			s.Promised = n.named[m]
			s.PromiseLeft = time.Duration(until - n.at) // as of the newest step
		}
		s.MaxEpoch = n.voter.Hard().MaxEpoch
		s.Uncertain = n.voter.Uncertain()
	}
	n.metrics.Set(s)
}
