package cluster_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/cluster/clustertest"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Real processes over real TCP on loopback, with real signals. Each test
// takes its own 127.B.0.0/16 (B drawn at random), so packages and a `make
// run` cluster can run beside it.

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mfs-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	root, _ := filepath.Abs("../..")
	if err := cluster.Build(bin, root); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// base draws a second octet no other test of this run uses
// (clustertest.Base: the cluster clustertest.Start runs draws from the
// same set).
func base() uint8 { return clustertest.Base() }

// fastStart: the founder nominates itself after 1 s instead of 5 (no
// chunkserver is registered yet at the first election).
var fastStart = clustertest.FastStart()

// start runs the make run topology and waits until a LEADER counts all six
// chunkservers (clustertest.Start, from the daemons TestMain built).
func start(t *testing.T, mutate func(*cluster.Spec)) (*cluster.Cluster, int) {
	t.Helper()
	return clustertest.Start(t, bin, mutate)
}

// raceReports fails t for every daemon log that holds a race detector
// report (daemons built with MFS_RACE=1: cluster.Build).
func raceReports(t *testing.T, dir string) {
	t.Helper()
	clustertest.RaceReports(t, dir)
}

func dumpLogs(t *testing.T, dir string) { clustertest.DumpLogs(t, dir) }

// holdsLeader checks for d that master i stays LEADER at one epoch.
func holdsLeader(t *testing.T, c *cluster.Cluster, i int, d time.Duration, why string) {
	t.Helper()
	st, _ := c.Statuses(time.Second)
	epoch := st[i].Epoch
	if err := throughout(d, 100*time.Millisecond, func() error {
		st, errs := c.Statuses(time.Second)
		if errs[i] != nil || st[i].Role != roles.Leader || st[i].Epoch != epoch {
			return fmt.Errorf("LEADER %s disturbed: %+v %v", c.Masters[i].Addr, st[i], errs[i])
		}
		if ls := c.Leaders(); len(ls) > 1 {
			return fmt.Errorf("two masters report LEADER: %v", ls)
		}
		return nil
	}); err != nil {
		t.Fatalf("%s: %v", why, err)
	}
}

func write(addr netip.Addr, key string, timeout time.Duration) (roles.ClientReply, error) {
	m, err := client.Query(cluster.ClientAddr(addr), roles.ClientWrite{Seq: 1, Key: key, Value: "v"}, timeout)
	if err != nil {
		return roles.ClientReply{}, err
	}
	r, ok := m.(roles.ClientReply)
	if !ok {
		return r, fmt.Errorf("answered %T", m)
	}
	return r, nil
}

// TestFailover: first election; a master restarted while healthy, and a
// 200 ms stall of the LEADER, do not disturb it; kill -9 of the LEADER and a new one; SIGSTOP of the
// LEADER past its lease, a new one, SIGCONT, and the old one demoted
// without accepting the change that waited for it.
func TestFailover(t *testing.T) {
	c, lead := start(t, nil)

	if r, err := write(c.Masters[lead].Addr, "before", 3*time.Second); err != nil || !r.OK {
		t.Fatalf("a write at the LEADER failed: %+v %v", r, err)
	}

	// A FOLLOWER restarted while the LEADER is healthy.
	f := (lead + 1) % 3
	c.Masters[f].Term(5 * time.Second)
	if err := c.Masters[f].Start(); err != nil {
		t.Fatal(err)
	}
	holdsLeader(t, c, lead, 3*time.Second, "follower restart")
	// A chunkserver restarted in order: it waits for the LEADER's release
	// before it exits, votes again at once after its start, and the
	// LEADER keeps its quorum.
	c.CS[0].Term(5 * time.Second)
	if err := c.CS[0].Start(); err != nil {
		t.Fatal(err)
	}
	holdsLeader(t, c, lead, 3*time.Second, "chunkserver restart")

	// A 200 ms stall (two heartbeats) deposes nobody.
	if err := c.Masters[lead].Signal(sigStop); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := c.Masters[lead].Signal(sigCont); err != nil {
		t.Fatal(err)
	}
	holdsLeader(t, c, lead, 2*time.Second, "200 ms stall")

	// kill -9.
	killed := time.Now()
	c.Masters[lead].Kill()
	next, st, err := c.WaitLeader(10*time.Second, 20*time.Millisecond, lead)
	if err != nil {
		t.Fatalf("after kill -9: %v", err)
	}
	t.Logf("kill -9 of %s: LEADER %s after %v (epoch %d)", c.Masters[lead].Addr, st.Addr, time.Since(killed).Round(time.Millisecond), st.Epoch)
	if err := c.Masters[lead].Start(); err != nil {
		t.Fatal(err)
	}
	holdsLeader(t, c, next, 2*time.Second, "killed master back")

	// SIGSTOP past the lease.
	lead = next
	old := c.Masters[lead]
	if err := old.Signal(sigStop); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	next, st, err = c.WaitLeader(10*time.Second, 20*time.Millisecond, lead)
	if err != nil {
		_ = old.Signal(sigCont)
		t.Fatalf("after SIGSTOP: %v", err)
	}
	t.Logf("SIGSTOP of %s: LEADER %s after %v (epoch %d)", old.Addr, st.Addr, time.Since(frozen).Round(time.Millisecond), st.Epoch)
	// A write sent to the frozen LEADER waits in its socket; when it
	// resumes it must fence itself before it looks at it.
	type res struct {
		r   roles.ClientReply
		err error
	}
	got := make(chan res, 1)
	go func() {
		r, err := write(old.Addr, "zombie", 5*time.Second)
		got <- res{r, err}
	}()
	time.Sleep(200 * time.Millisecond)
	if err := old.Signal(sigCont); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err == nil && r.r.OK {
		t.Fatalf("the resumed old LEADER accepted a change: %+v", r.r)
	}
	t.Logf("write at the resumed old LEADER: %+v %v", r.r, r.err)
	eventually(t, 3*time.Second, 50*time.Millisecond, "the resumed old LEADER to step down", func() error {
		sts, errs := c.Statuses(time.Second)
		if errs[lead] == nil && sts[lead].Role != roles.Leader {
			return nil
		}
		return fmt.Errorf("it still reports %v (%v)", sts[lead].Role, errs[lead])
	})
	holdsLeader(t, c, next, 2*time.Second, "old LEADER resumed")
	if r, err := write(c.Masters[next].Addr, "after", 3*time.Second); err != nil || !r.OK {
		t.Fatalf("a write at the new LEADER failed: %+v %v", r, err)
	}
}

