package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
)

// Overload: more clients than the LEADER takes operations waiting for
// their acknowledgement (MAX_PENDING), each changing a counter of its own
// by compare-and-set, one change at a time: the LEADER answers the excess
// BUSY, its memory stays bounded, and every counter ends at what its
// client saw acknowledged. A change lost would leave a counter behind; one
// applied twice would put it ahead, or fail the next compare-and-set.
const (
	overloadClients = 1024
	overloadPending = 256 // MAX_PENDING of the overload cluster
	overloadFor     = 10 * time.Second
)

type overloadRun struct {
	clients, maxPending int
	d                   time.Duration
	acked               int     // changes acknowledged
	busy                float64 // BUSY answers (mfs_master_client_busy_total)
	rssBefore, rssMax   uint64  // the LEADER's
	unknown             int     // changes whose outcome the client could not learn (timeouts)
	wrong               []string
}

func overloadPhase(c *cluster.Cluster) (overloadRun, error) {
	r := overloadRun{clients: overloadClients, maxPending: overloadPending, d: overloadFor}
	lead, err := leaderOf(c, 2*time.Second)
	if err != nil {
		return r, err
	}
	pid := c.Masters[lead].Pid()
	r.rssBefore, _ = rssOf(pid)
	m0, _ := scrape(c.Masters[lead].Addr)
	cls := make([]*client.Client, r.clients)
	for i := range cls {
		if cls[i], err = client.New(client.Config{MasterHost: c.Spec.MasterHost(), Bind: clientBind(c, i)}); err != nil {
			return r, err
		}
	}
	defer func() {
		for _, cl := range cls {
			cl.Close()
		}
	}()
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			if v, err := rssOf(pid); err == nil {
				r.rssMax = max(r.rssMax, v)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	counts := make([]int, r.clients)
	maybe := make([]bool, r.clients) // the last change's outcome is unknown
	errs := make([]error, r.clients)
	end := time.Now().Add(r.d)
	var wg sync.WaitGroup
	for i, cl := range cls {
		wg.Go(func() {
			key := fmt.Sprintf("overload/%d", i)
			var expect uint64
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				v, err := cl.CAS(ctx, key, strconv.Itoa(counts[i]+1), expect)
				cancel()
				switch {
				case err == nil:
					counts[i]++
					expect = v
				case errors.Is(err, client.ErrUnknown):
					maybe[i] = true
					return
				default:
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	m1, _ := scrape(c.Masters[lead].Addr)
	r.busy = m1["mfs_master_client_busy_total"] - m0["mfs_master_client_busy_total"]
	for i, cl := range cls {
		r.acked += counts[i]
		if maybe[i] {
			r.unknown++
		}
		if errs[i] != nil {
			r.wrong = append(r.wrong, fmt.Sprintf("client %d: %v", i, errs[i]))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		v, found, err := cl.Get(ctx, fmt.Sprintf("overload/%d", i))
		cancel()
		got := 0
		if found {
			got, _ = strconv.Atoi(v)
		}
		switch {
		case err != nil:
			r.wrong = append(r.wrong, fmt.Sprintf("client %d: reading its counter: %v", i, err))
		case got == counts[i], maybe[i] && got == counts[i]+1:
		default:
			r.wrong = append(r.wrong, fmt.Sprintf("client %d: counter at %d, %d acknowledged", i, got, counts[i]))
		}
	}
	fmt.Printf("overload: %d clients for %v against MAX_PENDING %d: %d changes acknowledged (%.0f/s), %.0f BUSY answers, LEADER RSS %s before, at most %s; %d outcomes unknown; %d wrong\n",
		r.clients, r.d, r.maxPending, r.acked, float64(r.acked)/r.d.Seconds(), r.busy, mib(r.rssBefore), mib(r.rssMax), r.unknown, len(r.wrong))
	for _, w := range r.wrong[:min(len(r.wrong), 5)] {
		fmt.Println("  " + w)
	}
	return r, nil
}
