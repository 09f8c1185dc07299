package master

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
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
	if h.m.Role() != roles.Leader {
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
	acts := h.v.Step(h.now, roles.Redirect{From: 1, Session: h.v.Session(), IDTaken: true})
	if acts.IDTaken == nil || acts.IDTaken.Master != 1 {
		t.Fatalf("no IDTaken action: %#v", acts)
	}
}

// TestAssignIDNeverReusesARemovedID: the registry remembers the highest id
// it ever registered, so a newcomer after the removal of the highest-id
// member gets a fresh id, even from a LEADER that did not assign the
// removed one (a promise made under the old id may still stand, and a
// newcomer votes at once).
func TestAssignIDNeverReusesARemovedID(t *testing.T) {
	cur := &registry.ClusterConfig{Version: 3, Locations: locations.New(), Members: []registry.Chunkserver{
		{ID: 1, Addr: netip.MustParseAddr("10.0.0.1"), Port: 9422}, {ID: 2, Addr: netip.MustParseAddr("10.0.0.2"), Port: 9422},
	}, TopID: 2}
	next, err := registry.Change{Kind: registry.ChangeRegister, CS: registry.Chunkserver{ID: 3, Addr: netip.MustParseAddr("10.0.0.3"), Port: 9422}}.Apply(cur)
	if err != nil || next.TopID != 3 {
		t.Fatalf("register CS3: %v, TopID %d", err, next.TopID)
	}
	after, err := registry.Change{Kind: registry.ChangeRemove, ID: 3}.Apply(next)
	if err != nil || after.TopID != 3 || len(after.Members) != 2 {
		t.Fatalf("remove CS3: %v, TopID %d, %d members", err, after.TopID, len(after.Members))
	}
	if checkConfig(after) != "" {
		t.Fatalf("a config with TopID above every member is refused: %s", checkConfig(after))
	}
	if bad := (&registry.ClusterConfig{Members: after.Members, TopID: 1}); checkConfig(bad) == "" {
		t.Fatal("a config with TopID below a member's id is accepted")
	}
}

// TestTopIDFromAnOlderRegistry: in a registry written before TopID was
// kept, a removed chunkserver that registers again with its own (lower) id
// still leaves TopID at the highest member.
func TestTopIDFromAnOlderRegistry(t *testing.T) {
	cur := &registry.ClusterConfig{Version: 3, Locations: locations.New(), Members: []registry.Chunkserver{
		{ID: 1, Addr: netip.MustParseAddr("10.0.0.1"), Port: 9422}, {ID: 5, Addr: netip.MustParseAddr("10.0.0.5"), Port: 9422},
	}}
	next, err := registry.Change{Kind: registry.ChangeRegister, CS: registry.Chunkserver{ID: 2, Addr: netip.MustParseAddr("10.0.0.2"), Port: 9422}}.Apply(cur)
	if err != nil || next.TopID != 5 || checkConfig(next) != "" {
		t.Fatalf("register CS2 again: %v, TopID %d, check %q", err, next.TopID, checkConfig(next))
	}
}
