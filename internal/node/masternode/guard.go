package masternode

import (
	"net/netip"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Bounds on what a peer, authenticated or not, can make a master hold
// (docs/operations.md, "Limits").
const (
	// frameTimeout: a frame whose first bytes arrived must be complete
	// this soon. The largest frame (4 MiB) takes well under a second on
	// any link a cluster runs on; a peer that dribbles one holds a buffer.
	frameTimeout = 10 * time.Second
	// clientIdle: a client or mfscli connection may sit idle between
	// requests (clients keep one open); it is cut after this much silence.
	clientIdle = 60 * time.Second
	// csIdle: a chunkserver connection silent for three of its
	// keepalives (node.CSKeepalive) is cut.
	csIdle = 3 * node.CSKeepalive
	// mlIdleMin: the floor of the master port's idle timeout; masters
	// send PeerStatus every PEER_INTERVAL, but a peer's loop may stall for
	// seconds on a big snapshot install.
	mlIdleMin = 30 * time.Second
	// maxInfoString bounds CSInfo's Labels and Version.
	maxInfoString = 256
	// Registration: at most regPerSource new addr:port pairs asked for
	// from one source address per regWindow (an honest chunkserver asks
	// for one, and repeats it every 200 ms until it has it).
	regPerSource = 4
	regWindow    = time.Minute
	// regPerPrefix6 and regPerPrefix4: the same from all the addresses of
	// one prefix (prefixOf: a /64, a /24) together, so that a peer holding
	// many addresses of one block (an IPv6 /64, which one host may hold
	// whole) gets no more than this however many it sends from (review
	// N6). An IPv4 /24 has 254 hosts: honest chunkservers share one (a
	// rack, a flat network), and every one of them starting fresh at once
	// (a new cluster) must get its id in one window, not in four (2,000
	// fresh voters took 3 minutes at 64 a /24: docs/benchmarks.md). So a
	// /24 gets one new id per host address a window, a /64 sixteen
	// sources' worth. The bound on ids handed out and not registered
	// (roles.MaxPendingRegistrations) holds whatever these let through.
	regPerPrefix6 = 16 * regPerSource
	regPerPrefix4 = 256
	// Failed proofs (AUTH_CODE on 9419/9420, ADMIN_PASSWORD on 9421): after
	// authFailMax failures within authFailWindow a source is refused at
	// once for authBlock, so guessing online is slow.
	authFailMax    = 5
	authFailWindow = 10 * time.Second
	authBlock      = time.Minute
	// authFailMaxPrefix: failures within authFailWindow from all the
	// addresses of one prefix before the prefix is refused for authBlock
	// (review N6). Four sources' worth: a few hosts of a subnet with a
	// stale AUTH_CODE (a botched change of it) do not lock the subnet out
	// by themselves. The masters of the set and the registered
	// chunkservers are not refused for their prefix (knownPeers), only
	// for their own failures: a hostile host must not lock its
	// neighbours out.
	authFailMaxPrefix = 4 * authFailMax
	// A global rate of failed proofs, from all sources together (review
	// N6): once authGlobalMax failed within authGlobalWindow, every source
	// but the known peers is refused a proof for authGlobalBlock. An
	// attacker rotating through more prefixes than the tables hold
	// (maxTracked) then gets at most authGlobalMax guesses per
	// authGlobalBlock or so, about six a second, instead of as many as it
	// has addresses; honest failures (a peer with a wrong AUTH_CODE, an
	// operator mistyping a password) are a few a minute, far below it.
	// Short, because while it lasts a new chunkserver or client from an
	// unknown address waits too.
	authGlobalMax    = 64
	authGlobalWindow = 10 * time.Second
	authGlobalBlock  = 10 * time.Second
	// prefixBits4, prefixBits6: the prefixes a peer is throttled by
	// besides its address (prefixOf): what one holder typically has, an
	// IPv4 /24 and an IPv6 /64 (the smallest block a site is given).
	prefixBits4 = 24
	prefixBits6 = 64
	// maxAuthNotes bounds the prefix blocks waiting to be logged
	// (authGuard.take); past it they are counted, not logged one by one.
	maxAuthNotes = 16
	// maxClones: refused clones kept for the listings (newest kept).
	maxClones = 64
	// refuseLogEvery: a source refused again and again (a flood) is
	// logged once per this interval, with the count since.
	refuseLogEvery = 10 * time.Second
	// maxTracked bounds every per-source and per-prefix table; past it
	// the entries no longer in use go first, then the oldest (a limit may
	// then be exceeded once per forgotten source, which is harmless: the
	// prefix and global limits still hold it).
	maxTracked = 4096
)

// prefixOf is the block a's holder most likely holds all of: its /24
// (IPv4, and IPv4-mapped IPv6) or its /64 (IPv6). The zero Prefix for an
// invalid address.
func prefixOf(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	bits := prefixBits6
	if a.Is4() {
		bits = prefixBits4
	}
	p, _ := a.Prefix(bits) // an invalid address gives the zero Prefix
	return p
}

// makeRoom makes room for one more entry in m, which holds at most
// maxTracked: it forgets the entries done gives up on (no longer in use)
// and, if none was, the one last changed longest ago. One pass over m,
// only when m is full.
func makeRoom[K comparable, V any](m map[K]V, done func(V) bool, last func(V) time.Time) {
	if len(m) < maxTracked {
		return
	}
	var oldest K
	var oldestAt time.Time
	first := true
	for k, v := range m {
		if done(v) {
			delete(m, k)
			continue
		}
		if at := last(v); first || at.Before(oldestAt) {
			oldest, oldestAt, first = k, at, false
		}
	}
	if len(m) >= maxTracked {
		delete(m, oldest)
	}
}

// portLimits is how many connections one port takes, in all and from one
// source address.
type portLimits struct{ total, perSource int }

// Connection caps per port. 9419: one link from each master (a few
// masters, a reconnect may overlap); 9420: one connection from each
// chunkserver (several may share a host; a cluster of 10,000 voters
// reconnecting all at once still fits beside the ones that stayed);
// 9421: clients and mfscli. The process raises RLIMIT_NOFILE to hold
// them all (fileLimit).
var connLimits = map[masterPort]portLimits{
	portML: {total: 64, perSource: 4},
	portCS: {total: 24576, perSource: 8},
	portCL: {total: 1024, perSource: 64},
}

// filesNeeded is the descriptors the caps above may hold, with room for
// the listeners, the data files and the HTTP port.
func filesNeeded() uint64 {
	n := uint64(256)
	for _, l := range connLimits {
		n += uint64(l.total)
	}
	return n
}

// connCounter counts open connections per port and source. Readers call it
// from their own goroutines.
type connCounter struct {
	mu    sync.Mutex
	total map[masterPort]int
	src   map[masterPort]map[netip.Addr]int
}

func newConnCounter() *connCounter {
	return &connCounter{total: map[masterPort]int{}, src: map[masterPort]map[netip.Addr]int{}}
}

// acquire takes a slot for a connection from a on port; false: over a cap
// (which one is named).
func (cc *connCounter) acquire(port masterPort, a netip.Addr) (ok bool, which string) {
	lim := connLimits[port]
	cc.mu.Lock()
	defer cc.mu.Unlock()
	m := cc.src[port]
	if m == nil {
		m = map[netip.Addr]int{}
		cc.src[port] = m
	}
	if cc.total[port] >= lim.total {
		return false, "connections on the port"
	}
	if m[a] >= lim.perSource {
		return false, "connections from the source"
	}
	cc.total[port]++
	m[a]++
	return true, ""
}

func (cc *connCounter) release(port masterPort, a netip.Addr) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.total[port]--
	if m := cc.src[port]; m != nil {
		if m[a]--; m[a] <= 0 {
			delete(m, a)
		}
	}
}

