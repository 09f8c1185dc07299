package masternode

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/internal/transport"
	"github.com/mfs-election/mfs-election/internal/witness/s3store"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/secret"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
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

	// Transport is the network (nil: the kernel's, transport.OS).
	Transport transport.Transport

	// Tests shorten the read deadlines (0: the defaults of guard.go),
	// and the wait for a backup's commit point (0: backupConfirmMax).
	idleOverride, frameOverride, backupConfirmOverride time.Duration
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
	clock   node.Clock          // the core's time (CLOCK_BOOTTIME)
	tr      transport.Transport // opt.Transport, or the kernel's

	acc             *acceptor // the three ports' connections, checked (accept.go)
	masterDatagrams           // the heartbeat acks' side path (datagram.go)
	// Two inboxes, so that client work never queues ahead of votes: inbox
	// carries the chunkserver and master ports (votes, acks, peer
	// traffic), clInbox the client port. The loop drains inbox first.
	inbox   chan input
	clInbox chan input
	life    node.Lifecycle // Stop, Done, Err (node.Lifecycle)

	masterSet // the set of masters and the links to them (masterset.go)
	routes    // each port's connections and where replies go (ports.go)
	admission // client admission (admission.go)
	guards    // limits on what registered chunkservers make the loop hold (guard.go)
	iteration // the loop's clock reading and the group being built (loop.go)
	observed  // what observe() last saw, to log and count changes once (status.go)

	helloMu sync.Mutex
	helloV  frame.Hello

	snapWriter  // the background snapshot writer (snapwriter.go)
	backupSide  // backups taken by mfscli (backup.go)
	witnessSide // the object-store witness's calls (witness.go)
	fence       // the core's fence as reports see it (fence.go)
	// stages times client changes through the ack rule (stages.go).
	stages *stages
}

