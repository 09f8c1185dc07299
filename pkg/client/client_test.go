package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// fakeMaster answers the client port with a script: each connection's
// requests go to answer, which returns the reply (ok=false: close the
// connection without one, as a master killed mid-request would).
type fakeMaster struct {
	ln      net.Listener
	mu      sync.Mutex
	seen    []roles.ClientWrite
	answer  func(w roles.ClientWrite) (roles.ClientReply, bool)
	read    func(r roles.ClientRead) roles.ClientReply // nil: reads end the connection
	reads   []roles.ClientRead
	cluster string   // the metadata id its hello names
	nonce   []byte   // its hello's nonce
	auths   [][]byte // the ClientAuth proofs received, in order
	order   []string // "auth" and "write" as they came
}

var requests = func() *frame.Registry {
	r := frame.NewRegistry()
	r.Register(wire.TypeClientWrite, func() wire.Message { return &roles.ClientWrite{} })
	r.Register(wire.TypeClientRead, func() wire.Message { return &roles.ClientRead{} })
	r.Register(wire.TypeClientAuth, func() wire.Message { return &protocol.ClientAuth{} })
	return r
}()

func newFake(t *testing.T, addr string) *fakeMaster {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	f := &fakeMaster{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(nc)
		}
	}()
	return f
}

func (f *fakeMaster) serve(nc net.Conn) {
	defer nc.Close()
	if _, err := requests.ReadFrame(nc, 4096); err != nil {
		return
	}
	if frame.WriteFrame(nc, frame.Hello{Proto: frame.ProtocolVersion, Kind: frame.KindMaster, ID: 1, Cluster: f.cluster, Nonce: f.nonce}) != nil {
		return
	}
	for {
		m, err := requests.ReadFrame(nc, frame.DefaultMaxFrame)
		if err != nil {
			return
		}
		if a, ok := m.(*protocol.ClientAuth); ok {
			f.mu.Lock()
			f.auths = append(f.auths, a.MAC)
			f.order = append(f.order, "auth")
			f.mu.Unlock()
			continue
		}
		if rd, ok := m.(*roles.ClientRead); ok && f.read != nil {
			f.mu.Lock()
			f.reads = append(f.reads, *rd)
			r := f.read(*rd)
			f.mu.Unlock()
			r.Seq = rd.Seq
			if frame.WriteFrame(nc, r) != nil {
				return
			}
			continue
		}
		w, ok := m.(*roles.ClientWrite)
		if !ok {
			return
		}
		f.mu.Lock()
		f.seen = append(f.seen, *w)
		f.order = append(f.order, "write")
		r, ok := f.answer(*w)
		f.mu.Unlock()
		if !ok {
			return
		}
		r.Seq = w.Seq
		if frame.WriteFrame(nc, r) != nil {
			return
		}
	}
}

