package node

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/witness/s3store"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/secret"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	"github.com/mfs-election/mfs-election/pkg/witness"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// MasterOptions is what mfsmaster hands its driver.
type MasterOptions struct {
	Core    master.Config // Core.ID is Self's id, Core.Masters every master's
	Self    netip.Addr
	Masters []masterhost.Master // every master's 9419 address, this one included
	// MasterHost is MASTER_HOST, resolved again (masterset.go) every
	// ResolveInterval (0: only when asked), through HostsFile when set,
	// with MLPort where an entry names no port. Empty: Masters for good.
	MasterHost      string
	HostsFile       string
	ResolveInterval time.Duration
	MLPort          uint16
	// Listen addresses ("host:port"; port 0 picks one, for tests).
	ListenML, ListenCS, ListenCL string
	Bind                         netip.Addr // outgoing connections leave from here (invalid: kernel's choice)
	AuthCode                     string
	AdminPassword                string // ADMIN_PASSWORD at start: admin commands must prove it (protocol.AdminProof); SetAdminPassword replaces it
	// ExportsFile is mfsexports.cfg: who may read and change which keys
	// (empty, or a missing file: everyone everything). Reload re-reads it.
	ExportsFile string
	Version     string
	Log         zerolog.Logger
	Metrics     prometheus.Registerer

	// Witness is the witness's store (WITNESS_* keys; nil: none). The
	// master uses it only once it passed its self-test, and only where
	// the registry names a witness.
	Witness *s3store.Config

	// Datagrams (HEARTBEAT_UDP): heartbeats also go out as UDP datagrams
	// from ListenCS's address and port to every voter that opened its
	// session with a datagram key, and acknowledgements are taken from
	// there (datagram.go).
	Datagrams bool

	// Tests shorten the read deadlines (0: the defaults of guard.go).
	idleOverride, frameOverride time.Duration
}

// MasterNode runs one master: it owns the role machine and the store, and
// carries events in and actions out. Only its loop goroutine touches core,
// store and the connection maps.
type MasterNode struct {
	opt     MasterOptions
	log     zerolog.Logger
	store   *metadata.MasterStore
	core    *master.Master
	metrics *obs.MasterMetrics
	start   time.Time
	clock   clock // the core's time (CLOCK_BOOTTIME)
	// iterAt, iterMono: the loop's reading of clock at the start of the
	// current iteration, and Go's monotonic clock then (loopNow). Loop only.
	iterAt   roles.Instant
	iterMono time.Time

	lnML, lnCS, lnCL net.Listener
	// udp is the datagram socket beside lnCS (nil: Datagrams off, or it
	// could not be opened); dg the voters' session keys, ackSeen the
	// acknowledgements' filter (loop only), dgStats what was received.
	udp     *net.UDPConn
	dg      *dgKeys
	ackSeen seqFilter
	dgStats *obs.Datagrams
	// Two inboxes, so that client work never queues ahead of votes: inbox
	// carries the chunkserver and master ports (votes, acks, peer
	// traffic), clInbox the client port. The loop drains inbox first.
	inbox    chan input
	clInbox  chan input
	stopReq  chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	err      error

	// book: the set of masters and every master's address (masterset.go),
	// replaced whole by the loop, read by any goroutine.
	book atomic.Pointer[masterBook]
	host *hostSpec // MASTER_HOST, resolved again by resolver
	// strangerTo: the masters whose link refused this one as a stranger
	// (true) or took it (false); member: this master is in the set (loop
	// only).
	strangerTo map[wire.MasterID]bool
	member     bool
	foreign    map[wire.MasterID]bool  // masters of another cluster, reported once
	links      map[wire.MasterID]*link // outgoing, to every other master
	cs         map[wire.CSID]*conn     // the current connection of each chunkserver
	csInfo     map[wire.CSID]protocol.CSInfo
	peersIn    map[*conn]bool               // incoming master connections
	clConns    map[*conn]bool               // every open client/mfscli connection
	clients    map[changelog.ClientID]*conn // where each client session's replies go
	nextCl     uint64
	admins     map[uint64]adminWait
	nextAdm    uint64
	hbSent     map[hbKey]time.Time // for the round-trip metric; pruned (pruneHBSent)
	hbPrune    time.Time           // when hbSent was last pruned

	// listsOut: list requests handed to the core and not answered yet;
	// clHeld: a list request waiting until fewer are (see runGroup).
	listsOut map[listKey]time.Time
	clHeld   *input

	// Limits on what peers can make this master hold (guard.go).
	conns       *connCounter       // open connections per port and source (readers)
	bodies      *bodyBudget        // large frame bodies in flight on 9420 and 9421 (readers)
	auth        *authGuard         // failed proofs per source (readers and loop)
	refusals    *rateLog           // refusal log lines per source (readers and loop)
	regs        regGuard           // registrations per source (loop)
	clones      cloneBook          // refused clones, for the listings (loop)
	infoClipped map[wire.CSID]bool // logged once: its CSInfo was cut (loop)

	// The group being built: the batches of the steps since the last
	// flush, and the driver's own replies that must follow them.
	group []master.Batch
	after []func()

	// What observe() last saw, to log and count changes once.
	lastLeader wire.MasterID
	// leaderChangeMs: when the LEADER last changed (wall clock, for the
	// listings); usage samples memory and CPU for them.
	leaderChangeMs int64
	usage          usage
	syncedAt       time.Time
	observedRole   roles.Role
	observedAt     time.Time
	layout         layoutWarnings
	acks           ackWatch // the LEADER's acknowledgement durability, last seen (ackdurability.go)

	helloMu sync.Mutex
	helloV  frame.Hello

	// The snapshot being written in the background (SaveSnapshot): its
	// result comes back through snapDone; shutdown cancels and waits.
	snapCtx    context.Context
	snapCancel context.CancelFunc
	snapWG     sync.WaitGroup
	snapDone   chan snapResult
	// wit makes the witness's calls (nil: no store); witDone is its
	// answers (nil, so never ready, without one).
	wit     *witnessClient
	witDone chan witnessDone
	witAdm  witnessAdmin // the listings' view of the store's answers (witnessadmin.go)
	// snapRetry is the first back-off after a failed snapshot write
	// (tests shorten it); it doubles up to snapRetryMax.
	snapRetry time.Duration

	// fenceOut: the core's fence as of the newest batch, with the
	// location index the gauges need, for the reports built away from
	// the loop (fence.go); locs is the loop's current index.
	fenceOut atomic.Pointer[outward]
	// The last fence taken: what it reported, under which stamp, when.
	fenceReport master.RoleReport
	fenceStamp  master.FenceStamp
	fenceAt     time.Time
	// roundStart: when the step that started a heartbeat round began
	// (zero: no round in the group being stepped).
	roundStart time.Time
	locs       *locIndex
	// stages times client changes through the ack rule (stages.go);
	// groupAt is when the group being stepped began.
	stages  *stages
	groupAt time.Time

	// exports is mfsexports.cfg in force (readers judge client requests
	// with it; Reload replaces it).
	exports atomic.Pointer[exportsNow]
	// adminPassword is ADMIN_PASSWORD in force (readers check admin
	// proofs with it; SetAdminPassword replaces it), never nil.
	adminPassword atomic.Pointer[string]
}

// adminWait is an admin command waiting for the core's reply.
type adminWait struct {
	c    *conn
	id   uint64 // the requester's own id, echoed back
	note string // put before the core's reply (what the driver did first)
}

type listKey struct {
	client changelog.ClientID
	seq    uint64
}

