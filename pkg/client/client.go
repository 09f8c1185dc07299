package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Config says where the masters are and how patient to be.
type Config struct {
	MasterHost string        // MASTER_HOST: a DNS name or a comma-separated address list
	Port       uint16        // the masters' client port; 0 = 9421
	Attempt    time.Duration // how long one attempt at one master may take; 0 = 1 s
	MinBackoff time.Duration // first wait after a round of every master; 0 = 10 ms
	MaxBackoff time.Duration // longest wait; 0 = 200 ms (a failover takes 60 ms to 1 s)
	// StaleReads accepts reads answered by a DEPUTY from its own copy
	// while there is no LEADER: possibly stale, not linearizable. Changes
	// always need the LEADER.
	StaleReads bool
	// Cluster is the metadata id of the cluster to talk to. Empty: the
	// first LEADER that serves a request pins it. Either way, a master
	// whose hello names another cluster (a master wiped and re-initialised
	// instead of started with -e) is never used.
	Cluster string
	// Password is the password of the masters' mfsexports.cfg line that
	// gives this client access (password=...), if it needs one. It is
	// proved once per connection over the nonce of the master's hello
	// (protocol.ClientProof, keyed by a slow derivation of the password),
	// never sent.
	Password string
	// Bind is the source address of this client's connections (none: the
	// system chooses). A master takes at most 64 client connections from
	// one address: a program that runs hundreds of sessions on one host
	// spreads them over addresses of its own (the bench does, over
	// loopback).
	Bind netip.Addr
	// Dial, when set, opens the session's connections in place of the
	// system's TCP (Bind is then its business): a proxy, or the in-memory
	// network the driver simulation runs on.
	Dial Dialer
}

// Dialer opens a stream connection to addr by deadline.
type Dialer func(addr netip.AddrPort, deadline time.Time) (net.Conn, error)

// ErrNoLeader: the context ended while no master would serve the request.
var ErrNoLeader = errors.New("no leading master")

// ErrRefused: the LEADER (or the client itself, before sending) refused the
// request for good (a key or value too long, say); retrying cannot help.
var ErrRefused = errors.New("refused")

// ErrUnknown wraps the end of a change whose outcome the client never
// learned: it may or may not have been applied (a retry with the same
// sequence number would be applied at most once).
var ErrUnknown = errors.New("outcome unknown")

// Client is one client session.
type Client struct {
	cfg     Config
	masters []masterhost.Master
	id      changelog.ClientID
	seq     uint64
	target  int
	conns   map[netip.AddrPort]net.Conn
	rng     *mrand.Rand
	leader  netip.Addr
	cluster string                    // pinned (Config.Cluster or the first LEADER's)
	ids     map[netip.AddrPort]string // the cluster id each open connection's master named
}