// TestRedirectAndRetrySameSequence: a FOLLOWER's redirect is followed to
// the LEADER it names; a LEADER that drops the connection mid-change is
// asked again with the same session and sequence (so the change applies
// once); the answer then completes the call.
func TestRedirectAndRetrySameSequence(t *testing.T) {
	a, b := "127.77.0.1:19421", "127.77.0.2:19421"
	follower, leader := newFake(t, a), newFake(t, b)
	leaderID := masterhost.IDOf(netip.MustParseAddr("127.77.0.2"))
	follower.answer = func(roles.ClientWrite) (roles.ClientReply, bool) {
		return roles.ClientReply{Err: roles.ErrNotLeader, Code: wire.CodeNotLeader, Redirect: leaderID}, true
	}
	calls := 0
	leader.answer = func(w roles.ClientWrite) (roles.ClientReply, bool) {
		calls++ // under leader.mu (serve calls answer after taking it)
		if calls == 1 {
			return roles.ClientReply{}, false // dies before it answers
		}
		return roles.ClientReply{OK: true, Version: 42}, true
	}
	cl, err := New(Config{MasterHost: "127.77.0.1,127.77.0.2", Port: 19421, Attempt: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := cl.Put(ctx, "k", "v")
	if err != nil || v != 42 {
		t.Fatalf("Put = %d, %v; want 42", v, err)
	}
	leader.mu.Lock()
	seen := append([]roles.ClientWrite(nil), leader.seen...)
	leader.mu.Unlock()
	if len(seen) != 2 || seen[0].Seq != seen[1].Seq || seen[0].Client != seen[1].Client {
		t.Fatalf("the retry did not repeat session and sequence: %+v", seen)
	}
	if cl.Leader().String() != "127.77.0.2" {
		t.Fatalf("served by %v", cl.Leader())
	}
}

// TestNoLeaderEndsWithContext: with every master refusing, the call ends
// when its context does, and says whether a change may have been applied.
func TestNoLeaderEndsWithContext(t *testing.T) {
	f := newFake(t, "127.77.0.3:19421")
	f.answer = func(roles.ClientWrite) (roles.ClientReply, bool) {
		return roles.ClientReply{Err: roles.ErrNotLeader, Code: wire.CodeNotLeader}, true
	}
	cl, err := New(Config{MasterHost: "127.77.0.3", Port: 19421})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = cl.Put(ctx, "k", "v")
	if !errors.Is(err, ErrUnknown) {
		t.Fatalf("Put with no LEADER = %v, want ErrUnknown (the change was sent)", err)
	}
	if _, err := cl.Put(context.Background(), "k", ""); err == nil {
		t.Fatal("an empty value was accepted")
	}
}

// TestRefusalIsFinal: a request the LEADER refuses for what it is (not for
// who serves it) ends at once with ErrRefused, without retries; one the
// client can tell is bad never leaves it.
func TestRefusalIsFinal(t *testing.T) {
	f := newFake(t, "127.77.0.4:19421")
	f.answer = func(roles.ClientWrite) (roles.ClientReply, bool) {
		return roles.ClientReply{Err: roles.ErrStaleSeq, Code: wire.CodeStaleSeq}, true
	}
	cl, err := New(Config{MasterHost: "127.77.0.4", Port: 19421})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cl.Put(ctx, "k", "v"); !errors.Is(err, ErrRefused) || ctx.Err() != nil {
		t.Fatalf("Put refused by the LEADER = %v (context %v), want ErrRefused at once", err, ctx.Err())
	}
	if _, err := cl.Put(ctx, "k", strings.Repeat("v", roles.MaxValue+1)); !errors.Is(err, ErrRefused) {
		t.Fatalf("Put of an oversized value = %v, want ErrRefused", err)
	}
	f.mu.Lock()
	n := len(f.seen)
	f.mu.Unlock()
	if n != 1 {
		t.Fatalf("the fake master saw %d requests, want 1 (no retry, nothing oversized sent)", n)
	}
}

// TestRefusalWithoutCodeRetried: a refusal that carries no code (a master
// from before codes) or one this build does not know is asked again, not
// taken as final: the text is never read.
func TestRefusalWithoutCodeRetried(t *testing.T) {
	f := newFake(t, "127.77.0.10:19421")
	answers := []roles.ClientReply{
		{Err: roles.ErrNotLeader},
		{Err: "a refusal of a later build", Code: 200},
		{Err: roles.ErrStaleSeq},
		{OK: true, Version: 3},
	}
	f.answer = func(roles.ClientWrite) (roles.ClientReply, bool) {
		r := answers[0]
		answers = answers[1:] // under f.mu
		return r, true
	}
	cl, err := New(Config{MasterHost: "127.77.0.10", Port: 19421})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := cl.Put(ctx, "k", "v"); err != nil || v != 3 {
		t.Fatalf("Put = %d, %v; want version 3 after three uncoded or unknown refusals", v, err)
	}
}

// TestListFollowsPages: List asks page after page, each after the last key
// of the one before and of ListPageSize keys, until the LEADER says there
// is no more, and returns every key once, in order.
func TestListFollowsPages(t *testing.T) {
	f := newFake(t, "127.77.0.5:19421")
	var keys []string
	for i := 0; i < 2500; i++ {
		keys = append(keys, fmt.Sprintf("d/%05d", i))
	}
	keys = append(keys, "e/other")
	f.read = func(r roles.ClientRead) roles.ClientReply {
		rep := roles.ClientReply{OK: true}
		for _, k := range keys {
			if !strings.HasPrefix(k, r.Key) || k <= r.After {
				continue
			}
			if len(rep.Entries) == r.Limit {
				rep.More = true
				break
			}
			rep.Entries = append(rep.Entries, namespace.KVEntry{Key: k, Value: "v", Version: 1})
		}
		return rep
	}
	cl, err := New(Config{MasterHost: "127.77.0.5", Port: 19421})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	es, more, err := cl.List(ctx, "d/")
	if err != nil || more || len(es) != 2500 {
		t.Fatalf("List = %d keys, more=%v, %v; want 2500", len(es), more, err)
	}
	for i, e := range es {
		if e.Key != keys[i] {
			t.Fatalf("key %d is %q, want %q", i, e.Key, keys[i])
		}
	}
	f.mu.Lock()
	reads := append([]roles.ClientRead(nil), f.reads...)
	f.mu.Unlock()
	if len(reads) != 3 || reads[0].After != "" || reads[1].After != keys[999] || reads[2].After != keys[1999] {
		t.Fatalf("pages asked: %+v", reads)
	}
	for _, r := range reads {
		if r.Limit != ListPageSize || !r.Prefix || r.Key != "d/" {
			t.Fatalf("a page asked as %+v", r)
		}
	}
}

// TestListRefusesAMasterThatDoesNotPage: a master that ignores After (one
// from before paging) answers the first page again and again; List says so
// instead of asking forever.
func TestListRefusesAMasterThatDoesNotPage(t *testing.T) {
	f := newFake(t, "127.77.0.6:19421")
	f.read = func(r roles.ClientRead) roles.ClientReply {
		return roles.ClientReply{OK: true, More: true, Entries: []namespace.KVEntry{{Key: "a"}, {Key: "b"}}}
	}
	cl, err := New(Config{MasterHost: "127.77.0.6", Port: 19421})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	es, more, err := cl.List(ctx, "")
	if err == nil || !strings.Contains(err.Error(), "does not page") || !more || len(es) != 2 {
		t.Fatalf("List = %d keys, more=%v, %v; want the first page and an error", len(es), more, err)
	}
}

// TestClusterPinned (review M8): a master wiped and re-initialised instead
// of started with -e leads a new, empty cluster of its own. A client never
// writes there: it pins the cluster id (from its config, or from the first
// LEADER that served it) and refuses any master that names another.
func TestClusterPinned(t *testing.T) {
	good, wiped := newFake(t, "127.77.0.6:19421"), newFake(t, "127.77.0.7:19421")
	good.cluster, wiped.cluster = "aaaa", "bbbb"
	ok := func(roles.ClientWrite) (roles.ClientReply, bool) {
		return roles.ClientReply{OK: true, Version: 7}, true
	}
	good.answer, wiped.answer = ok, ok
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// Pinned by config: the re-initialised master, first in the list, is
	// passed over.
	cl, err := New(Config{MasterHost: "127.77.0.7,127.77.0.6", Port: 19421, Cluster: "aaaa"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Put(ctx, "k", "v"); err != nil || cl.Leader().String() != "127.77.0.6" {
		t.Fatalf("Put = %v, served by %v; want the master of cluster aaaa", err, cl.Leader())
	}
	wiped.mu.Lock()
	n := len(wiped.seen)
	wiped.mu.Unlock()
	if n != 0 {
		t.Fatalf("the master of another cluster received %d changes", n)
	}

	// Pinned by the first LEADER: once served by cluster aaaa, a client
	// redirected to the other one refuses it and says why.
	cl2, err := New(Config{MasterHost: "127.77.0.6,127.77.0.7", Port: 19421, Attempt: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	if _, err := cl2.Put(ctx, "k", "v"); err != nil || cl2.Cluster() != "aaaa" {
		t.Fatalf("Put = %v, pinned %q; want cluster aaaa", err, cl2.Cluster())
	}
	wiped7 := masterhost.IDOf(netip.MustParseAddr("127.77.0.7"))
	good.mu.Lock()
	good.answer = func(roles.ClientWrite) (roles.ClientReply, bool) {
		return roles.ClientReply{Err: roles.ErrNotLeader, Code: wire.CodeNotLeader, Redirect: wiped7}, true
	}
	good.mu.Unlock()
	short, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	_, err = cl2.Put(short, "k2", "v")
	if err == nil || !errors.Is(err, ErrUnknown) && !errors.Is(err, ErrNoLeader) {
		t.Fatalf("Put with only another cluster's LEADER = %v", err)
	}
	if !strings.Contains(err.Error(), "metadata id") {
		t.Fatalf("the error does not say another cluster answered: %v", err)
	}
	wiped.mu.Lock()
	n = len(wiped.seen)
	wiped.mu.Unlock()
	if n != 0 {
		t.Fatalf("the master of another cluster received %d changes", n)
	}
}

// TestPasswordProved: with Config.Password a client proves it once per
// connection, right after the hellos (ClientAuth over the hello's nonce
// and cluster id); without one it sends no proof. A refusal by
// mfsexports.cfg ends the call at once with ErrRefused and the master's
// text.
func TestPasswordProved(t *testing.T) {
	const pw = "export-password-0123"
	f := newFake(t, "127.77.0.7:19421")
	f.cluster, f.nonce = "C7", []byte("0123456789abcdef")
	writes := 0
	f.answer = func(w roles.ClientWrite) (roles.ClientReply, bool) {
		writes++
		if w.Key == "ro" {
			return roles.ClientReply{Err: protocol.ErrExportsReadOnly + `: client 127.0.0.1, key "ro"`, Code: wire.CodeDenied}, true
		}
		return roles.ClientReply{OK: true, Version: 5}, true
	}
	cl, err := New(Config{MasterHost: "127.77.0.7", Port: 19421, Attempt: time.Second, Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := 0; i < 2; i++ {
		if _, err := cl.Put(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	_, err = cl.Put(ctx, "ro", "v")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), protocol.ErrExportsReadOnly) {
		t.Fatalf("a read-only refusal: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := protocol.ClientProof(pw, f.nonce, "C7")
	if len(f.auths) != 1 || string(f.auths[0]) != string(want) || f.order[0] != "auth" || writes != 3 {
		t.Fatalf("proofs %x (want one, %x, first), order %v, writes %d", f.auths, want, f.order, writes)
	}

	g := newFake(t, "127.77.0.8:19421")
	g.answer = func(roles.ClientWrite) (roles.ClientReply, bool) {
		return roles.ClientReply{OK: true, Version: 1}, true
	}
	plain, err := New(Config{MasterHost: "127.77.0.8", Port: 19421})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.auths) != 0 {
		t.Fatalf("a client without a password sent %d proofs", len(g.auths))
	}
}

// TestSessionIDsAreNotAnonymous: a client draws its session id with the
// masters' mark (protocol.AnonymousClient) clear, so that a master never
// takes it for one of its own making and its retries are deduplicated.
func TestSessionIDsAreNotAnonymous(t *testing.T) {
	for i := 0; i < 64; i++ {
		cl, err := New(Config{MasterHost: "127.77.0.9", Port: 19421})
		if err != nil {
			t.Fatal(err)
		}
		if id := cl.Session(); id == 0 || id&protocol.AnonymousClient != 0 {
			t.Fatalf("a client drew session %#x", id)
		}
	}
}

// TestBusyRetriedAtTheSameMaster: a LEADER that answers BUSY (MAX_PENDING)
// is asked again, itself and not another master, with the same session
// and sequence, after a wait that doubles with each BUSY in a row (at
// least half of 10, 20, 40 ms with the jitter); the answer then completes
// the call.
func TestBusyRetriedAtTheSameMaster(t *testing.T) {
	a, b := "127.77.0.20:19421", "127.77.0.21:19421"
	leader, other := newFake(t, a), newFake(t, b)
	busy := 3
	var at []time.Time
	leader.answer = func(roles.ClientWrite) (roles.ClientReply, bool) {
		at = append(at, time.Now()) // under leader.mu
		if busy > 0 {
			busy--
			return roles.ClientReply{Err: roles.ErrBusy, Code: wire.CodeBusy}, true
		}
		return roles.ClientReply{OK: true, Version: 7}, true
	}
	other.answer = func(roles.ClientWrite) (roles.ClientReply, bool) {
		return roles.ClientReply{Err: roles.ErrNotLeader, Code: wire.CodeNotLeader, Redirect: 1}, true
	}
	cl, err := New(Config{MasterHost: "127.77.0.20,127.77.0.21", Port: 19421})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := cl.Put(ctx, "k", "v"); err != nil || v != 7 {
		t.Fatalf("Put = %d, %v; want version 7 after three BUSY answers", v, err)
	}
	leader.mu.Lock()
	defer leader.mu.Unlock()
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(leader.seen) != 4 || len(other.seen) != 0 {
		t.Fatalf("the LEADER saw %d requests and the other master %d; want 4 and 0", len(leader.seen), len(other.seen))
	}
	for _, w := range leader.seen[1:] {
		if w.Client != leader.seen[0].Client || w.Seq != leader.seen[0].Seq {
			t.Fatalf("retry %+v is not the first request's session and sequence %+v", w, leader.seen[0])
		}
	}
	for i, least := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
		if gap := at[i+1].Sub(at[i]); gap < least {
			t.Errorf("BUSY %d was asked again after %v, want at least %v (the back-off doubles)", i+1, gap, least)
		}
	}
}
