package cluster_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/linearize"
	"github.com/mfs-election/mfs-election/pkg/client"
)

// TestLinearizableAcrossFailovers: concurrent clients read and write
// through pkg/client while the LEADER is killed (-9), frozen past its lease
// (SIGSTOP, then SIGCONT), stepped down by an admin and handed over to a
// USURPER. The whole history must be linearizable (porcupine): no
// acknowledged change lost, no stale read, no change applied twice.
// Snapshots are taken every 50 changes and the changelog trimmed hard, so
// the failovers happen on trimmed logs and the masters that come back catch
// up through snapshots.
func TestLinearizableAcrossFailovers(t *testing.T) {
	c, _ := start(t, snapshotsEvery(50, 20))
	ld := startLoad(t, c, 4)
	faults := func() error {
		time.Sleep(time.Second)
		// kill -9.
		lead := leaderNow(c)
		c.Masters[lead].Kill()
		next, _, err := c.WaitLeader(10*time.Second, 20*time.Millisecond, lead)
		if err != nil {
			return fmt.Errorf("after kill -9: %w", err)
		}
		if err := c.Masters[lead].Start(); err != nil {
			return err
		}
		time.Sleep(2 * time.Second)
		// SIGSTOP past the lease, then SIGCONT.
		lead = next
		_ = c.Masters[lead].Signal(sigStop)
		next, _, err = c.WaitLeader(10*time.Second, 20*time.Millisecond, lead)
		_ = c.Masters[lead].Signal(sigCont)
		if err != nil {
			return fmt.Errorf("after SIGSTOP: %w", err)
		}
		time.Sleep(2 * time.Second)
		// An admin step-down, then a USURPER.
		if out, err := mfscli(t, c, "-CLS"); err != nil {
			return fmt.Errorf("-CLS: %v: %s", err, out)
		}
		if _, _, err := c.WaitLeader(10*time.Second, 20*time.Millisecond, next); err != nil {
			return fmt.Errorf("after step-down: %w", err)
		}
		time.Sleep(time.Second)
		lead = leaderNow(c)
		if err := usurp(t, c, (lead+1)%len(c.Masters), lead, 5*time.Second); err != nil {
			return err
		}
		time.Sleep(time.Second)
		// A FOLLOWER killed while the changes go on comes back behind the
		// trimmed changelog: it catches up through a snapshot, and is then
		// made LEADER (USURPER) to serve what it got.
		lead = leaderNow(c)
		f := (lead + 1) % len(c.Masters)
		c.Masters[f].Kill()
		// f holds at most what the LEADER held once f was gone.
		sts, errs := c.Statuses(2 * time.Second)
		if errs[lead] != nil {
			return fmt.Errorf("the LEADER's status: %w", errs[lead])
		}
		held := sts[lead].MetaVersion
		// Behind means the LEADER's changelog now starts past what f holds:
		// how long that takes depends on how fast the clients write.
		if err := waitUntil(15*time.Second, 100*time.Millisecond, func() error {
			sts, errs := c.Statuses(2 * time.Second)
			if errs[lead] != nil {
				return errs[lead]
			}
			if st := sts[lead]; st.MetaVersion-uint64(st.ChangelogEntries) <= held {
				return fmt.Errorf("the LEADER's changelog starts at %d, f holds up to %d", st.MetaVersion-uint64(st.ChangelogEntries), held)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("the LEADER never trimmed past the killed follower: %w", err)
		}
		if err := c.Masters[f].Start(); err != nil {
			return err
		}
		if err := usurp(t, c, f, lead, 10*time.Second); err != nil {
			return fmt.Errorf("the restarted follower: %w", err)
		}
		if lg, _ := os.ReadFile(c.Masters[f].Log); !strings.Contains(string(lg), "snapshot installed") {
			return fmt.Errorf("the follower restarted behind the trimmed changelog did not install a snapshot (see %s)", c.Masters[f].Log)
		}
		time.Sleep(time.Second)
		return nil
	}
	ferr := faults()
	ld.finish(t, ferr)
}

// load is clients reading and writing three keys through pkg/client, each
// operation recorded for porcupine.
type load struct{ *linearize.Load }

// startLoad starts clients against c's masters.
func startLoad(t *testing.T, c *cluster.Cluster, clients int) *load {
	ld := &load{linearize.NewLoad(linearize.LoadOptions{Timeout: 8 * time.Second,
		Unknown: func(err error) bool { return errors.Is(err, client.ErrUnknown) }})}
	for i := 0; i < clients; i++ {
		ld.Go(newClient(t, c, 300*time.Millisecond), i, rand.New(rand.NewPCG(uint64(i), 7)), nil)
	}
	return ld
}

// finish stops the clients, fails t with ferr (what went wrong meanwhile),
// and checks that they made progress and that the history is
// linearizable: no acknowledged change lost, no stale read, none applied
// twice.
func (ld *load) finish(t *testing.T, ferr error) {
	t.Helper()
	history := ld.Stop()
	if ferr != nil {
		t.Fatal(ferr)
	}
	t.Logf("%d operations, %d acknowledged", len(history), ld.Acked.Load())
	if ld.Acked.Load() < 100 {
		t.Fatalf("only %d operations completed: the clients made no progress", ld.Acked.Load())
	}
	res, info := porcupine.CheckOperationsVerbose(linearize.KV, history, 60*time.Second)
	switch res {
	case porcupine.Illegal:
		if path, err := linearize.Visualize(info, ""); err == nil {
			t.Logf("visualisation: %s", path)
		}
		t.Fatal("the client history is not linearizable")
	case porcupine.Unknown:
		t.Fatal("the linearizability check timed out")
	}
}

func leaderNow(c *cluster.Cluster) int {
	i, _, err := c.WaitLeader(10*time.Second, 20*time.Millisecond)
	if err != nil {
		return 0
	}
	return i
}

// usurp makes master u USURPER with mfscli, asking again (for at most
// within) until it is synced enough to accept, and waits for a LEADER
// other than lead.
func usurp(t *testing.T, c *cluster.Cluster, u, lead int, within time.Duration) error {
	if err := waitUntil(within, 100*time.Millisecond, func() error {
		if out, err := mfscli(t, c, "-CLU/"+c.Masters[u].Addr.String()); err != nil {
			return fmt.Errorf("-CLU: %v: %s", err, out)
		}
		return nil
	}); err != nil {
		return err
	}
	if _, _, err := c.WaitLeader(10*time.Second, 20*time.Millisecond, lead); err != nil {
		return fmt.Errorf("after USURPER: %w", err)
	}
	return nil
}
