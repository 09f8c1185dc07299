package node

import (
	"net/netip"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mfs-election/mfs-election/pkg/protocol"
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
	// csKeepalive: a chunkserver repeats its CSInfo this often, so that a
	// connection of a voter that neither votes nor probes here (a content
	// voter probes every 10 probe intervals, up to 100 s) is never
	// silent for long; csIdle is three of those.
	csKeepalive = 10 * time.Second
	csIdle      = 3 * csKeepalive
	// mlIdleMin: the floor of the master port's idle timeout; masters
	// send PeerStatus every PEER_INTERVAL, but a peer's loop may stall for
	// seconds on a big snapshot install.
	mlIdleMin = 30 * time.Second
	// maxQueuedBytes: replies queued for one connection; a peer that does
	// not read is cut off before it holds more (a list answer is at most
	// 2 MiB, so a reading client never comes near).
	maxQueuedBytes = 16 << 20
	// maxInfoString bounds CSInfo's Labels and Version.
	maxInfoString = 256
	// Registration: at most regPerSource new addr:port pairs asked for
	// from one source address per regWindow (an honest chunkserver asks
	// for one, and repeats it every 200 ms until it has it).
	regPerSource = 4
	regWindow    = time.Minute
	// Failed proofs (AUTH_CODE on 9419/9420, ADMIN_PASSWORD on 9421): after
	// authFailMax failures within authFailWindow a source is refused at
	// once for authBlock, so guessing online is slow.
	authFailMax    = 5
	authFailWindow = 10 * time.Second
	authBlock      = time.Minute
	// maxClones: refused clones kept for the listings (newest kept).
	maxClones = 64
	// refuseLogEvery: a source refused again and again (a flood) is
	// logged once per this interval, with the count since.
	refuseLogEvery = 10 * time.Second
	// maxTracked bounds the per-source tables; past it the oldest
	// entries are forgotten (a limit may then be exceeded once per
	// forgotten source, which is harmless).
	maxTracked = 4096
)

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
	if len(r.last) >= maxTracked {
		for k, e := range r.last {
			if now.Sub(e.at) >= refuseLogEvery {
				delete(r.last, k)
			}
		}
	}
	r.last[key] = rateLogEntry{at: now}
	return true, e.missed
}

// authGuard counts failed proofs per source address.
type authGuard struct {
	mu  sync.Mutex
	src map[netip.Addr]*authFails
}

type authFails struct {
	times        []time.Time // failures within authFailWindow
	blockedUntil time.Time
}

// blocked reports whether a is refused without a try.
func (g *authGuard) blocked(a netip.Addr, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.src[a]
	return f != nil && now.Before(f.blockedUntil)
}

// failed records a failure from a; true: a is now blocked.
func (g *authGuard) failed(a netip.Addr, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.src == nil {
		g.src = map[netip.Addr]*authFails{}
	}
	f := g.src[a]
	if f == nil {
		if len(g.src) >= maxTracked {
			for k, f := range g.src {
				if now.After(f.blockedUntil) && (len(f.times) == 0 || now.Sub(f.times[len(f.times)-1]) > authFailWindow) {
					delete(g.src, k)
				}
			}
		}
		f = &authFails{}
		g.src[a] = f
	}
	keep := f.times[:0]
	for _, t := range f.times {
		if now.Sub(t) < authFailWindow {
			keep = append(keep, t)
		}
	}
	f.times = append(keep, now)
	if len(f.times) >= authFailMax {
		f.blockedUntil = now.Add(authBlock)
		f.times = f.times[:0]
		return true
	}
	return false
}

// regGuard bounds the new registrations one source address asks for. Only
// the loop goroutine uses it.
type regGuard struct {
	src map[netip.Addr]*regWin
}

type regWin struct {
	start time.Time
	ports map[uint16]bool
}

// allow: may a ask for an id for port now? A port already asked for in
// the window is a retry and always allowed.
func (g *regGuard) allow(a netip.Addr, port uint16, now time.Time) bool {
	if g.src == nil {
		g.src = map[netip.Addr]*regWin{}
	}
	w := g.src[a]
	if w == nil || now.Sub(w.start) >= regWindow {
		if w == nil && len(g.src) >= maxTracked {
			for k, w := range g.src {
				if now.Sub(w.start) >= regWindow {
					delete(g.src, k)
				}
			}
		}
		w = &regWin{start: now, ports: map[uint16]bool{}}
		g.src[a] = w
	}
	if w.ports[port] {
		return true
	}
	if len(w.ports) >= regPerSource {
		return false
	}
	w.ports[port] = true
	return true
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