// TestBadInput: garbage, an oversized frame and a wrong cluster on every
// port are refused while the cluster keeps its LEADER; a chunkserver with a
// wrong AUTH_CODE, and one of another cluster, never count.
func TestBadInput(t *testing.T) {
	c, lead := start(t, func(s *cluster.Spec) {
		s.MasterCfg["AUTH_CODE"] = "cluster-test-s3cret"
		s.CSCfg = map[string]string{"AUTH_CODE": "cluster-test-s3cret"}
	})
	a := c.Masters[lead].Addr
	kinds := map[uint16]frame.Kind{9419: frame.KindMaster, 9420: frame.KindChunkserver, 9421: frame.KindClient}
	for _, port := range []uint16{9419, 9420, 9421} {
		addr := netip.AddrPortFrom(a, port).String()
		hello := mustEncode(t, frame.Hello{Proto: frame.ProtocolVersion, Kind: kinds[port]})
		for name, payload := range map[string][]byte{
			"garbage":         []byte("GET / HTTP/1.0\r\n\r\n\x00\xff\xfe garbage"),
			"oversized":       append(slices.Clone(hello), 0x7f, 0xff, 0xff, 0xff, 0, 1),
			"hello-then-junk": append(slices.Clone(hello), 0, 0, 0, 9, 0, 99, 1, 2, 3, 4, 5, 6, 7),
			"other-cluster":   mustEncode(t, frame.Hello{Proto: frame.ProtocolVersion, Cluster: "0BADC0FFEE", Kind: frame.KindChunkserver, ID: 1}),
			"other-version":   mustEncode(t, frame.Hello{Proto: 99, Kind: frame.KindMaster}),
		} {
			nc, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				t.Fatalf("%s %s: %v", name, addr, err)
			}
			_, _ = nc.Write(payload)
			_ = nc.SetReadDeadline(time.Now().Add(3 * time.Second))
			buf := make([]byte, 4096)
			for {
				if _, err := nc.Read(buf); err != nil {
					break // closed by the master (or the deadline)
				}
			}
			nc.Close()
		}
	}
	b := c.Spec.CS[0].Addr.As4()
	wrong, err := c.AddCS(cluster.CS{Addr: netip.AddrFrom4([4]byte{b[0], b[1], 1, 50}), VoterOnly: true},
		map[string]string{"AUTH_CODE": "wrong-auth-code-0123"})
	if err != nil {
		t.Fatal(err)
	}
	// One that remembers another cluster.
	otherAddr := netip.AddrFrom4([4]byte{b[0], b[1], 2, 50})
	other, err := c.AddCSWith(cluster.CS{Addr: otherAddr, VoterOnly: true}, nil, func(dir string) error {
		st, err := metadata.OpenChunkserver(dir)
		if err != nil {
			return err
		}
		defer st.Close()
		return st.SetIdentity(metadata.Identity{CS: 77, ClusterID: "0BADC0FFEE", Addr: netip.AddrPortFrom(otherAddr, 9422)})
	})
	if err != nil {
		t.Fatal(err)
	}
	holdsLeader(t, c, lead, 4*time.Second, "bad input")
	st, _ := c.Statuses(time.Second)
	if st[lead].Registered != 6 {
		t.Fatalf("registry changed: %d members", st[lead].Registered)
	}
	for _, p := range []*cluster.Proc{wrong, other} {
		if !p.Running() {
			t.Fatalf("%s exited: a refusal must not end it", p.Name)
		}
	}
	mustLog(t, c.Masters[lead].Log, `"reason":"auth"`)
	mustLog(t, c.Masters[lead].Log, `"reason":"oversized"`)
	mustLog(t, c.Masters[lead].Log, `"reason":"cluster"`)
	mustLog(t, c.Masters[lead].Log, `"reason":"protocol"`)
	mustLog(t, c.Masters[lead].Log, `"reason":"garbage"`)
	mustLog(t, c.Masters[lead].Log, `"reason":"unknown_type"`)
	mustLog(t, other.Log, "another cluster")
}

func mustEncode(t *testing.T, m frame.Hello) []byte {
	t.Helper()
	b, err := frame.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustLog(t *testing.T, path, s string) {
	t.Helper()
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), s) {
		t.Fatalf("%s does not log %s", filepath.Base(path), s)
	}
}
