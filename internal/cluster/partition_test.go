package cluster_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// startInNetns starts the make run topology in a network namespace of the
// test's own, named after prefix (the test skips where none can be made),
// and lets it settle: the founder's first term can end soon after the
// chunkservers register (a second election follows; issue 13's note), and
// a fault in the middle of that election tests the election, not the
// fault.
func startInNetns(t *testing.T, prefix string) (*cluster.Cluster, string) {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, os.Getpid())
	if err := cluster.NewNetns(ns); err != nil {
		t.Skipf("no network namespace: %v", err)
	}
	t.Cleanup(func() { _ = cluster.DeleteNetns(ns) })
	c, _ := start(t, func(s *cluster.Spec) { s.Netns = ns })
	time.Sleep(2 * time.Second)
	return c, ns
}

// TestPartition cuts the LEADER off with one location of three (a silent
// partition: packets dropped, as by a pulled cable) inside a network
// namespace of the test's own. The minority side must have no LEADER once
// the lease has run out; the majority side must elect one; after the heal
// the new LEADER keeps its place.
func TestPartition(t *testing.T) {
	c, ns := startInNetns(t, "mfs-test")
	lead, _, err := c.WaitLeader(10*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("no settled LEADER before the partition: %v", err)
	}
	b := c.Spec.Masters[0].As4()
	pfx := func(y, z uint8, bits int) string { return fmt.Sprintf("127.%d.%d.%d/%d", b[1], y, z, bits) }
	// The LEADER's side: itself and the location of cs1/cs2 (dc1).
	la := c.Masters[lead].Addr.As4()
	minority := []string{pfx(0, la[3], 32), pfx(1, 0, 24)}
	var majority []string
	for i, m := range c.Masters {
		if i != lead {
			a := m.Addr.As4()
			majority = append(majority, pfx(0, a[3], 32))
		}
	}
	majority = append(majority, pfx(2, 0, 24), pfx(3, 0, 24))
	pref := 100
	var prefs []int
	for _, x := range minority {
		for _, y := range majority {
			for _, d := range [][2]string{{x, y}, {y, x}} {
				if err := cluster.Cut(ns, d[0], d[1], pref); err != nil {
					t.Fatal(err)
				}
				prefs = append(prefs, pref)
				pref++
			}
		}
	}
	cut := time.Now()
	next, st, err := c.WaitLeader(10*time.Second, 50*time.Millisecond, lead)
	if err != nil {
		t.Fatalf("the majority side elected no LEADER: %v", err)
	}
	t.Logf("partition: LEADER %s on the majority side after %v", st.Addr, time.Since(cut).Round(time.Millisecond))
	// From now on the minority side must show no LEADER.
	if err := throughout(3*time.Second, 100*time.Millisecond, func() error {
		sts, errs := c.Statuses(time.Second)
		if errs[lead] == nil && sts[lead].Role == roles.Leader {
			return fmt.Errorf("the minority side still has a LEADER: %+v", sts[lead])
		}
		if errs[next] != nil || sts[next].Role != roles.Leader {
			return fmt.Errorf("the majority LEADER lost its role during the partition: %+v %v", sts[next], errs[next])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range prefs {
		if err := cluster.Heal(ns, p); err != nil {
			t.Fatal(err)
		}
	}
	holdsLeader(t, c, next, 3*time.Second, "after the heal")
}

// TestLossyLeader: 20% of the packets from and to the LEADER dropped, both
// ways, for 8 s (iptables in a network namespace of the test's own): a bad
// link, not a dead master. The LEADER changes it caused and the longest
// time without one are read from the masters' logs and printed; make bench
// (-only loss) measures them over trials (docs/benchmarks.md, "Packet
// loss"). Asserted is only what holds on any machine: after the loss a
// LEADER leads and keeps its place, and no two masters ever logged
// overlapping terms.
func TestLossyLeader(t *testing.T) {
	c, ns := startInNetns(t, "mfs-loss")
	lead, _, err := c.WaitLeader(10*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("no settled LEADER before the loss: %v", err)
	}
	heal, err := cluster.Lossy(ns, c.Masters[lead].Addr, 0.2)
	if err != nil {
		t.Skipf("no packet loss: %v", err)
	}
	from := time.Now()
	time.Sleep(8 * time.Second)
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	to := time.Now()
	next, _, err := c.WaitLeader(10*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("no LEADER after the loss ended: %v", err)
	}
	holdsLeader(t, c, next, 2*time.Second, "after the loss")
	end := time.Now() // what the loss set off may finish after it ended
	var logs []string
	for _, m := range c.Masters {
		logs = append(logs, m.Log)
	}
	terms := cluster.LeaderTerms(logs, from)
	for i := 1; i < len(terms); i++ {
		if p := terms[i-1]; !p.To.IsZero() && p.To.After(terms[i].From) && p.Master != terms[i].Master {
			// Logged times are when each process wrote its line: a LEADER
			// fenced by its lease logs its end late if it was busy, so
			// this is a hint, not a proof (S1 is the lease's arithmetic).
			t.Logf("terms of %s and %s overlap in the logs by %v", c.Masters[p.Master].Addr, c.Masters[terms[i].Master].Addr, p.To.Sub(terms[i].From))
		}
	}
	began, gap := cluster.Leadership(terms, from, end)
	t.Logf("20%% loss both ways on the LEADER %s for %v: %d LEADER changes, the longest time without a LEADER %v, from the loss's start to %v after its end (goal: 0 changes, never over 0.5 s)",
		c.Masters[lead].Addr, to.Sub(from).Round(time.Millisecond), began, gap.Round(time.Millisecond), end.Sub(to).Round(time.Millisecond))
	// The heartbeat datagrams (HEARTBEAT_UDP, on by default) reached the
	// master that leads now, and some overtook their TCP copy: what keeps
	// a LEADER through loss. How many is printed, not asserted.
	http := cluster.MasterHTTP(c.Masters[next].Addr)
	first, err := cluster.MetricIn(ns, http, `mfs_master_heartbeat_datagrams_total{result="first"}`, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	second, err := cluster.MetricIn(ns, http, `mfs_master_heartbeat_datagrams_total{result="second"}`, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("acknowledgement datagrams taken by %s: %v before their TCP copy, %v after it", c.Masters[next].Addr, first, second)
	if first+second == 0 {
		t.Fatalf("no acknowledgement datagram reached %s: the votes rode TCP alone", c.Masters[next].Addr)
	}
}

// TestOneWayCut: the LEADER cut off in one direction only (iptables in a
// network namespace of the test's own), each way in turn: it cannot
// receive (its heartbeats still reach the voters, whose answers do not
// reach it), or it cannot send. Either way it must step down once its
// lease lapses, and another master must lead; after the heal the cluster
// settles with one LEADER. The times are printed (the lease is 0.5 s: the
// step-down comes about then, the new LEADER within about 1 s); asserted
// are bounds that hold on a loaded machine.
func TestOneWayCut(t *testing.T) {
	c, ns := startInNetns(t, "mfs-oneway")
	for _, in := range []bool{true, false} {
		what := "cannot send"
		if in {
			what = "cannot receive"
		}
		lead, _, err := c.WaitLeader(10*time.Second, 50*time.Millisecond)
		if err != nil {
			t.Fatalf("no LEADER before the cut (%s): %v", what, err)
		}
		old := c.Masters[lead]
		heal, err := cluster.OneWay(ns, old.Addr, in)
		if err != nil {
			t.Skipf("no one-way cut: %v", err)
		}
		from := time.Now()
		next, _, err := c.WaitLeader(10*time.Second, 50*time.Millisecond, lead)
		if err != nil {
			_ = heal()
			t.Fatalf("the LEADER %s: no other master led within 10 s: %v", what, err)
		}
		left := cluster.LeftLeader(old.Log, from)
		for end := time.Now().Add(5 * time.Second); left.IsZero() && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			left = cluster.LeftLeader(old.Log, from)
		}
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		came := cluster.BecameLeader(c.Masters[next].Log, from)
		if left.IsZero() {
			t.Fatalf("the LEADER %s never stepped down (its log has no LEADER -> line within 5 s of %s leading)", what, c.Masters[next].Addr)
		}
		t.Logf("LEADER %s %s: stepped down %v after the cut, %s LEADER %v after it", old.Addr, what,
			left.Sub(from).Round(time.Millisecond), c.Masters[next].Addr, came.Sub(from).Round(time.Millisecond))
		if d := left.Sub(from); d > 3*time.Second {
			t.Errorf("the LEADER %s stepped down %v after the cut (its lease is 0.5 s)", what, d)
		}
		if d := came.Sub(from); d > 5*time.Second {
			t.Errorf("a new LEADER came %v after the cut of a LEADER that %s", d, what)
		}
		holdsLeader(t, c, next, time.Second, "after the heal ("+what+")")
	}
}
