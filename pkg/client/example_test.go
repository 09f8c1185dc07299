package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/csnode"
	"github.com/mfs-election/mfs-election/internal/node/masternode"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// The examples talk to a real cluster: one master (the founder of its
// metadata) and one voter-only chunkserver, the daemons themselves run in
// this test process on loopback, on ports the kernel picks. masterHost is
// that master's client address, as MASTER_HOST would name it.
var masterHost string

func TestMain(m *testing.M) {
	stop, err := startCluster()
	if err != nil {
		fmt.Fprintln(os.Stderr, "the examples' cluster:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startCluster starts the master and the chunkserver and waits until the
// master leads with the chunkserver's vote counted (changes commit only
// then), or 20 s have passed.
func startCluster() (stop func(), err error) {
	dir, err := os.MkdirTemp("", "client-examples-")
	if err != nil {
		return nil, err
	}
	var stops []func()
	cleanup := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	self := netip.MustParseAddr("127.0.0.1")
	id := masterhost.IDOf(self)
	for _, sub := range []string{"master", "chunkserver"} {
		if err := os.Mkdir(dir+"/"+sub, 0o700); err != nil {
			return nil, err
		}
	}
	mst, err := metadata.OpenMaster(dir + "/master")
	if err != nil {
		return nil, err
	}
	stops = append(stops, func() { mst.Close() })
	if err := mst.Init("EXAMPLE", changelog.Genesis(id)); err != nil {
		return nil, err
	}
	core := master.DefaultConfig(id, []wire.MasterID{id})
	// A founder with no chunkservers yet nominates itself after 5 s by
	// default: not worth waiting for before every go test.
	core.SelfNominateAfter = 20 * time.Millisecond
	m, err := masternode.StartMaster(masternode.MasterOptions{
		Core: core, Self: self, Masters: []masterhost.Master{{ID: id, Addr: netip.AddrPortFrom(self, 9419)}},
		ListenML: "127.0.0.1:0", ListenCS: "127.0.0.1:0", ListenCL: "127.0.0.1:0",
		Log: zerolog.Nop(), Metrics: prometheus.NewRegistry(),
	}, mst)
	if err != nil {
		return nil, err
	}
	stops = append(stops, func() { m.Stop(5 * time.Second) })
	_, csPort, clPort := m.Addrs()
	masterHost = clPort.String()

	cst, err := metadata.OpenChunkserver(dir + "/chunkserver")
	if err != nil {
		return nil, err
	}
	stops = append(stops, func() { cst.Close() })
	vc := voter.DefaultConfig(0, netip.Addr{}, nil)
	cs, err := csnode.StartChunkserver(csnode.ChunkserverOptions{
		Masters: []masterhost.Master{{ID: id, Addr: netip.MustParseAddrPort(csPort.String())}},
		Bind:    self, Listen: "127.0.0.1:0", Voter: vc, TrustRefused: true,
		Log: zerolog.Nop(), Metrics: prometheus.NewRegistry(),
	}, cst)
	if err != nil {
		return nil, err
	}
	stops = append(stops, func() { cs.Stop(5 * time.Second) })

	addr := netip.MustParseAddrPort(masterHost)
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := client.Status(addr, time.Second)
		if err == nil && st.Role == roles.Leader && st.Voters == 1 {
			return cleanup, nil
		}
		if time.Now().After(end) {
			return nil, fmt.Errorf("no LEADER counting its chunkserver within 20 s (last: %+v, %v)", st, err)
		}
	}
}

// A session: a change, then a linearizable read of it at the LEADER.
func Example() {
	cl, err := client.New(client.Config{MasterHost: masterHost})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if _, err := cl.Put(ctx, "greeting", "hello"); err != nil {
		log.Fatal(err)
	}
	v, found, err := cl.Get(ctx, "greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v, found)
	_, found, err = cl.Get(ctx, "no-such-key")
	fmt.Println(found, err)
	// Output:
	// hello true
	// false <nil>
}

// Put returns the changelog version of the change; a retry of the same
// call across a failover is applied once.
func ExampleClient_Put() {
	cl, err := client.New(client.Config{MasterHost: masterHost})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	v1, err := cl.Put(ctx, "put/a", "1")
	if err != nil {
		log.Fatal(err)
	}
	v2, err := cl.Put(ctx, "put/a", "2")
	if err != nil {
		log.Fatal(err)
	}
	_, version, _, err := cl.GetVersion(ctx, "put/a")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v2 > v1, version == v2)
	// Output: true true
}

// List reads every key under a prefix, in key order, a page at a time.
func ExampleClient_List() {
	cl, err := client.New(client.Config{MasterHost: masterHost})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for _, k := range []string{"fruit/pear", "fruit/apple", "veg/leek", "fruit/fig"} {
		if _, err := cl.Put(ctx, k, "in stock"); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := cl.Delete(ctx, "fruit/fig"); err != nil {
		log.Fatal(err)
	}
	entries, _, err := cl.List(ctx, "fruit/")
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		fmt.Printf("%s: %s\n", e.Key, e.Value)
	}
	// Output:
	// fruit/apple: in stock
	// fruit/pear: in stock
}

// CAS changes a key only at the version read; a change made meanwhile
// makes it fail with ErrConflict, and the key's current version.
func ExampleClient_CAS() {
	cl, err := client.New(client.Config{MasterHost: masterHost})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if _, err := cl.Delete(ctx, "cas/owner"); err != nil { // from an earlier run
		log.Fatal(err)
	}
	if _, err := cl.CAS(ctx, "cas/owner", "alice", 0); err != nil { // 0: only if absent
		log.Fatal(err)
	}
	_, read, _, err := cl.GetVersion(ctx, "cas/owner")
	if err != nil {
		log.Fatal(err)
	}
	won, err := cl.CAS(ctx, "cas/owner", "bob", read)
	fmt.Println(err, won > read)
	current, err := cl.CAS(ctx, "cas/owner", "carol", read) // read is stale now
	fmt.Println(errors.Is(err, client.ErrConflict), current == won)
	v, _, err := cl.Get(ctx, "cas/owner")
	fmt.Println(v, err)
	// Output:
	// <nil> true
	// true true
	// bob <nil>
}

// Status asks one master for its state, whatever its role: what mfscli's
// listings show.
func ExampleStatus() {
	st, err := client.Status(netip.MustParseAddrPort(masterHost), time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Role, st.ClusterID, st.HoldsQuorum)
	for _, cs := range st.Chunkservers {
		fmt.Printf("%s voter-only=%v voting=%v location=%s\n", cs.Addr, cs.VoterOnly, cs.Voting, cs.Location)
	}
	// Output:
	// LEADER EXAMPLE true
	// 127.0.0.1 voter-only=true voting=true location=default
}

// Admin sends an operator command to one master; a refusal is an answer
// with a code (for programs) and a text (for people).
func ExampleAdmin() {
	addr := netip.MustParseAddrPort(masterHost)
	r, err := client.Admin(addr, protocol.AdminReq{ID: 1, Kind: roles.AdminCancelUsurper}, "", time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.OK, r.Code == wire.CodeState)
	fmt.Println(r.Text)
	// Output:
	// false true
	// this master is LEADER, not USURPER
}