type hbKey struct {
	cs  wire.CSID
	seq uint64
}

// snapResult is how a background snapshot write ended.
type snapResult struct {
	snap *namespace.Snapshot
	w    metadata.SnapshotWrite
	took time.Duration
	err  error
	// retry: after a failure, when the write is tried again (the
	// background goroutine goes on with the same snapshot).
	retry time.Duration
}

// snapRetryMin and snapRetryMax bound the back-off between attempts at a
// snapshot that failed to write (a full disk): soon enough that space
// freed is used, rarely enough that a disk that stays full is not hammered.
const (
	snapRetryMin = time.Second
	snapRetryMax = time.Minute
)

type inKind uint8

const (
	inMsg      inKind = iota // msg arrived on c
	inOpen                   // c is established and checked
	inClosed                 // c ended
	inMasters                // MASTER_HOST resolved again (masters)
	inLink                   // a link to master from was answered (stranger: refused as not in its set)
	inCall                   // call runs on the loop: the result of work done off it (witnessadmin.go)
	inDatagram               // an authenticated acknowledgement datagram (msg) from src
)

// input is one thing for the loop: from a connection reader or a link.
type input struct {
	kind inKind
	port masterPort
	c    *conn
	msg  wire.Message
	ev   roles.Event // an event of the driver's own (no connection): stepped as is
	// admin: an AdminReq's proof, checked by the connection's reader (the
	// key derivation may be slow the first time; the loop must not wait).
	admin adminCheck
	// byPeer (inClosed): the peer's side ended the connection (a FIN or a
	// RST), not this master.
	byPeer bool
	// inMasters: the list (and, for mfscli -CMR, the command to answer
	// and any error resolving); inLink: the master and how it answered.
	masters  []masterhost.Master
	asked    *adminWait
	err      error
	from     wire.MasterID
	stranger bool
	call     func()         // inCall
	src      netip.AddrPort // inDatagram
}

// adminCheck is what the reader found of an admin command's proof.
type adminCheck uint8

const (
	adminOpen      adminCheck = iota // no ADMIN_PASSWORD: commands are open
	adminProved                      // the proof checks
	adminMissing                     // no proof
	adminWrong                       // a proof that does not check
	adminElsewhere                   // meant for another master (Target)
)

// StartMaster opens the listeners and starts the loop. The store must hold
// whatever this master has (nothing, for one started with -e).
func StartMaster(opt MasterOptions, store *metadata.MasterStore) (*MasterNode, error) {
	var wstore *s3store.Store
	if opt.Witness != nil {
		var err error
		if wstore, err = s3store.New(*opt.Witness); err != nil {
			return nil, fmt.Errorf("witness: %w", err)
		}
		// The lease record names the cluster: a master started with -e
		// learns the id later and uses the witness after its next start.
		opt.Core.Witness.Cluster = store.ClusterID()
		opt.Core.Witness.Store = opt.Core.Witness.Cluster != ""
	}
	if err := opt.Core.Validate(); err != nil {
		return nil, err
	}
	n := &MasterNode{
		opt: opt, log: opt.Log, store: store, start: time.Now(), clock: newClock(), stages: newStages(),
		inbox: make(chan input, 4096), clInbox: make(chan input, 1024), stopReq: make(chan struct{}), done: make(chan struct{}),
		foreign: map[wire.MasterID]bool{}, links: map[wire.MasterID]*link{},
		host: newHostSpec(opt.MasterHost), strangerTo: map[wire.MasterID]bool{}, member: true,
		cs: map[wire.CSID]*conn{}, csInfo: map[wire.CSID]protocol.CSInfo{}, peersIn: map[*conn]bool{},
		clConns: map[*conn]bool{}, clients: map[changelog.ClientID]*conn{}, admins: map[uint64]adminWait{}, hbSent: map[hbKey]time.Time{},
		snapDone: make(chan snapResult, 1), snapRetry: snapRetryMin,
		listsOut: map[listKey]time.Time{}, conns: newConnCounter(), bodies: newBodyBudget(largeBodies), auth: &authGuard{}, refusals: &rateLog{}, infoClipped: map[wire.CSID]bool{},
		dg: newDGKeys(), ackSeen: seqFilter{},
	}
	if need, have := filesNeeded(), raiseFileLimit(filesNeeded()); have < need {
		// Not a fault: a few thousand chunkservers fit in far less. Said
		// once, for the operator who grows the cluster past it.
		n.log.Info().Uint64("need", need).Uint64("have", have).Msg("RLIMIT_NOFILE is below what the connection caps may hold: connections past it are refused by the kernel (accept fails) rather than by the caps; raise LimitNOFILE= in the systemd unit or ulimit -n for a cluster that large")
	}
	n.snapCtx, n.snapCancel = context.WithCancel(context.Background())
	if wstore != nil {
		if !opt.Core.Witness.Store {
			n.log.Warn().Msg("witness: this master has no metadata yet (started with -e): it uses the witness from its next start")
		}
		n.wit = startWitness(wstore, n.log)
		n.witDone = n.wit.done
	}
	ex, err := loadExports(opt.ExportsFile)
	if err != nil {
		return nil, err
	}
	n.metrics = obs.NewMasterMetrics(opt.Metrics)
	obs.RegisterStoreCommits(opt.Metrics, "master", store.Commits)
	n.book.Store(newBook(opt.Masters))
	st, err := store.Load()
	if err != nil {
		return nil, err
	}
	// The incarnation must rise above every one this master had before, or
	// its peers and the voters would ignore it as a stale process: a store
	// that never held a hard state (a new master, or one emptied to start
	// again with -e), or one restored from an older copy (a VM snapshot, a
	// backup), remembers a lower one than it used. The wall clock is above
	// any count of restarts, the stored value rises even if the wall clock
	// went back, and random bits keep a restored copy on a clock that is
	// behind from repeating the incarnation of the run it was copied in
	// (roles.IncarnationBase). A voter refuses an epoch it gave to another
	// incarnation, so a restored master cannot reuse one: architecture §4.
	st.Hard.Incarnation = roles.IncarnationBase(st.Hard.Incarnation, time.Now().UnixMilli(), randomSalt())
	// The slow key derivations now (tens of ms each), not in the first
	// handshakes; a master started with -e derives again for the cluster
	// id it learns, in the readers and links that need it.
	secret.Warm(opt.AuthCode, store.ClusterID())
	secret.Warm(opt.AdminPassword, store.ClusterID())
	n.adminPassword.Store(&opt.AdminPassword)
	n.useExports(ex, store.ClusterID())
	for _, l := range []struct {
		ln   *net.Listener
		addr string
	}{{&n.lnML, opt.ListenML}, {&n.lnCS, opt.ListenCS}, {&n.lnCL, opt.ListenCL}} {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			n.closeListeners()
			return nil, err
		}
		*l.ln = ln
	}
	n.dgStats = obs.NewDatagrams(opt.Metrics, "master")
	if opt.Datagrams {
		if n.udp, err = listenDatagrams(n.lnCS.Addr().String()); err != nil {
			n.log.Warn().Err(err).Str("listen", n.lnCS.Addr().String()).
				Msg("heartbeat datagrams off: their UDP port could not be opened; votes are renewed on TCP alone, which packet loss holds up")
		}
	}
	core, b := master.New(opt.Core, st, n.now())
	n.core = core
	n.setHello()
	// No link is up yet: the first batch is its Persist (the new
	// incarnation), carried out before anything is heard.
	if err := master.Carry(masterDisk{n}, masterFx{n}, b); err != nil {
		n.closeListeners()
		return nil, err
	}
	n.metrics.RoleFrom(n.metricsRole)
	for _, m := range opt.Masters {
		if m.ID != opt.Core.ID {
			n.links[m.ID] = startLink(n, m)
		}
	}
	go n.accept(n.lnML, portML, matomlIn, frame.KindMaster)
	go n.accept(n.lnCS, portCS, matocsIn, frame.KindChunkserver)
	go n.accept(n.lnCL, portCL, matoclIn, frame.KindClient, frame.KindAdmin)
	if n.udp != nil {
		go readDatagrams(n.udp, n.takeDatagram)
	}
	go n.resolver()
	n.log.Info().Str(obs.FieldMaster, opt.Self.String()).Uint64("incarnation", core.Hard().Incarnation).
		Str("cluster", store.ClusterID()).Bool("metadata", core.HasMetadata()).Uint64("snapshot", core.SnapshotAt().Version).
		Int("changelog_entries", core.Log().Held()).Uint64("version", core.Log().Last().Version).Msg("master started as FOLLOWER")
	go n.loop()
	return n, nil
}

