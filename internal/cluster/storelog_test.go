package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/mfs-election/mfs-election/internal/cluster/witnessrig"
	"github.com/mfs-election/mfs-election/internal/linearize"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestStoreReplica: the witness's store as a stand-in replica
// (docs/architecture.md §7.5). One master a site. Every process of site b,
// the only follower master among them, is killed: the LEADER on site a
// goes on acknowledging changes, each resting on the store in place of
// the missing follower. Then the LEADER's site is killed too and its
// master's DATA_PATH wiped: the one disk that held the changes is gone.
// Site b started again elects its master, which must first take every
// acknowledged change from the store (the witness's record, like the
// voters of site a, knows they were committed): every acknowledged change
// is there (porcupine, with a read of every key at the end), nothing
// invented.
func TestStoreReplica(t *testing.T) {
	r := startWitnessRig(t, rigOptions{perSite: 1})
	lead, _, err := r.c.WaitLeader(5*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	here := r.site[lead]
	far := witnessrig.Other(here)
	farMasters, farProcs := r.procs(far)
	witnessrig.KillAll(farProcs)
	t.Logf("site %s killed (its master %s was the only follower); LEADER %s on site %s", far, r.c.Masters[farMasters[0]].Addr, r.c.Masters[lead].Addr, here)

	// Changes acknowledged with no follower master: each on the store.
	ld := startLoad(t, r.c, 3)
	w := startDFWriter(t, r.c)
	w.await(t, 60)
	eventually(t, 10*time.Second, 100*time.Millisecond, "the LEADER to say its acknowledgements rest on the store", func() error {
		st, err := r.status(lead, time.Second)
		if err != nil || st.Role != roles.Leader || st.StoreLog == nil || !st.StoreLog.OnStore || st.StoreLog.Objects == 0 {
			return fmt.Errorf("%v %+v %v", st.Role, st.StoreLog, err)
		}
		return nil
	})
	st, _ := r.status(lead, time.Second)
	t.Logf("LEADER %s: store log %+v; -SIM: %s", st.Addr, *st.StoreLog, r.witnessLine())
	w.halt()
	ld.stop.Store(true)
	ld.wg.Wait()
	acked := w.count()

	// The LEADER's site killed, its master's disk lost.
	_, hereProcs := r.procs(here)
	witnessrig.KillAll(hereProcs)
	dir := filepath.Dir(r.c.Masters[lead].Cfg)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("site %s killed and %s wiped: %d changes were acknowledged with site %s down", here, dir, acked, far)

	// Site b back: its master leads, caught up from the store.
	began := time.Now()
	for _, p := range farProcs {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	next := farMasters[0]
	eventually(t, 60*time.Second, 100*time.Millisecond, "site "+far+"'s master to lead", func() error {
		st, err := r.status(next, time.Second)
		if err != nil || st.Role != roles.Leader {
			return fmt.Errorf("%s: %v %v", r.c.Masters[next].Addr, st.Role, err)
		}
		return nil
	})
	t.Logf("site %s back: %s LEADER %v after its start", far, r.c.Masters[next].Addr, time.Since(began).Round(time.Millisecond))

	cl := newClient(t, r.c, time.Second)
	w.check(t, cl, "after site "+here+" was lost with its master's disk")
	// A read of every key the load wrote, recorded after everything
	// else: porcupine then checks that each returns the last change
	// acknowledged (or one of unknown outcome), never an older one.
	for _, key := range []string{"a", "b", "c"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		call := time.Now().UnixNano()
		v, found, err := cl.Get(ctx, key)
		cancel()
		if err != nil {
			t.Fatalf("read %s from the new LEADER: %v", key, err)
		}
		ld.history = append(ld.history, porcupine.Operation{ClientId: 99, Input: linearize.Input{Key: key},
			Call: call, Output: linearize.Output{Val: v, Found: found}, Return: time.Now().UnixNano()})
	}
	ld.finish(t, nil)
	if st, err := r.status(next, time.Second); err == nil && st.StoreLog != nil {
		t.Logf("new LEADER's store log: %+v", *st.StoreLog)
	}
}