// rateLog says whether a refusal from a source should be logged now: the
// first one and then one per refuseLogEvery, with how many were not.
type rateLog struct {
	mu   sync.Mutex
	last map[string]rateLogEntry
}

type rateLogEntry struct {
	at     time.Time
	missed int
}

func (r *rateLog) allow(key string, now time.Time) (ok bool, missed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]rateLogEntry{}
	}
	e, seen := r.last[key]
	if seen && now.Sub(e.at) < refuseLogEvery {
		e.missed++
		r.last[key] = e
		return false, 0
	}
	if !seen && len(r.last) >= maxTracked {
		for k, e := range r.last {
			if now.Sub(e.at) >= refuseLogEvery {
				delete(r.last, k)
			}
		}
		if len(r.last) >= maxTracked {
			// More sources refused within refuseLogEvery than the table
			// holds (a flood from many addresses): the ones past it are
			// not logged one by one; the refusal metrics count them all.
			return false, 0
		}
	}
	r.last[key] = rateLogEntry{at: now}
	return true, e.missed
}

// authGuard counts failed proofs (AUTH_CODE, ADMIN_PASSWORD, an export's
// password) per source address, per prefix (prefixOf) and from all
// sources, and says who is refused a proof for a while (blocked). Readers
// and the loop call it; its zero value is ready. The loop takes the blocks
// begun (take) to log and count them, and tells it the known peers
// (knownPeers), which only their own failures block.
type authGuard struct {
	mu  sync.Mutex
	src map[netip.Addr]*authFails   // per address: authFailMax
	pfx map[netip.Prefix]*authFails // per prefix: authFailMaxPrefix
	all authFails                   // every source: authGlobalMax
	// known: the masters of the set and the registered chunkservers
	// (knownPeers); knownOf: what it was built from.
	known   map[netip.Addr]bool
	knownOf knownSource
	// What take hands the loop: how many blocks began per scope, the
	// block of every source begun (at most one at a time), and the
	// prefix blocks begun (at most maxAuthNotes; unnoted: the ones past).
	began   map[authScope]int
	allNote *authNote
	notes   []authNote
	unnoted int
}

