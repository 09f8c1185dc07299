package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
)

// load is one throughput/latency run: conc clients, each doing one
// operation at a time (a change of its own keys, or a read) for d.
type load struct {
	conc int
	ops  int
	d    time.Duration
	lat  series
	disk *diskCost // ours only: durable writes per acknowledged change
	cpu  *cpuCost  // CPU per acknowledged change, by part
}

func (l load) rate() float64 { return float64(l.ops) / l.d.Seconds() }

// opFunc makes one acknowledged change (of key to val) or one read (which
// ignores both), or fails.
type opFunc func(ctx context.Context, key, val string) error

// runLoad makes every client first (mk may warm one up: find the LEADER,
// open its connection), then runs them all for d.
func runLoad(conc int, d time.Duration, mk func(i int) (opFunc, func(), error)) (load, error) {
	out := load{conc: conc, d: d}
	ops := make([]opFunc, 0, conc)
	dones := make([]func(), 0, conc)
	defer func() {
		for _, done := range dones {
			done()
		}
	}()
	for i := 0; i < conc; i++ {
		op, done, err := mk(i)
		if err != nil {
			return out, err
		}
		ops, dones = append(ops, op), append(dones, done)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	end := time.Now().Add(d)
	for i, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			for n := 0; time.Now().Before(end); n++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				t := time.Now()
				err := op(ctx, fmt.Sprintf("bench/%d/%d", i, n%1000), fmt.Sprintf("v%d", n))
				cancel()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			out.ops += len(lat)
			out.lat.d = append(out.lat.d, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, firstErr
}

// clientBind is writer i's source address: 32 writers an address on
// 127.B.200.0/24 (B: the masters' second byte), below the 64 client
// connections a master takes from one address.
func clientBind(c *cluster.Cluster, i int) netip.Addr {
	b := c.Spec.Masters[0].As4()
	return netip.AddrFrom4([4]byte{127, b[1], 200, byte(1 + i/32)})
}

// oursPut: one pkg/client session per writer.
func oursPut(c *cluster.Cluster) func(int) (opFunc, func(), error) {
	return func(i int) (opFunc, func(), error) {
		cl, err := client.New(client.Config{MasterHost: c.Spec.MasterHost(), Bind: clientBind(c, i)})
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, k, v string) error {
			_, err := cl.Put(ctx, k, v)
			return err
		}, func() { cl.Close() }, nil
	}
}

// etcdPut: etcd's JSON gateway (/v3/kv/put) over kept-alive HTTP
// connections, writers spread over the members as etcd's own benchmark
// does; a member that is not the leader forwards to it.
func etcdPut(ms []*etcdMember) func(int) (opFunc, func(), error) {
	return func(i int) (opFunc, func(), error) {
		call, done := etcdCaller(ms, i)
		return func(ctx context.Context, k, v string) error {
			body, _ := json.Marshal(map[string]string{
				"key": base64.StdEncoding.EncodeToString([]byte(k)), "value": base64.StdEncoding.EncodeToString([]byte(v))})
			return call(ctx, "/v3/kv/put", body, nil)
		}, done, nil
	}
}

// etcdCaller is one etcd client: kept-alive HTTP connections, the member
// i % 3 first, the next ones after a failure. call POSTs body to path until
// a member answers 200 (and check, if any, accepts the body) or ctx ends.
func etcdCaller(ms []*etcdMember, i int) (call func(ctx context.Context, path string, body []byte, check func([]byte) error) error, done func()) {
	// One second per attempt, as our client's default.
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	order := []int{i % len(ms), (i + 1) % len(ms), (i + 2) % len(ms)}
	call = func(ctx context.Context, path string, body []byte, check func([]byte) error) error {
		var last error
		for round := 0; ctx.Err() == nil; round++ {
			m := ms[order[round%len(order)]]
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+m.addr+":2379"+path, bytes.NewReader(body))
			r, err := hc.Do(req)
			if err == nil {
				// Read to the end: only then is the connection reused.
				b, rerr := io.ReadAll(r.Body)
				r.Body.Close()
				switch {
				case rerr != nil:
					err = rerr
				case r.StatusCode != http.StatusOK:
					err = fmt.Errorf("%s: %s", m.addr, r.Status)
				case check != nil:
					if err = check(b); err != nil {
						return err // an answer, but the wrong one
					}
					return nil
				default:
					return nil
				}
			}
			last = err
			time.Sleep(5 * time.Millisecond)
		}
		return fmt.Errorf("%v (last: %v)", ctx.Err(), last)
	}
	return call, hc.CloseIdleConnections
}

// firstWrite: a writer keeps changing one key; the LEADER is killed; the
// figure is the time from the moment its process is gone to the first
// change sent after that and acknowledged (by the new LEADER, necessarily).
// A change in flight at the kill does not count. kill and its restart act
// on the system under test.
func firstWrite(trials int, mk func(int) (opFunc, func(), error), kill func() (restart func() error, err error), settle func() error) (series, error) {
	var out series
	put, done, err := mk(0)
	if err != nil {
		return out, err
	}
	defer done()
	for i := 0; i < trials; i++ {
		stop := make(chan struct{})
		acked := make(chan time.Time, 1)
		var t0 time.Time
		var mu sync.Mutex
		go func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				after := !t0.IsZero() // the old LEADER is gone: this change can only land at the new one
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := put(ctx, "bench/first", fmt.Sprintf("v%d", n))
				cancel()
				if err == nil && after {
					select {
					case acked <- time.Now():
					default:
					}
					return
				}
			}
		}()
		time.Sleep(300 * time.Millisecond)
		restart, err := kill()
		if err != nil {
			close(stop)
			return out, err
		}
		// The process is gone (kill waits for it): the clock starts now,
		// and only a change sent from now on counts.
		mu.Lock()
		t0 = time.Now()
		mu.Unlock()
		select {
		case at := <-acked:
			out.d = append(out.d, at.Sub(t0))
			fmt.Printf("first change after kill -9 #%d: %v\n", i+1, at.Sub(t0).Round(time.Millisecond))
		case <-time.After(20 * time.Second):
			close(stop)
			return out, fmt.Errorf("no change acknowledged within 20 s of the kill")
		}
		close(stop)
		if err := restart(); err != nil {
			return out, err
		}
		if err := settle(); err != nil {
			return out, err
		}
	}
	return out, nil
}

func killOurs(c *cluster.Cluster) func() (func() error, error) {
	return func() (func() error, error) {
		ls := c.Leaders()
		if len(ls) != 1 {
			return nil, fmt.Errorf("%d LEADERs", len(ls))
		}
		p := c.Masters[ls[0]]
		p.Kill() // waits until the process is gone
		return p.Start, nil
	}
}

func killEtcd(ms []*etcdMember) func() (func() error, error) {
	return func() (func() error, error) {
		lead, err := etcdLeader(ms, -1, 30*time.Second)
		if err != nil {
			return nil, err
		}
		ms[lead].kill()
		return ms[lead].start, nil
	}
}