// New resolves the masters and draws a session id.
func New(cfg Config) (*Client, error) {
	if cfg.Port == 0 {
		cfg.Port = 9421
	}
	if cfg.Attempt == 0 {
		cfg.Attempt = time.Second
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = 10 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 200 * time.Millisecond
	}
	ms, err := masterhost.Resolve(cfg.MasterHost, cfg.Port)
	if err != nil {
		return nil, err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	// The top bit is the masters' mark for sessions they make up.
	id := changelog.ClientID(binary.BigEndian.Uint64(b[:8])) &^ protocol.AnonymousClient
	if id == 0 {
		id = 1
	}
	return &Client{cfg: cfg, masters: ms, id: id, conns: map[netip.AddrPort]net.Conn{}, cluster: cfg.Cluster, ids: map[netip.AddrPort]string{},
		rng: mrand.New(mrand.NewPCG(binary.BigEndian.Uint64(b[8:]), uint64(id)))}, nil
}

// Session is this client's session id.
func (c *Client) Session() changelog.ClientID { return c.id }

// Cluster is the metadata id this client is pinned to ("" until a LEADER
// has served it, unless Config.Cluster named one).
func (c *Client) Cluster() string { return c.cluster }

// Leader is the master that last served a request (invalid before any).
func (c *Client) Leader() netip.Addr { return c.leader }

// Close drops the connections.
func (c *Client) Close() error {
	for a, nc := range c.conns {
		_ = nc.Close()
		delete(c.conns, a)
	}
	return nil
}

// Put sets key to value (value must not be empty) and returns the
// changelog version that did it.
func (c *Client) Put(ctx context.Context, key, value string) (uint64, error) {
	if value == "" {
		return 0, errors.New("client: an empty value is not a value; use Delete")
	}
	c.seq++
	r, err := c.do(ctx, roles.ClientWrite{Client: c.id, Seq: c.seq, Key: key, Value: value})
	return r.Version, err
}

// Delete removes key.
func (c *Client) Delete(ctx context.Context, key string) (uint64, error) {
	c.seq++
	r, err := c.do(ctx, roles.ClientWrite{Client: c.id, Seq: c.seq, Key: key, Delete: true})
	return r.Version, err
}

// ErrConflict: a compare-and-set found the key at another version.
var ErrConflict = errors.New("version conflict")

// CAS sets key to value only if key is at version expect (0: only if it is
// absent). On a conflict the error wraps ErrConflict and the returned
// version is the key's current one.
func (c *Client) CAS(ctx context.Context, key, value string, expect uint64) (uint64, error) {
	if value == "" {
		return 0, errors.New("client: an empty value is not a value; use Delete")
	}
	c.seq++
	r, err := c.do(ctx, roles.ClientWrite{Client: c.id, Seq: c.seq, Key: key, Value: value, CAS: true, Expect: expect})
	if err != nil {
		return 0, err
	}
	if r.Conflict {
		return r.KeyVersion, fmt.Errorf("%w: %s is at version %d, not %d", ErrConflict, key, r.KeyVersion, expect)
	}
	return r.Version, nil
}

// ListPageSize is how many keys List asks for at a time: a page costs the
// LEADER work in proportion to its size, on the loop that also serves the
// votes, so pages are kept well below roles.ListMax.
const ListPageSize = 1000

// ListPage returns one page of the keys that start with prefix, in key
// order, read at the LEADER: those after the key after (from the first
// when empty), at most limit of them (0: roles.ListMax) and at most about
// roles.ListMaxBytes of keys and values. more says there are keys after
// the page: ask again with after set to the last key returned.
func (c *Client) ListPage(ctx context.Context, prefix, after string, limit int) (es []namespace.KVEntry, more bool, err error) {
	c.seq++
	r, err := c.do(ctx, roles.ClientRead{Client: c.id, Seq: c.seq, Key: prefix, Prefix: true, After: after, Limit: limit})
	if err != nil {
		return nil, false, err
	}
	for _, e := range r.Entries {
		if e.Key <= after || !strings.HasPrefix(e.Key, prefix) {
			// A master that does not page answers from the first key
			// again: following More would never end.
			return nil, false, fmt.Errorf("client: list page after %q from %s holds %q: the master does not page", after, c.leader, e.Key)
		}
		after = e.Key
	}
	if r.More && len(r.Entries) == 0 {
		return nil, false, fmt.Errorf("client: an empty list page from %s says there is more", c.leader)
	}
	return r.Entries, r.More, nil
}

// List returns every key that starts with prefix, in key order, read at
// the LEADER a page (ListPageSize keys) at a time. Each page is a
// linearizable read of its own, not the whole list: a key present all
// through the call is listed exactly once, a key written or deleted during
// it may be listed or not. On an error, es holds the pages read before it
// and more is true: the list is incomplete.
func (c *Client) List(ctx context.Context, prefix string) (es []namespace.KVEntry, more bool, err error) {
	err = c.ListEach(ctx, prefix, func(page []namespace.KVEntry) error {
		es = append(es, page...)
		return nil
	})
	return es, err != nil, err
}

// ListEach calls fn with each page of the keys that start with prefix, in
// key order (as List, without holding them all); an error from fn ends the
// listing and is returned.
func (c *Client) ListEach(ctx context.Context, prefix string, fn func(page []namespace.KVEntry) error) error {
	after := ""
	for {
		page, more, err := c.ListPage(ctx, prefix, after, ListPageSize)
		if err != nil {
			return err
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
			after = page[len(page)-1].Key
		}
		if !more {
			return nil
		}
	}
}

// GetVersion reads key and the version of the change that wrote it (for a
// later CAS).
func (c *Client) GetVersion(ctx context.Context, key string) (value string, version uint64, found bool, err error) {
	c.seq++
	r, err := c.do(ctx, roles.ClientRead{Client: c.id, Seq: c.seq, Key: key})
	return r.Value, r.KeyVersion, r.Found, err
}

// Get reads key at the LEADER: linearizable.
func (c *Client) Get(ctx context.Context, key string) (value string, found bool, err error) {
	c.seq++
	r, err := c.do(ctx, roles.ClientRead{Client: c.id, Seq: c.seq, Key: key})
	return r.Value, r.Found, err
}

// do sends req until a LEADER answers it or ctx ends.
func (c *Client) do(ctx context.Context, req wire.Message) (roles.ClientReply, error) {
	w, write := req.(roles.ClientWrite)
	if write {
		if bad := roles.CheckWrite(w); bad != "" {
			return roles.ClientReply{}, fmt.Errorf("%w: %s", ErrRefused, bad)
		}
	}
	var last error = ErrNoLeader
	var foreign error // a master of another cluster: said in the end whatever came after
	sent := false
	busy := 0 // BUSY answers in a row from the LEADER
	for round := 0; ; round++ {
		to := c.masters[c.target].Addr
		r, err := c.attempt(ctx, to, req)
		switch {
		case err == nil && r.OK && (!r.Stale || c.cfg.StaleReads):
			c.leader = to.Addr()
			if c.cluster == "" {
				c.cluster = c.ids[to]
			}
			return r, nil
		case err == nil && final(r.Code):
			return roles.ClientReply{}, fmt.Errorf("%w by %s: %s", ErrRefused, to.Addr(), r.Err)
		case err == nil && r.Code == wire.CodeBusy:
			// The LEADER, full (MAX_PENDING): the same master, later.
			last = fmt.Errorf("%s: %s", to.Addr(), r.Err)
			busy++
		case err == nil:
			last = fmt.Errorf("%s: %s", to.Addr(), r.Err)
			c.follow(r.Redirect)
		default:
			if !errors.Is(err, errNotSent) {
				sent = true
			}
			if errors.Is(err, frame.ErrCluster) {
				foreign = err
			}
			last = err
			c.drop(to)
			c.target = (c.target + 1) % len(c.masters)
		}
		if err == nil {
			sent = true
		}
		// The wait grows with every full round of the masters, not with
		// every master tried: a dead master's refusal costs nothing.
		wait := min(c.cfg.MaxBackoff, c.cfg.MinBackoff<<min(round/len(c.masters), 16))
		if err == nil && r.Code == wire.CodeBusy {
			// Each BUSY in a row doubles the wait: a thousand clients
			// refused together spread out rather than come back as one.
			wait = min(c.cfg.MaxBackoff, c.cfg.MinBackoff<<min(busy-1, 16))
		} else {
			busy = 0
		}
		wait = wait/2 + time.Duration(c.rng.Int64N(int64(wait/2)+1))
		select {
		case <-ctx.Done():
			if foreign != nil && foreign != last {
				last = fmt.Errorf("%v; refused: %v", last, foreign)
			}
			if write && sent {
				return roles.ClientReply{}, fmt.Errorf("%w: %v (last: %v)", ErrUnknown, ctx.Err(), last)
			}
			return roles.ClientReply{}, fmt.Errorf("%w: %v (last: %v)", ErrNoLeader, ctx.Err(), last)
		case <-time.After(wait):
		}
	}
}

// final says whether a refusal is about the request itself, so that
// asking again, elsewhere or later cannot help. Whatever else did not
// serve is asked again: a refusal about who serves (NOT_LEADER, HANDOVER,
// READ_ONLY), a DEPUTY's stale read this client does not take, and a
// refusal without a code (a master from before codes) or with one this
// build does not know.
func final(c wire.Code) bool {
	switch c {
	case wire.CodeInvalid, wire.CodeStaleSeq, wire.CodeState, wire.CodeDenied, wire.CodeThrottled:
		return true
	}
	return false
}

// follow moves to the master a refusal named, or to the next one.
func (c *Client) follow(to wire.MasterID) {
	for i, m := range c.masters {
		if to != wire.NoMaster && m.ID == to {
			c.target = i
			return
		}
	}
	c.target = (c.target + 1) % len(c.masters)
}

var errNotSent = errors.New("not sent")

func (c *Client) attempt(ctx context.Context, to netip.AddrPort, req wire.Message) (roles.ClientReply, error) {
	deadline := time.Now().Add(c.cfg.Attempt)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	nc, err := c.conn(to, deadline)
	if err != nil {
		return roles.ClientReply{}, fmt.Errorf("%w: %w", errNotSent, err)
	}
	_ = nc.SetDeadline(deadline)
	if err := frame.WriteFrame(nc, req); err != nil {
		return roles.ClientReply{}, err
	}
	seq := seqOf(req)
	for {
		m, err := replies.ReadFrame(nc, frame.DefaultMaxFrame)
		if err != nil {
			return roles.ClientReply{}, err
		}
		if r, ok := m.(*roles.ClientReply); ok && r.Seq == seq {
			return *r, nil
		}
		// An answer to an earlier attempt: skip it.
	}
}

func seqOf(m wire.Message) uint64 {
	switch r := m.(type) {
	case roles.ClientWrite:
		return r.Seq
	case roles.ClientRead:
		return r.Seq
	}
	return 0
}

// conn is the session's connection to the master at to, opened (hellos,
// then the password's proof) by deadline if there is none.
func (c *Client) conn(to netip.AddrPort, deadline time.Time) (net.Conn, error) {
	if nc := c.conns[to]; nc != nil {
		return nc, nil
	}
	nc, h, err := dial(to, frame.KindClient, c.cluster, deadline, c.cfg.Bind, c.cfg.Dial)
	if err != nil {
		return nil, err
	}
	if c.cfg.Password != "" {
		_ = nc.SetDeadline(deadline)
		if err := frame.WriteFrame(nc, protocol.ClientAuth{MAC: protocol.ClientProof(c.cfg.Password, h.Nonce, h.Cluster)}); err != nil {
			nc.Close()
			return nil, err
		}
	}
	c.conns[to] = nc
	c.ids[to] = h.Cluster
	return nc, nil
}

func (c *Client) drop(to netip.AddrPort) {
	if nc := c.conns[to]; nc != nil {
		_ = nc.Close()
		delete(c.conns, to)
		delete(c.ids, to)
	}
}