type authFails struct {
	times        []time.Time // failures within the window
	blockedUntil time.Time
}

// add records a failure at now; true: the max-th within window, and the
// holder is blocked for block from now.
func (f *authFails) add(now time.Time, window time.Duration, max int, block time.Duration) bool {
	keep := f.times[:0]
	for _, t := range f.times {
		if now.Sub(t) < window {
			keep = append(keep, t)
		}
	}
	f.times = append(keep, now)
	if len(f.times) >= max {
		f.blockedUntil = now.Add(block)
		f.times = f.times[:0]
		return true
	}
	return false
}

// idle: f neither blocks nor holds a failure that could still count.
func (f *authFails) idle(now time.Time, window time.Duration) bool {
	return !now.Before(f.blockedUntil) && (len(f.times) == 0 || now.Sub(f.times[len(f.times)-1]) >= window)
}

// last is f's newest failure or, blocked with none since, the end of its
// block: the entry makeRoom forgets first is the one quiet longest, and a
// block standing is forgotten last.
func (f *authFails) last() time.Time {
	if len(f.times) > 0 {
		return f.times[len(f.times)-1]
	}
	return f.blockedUntil
}

// authScope is what a block covers; the values are the label of
// mfs_master_auth_blocks_total.
type authScope string

const (
	scopeAddress authScope = "address" // one source address
	scopePrefix  authScope = "prefix"  // its /24 or /64, known peers excepted
	scopeAll     authScope = "all"     // every source but the known peers
)

// authNote is a block of a prefix or of every source begun, for the log
// (a block of one address is logged where it happened, with the port).
type authNote struct {
	scope  authScope
	prefix netip.Prefix // scopePrefix
	addr   netip.Addr   // the source whose failure began it
	until  time.Time
}

// blocked reports whether a is refused without a try: its own failures,
// or, unless a is a known peer, its prefix's or every source's.
func (g *authGuard) blocked(a netip.Addr, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.src[a]; f != nil && now.Before(f.blockedUntil) {
		return true
	}
	if g.known[a.Unmap()] {
		return false
	}
	if now.Before(g.all.blockedUntil) {
		return true
	}
	f := g.pfx[prefixOf(a)]
	return f != nil && now.Before(f.blockedUntil)
}