// Addrs returns the bound listen addresses (matoml, matocs, matocl).
func (n *MasterNode) Addrs() (ml, cs, cl net.Addr) {
	return n.lnML.Addr(), n.lnCS.Addr(), n.lnCL.Addr()
}

// Stop asks for an orderly shutdown through DUMMY (disconnect rules
// included) and waits for it, at most timeout.
func (n *MasterNode) Stop(timeout time.Duration) error {
	n.stopOnce.Do(func() { close(n.stopReq) })
	select {
	case <-n.done:
	case <-time.After(timeout):
	}
	return n.Err()
}

// Done is closed when the loop has ended; Err then says why (nil: stopped).
func (n *MasterNode) Done() <-chan struct{} { return n.done }

// Err is why the loop ended (nil while running or after an orderly stop).
func (n *MasterNode) Err() error {
	select {
	case <-n.done:
		return n.err
	default:
		return nil
	}
}

func (n *MasterNode) now() roles.Instant { return roles.Instant(n.clock.since()) }

// readClock takes the loop's one CLOCK_BOOTTIME reading of an iteration,
// once its first input is in hand (so never before that input arrived).
// Loop only.
func (n *MasterNode) readClock() {
	n.iterAt, n.iterMono = n.now(), time.Now()
}

// loopNow is the instant the loop steps the core with: the iteration's
// CLOCK_BOOTTIME reading advanced by Go's monotonic clock since. Go reads
// that without a system call (vDSO) and CLOCK_BOOTTIME with one: at 64
// clients the LEADER read it five times a change, a tenth of its
// processor in this VM. Every instant is still taken after the input it
// is stepped with arrived (the input was dequeued after the reading, and
// the monotonic part runs on), and never ahead of CLOCK_BOOTTIME. What
// the monotonic part misses is a suspend of the machine in the middle of
// one iteration: the rest of that iteration's steps see the instant
// before it. Such a step is no different from one that ran just before
// the suspend, with its effects (carried after every step of the
// iteration, the fsync first) held up by it, which every step already
// has to be safe against (docs/architecture.md §3, Clocks); the next
// iteration reads CLOCK_BOOTTIME again and fences. LEASE_READS answers
// on the reading alone, so with it every step reads CLOCK_BOOTTIME.
// Loop only.
func (n *MasterNode) loopNow() roles.Instant {
	if n.opt.Core.LeaseReads || n.iterMono.IsZero() {
		return n.now()
	}
	return n.iterAt + roles.Instant(time.Since(n.iterMono))
}

// setHello records the hello this master opens with; the loop calls it at
// start and when the cluster id is learnt, readers and links read it.
func (n *MasterNode) setHello() {
	h := frame.Ours(frame.KindMaster)
	h.Cluster, h.ID, h.Incarnation = n.store.ClusterID(), uint32(n.opt.Core.ID), n.core.Hard().Incarnation
	n.helloMu.Lock()
	n.helloV = h
	n.helloMu.Unlock()
}

func (n *MasterNode) hello() frame.Hello {
	n.helloMu.Lock()
	defer n.helloMu.Unlock()
	return n.helloV
}

func (n *MasterNode) closeListeners() {
	for _, ln := range []net.Listener{n.lnML, n.lnCS, n.lnCL} {
		if ln != nil {
			_ = ln.Close()
		}
	}
	if n.udp != nil {
		_ = n.udp.Close()
	}
}

// ---- the loop ----------------------------------------------------------------

func (n *MasterNode) loop() {
	defer close(n.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		d := n.core.NextDeadline()
		wait := time.Hour
		if d != roles.Never {
			wait = max(time.Duration(d-n.loopNow()), 0)
		}
		timer.Reset(wait)
		// A held list request blocks the client inbox (it keeps its
		// place in the order) until the lists before it are answered.
		clInbox := n.clInbox
		if n.clHeld != nil {
			clInbox = nil
		}
		var err error
		select {
		case in := <-n.inbox:
			n.readClock()
			err = n.runGroup(&in, false)
		case in := <-clInbox:
			n.readClock()
			err = n.runGroup(&in, true)
		case <-timer.C:
			n.readClock()
			n.step(roles.Tick{WallUnixMs: time.Now().UnixMilli()})
		case r := <-n.snapDone:
			n.readClock()
			err = n.snapshotSaved(r)
		case d := <-n.witDone:
			n.readClock()
			n.witnessTrack(d)
			n.witnessAnswered(d)
		case <-n.stopReq:
			n.readClock()
			n.step(roles.Admin{Kind: roles.AdminShutdown})
			if n.core.Role() != roles.Dummy {
				err = errors.New("the role machine did not reach DUMMY on shutdown")
			}
		}
		if err == nil {
			err = n.flush()
		}
		if err == nil && n.clHeld != nil && n.listRoom() {
			n.readClock()
			if err = n.runGroup(nil, true); err == nil {
				err = n.flush()
			}
		}
		if err != nil || n.core.Role() == roles.Dummy {
			n.shutdown(err)
			return
		}
	}
}

// groupMax bounds how many inputs share one fsync: enough to batch a burst
// of client changes and acknowledgements, few enough that a tick is never
// held back long.
const groupMax = 256

// group handles first, then whatever is already queued behind it (at most
// groupMax), stopping at the first error: the inputs whose effects share
// one write.
func group[T any](first T, inbox <-chan T, handle func(T) error) error {
	err := handle(first)
	for i := 0; i < groupMax && err == nil; i++ {
		select {
		case in := <-inbox:
			err = handle(in)
		default:
			return nil
		}
	}
	return err
}

// clientBudget bounds the client work of one group, in cost units
// (clientCost): the group's heartbeats leave only after it, so it must stay
// a small part of a heartbeat interval. A list of 10k keys costs about
// 10 ms, a single read or write well under 0.1 ms.
const clientBudget = 64

// maxListsOut bounds the list requests the core holds unanswered. A
// linearizable read waits for a heartbeat round (and for the writes before
// it) and the core then answers every waiting read in one step: without
// this bound, 300 pipelined lists would be answered, copied and encoded in
// one go, seconds in which no vote is renewed.
const maxListsOut = 2

// listsOutMaxAge: a list whose answer was never seen (its client left, the
// role changed) stops counting against maxListsOut after this long.
const listsOutMaxAge = 10 * time.Second

func isList(in input) bool {
	r, ok := in.msg.(roles.ClientRead)
	return ok && r.Prefix
}

