package csnode

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/rs/zerolog"
)

// TestChunkserverStores: the in-memory store the swarm's voters use keeps
// the rules of the bbolt one mfschunkserver uses, step by step.
func TestChunkserverStores(t *testing.T) {
	disk, err := metadata.OpenChunkserver(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	stores := map[string]ChunkserverStore{"bbolt": disk, "memory": NewMemChunkserverStore()}
	id := metadata.Identity{CS: 7, ClusterID: "C1", Addr: netip.MustParseAddrPort("127.0.0.5:9422")}
	moved := id
	moved.Addr = netip.MustParseAddrPort("127.0.0.6:9422")
	other := id
	other.CS = 8
	h1 := roles.VoterHardState{Boot: 1, MaxEpoch: 3}
	h2 := roles.VoterHardState{Boot: 1, MaxEpoch: 4, MaxGranted: 800}
	steps := []struct {
		name    string
		do      func(ChunkserverStore) error
		wantErr bool
		wantID  metadata.Identity
		hasID   bool
		hard    roles.VoterHardState
	}{
		{name: "empty", do: func(ChunkserverStore) error { return nil }},
		{name: "no id refused", do: func(s ChunkserverStore) error { return s.SetIdentity(metadata.Identity{ClusterID: "C1"}) }, wantErr: true},
		{name: "no cluster refused", do: func(s ChunkserverStore) error { return s.SetIdentity(metadata.Identity{CS: 7}) }, wantErr: true},
		{name: "registered", do: func(s ChunkserverStore) error { return s.SetIdentity(id) }, wantID: id, hasID: true},
		{name: "another id refused", do: func(s ChunkserverStore) error { return s.SetIdentity(other) }, wantErr: true, wantID: id, hasID: true},
		{name: "moved keeps the id", do: func(s ChunkserverStore) error { return s.SetIdentity(moved) }, wantID: moved, hasID: true},
		{name: "apply without a voter record", do: func(s ChunkserverStore) error { return s.Apply(roles.Persist{}) }, wantID: moved, hasID: true},
		{name: "apply keeps the newest", do: func(s ChunkserverStore) error {
			return s.Apply(roles.Persist{Voter: &h1}, roles.Persist{}, roles.Persist{Voter: &h2})
		}, wantID: moved, hasID: true, hard: h2},
		{name: "forget keeps the record", do: func(s ChunkserverStore) error { return s.ForgetIdentity() }, hard: h2},
		{name: "another id after forgetting", do: func(s ChunkserverStore) error { return s.SetIdentity(other) }, wantID: other, hasID: true, hard: h2},
	}
	for name, s := range stores {
		for _, st := range steps {
			err := st.do(s)
			if (err != nil) != st.wantErr {
				t.Fatalf("%s, %s: error %v, want an error: %v", name, st.name, err, st.wantErr)
			}
			if got, ok := s.Identity(); got != st.wantID || ok != st.hasID {
				t.Fatalf("%s, %s: identity %+v %v, want %+v %v", name, st.name, got, ok, st.wantID, st.hasID)
			}
			if h, err := s.VoterHard(); err != nil || h != st.hard {
				t.Fatalf("%s, %s: voter record %+v %v, want %+v", name, st.name, h, err, st.hard)
			}
		}
	}
}

// TestChunkserverInMemory: the driver as the swarm runs it, over the
// in-memory store, with Port given (nothing listens on it), no metrics and
// a short inbox, registers with a real master, votes for it, reports it in
// State, and after Reconnect is connected and voting again.
func TestChunkserverInMemory(t *testing.T) {
	nodetest.NoLeaks(t)
	self := netip.MustParseAddr("127.0.0.1")
	m, _ := startLeader(t, self, false)
	_, csAddr, _ := m.Addrs()
	const port = 19422
	store := NewMemChunkserverStore()
	opt := ChunkserverOptions{
		Masters: []masterhost.Master{{ID: masterhost.IDOf(self), Addr: netip.MustParseAddrPort(csAddr.String())}},
		Bind:    netip.MustParseAddr("127.0.0.9"), Port: port, Inbox: 4,
		Voter: voter.DefaultConfig(0, netip.Addr{}, nil), ReconnectDelay: time.Second, TrustRefused: true,
		Log: zerolog.New(zerolog.NewTestWriter(t)),
	}
	n, err := StartChunkserver(opt, store)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(5 * time.Second)
	if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.9:%d", port)); err != nil {
		t.Fatalf("the port named as identity is held: %v", err)
	} else {
		ln.Close()
	}
	voting := func() bool {
		s := n.State()
		return s.Registered && s.Up[0] && s.VoteFor == opt.Masters[0].ID && s.Promised == opt.Masters[0].ID
	}
	if !nodetest.Until(10*time.Second, voting) {
		t.Fatalf("not registered and voting: %+v", n.State())
	}
	id, ok := store.Identity()
	if !ok || id.CS != n.Identity().CS || id.Addr != netip.MustParseAddrPort(fmt.Sprintf("127.0.0.9:%d", port)) {
		t.Fatalf("stored identity %+v %v, driver's %+v", id, ok, n.Identity())
	}
	if h, _ := store.VoterHard(); h.MaxGranted == 0 {
		t.Fatalf("no grant in the stored record: %+v", h)
	}
	if !nodetest.Until(5*time.Second, func() bool { return nodetest.StatusOf(t, m).Voters == 1 }) {
		t.Fatalf("the master does not count the vote: %+v", nodetest.StatusOf(t, m))
	}
	before := nodetest.StatusOf(t, m).Chunkservers
	n.Reconnect()
	if !nodetest.Until(10*time.Second, func() bool {
		st := nodetest.StatusOf(t, m)
		return voting() && st.Voters == 1 && st.Connected == 1
	}) {
		t.Fatalf("not voting again after Reconnect: %+v, master %+v (before %+v)", n.State(), nodetest.StatusOf(t, m), before)
	}
	if err := n.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if h, _ := store.VoterHard(); !h.CleanStop {
		t.Fatalf("an orderly stop left no clean-stop mark: %+v", h)
	}
}