// failed records a failure from a; true: a itself is now blocked (the
// caller logs that). A block of its prefix or of every source that it
// begins is noted for take instead.
func (g *authGuard) failed(a netip.Addr, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.src == nil {
		g.src = map[netip.Addr]*authFails{}
		g.pfx = map[netip.Prefix]*authFails{}
	}
	idle := func(f *authFails) bool { return f.idle(now, authFailWindow) }
	f := g.src[a]
	if f == nil {
		makeRoom(g.src, idle, (*authFails).last)
		f = &authFails{}
		g.src[a] = f
	}
	if g.began == nil {
		g.began = map[authScope]int{}
	}
	blocked := f.add(now, authFailWindow, authFailMax, authBlock)
	if blocked {
		g.began[scopeAddress]++
	}
	p := prefixOf(a)
	pf := g.pfx[p]
	if pf == nil {
		makeRoom(g.pfx, idle, (*authFails).last)
		pf = &authFails{}
		g.pfx[p] = pf
	}
	// A failure while a block stands is a known peer's (the others are
	// refused before a try): it does not count towards the next one.
	if !now.Before(pf.blockedUntil) && pf.add(now, authFailWindow, authFailMaxPrefix, authBlock) {
		g.began[scopePrefix]++
		if len(g.notes) < maxAuthNotes {
			g.notes = append(g.notes, authNote{scope: scopePrefix, prefix: p, addr: a, until: pf.blockedUntil})
		} else {
			g.unnoted++
		}
	}
	if !now.Before(g.all.blockedUntil) && g.all.add(now, authGlobalWindow, authGlobalMax, authGlobalBlock) {
		g.began[scopeAll]++
		g.allNote = &authNote{scope: scopeAll, addr: a, until: g.all.blockedUntil}
	}
	return blocked
}

// authTaken is what take hands the loop.
type authTaken struct {
	began   map[authScope]int // blocks begun per scope
	notes   []authNote        // to log: the block of every source first, then prefixes
	unnoted int               // prefix blocks begun past maxAuthNotes
}

// take returns what happened since the last take.
func (g *authGuard) take() authTaken {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := authTaken{began: g.began, unnoted: g.unnoted}
	if g.allNote != nil {
		t.notes = append(t.notes, *g.allNote)
	}
	t.notes = append(t.notes, g.notes...)
	g.began, g.allNote, g.notes, g.unnoted = nil, nil, nil, 0
	return t
}

// knownSource is what the known peers were built from: the registry in
// force and the master book (both replaced whole, never changed in place).
type knownSource struct {
	cfg  *registry.ClusterConfig
	book *masterBook
}

// knownPeers makes the addresses of the masters of the set (book) and of
// the registered chunkservers (cfg) known: a block of their prefix or of
// every source does not refuse them, their own failures still do. It
// rebuilds only when cfg or book changed.
func (g *authGuard) knownPeers(cfg *registry.ClusterConfig, book *masterBook) {
	src := knownSource{cfg, book}
	g.mu.Lock()
	same := g.known != nil && g.knownOf == src
	g.mu.Unlock()
	if same {
		return
	}
	known := map[netip.Addr]bool{}
	if book != nil {
		for _, m := range book.set {
			known[m.Addr.Addr().Unmap()] = true
		}
	}
	if cfg != nil {
		for _, c := range cfg.Members {
			known[c.Addr.Unmap()] = true
		}
	}
	g.mu.Lock()
	g.known, g.knownOf = known, src
	g.mu.Unlock()
}

// observeGuards is the loop's side of the guards (observe calls it after
// every batch): it tells authGuard the peers known now (the registry in
// force, cfg, and the set of masters, book), and logs and counts the
// blocks of failed proofs begun since it last ran, once each.
func (a *acceptor) observeGuards(cfg *registry.ClusterConfig, book *masterBook) {
	a.auth.knownPeers(cfg, book)
	t := a.auth.take()
	for _, scope := range []authScope{scopeAddress, scopePrefix, scopeAll} {
		if k := t.began[scope]; k > 0 {
			a.metrics.AuthBlocks(string(scope), k)
		}
	}
	for _, b := range t.notes {
		switch b.scope {
		case scopePrefix:
			a.log.Warn().Str("prefix", b.prefix.String()).Str(obs.FieldPeer, b.addr.String()).Time("until", b.until).
				Msgf("%d failed proofs (AUTH_CODE, ADMIN_PASSWORD, export passwords) from the addresses of this prefix within %v: every address of it is refused a proof for %v, the masters and registered chunkservers in it excepted",
					authFailMaxPrefix, authFailWindow, authBlock)
		case scopeAll:
			a.log.Warn().Str(obs.FieldPeer, b.addr.String()).Time("until", b.until).
				Msgf("%d failed proofs (AUTH_CODE, ADMIN_PASSWORD, export passwords) from all sources within %v: every source but the masters and registered chunkservers is refused a proof for %v (guessing from many addresses?)",
					authGlobalMax, authGlobalWindow, authGlobalBlock)
		}
	}
	if t.unnoted > 0 {
		a.log.Warn().Int("blocks", t.unnoted).Msg("more blocks of failed proofs began than are logged one by one (a flood of failed proofs): see mfs_master_auth_blocks_total")
	}
}

