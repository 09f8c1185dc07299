package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
)

// readFor is how long each read run lasts.
const readFor = 3 * time.Second

// readKey is the one key every reader reads, written once (readVal) before
// the readers start.
const (
	readKey = "bench/read"
	readVal = "read-me"
)

// readConcs are the reader counts of every read run.
var readConcs = []int{1, 16, 64}

// readPhase writes readKey through put, then measures each reader count
// with get; what names the series in the output.
func readPhase(what string, put, get func(int) (opFunc, func(), error)) ([]load, error) {
	p, done, err := put(0)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = p(ctx, readKey, readVal)
	cancel()
	done()
	if err != nil {
		return nil, fmt.Errorf("%s: writing %s: %w", what, readKey, err)
	}
	var out []load
	for _, n := range readConcs {
		l, err := runLoad(n, readFor, get)
		if err != nil {
			return out, fmt.Errorf("%s reads, %d clients: %w", what, n, err)
		}
		out = append(out, l)
		med, _, _ := l.lat.stats()
		fmt.Printf("%s reads, %d clients: %.0f reads/s, median %s, p99 %s\n", what, n, l.rate(), us(med), us(l.lat.pct(0.99)))
	}
	return out, nil
}

// oursGet: one pkg/client session per reader, reading readKey at the
// LEADER (Get: linearizable, confirmed or on the lease as the masters are
// configured). Each reader reads once before the clock starts, so it has
// found the LEADER and holds its connection.
func oursGet(c *cluster.Cluster) func(int) (opFunc, func(), error) {
	return func(i int) (opFunc, func(), error) {
		cl, err := client.New(client.Config{MasterHost: c.Spec.MasterHost(), Bind: clientBind(c, i)})
		if err != nil {
			return nil, nil, err
		}
		get := func(ctx context.Context, _, _ string) error {
			v, found, err := cl.Get(ctx, readKey)
			if err == nil && (!found || v != readVal) {
				err = fmt.Errorf("read %s: found %v, value %q, want %q", readKey, found, v, readVal)
			}
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := get(ctx, "", ""); err != nil {
			cl.Close()
			return nil, nil, err
		}
		return get, func() { cl.Close() }, nil
	}
}

// etcdGet: etcd's JSON gateway (/v3/kv/range) with its default,
// serializable false: a linearizable read (Raft ReadIndex). Readers are
// spread over the members as the writers are; a follower asks the leader
// for the read index. Each reader reads once before the clock starts.
func etcdGet(ms []*etcdMember) func(int) (opFunc, func(), error) {
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(readKey))})
	want := base64.StdEncoding.EncodeToString([]byte(readVal))
	check := func(b []byte) error {
		var r struct {
			Kvs []struct {
				Value string `json:"value"`
			} `json:"kvs"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if len(r.Kvs) != 1 || r.Kvs[0].Value != want {
			return fmt.Errorf("etcd read %s: %s", readKey, b)
		}
		return nil
	}
	return func(i int) (opFunc, func(), error) {
		call, done := etcdCaller(ms, i)
		get := func(ctx context.Context, _, _ string) error { return call(ctx, "/v3/kv/range", body, check) }
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := get(ctx, "", ""); err != nil {
			done()
			return nil, nil, err
		}
		return get, done, nil
	}
}

// us is a latency with a resolution that suits reads (they can take well
// under a millisecond).
func us(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return ms(d)
}
