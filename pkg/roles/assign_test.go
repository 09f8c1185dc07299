package roles

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// TestAssignIDAndIDTaken: only a LEADER hands out ids; a registered address
// keeps its id; newcomers get fresh ones; a session that claims a member's
// id from another address is refused with IDTaken and never counted.
func TestAssignIDAndIDTaken(t *testing.T) {
	h := newHarness(t)
	h.run("master id=1 masters=1 registry=1@10.0.1.1,2@10.0.1.2,3@10.0.2.3 acks=0")
	if _, ok := h.m.AssignID(netip.MustParseAddr("10.0.9.9"), 9422); ok {
		t.Fatal("a FOLLOWER handed out an id")
	}
	for _, cmd := range []string{"hello cs=1 nominate", "hello cs=2", "ack cs=1", "ack cs=2"} {
		h.run(cmd)
	}
	if h.m.Role() != Leader {
		t.Fatalf("setup: %v, want LEADER", h.m.Role())
	}
	a := func(addr string, port uint16) wire.CSID {
		id, ok := h.m.AssignID(netip.MustParseAddr(addr), port)
		if !ok {
			t.Fatalf("the LEADER refused to assign an id to %s:%d", addr, port)
		}
		return id
	}
	if got := a("10.0.1.2", 0); got != 2 {
		t.Fatalf("a registered address got id %v, want its own CS2", got)
	}
	n1, n2 := a("10.0.9.9", 9422), a("10.0.9.8", 9422)
	if n1 != 4 || n2 != 5 || a("10.0.9.9", 9422) != 4 {
		t.Fatalf("newcomers got %v, %v (want CS4, CS5, and CS4 again)", n1, n2)
	}
	if got := a("10.0.9.9", 9423); got != 6 {
		t.Fatalf("another port of one address is another chunkserver: got %v, want CS6", got)
	}
	// CS3 is registered at 10.0.2.3: a session from elsewhere under its id
	// is refused and told to register again.
	out := h.run("hello cs=3 addr=10.0.7.7 session=5")
	if !strings.Contains(out, "id-taken") {
		t.Fatalf("a session with another member's id was not refused:\n%s", out)
	}
	for _, id := range h.m.CountedVoters() {
		if id == 3 {
			t.Fatal("the impostor's vote is counted")
		}
	}
}

// TestVoterIDTaken: a voter told its id is taken says so to its driver.
func TestVoterIDTaken(t *testing.T) {
	h := newHarness(t)
	h.run("voter id=3 addr=10.0.7.7 masters=1")
	h.run("time 2.1s")
	if out := h.run("reply from=1 role=LEADER epoch=1"); !strings.Contains(out, "hello") {
		t.Fatalf("setup: the voter opened no session:\n%s", out)
	}
	acts := h.v.Step(h.now, Redirect{From: 1, Session: h.v.Session(), IDTaken: true})
	found := false
	for _, a := range acts {
		if it, ok := a.(IDTaken); ok && it.Master == 1 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no IDTaken action: %#v", acts)
	}
}