// adminWait is an admin command waiting for the core's reply.
type adminWait struct {
	c    *node.Conn
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
	c    *node.Conn
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

// StartMaster opens the listeners and starts the loop. The store must hold
// whatever this master has (nothing, for one started with -e).
func StartMaster(opt MasterOptions, store *metadata.MasterStore) (*MasterNode, error) {
	wstore, err := openWitness(&opt, store)
	if err != nil {
		return nil, err
	}
	if err := opt.Core.Validate(); err != nil {
		return nil, err
	}
	n := newMaster(opt, store)
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
	n.metrics.InitIgnored(master.IgnoreReasons)
	n.acc = newAcceptor(n)
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
	n.acc.useExports(ex, store.ClusterID())
	if err := n.acc.listen(n.tr); err != nil {
		return nil, err
	}
	n.openDatagramPort()
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
	n.start()
	return n, nil
}

// start starts what runs: the links to the other masters, the acceptor,
// the datagram reader, the resolver, and the loop.
func (n *MasterNode) start() {
	for _, m := range n.opt.Masters {
		if m.ID != n.opt.Core.ID {
			n.links[m.ID] = startMasterLink(n, m)
		}
	}
	n.acc.start()
	if n.udp != nil {
		go node.ReadDatagrams(n.udp, n.takeDatagram)
	}
	go n.resolver()
	core := n.core
	n.log.Info().Str(obs.FieldMaster, n.opt.Self.String()).Uint64("incarnation", core.Hard().Incarnation).
		Str("cluster", n.store.ClusterID()).Bool("metadata", core.HasMetadata()).Uint64("snapshot", core.SnapshotAt().Version).
		Int("changelog_entries", core.Log().Held()).Uint64("version", core.Log().Last().Version).Msg("master started as FOLLOWER")
	go n.loop()
}

// newMaster is the master of opt over store, built but not started.
func newMaster(opt MasterOptions, store *metadata.MasterStore) *MasterNode {
	return &MasterNode{
		opt: opt, log: opt.Log, store: store, clock: node.NewClock(), tr: transport.Or(opt.Transport), stages: newStages(),
		inbox: make(chan input, 4096), clInbox: make(chan input, 1024), life: node.NewLifecycle(),
		masterSet: masterSet{foreign: map[wire.MasterID]bool{}, links: map[wire.MasterID]*node.Link{},
			host: node.NewHostSpec(opt.MasterHost), strangerTo: map[wire.MasterID]bool{}, member: true},
		routes: routes{cs: map[wire.CSID]*node.Conn{}, csInfo: map[wire.CSID]protocol.CSInfo{}, peersIn: map[*node.Conn]bool{},
			clConns: map[*node.Conn]bool{}, clients: map[changelog.ClientID]*node.Conn{}, admins: map[uint64]adminWait{}, hbSent: map[hbKey]time.Time{}},
		snapWriter:      snapWriter{snapDone: make(chan snapResult, 1), snapRetry: snapRetryMin},
		admission:       admission{listsOut: map[listKey]time.Time{}},
		guards:          guards{infoClipped: map[wire.CSID]bool{}},
		masterDatagrams: masterDatagrams{dg: node.NewDgKeys(), ackSeen: node.SeqFilter{}},
	}
}

// openWitness opens the witness's store when opt names one (nil when it
// does not) and tells the core's options whether this master may use it.
func openWitness(opt *MasterOptions, store *metadata.MasterStore) (*s3store.Store, error) {
	if opt.Witness == nil {
		return nil, nil
	}
	wstore, err := s3store.New(*opt.Witness)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	// The lease record names the cluster: a master started with -e
	// learns the id later and uses the witness after its next start.
	opt.Core.Witness.Cluster = store.ClusterID()
	opt.Core.Witness.Store = opt.Core.Witness.Cluster != ""
	return wstore, nil
}

// Addrs returns the bound listen addresses (matoml, matocs, matocl).
func (n *MasterNode) Addrs() (ml, cs, cl net.Addr) {
	return n.acc.lnML.Addr(), n.acc.lnCS.Addr(), n.acc.lnCL.Addr()
}

// Stop asks the loop to end in order and waits for it, at most timeout;
// it returns Err. A master ends through DUMMY, its disconnect rules
// included.
func (n *MasterNode) Stop(timeout time.Duration) error { return n.life.Stop(timeout) }

// Done is closed when the loop has ended; Err then says why (nil: stopped).
func (n *MasterNode) Done() <-chan struct{} { return n.life.Done() }

// Err is why the loop ended (nil while running or after an orderly stop).
func (n *MasterNode) Err() error { return n.life.Err() }

// Pause holds the loop at its next input until Resume (node.Lifecycle.Pause:
// the driver simulation's SIGSTOP).
func (n *MasterNode) Pause() { n.life.Pause() }

// Resume lets a paused loop go on.
func (n *MasterNode) Resume() { n.life.Resume() }

func (n *MasterNode) now() roles.Instant { return roles.Instant(n.clock.Since()) }

// readClock takes the loop's one CLOCK_BOOTTIME reading of an iteration,
// once its first input is in hand (so never before that input arrived),
// after any Pause. Loop only.
func (n *MasterNode) readClock() {
	n.life.Hold()
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
	n.acc.closeListeners()
	if n.udp != nil {
		_ = n.udp.Close()
	}
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

// shutdown closes everything; goodbyes already queued get a moment to leave.
func (n *MasterNode) shutdown(err error) {
	n.life.SetErr(err)
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
	all := []*node.Conn{}
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
		l.Stop()
	}
	for _, c := range all {
		c.CloseAfterFlush()
	}
	deadline := time.Now().Add(time.Second)
	for _, c := range all {
		for !c.Closed() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		c.Close()
	}
	n.log.Info().Msg("master stopped")
}

// hbSentMaxAge: a heartbeat unanswered this long (longer than any lease
// asked) is answered never, or too late to measure anything: its entry
// goes. A chunkserver that never answers, or one that left, would
// otherwise add one a round for as long as the master runs.
const hbSentMaxAge = 30 * time.Second