// regGuard bounds the new registrations one source address, and one
// prefix (prefixOf), asks for. Only the loop goroutine uses it.
type regGuard struct {
	src map[netip.Addr]*regWin
	pfx map[netip.Prefix]*regWin
}

// regWin is what a source or a prefix asked for since start.
type regWin struct {
	start time.Time
	asked map[netip.AddrPort]bool
}

// allow: may a ask for an id for port now? An addr:port already asked
// for in the window is a retry and always allowed; a new one must fit
// both a's budget (regPerSource) and its prefix's (regPerPrefix).
func (g *regGuard) allow(a netip.Addr, port uint16, now time.Time) bool {
	if g.src == nil {
		g.src = map[netip.Addr]*regWin{}
		g.pfx = map[netip.Prefix]*regWin{}
	}
	ap := netip.AddrPortFrom(a, port)
	w, pw := openWin(g.src, a, now), openWin(g.pfx, prefixOf(a), now)
	if w.asked[ap] || pw.asked[ap] {
		return true
	}
	if len(w.asked) >= regPerSource || len(pw.asked) >= regPerPrefix(a) {
		return false
	}
	w.asked[ap], pw.asked[ap] = true, true
	return true
}

// regPerPrefix is the new ids a's prefix may ask for a window.
func regPerPrefix(a netip.Addr) int {
	if a.Unmap().Is4() {
		return regPerPrefix4
	}
	return regPerPrefix6
}

// openWin is k's window in m, a new one if it had none or its own is over.
func openWin[K comparable](m map[K]*regWin, k K, now time.Time) *regWin {
	w := m[k]
	if w != nil && now.Sub(w.start) < regWindow {
		return w
	}
	if w == nil {
		makeRoom(m, func(w *regWin) bool { return now.Sub(w.start) >= regWindow }, func(w *regWin) time.Time { return w.start })
	}
	w = &regWin{start: now, asked: map[netip.AddrPort]bool{}}
	m[k] = w
	return w
}

// cloneBook keeps the newest maxClones refused clones. Only the loop
// goroutine uses it.
type cloneBook struct {
	byKey map[cloneKey]*protocol.CloneStatus
}

type cloneKey struct {
	id   wire.CSID
	addr netip.Addr
}

func (b *cloneBook) add(id wire.CSID, addr, holder netip.Addr, now time.Time) protocol.CloneStatus {
	if b.byKey == nil {
		b.byKey = map[cloneKey]*protocol.CloneStatus{}
	}
	k := cloneKey{id, addr}
	ms := now.UnixMilli()
	c := b.byKey[k]
	if c == nil {
		if len(b.byKey) >= maxClones {
			var oldest cloneKey
			first := true
			for k, c := range b.byKey {
				if first || c.LastUnixMs < b.byKey[oldest].LastUnixMs {
					oldest, first = k, false
				}
			}
			delete(b.byKey, oldest)
		}
		c = &protocol.CloneStatus{ID: id, Addr: addr, FirstUnixMs: ms}
		b.byKey[k] = c
	}
	c.Holder, c.LastUnixMs = holder, ms
	c.Count++
	return *c
}

// list returns the clones by id, then address.
func (b *cloneBook) list() []protocol.CloneStatus {
	out := make([]protocol.CloneStatus, 0, len(b.byKey))
	for _, c := range b.byKey {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].Addr.Less(out[j].Addr)
	})
	return out
}

// clip bounds a string a peer sent; true when it had to be cut.
func clip(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	// Cut at the start of a rune, not in the middle of one.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// guards are the limits on what registered chunkservers can make the
// loop hold (the acceptor holds those on connections and proofs).
type guards struct {
	regs        regGuard           // registrations per source (loop)
	clones      cloneBook          // refused clones, for the listings (loop)
	infoClipped map[wire.CSID]bool // logged once: its CSInfo was cut (loop)
}