// listRoom reports whether another list may go to the core now.
func (n *MasterNode) listRoom() bool {
	if len(n.listsOut) < maxListsOut {
		return true
	}
	cut := time.Now().Add(-listsOutMaxAge)
	for k, at := range n.listsOut {
		if at.Before(cut) {
			delete(n.listsOut, k)
		}
	}
	return len(n.listsOut) < maxListsOut
}

// clientCost is what one client input counts against clientBudget.
func clientCost(in input) int {
	switch m := in.msg.(type) {
	case roles.ClientRead:
		if m.Prefix {
			return clientBudget / 2 // a list copies and sorts keys
		}
	case protocol.StatusReq:
		return 4 // tallies and every registered chunkserver
	}
	return 1
}

// runGroup handles one group sharing one fsync (group commit). Vote and
// peer inputs come first, all that are queued; then a tick if one is due,
// so that heartbeats are never held back behind client work; then client
// inputs up to clientBudget, a held list first. first (may be nil) came
// from clInbox when client is set.
func (n *MasterNode) runGroup(first *input, client bool) error {
	n.groupAt = time.Now()
	if first != nil && !client {
		if err := n.handle(*first); err != nil {
			return err
		}
	}
	if err := drain(n.inbox, groupMax, n.handle); err != nil {
		return err
	}
	if d := n.core.NextDeadline(); d != roles.Never && n.loopNow() >= d {
		n.step(roles.Tick{WallUnixMs: time.Now().UnixMilli()})
	}
	budget := clientBudget
	// take hands one client input to the core, or holds a list while the
	// core has maxListsOut unanswered (false: stop taking client work).
	take := func(in input) (bool, error) {
		if isList(in) && !n.listRoom() {
			n.clHeld = &in
			return false, nil
		}
		budget -= clientCost(in)
		return true, n.handle(in)
	}
	if held := n.clHeld; held != nil {
		n.clHeld = nil
		if ok, err := take(*held); !ok || err != nil {
			return err
		}
	}
	if first != nil && client {
		if ok, err := take(*first); !ok || err != nil {
			return err
		}
	}
	for budget > 0 {
		select {
		case in := <-n.clInbox:
			if ok, err := take(in); !ok || err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// drain handles what is already queued in inbox, at most max inputs,
// stopping at the first error.
func drain[T any](inbox <-chan T, max int, handle func(T) error) error {
	for i := 0; i < max; i++ {
		select {
		case in := <-inbox:
			if err := handle(in); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// shutdown closes everything; goodbyes already queued get a moment to leave.
func (n *MasterNode) shutdown(err error) {
	n.err = err
	// Whatever the core last was (a failed write ends the loop in any
	// role), a master that stops reports DUMMY from now on.
	stopped := master.RoleReport{Role: roles.Dummy, Epoch: n.core.Epoch()}
	n.fenceOut.Store(&outward{fence: master.Fence{Now: stopped, Fenced: stopped}, locs: newLocIndex(nil)})
	if err != nil {
		n.log.Error().Err(err).Msg("master stops")
	}
	// A snapshot still being written is abandoned (its temporary file
	// removed); the entries it covers are all still in the changelog.
	n.snapCancel()
	n.snapWG.Wait()
	if n.wit != nil {
		n.wit.stop() // a call out is abandoned: the lease counts nothing after the process
	}
	n.closeListeners()
	all := []*conn{}
	for _, c := range n.cs {
		all = append(all, c)
	}
	for c := range n.peersIn {
		all = append(all, c)
	}
	for c := range n.clConns {
		all = append(all, c)
	}
	for _, l := range n.links {
		l.stop()
	}
	for _, c := range all {
		c.closeAfterFlush()
	}
	deadline := time.Now().Add(time.Second)
	for _, c := range all {
		for !c.closed() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		c.close()
	}
	n.log.Info().Msg("master stopped")
}

// step runs one event through the machine; its actions wait in the group
// until flush.
func (n *MasterNode) step(ev roles.Event) {
	before, _ := n.core.Round()
	start := time.Now()
	if b := n.core.Step(n.loopNow(), ev); !b.Empty() {
		n.group = append(n.group, b)
	}
	if seq, _ := n.core.Round(); seq != before {
		n.roundStart = start // timed to the end of its flush
	}
}

// later queues a reply of the driver's own (status, registration) to leave
// after the group's actions: never before the disk has what it reports.
func (n *MasterNode) later(f func()) { n.after = append(n.after, f) }

// flush carries out the group (roles.Carry: one fsync, then the effects
// in order), then the driver's own replies.
func (n *MasterNode) flush() error {
	group, after := n.group, n.after
	n.group, n.after = nil, nil
	if len(group) > 0 {
		if err := master.Carry(masterDisk{n}, masterFx{n}, group...); err != nil {
			return err
		}
		if !n.roundStart.IsZero() {
			_, voters := n.core.Round()
			n.metrics.HeartbeatRound(time.Since(n.roundStart), voters)
			n.roundStart = time.Time{}
		}
		n.observe()
		n.watchAcks()
	} else {
		n.publishFence() // acknowledgements renew votes without an action
	}
	for _, f := range after {
		f()
	}
	return nil
}

// masterDisk is the master's store as roles.Carry uses it: a failure ends
// the process (never run ahead of the disk); an installed snapshot is
// logged and counted.
type masterDisk struct{ n *MasterNode }

func (d masterDisk) Apply(ps ...roles.Persist) error {
	n := d.n
	leader := n.core.Role() == roles.Leader
	var appended uint64
	if leader {
		for _, p := range ps {
			for _, e := range p.Append {
				n.stages.appended(e, n.groupAt)
				appended = max(appended, e.Pos.Version)
			}
		}
	}
	if err := n.store.Apply(ps...); err != nil {
		return err
	}
	if appended > 0 {
		n.stages.durable(appended, time.Now())
	}
	for _, p := range ps {
		if s := p.Snapshot; s != nil {
			// One received from another master: this one was behind its
			// trimmed changelog (or had no metadata at all).
			n.metrics.SnapshotInstalled()
			n.log.Info().Uint64("version", s.Pos.Version).Uint64(obs.FieldEpoch, s.Pos.Epoch).Int("items", len(s.Data)).
				Int("sessions", len(s.Sessions)).Str("file", n.store.SnapshotPath()).Msg("snapshot installed")
		}
	}
	return nil
}

// masterFx carries a batch's effects out to the connections, the logs and
// the metrics (master.Effects).
type masterFx struct{ n *MasterNode }

// Durable: before anything leaves, a step-down's vote releases let the
// voters move on, and no report may say LEADER once they can.
func (fx masterFx) Durable() { fx.n.publishFence() }

func (fx masterFx) WallUnixMs() int64 { return time.Now().UnixMilli() }

func (fx masterFx) Send(to roles.Peer, msg wire.Message) { fx.n.route(to, msg) }

func (fx masterFx) Close(class roles.ConnClass) { fx.n.disconnect(class) }

func (fx masterFx) Transitioned(t roles.Transition) {
	fx.n.log.Info().Str(obs.FieldFrom, t.From.String()).Str(obs.FieldTo, t.To.String()).
		Uint64(obs.FieldEpoch, t.Epoch).Str(obs.FieldReason, t.Reason).Str("section", t.Section).Msg("role change")
}

func (fx masterFx) AdminReplied(r roles.AdminReply) {
	if w, ok := fx.n.admins[r.ID]; ok {
		w.c.send(protocol.AdminResp{ID: w.id, OK: r.OK, Text: w.note + r.Text, Code: r.Code})
		delete(fx.n.admins, r.ID)
	}
}

func (fx masterFx) SaveSnapshot(s *namespace.Snapshot) { fx.n.saveSnapshot(s) }

// Witness hands a call on the witness's store to its client.
func (fx masterFx) Witness(r witness.Request) { fx.n.witnessCall(r) }

func (fx masterFx) Ignored(reason string) {
	fx.n.metrics.Ignored(reason)
	fx.n.log.Debug().Str(obs.FieldReason, reason).Msg("ignored")
}

// saveSnapshot writes a snapshot of the core's making in the background:
// it may be large, and the loop must go on renewing votes meanwhile. The
// core asks for one at a time and keeps every entry it covers until
// snapshotSaved tells it the file is durable. A failed write is reported
// and tried again after a back-off, until it succeeds or the master stops:
// only trimming the changelog waits for it, and every master snapshots at
// the same version, so stopping would stop them all on one full disk.
func (n *MasterNode) saveSnapshot(s *namespace.Snapshot) {
	n.snapWG.Add(1)
	go func() {
		defer n.snapWG.Done()
		backoff := n.snapRetry
		for {
			start := time.Now()
			w, err := n.store.SaveSnapshot(n.snapCtx, s)
			if n.snapCtx.Err() != nil {
				return
			}
			r := snapResult{snap: s, w: w, took: time.Since(start), err: err}
			if err != nil {
				r.retry = backoff
			}
			select {
			case n.snapDone <- r:
			case <-n.snapCtx.Done():
				return
			}
			if err == nil {
				return
			}
			select {
			case <-time.After(backoff):
			case <-n.snapCtx.Done():
				return
			}
			backoff = min(2*backoff, snapRetryMax)
		}
	}()
}

// snapshotSaved hands the core a finished background write, or logs and
// counts a failed one (the writer tries again by itself).
func (n *MasterNode) snapshotSaved(r snapResult) error {
	if r.err != nil {
		n.metrics.SnapshotFailed()
		n.log.Error().Err(r.err).Uint64("version", r.snap.Pos.Version).Uint64(obs.FieldEpoch, r.snap.Pos.Epoch).
			Str("file", n.store.SnapshotPath()).Dur("retry_in", r.retry).
			Msg("snapshot not saved: the changelog is kept in full until it is; trying again")
		return nil
	}
	n.metrics.SnapshotWritten(r.took)
	lvl := zerolog.InfoLevel
	if !r.w.Replaced {
		lvl = zerolog.DebugLevel // a newer snapshot had been installed meanwhile
	}
	n.log.WithLevel(lvl).Uint64("version", r.snap.Pos.Version).Uint64(obs.FieldEpoch, r.snap.Pos.Epoch).Int("items", len(r.snap.Data)).
		Int("sessions", len(r.snap.Sessions)).Int64("bytes", r.w.Bytes).Bool("replaced", r.w.Replaced).
		Dur("took", r.took).Str("file", n.store.SnapshotPath()).Msg("snapshot saved")
	n.step(roles.SnapshotSaved{Pos: r.snap.Pos})
	return nil
}

func (n *MasterNode) route(to roles.Peer, msg wire.Message) {
	switch m := msg.(type) {
	case roles.Heartbeat:
		now := time.Now()
		n.pruneHBSent(now)
		n.hbSent[hbKey{wire.CSID(to.ID), m.Seq}] = now
		if m.Role == roles.Leader {
			n.stages.commitSent(m.Commit.Version, now)
		}
		if to.Kind == roles.PeerCS {
			n.sendDatagram(wire.CSID(to.ID), dgHeartbeat, m.Session, m.Seq, m)
		}
	case roles.VoteRelease:
		if to.Kind == roles.PeerCS {
			n.sendDatagram(wire.CSID(to.ID), dgRelease, m.Session, 0, m)
		}
	case roles.ClientReply:
		delete(n.listsOut, listKey{m.Client, m.Seq})
	}
	switch to.Kind {
	case roles.PeerMaster:
		if l := n.links[wire.MasterID(to.ID)]; l != nil {
			l.send(msg)
		}
	case roles.PeerCS:
		if c := n.cs[wire.CSID(to.ID)]; c != nil {
			c.send(msg)
		}
	case roles.PeerAllCS:
		for _, c := range n.cs {
			c.send(msg)
		}
	case roles.PeerClient:
		if r, ok := msg.(roles.ClientReply); ok {
			switch {
			case r.Code == wire.CodeBusy:
				n.metrics.Busy()
			case r.OK:
				n.stages.replied(r.Client, r.Seq, time.Now(), n.metrics.ChangeStage)
			}
		}
		if c := n.clients[changelog.ClientID(to.ID)]; c != nil {
			c.send(msg)
		}
	}
}

// hbSentMaxAge: a heartbeat unanswered this long (longer than any lease
// asked) is answered never, or too late to measure anything: its entry
// goes. A chunkserver that never answers, or one that left, would
// otherwise add one a round for as long as the master runs.
const hbSentMaxAge = 30 * time.Second

// pruneHBSent drops the heartbeats unanswered for hbSentMaxAge, once per
// that long at most (a pass over every entry).
func (n *MasterNode) pruneHBSent(now time.Time) {
	if now.Sub(n.hbPrune) < hbSentMaxAge {
		return
	}
	n.hbPrune = now
	for k, at := range n.hbSent {
		if now.Sub(at) > hbSentMaxAge {
			delete(n.hbSent, k)
		}
	}
}

// disconnect closes a class of connections after their queued goodbyes.
func (n *MasterNode) disconnect(class roles.ConnClass) {
	switch class {
	case roles.ConnChunkservers:
		for id, c := range n.cs {
			c.closeAfterFlush()
			delete(n.cs, id)
			delete(n.csInfo, id)
			n.forgetDatagrams(id)
		}
	case roles.ConnClients:
		for c := range n.clConns {
			c.closeAfterFlush()
		}
		clear(n.clConns)
		clear(n.clients)
		clear(n.listsOut)
	case roles.ConnSessions:
		for c := range n.peersIn {
			c.closeAfterFlush()
			delete(n.peersIn, c)
		}
	}
}

// handle takes one input from a reader or a link.
func (n *MasterNode) handle(in input) error {
	if ev, ok := in.ev.(roles.ForeignCluster); ok {
		if !n.foreign[ev.Master] {
			n.foreign[ev.Master] = true
			n.log.Error().Str(obs.FieldPeer, n.addr(ev.Master).String()).Msg("a master of MASTER_HOST has another cluster's metadata id: this master will not bootstrap a cluster of its own; if it was wiped by mistake, empty DATA_PATH and start it with -e")
		}
		n.step(ev)
		return nil
	}
	switch in.kind {
	case inMasters:
		if in.err == nil {
			n.takeMasters(in.masters)
		}
		if in.asked != nil {
			n.answerResolve(*in.asked, in.err)
		}
		return nil
	case inLink:
		n.linkAnswered(in.from, in.stranger)
		return nil
	case inCall:
		in.call()
		return nil
	case inDatagram:
		n.fromDatagram(in.msg.(roles.HeartbeatAck), in.src)
		return nil
	case inOpen:
		switch in.port {
		case portCS:
			n.csOpened(in.c)
		case portML:
			n.peersIn[in.c] = true
		case portCL:
			n.clConns[in.c] = true
		}
		return nil
	case inClosed:
		switch in.port {
		case portCS:
			id := wire.CSID(in.c.peer.ID)
			if n.cs[id] == in.c {
				delete(n.cs, id)
				delete(n.csInfo, id)
				delete(n.infoClipped, id)
				n.forgetDatagrams(id)
				n.step(roles.ConnLost{CS: id, ByPeer: in.byPeer})
			}
		case portML:
			delete(n.peersIn, in.c)
		case portCL:
			delete(n.clConns, in.c)
			for id, c := range n.clients {
				if c == in.c {
					delete(n.clients, id)
				}
			}
		}
		return nil
	}
	switch in.port {
	case portCS:
		return n.fromCS(in.c, in.msg)
	case portML:
		return n.fromMaster(in.c, in.msg)
	}
	return n.fromClient(in)
}

// csOpened makes a new chunkserver connection its id's route, or refuses
// it. One id has one connection: a second one from the same address is the
// same chunkserver reconnecting (its old connection may be half dead), so
// it replaces the old one; one from another address is a cloned
// chunkserver or an impostor and is refused, unless the registry gives the
// id to the new address and not to the old one (the registered address
// wins). A replaced connection is a lost one to the core, so the core never
// goes on counting a session whose connection is gone.
func (n *MasterNode) csOpened(c *conn) {
	id := wire.CSID(c.peer.ID)
	if id == wire.NoCS {
		return // registering: it takes no part in votes until it has an id
	}
	old := n.cs[id]
	if old == nil {
		// Even from an address the registry gives to another id's holder:
		// the core answers its VoteHello with Redirect{IDTaken}, which is
		// how an honest holder of an id handed out twice learns to
		// register again. Should the registered address connect, it wins.
		n.cs[id] = c
		return
	}
	if old.remote == c.remote {
		n.dropCS(id, old)
		n.cs[id] = c
		return
	}
	var reg netip.Addr
	if cfg := n.core.Registry(); cfg != nil {
		if m, ok := cfg.Member(id); ok {
			reg = m.Addr
		}
	}
	if reg.IsValid() && reg == c.remote {
		n.cloneRefused(id, old, c.remote)
		n.dropCS(id, old)
		n.cs[id] = c
		return
	}
	n.cloneRefused(id, c, old.remote)
	c.close()
}

// dropCS ends id's current connection old and tells the core.
func (n *MasterNode) dropCS(id wire.CSID, old *conn) {
	old.close()
	delete(n.cs, id)
	delete(n.csInfo, id)
	delete(n.infoClipped, id)
	n.forgetDatagrams(id)
	n.step(roles.ConnLost{CS: id})
}

// cloneRefused logs, counts and records a refused connection c of id
// (holder: the address that keeps the id).
func (n *MasterNode) cloneRefused(id wire.CSID, c *conn, holder netip.Addr) {
	now := time.Now()
	rec := n.clones.add(id, c.remote, holder, now)
	n.metrics.ConnRefused(portCS.String(), "clone")
	if ok, missed := n.refusals.allow(fmt.Sprintf("clone|%d|%v", id, c.remote), now); ok {
		n.log.Warn().Uint32("id", uint32(id)).Str(obs.FieldPeer, c.remote.String()).Str("holder", holder.String()).
			Int("times", rec.Count).Int("not_logged", missed).Str("port", portCS.String()).Str(obs.FieldReason, "clone").
			Msg("chunkserver id already connected from another address: cloned chunkserver or impostor, connection refused")
	}
}

func (n *MasterNode) fromCS(c *conn, msg wire.Message) error {
	id := wire.CSID(c.peer.ID)
	if c.closed() {
		return nil // refused or replaced: what it sent is not heard
	}
	switch m := msg.(type) {
	case protocol.RegisterReq:
		if !n.regs.allow(c.remote, m.Port, time.Now()) {
			n.metrics.RegistrationRefused()
			if ok, missed := n.refusals.allow("register|"+c.remote.String(), time.Now()); ok {
				n.log.Warn().Str(obs.FieldPeer, c.remote.String()).Uint16("cs_port", m.Port).Int("not_logged", missed).
					Str(obs.FieldReason, "register_flood").
					Msgf("registration refused: this address asked for more than %d new ids within %v, or its /24 (/64) for more than %d", regPerSource, regWindow, regPerPrefix)
			}
			return nil
		}
		// The address it registers with is the one it connects from:
		// locations are decided by address, so a claim is not enough.
		// Step first: a LEADER resumed from a freeze fences itself in the
		// step, and must neither hand out ids nor name itself LEADER.
		n.step(roles.Tick{})
		got, ok := n.core.AssignID(c.remote, m.Port)
		reply := protocol.RegisterReply{ID: got}
		if !ok {
			reply.Leader = n.addr(n.core.Leader())
		} else {
			// New only when the id is surely no member's (no config: say
			// nothing, and the chunkserver keeps quiet).
			if cfg := n.core.Registry(); cfg != nil {
				_, member := cfg.Member(got)
				reply.New = !member
			}
			n.log.Info().Str(obs.FieldCS, netip.AddrPortFrom(c.remote, m.Port).String()).Uint32("id", uint32(got)).Msg("chunkserver id assigned")
		}
		n.later(func() { c.send(reply) })
		return nil
	case protocol.CSInfo:
		// Kept only while this is the id's connection, and bounded: the
		// listings need a few words, not what a peer cares to send.
		if id != wire.NoCS && m.ID == id && n.cs[id] == c {
			m.Addr = c.remote
			var cut1, cut2 bool
			m.Labels, cut1 = clip(m.Labels, maxInfoString)
			m.Version, cut2 = clip(m.Version, maxInfoString)
			m.Record, _ = clip(m.Record, maxRecordReport)
			if (cut1 || cut2) && !n.infoClipped[id] {
				n.infoClipped[id] = true
				n.log.Warn().Uint32("id", uint32(id)).Str(obs.FieldPeer, c.remote.String()).
					Msgf("chunkserver labels or version longer than %d bytes: cut for the listings", maxInfoString)
			}
			n.csInfo[id] = m
		}
		return nil
	}
	if id == wire.NoCS || n.cs[id] != c {
		return nil // an unregistered or superseded connection takes no part
	}
	var ev roles.Event
	switch m := msg.(type) {
	case roles.Probe:
		m.CS = id
		ev = m
	case roles.VoteHello:
		m.CS, m.Addr = id, c.remote
		n.openDatagrams(id, c.remote, m)
		m.DgKey = nil
		ev = m
	case roles.VoteBye:
		m.CS, m.Addr = id, c.remote
		n.dg.forget(uint32(id), m.Session) // after this, nothing of the session is taken
		ev = m
	case roles.HeartbeatAck:
		if !n.ackSeen.admit(uint32(id), m.Session, m.Seq) {
			return nil // its datagram was taken first
		}
		m.CS, m.Addr = id, c.remote
		n.ackRTT(id, m.Seq)
		ev = m
	default:
		return nil
	}
	n.step(ev)
	return nil
}

func (n *MasterNode) fromMaster(c *conn, msg wire.Message) error {
	from := wire.MasterID(c.peer.ID)
	var ev roles.Event
	switch m := msg.(type) {
	case roles.PeerStatus:
		m.From = from
		ev = m
	case roles.Append:
		m.From = from
		if len(m.Entries) > 0 {
			if err := n.adoptCluster(c); err != nil {
				return err
			}
		}
		ev = m
	case roles.SnapshotChunk:
		m.From = from
		if err := n.adoptCluster(c); err != nil {
			return err
		}
		ev = m
	case roles.AppendAck:
		m.From = from
		ev = m
		if m.OK && n.core.Role() == roles.Leader {
			n.stages.replicated(m.Match.Version, time.Now())
		}
	case roles.FetchReq:
		m.From = from
		ev = m
	case roles.FetchResp:
		m.From = from
		ev = m
	default:
		return nil
	}
	n.step(ev)
	return nil
}

// adoptCluster: a master started with -e takes its cluster id from the
// first master that sends it metadata (entries or a snapshot), before the
// core stores any of it.
func (n *MasterNode) adoptCluster(c *conn) error {
	if n.store.ClusterID() != "" || c.peer.Cluster == "" {
		return nil
	}
	if err := n.store.AdoptCluster(c.peer.Cluster); err != nil {
		return err
	}
	n.setHello()
	n.log.Info().Str("cluster", c.peer.Cluster).Msg("joined cluster")
	return nil
}

func (n *MasterNode) fromClient(in input) error {
	c := in.c
	switch m := in.msg.(type) {
	case protocol.StatusReq:
		// Step first: a LEADER resumed from a freeze fences itself in
		// the step and must not report the role it no longer holds.
		n.step(roles.Tick{})
		n.later(func() { c.send(n.statusWith(m)) })
		return nil
	case protocol.AdminReq:
		if !n.adminAllowed(c, m, in.admin) {
			return nil
		}
		if m.Kind == roles.AdminResolve {
			n.resolveFor(c, m.ID)
			return nil
		}
		if m.Kind == roles.AdminTrust {
			n.trustFor(c, m)
			return nil
		}
		if m.Kind == protocol.AdminWitnessOn || m.Kind == protocol.AdminWitnessTest {
			n.witnessCommand(c, m)
			return nil
		}
		n.nextAdm++
		id := n.nextAdm
		n.admins[id] = adminWait{c: c, id: m.ID}
		n.step(roles.Admin{ID: id, Kind: m.Kind, Change: m.Change})
	case roles.ClientWrite:
		m.Client = n.session(c, m.Client)
		n.step(m)
	case roles.ClientRead:
		m.Client = n.session(c, m.Client)
		if m.Prefix {
			n.listsOut[listKey{m.Client, m.Seq}] = time.Now()
		}
		n.step(m)
	}
	return nil
}

// session routes the replies of a client session to the connection its
// newest request came on. A request without a session (mfscli) gets one of
// its own, never retried, so never deduplicated.
func (n *MasterNode) session(c *conn, id changelog.ClientID) changelog.ClientID {
	if id == 0 || id&protocol.AnonymousClient != 0 {
		n.nextCl++
		id = protocol.AnonymousClient | changelog.ClientID(n.nextCl)
	}
	if c.closed() {
		return id
	}
	n.clients[id] = c
	return id
}

// ---- accepting ---------------------------------------------------------------

func (n *MasterNode) accept(ln net.Listener, port masterPort, reg *frame.Registry, kinds ...frame.Kind) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		src := remoteAddr(nc)
		// Refused here, before a goroutine or a buffer is spent on it: a
		// source that failed its proofs too often lately, and connections
		// over the port's caps.
		if port != portCL && n.auth.blocked(src, time.Now()) {
			n.refuse(nc, src, port, errAuthRate)
			continue
		}
		if ok, which := n.conns.acquire(port, src); !ok {
			n.refuse(nc, src, port, fmt.Errorf("%w: %s (at most %d, %d per source)", errLimit, which,
				connLimits[port].total, connLimits[port].perSource))
			continue
		}
		go func() {
			defer n.conns.release(port, src)
			n.serveConn(nc, port, reg, kinds)
		}()
	}
}

// refuse closes nc, counts why, and logs it: once per source, port and
// reason per refuseLogEvery, so that a flood does not flood the log.
func (n *MasterNode) refuse(nc net.Conn, src netip.Addr, port masterPort, err error) {
	n.cut(nc, src, port, err, "connection refused")
}

// dropped closes an established connection that broke the rules, counts
// and logs it like refuse.
func (n *MasterNode) dropped(nc net.Conn, src netip.Addr, port masterPort, err error) {
	n.cut(nc, src, port, err, "connection dropped")
}

func (n *MasterNode) cut(nc net.Conn, src netip.Addr, port masterPort, err error, what string) {
	n.cutConn(nc, src, port, err, what, func() { _ = nc.Close() })
}

// cutConn is cut with a close of the caller's (one that lets a last frame
// leave first).
func (n *MasterNode) cutConn(nc interface{ RemoteAddr() net.Addr }, src netip.Addr, port masterPort, err error, what string, close func()) {
	reason := refuseReason(err)
	n.metrics.ConnRefused(port.String(), reason) // before the peer can see the close
	close()
	if ok, missed := n.refusals.allow(port.String()+"|"+reason+"|"+src.String(), time.Now()); ok {
		n.log.Warn().Str(obs.FieldPeer, nc.RemoteAddr().String()).Str("port", port.String()).Str(obs.FieldReason, reason).
			Int("not_logged", missed).Err(err).Msg(what)
	}
}

// remoteAddr is the source address of nc (invalid if it has none).
func remoteAddr(nc net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// maxFrameFor is the largest frame port takes: what its biggest honest
// message needs, so that a peer holding half-sent frames open holds as
// little as it can (a client's change is at most a 4 KiB key and a 256 KiB
// value; a chunkserver sends small messages only; masters send 1 MiB
// batches and snapshot chunks).
func maxFrameFor(port masterPort) uint32 {
	switch port {
	case portCS:
		return 64 << 10
	case portCL:
		return 512 << 10
	}
	return frame.DefaultMaxFrame
}

// bodyBudget is the budget large frames on port draw from: none for the
// master port, whose peers proved AUTH_CODE and send big Appends and
// snapshot chunks.
func (n *MasterNode) bodyBudget(port masterPort) *bodyBudget {
	if port == portML {
		return nil
	}
	return n.bodies
}

// idleTimeout is how long a connection on port may send nothing, after
// its hello, before it is cut: three times the longest silence of an
// honest peer there.
func (n *MasterNode) idleTimeout(port masterPort) time.Duration {
	if n.opt.idleOverride > 0 {
		return n.opt.idleOverride
	}
	switch port {
	case portCS:
		return csIdle
	case portML:
		return max(mlIdleMin, 3*n.opt.Core.PeerTimeout)
	}
	return clientIdle
}

// serveConn checks a new connection (hello, identity, AUTH_CODE) and then
// feeds its frames to the loop. Whatever a peer sends, the worst outcome is
// this connection closed with a logged reason.
func (n *MasterNode) serveConn(nc net.Conn, port masterPort, reg *frame.Registry, kinds []frame.Kind) {
	src := remoteAddr(nc)
	ours := n.hello()
	if port == portCL {
		ours.Nonce = make([]byte, 16)
		_, _ = rand.Read(ours.Nonce)
	}
	peer, err := acceptHello(nc, ours, ours.Cluster, kinds...)
	if err != nil {
		n.refuse(nc, src, port, err)
		return
	}
	c := newConn(nc, peer)
	if port == portML {
		m, member := n.book.Load().member(wire.MasterID(peer.ID))
		switch {
		case masterhost.IDOf(c.remote) != wire.MasterID(peer.ID) || (member && m.Addr.Addr() != c.remote):
			n.refuse(nc, src, port, errIdentity) // counted before the peer can see the close
			c.close()
			return
		case !member:
			// A master this one's MASTER_HOST does not name (removed, or
			// added where this master has not resolved it yet): told so,
			// it stops taking part once every master it reaches says it.
			c.send(protocol.AuthChallenge{NotMember: true})
			n.cutConn(c.nc, src, port, errStranger, "connection refused", c.closeAfterFlush)
			return
		}
	}
	if port == portCS || port == portML {
		if err := n.challenge(c, port, ours.Cluster); err != nil {
			n.refuse(nc, src, port, err) // counted before the peer can see the close
			c.close()
			return
		}
	}
	inbox := n.inbox
	if port == portCL {
		inbox = n.clInbox
	}
	deliver := func(in input) {
		select {
		case inbox <- in:
		case <-n.done: // the loop has ended: nobody will read it
		}
	}
	deliver(input{kind: inOpen, port: port, c: c})
	var proof clientProof // what a client proved (ClientAuth)
	fr := newFrameReader(nc, n.idleTimeout(port), frameTimeout)
	if n.opt.frameOverride > 0 {
		fr.frame = n.opt.frameOverride
	}
	for {
		fr.next()
		m, err := readFrame(reg, fr, maxFrameFor(port), n.bodyBudget(port))
		if err != nil {
			byPeer := !c.closed() && !c.slow.Load() && endedByPeer(err)
			switch {
			case c.slow.Load():
				err = errSlow // we cut it: it did not read its replies
			case c.closed():
				err = nil // we closed it (replaced, refused, disconnected)
			case errors.Is(err, os.ErrDeadlineExceeded) && fr.started:
				err = fmt.Errorf("%w: %v", errSlow, err)
			case errors.Is(err, os.ErrDeadlineExceeded):
				err = fmt.Errorf("%w: nothing for %v", errIdle, fr.idle)
			case errors.Is(err, errLimit):
				// over the large-body budget: counted as a limit
			case !isFrameError(err):
				err = nil // it ended the connection
			}
			if err != nil {
				n.dropped(nc, src, port, err)
			}
			c.close()
			deliver(input{kind: inClosed, port: port, c: c, byPeer: byPeer})
			return
		}
		in := input{kind: inMsg, port: port, c: c, msg: deref(m)}
		switch msg := in.msg.(type) {
		case protocol.AdminReq:
			in.admin = n.checkAdmin(c, ours, msg)
		case protocol.ClientAuth:
			proof = clientProof{mac: msg.MAC}
			continue
		case roles.ClientWrite, roles.ClientRead:
			if r := n.clientAccess(c, ours, &proof, msg); r != nil {
				c.send(*r)
				continue
			}
		}
		deliver(in)
	}
}

// challenge runs the AUTH_CODE exchange on a chunkserver or master
// connection. It always happens, so the other side has one sequence to
// follow; with no AUTH_CODE the nonce is empty and any proof passes. The
// proof binds the cluster id of this master's hello (cluster): a master
// started with -e has none of its own until it syncs, so both sides use
// the acceptor's. A failure counts against the source (authGuard).
func (n *MasterNode) challenge(c *conn, port masterPort, cluster string) error {
	var nonce []byte
	if n.opt.AuthCode != "" {
		nonce = make([]byte, protocol.AuthNonceLen)
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
	}
	c.send(protocol.AuthChallenge{Nonce: nonce})
	_ = c.nc.SetReadDeadline(time.Now().Add(handshakeTimeout))
	defer func() { _ = c.nc.SetReadDeadline(time.Time{}) }()
	in := matocsIn
	if port == portML {
		in = matomlIn
	}
	m, err := in.ReadFrame(c.nc, frame.MaxHelloFrame)
	if err != nil {
		return err
	}
	p, ok := m.(*protocol.AuthProof)
	if ok && n.opt.AuthCode == "" {
		return nil
	}
	var want []byte
	if port == portML {
		want = protocol.MasterProof(n.opt.AuthCode, nonce, cluster, c.remote)
	} else {
		want = protocol.ChunkserverProof(n.opt.AuthCode, nonce, cluster, c.remote)
	}
	if !ok || !hmac.Equal(p.MAC, want) {
		if n.auth.failed(c.remote, time.Now()) {
			n.log.Warn().Str(obs.FieldPeer, c.remote.String()).Str("port", port.String()).
				Msgf("%d failed AUTH_CODE proofs within %v: this address is refused for %v", authFailMax, authFailWindow, authBlock)
		}
		return errAuth
	}
	return nil
}

// checkAdmin checks an admin command's proof against ADMIN_PASSWORD, on
// the connection's reader: the nonce and cluster id are those of the hello
// this master sent on it (ours), and the command must name this master,
// by its MASTER_HOST address or the address the connection reached.
func (n *MasterNode) checkAdmin(c *conn, ours frame.Hello, m protocol.AdminReq) adminCheck {
	pw := *n.adminPassword.Load() // once: a reload meanwhile cannot mix two passwords in one check
	switch {
	case pw == "":
		return adminOpen
	case len(m.Proof) == 0:
		return adminMissing
	case m.Target.Unmap() != n.opt.Self && m.Target.Unmap() != localAddr(c.nc):
		return adminElsewhere
	case len(ours.Nonce) == 0 || !hmac.Equal(m.Proof, protocol.AdminProof(pw, ours.Nonce, ours.Cluster, m)):
		return adminWrong
	}
	return adminProved
}

// adminAllowed decides on an admin command whose proof the reader checked
// (listings stay open) and answers a refusal itself. Wrong proofs count
// against the source (authGuard): after a few, it is refused without a try
// for a while. A connection's nonce proves one command.
func (n *MasterNode) adminAllowed(c *conn, m protocol.AdminReq, check adminCheck) bool {
	if check == adminOpen {
		return true
	}
	now := time.Now()
	if n.auth.blocked(c.remote, now) {
		c.nonceSpent = true
		n.metrics.ConnRefused(portCL.String(), "auth_rate")
		if ok, missed := n.refusals.allow("matocl|auth_rate|"+c.remote.String(), now); ok {
			n.log.Warn().Str(obs.FieldPeer, c.remote.String()).Str(obs.FieldReason, "auth_rate").Int("not_logged", missed).
				Msg("admin command refused: too many wrong ADMIN_PASSWORD proofs from this address lately")
		}
		c.send(protocol.AdminResp{ID: m.ID, Code: wire.CodeThrottled, Text: fmt.Sprintf("too many wrong ADMIN_PASSWORD proofs from %v lately: admin commands from there are refused for up to %v", c.remote, authBlock)})
		return false
	}
	ok := check == adminProved && !c.nonceSpent
	c.nonceSpent = true
	if ok {
		return true
	}
	reason, text := "admin-password-wrong", "admin commands on this master need ADMIN_PASSWORD: give it with mfscli -a PASSWORD or in MFSCLI_PASSWORD"
	switch check {
	case adminMissing:
		reason = "admin-password-missing"
	case adminElsewhere:
		// Not a guess at the password: a command relayed (or dialed
		// through an address this master does not know as its own).
		reason = "admin-wrong-master"
		text = fmt.Sprintf("this command was meant for the master at %v, and this is %v (reached at %v): refused; send it to that master directly",
			m.Target, n.opt.Self, localAddr(c.nc))
	default:
		if n.auth.failed(c.remote, now) {
			n.log.Warn().Str(obs.FieldPeer, c.remote.String()).
				Msgf("%d wrong ADMIN_PASSWORD proofs within %v: admin commands from this address are refused for %v", authFailMax, authFailWindow, authBlock)
		}
	}
	n.metrics.ConnRefused(portCL.String(), reason)
	n.log.Warn().Str(obs.FieldPeer, c.remote.String()).Str(obs.FieldReason, reason).Msg("admin command refused")
	c.send(protocol.AdminResp{ID: m.ID, Code: wire.CodeDenied, Text: text})
	return false
}
