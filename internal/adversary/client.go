package adversary

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Client is a namespace client on a master's 9421 (no credentials
// needed): Fill writes keys the honest way, Flood pipelines requests the
// way review M2 (E6, E6b) made a LEADER fence itself.
type Client struct {
	Target
}

// KeyName is the key Fill and Flood write for i.
func KeyName(i int) string { return fmt.Sprintf("k/%08d", i) }

func newSession() changelog.ClientID {
	// A client session id of its own (the master makes up ids with the
	// top bit set for requests without one).
	return changelog.ClientID(rand.Uint64()>>1 | 1)
}

// Fill writes keys KeyName(0..n-1) with at most window writes in flight,
// and returns how many were acknowledged. It stops at the first refusal
// (not the LEADER, say) or at ctx's end.
func (cl Client) Fill(ctx context.Context, n, window int) (int, error) {
	c, err := Open(ctx, cl.Target, frame.Hello{Kind: frame.KindClient})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	sess := newSession()
	sent, acked := 0, 0
	for acked < n && ctx.Err() == nil {
		for sent < n && sent-acked < window {
			if err := c.Send(roles.ClientWrite{Client: sess, Seq: uint64(sent + 1), Key: KeyName(sent), Value: "v"}); err != nil {
				return acked, err
			}
			sent++
		}
		m, err := c.Recv(10 * time.Second)
		if err != nil {
			return acked, err
		}
		rep, ok := m.(roles.ClientReply)
		if !ok {
			continue
		}
		if !rep.OK {
			return acked, fmt.Errorf("write %d refused: %s (redirect %d)", rep.Seq, rep.Err, rep.Redirect)
		}
		acked++
	}
	return acked, ctx.Err()
}

// Flood is what the client flood sends.
type Flood struct {
	Lists  int // pipelined ClientRead{Prefix: true} of every key
	Writes int // pipelined ClientWrite, on a second connection
	// Wait bounds how long the answers are read (0: 20 s).
	Wait time.Duration
}

// FloodAnswers counts what came back.
type FloodAnswers struct {
	ListsSent, ListReplies   int
	ListBytes                int64
	WritesSent, WriteReplies int
}

// Flood sends both pipelines at once, each on its own connection, every
// request written before any answer is read (the answers are read, not
// decoded, by a reader of their own so the master is never blocked on
// us). It returns when every answer came or Wait ended.
func (cl Client) Flood(ctx context.Context, f Flood) (FloodAnswers, error) {
	wait := f.Wait
	if wait <= 0 {
		wait = 20 * time.Second
	}
	end := time.Now().Add(wait)
	var (
		a        FloodAnswers
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
	)
	run := func(n int, req func(sess changelog.ClientID, i int) roles.ClientWrite, list bool) {
		defer wg.Done()
		c, err := Open(ctx, cl.Target, frame.Hello{Kind: frame.KindClient})
		if err != nil {
			mu.Lock()
			firstErr = err
			mu.Unlock()
			return
		}
		defer c.Close()
		sess := newSession()
		got := make(chan struct{})
		go func() {
			defer close(got)
			for i := 0; i < n && time.Now().Before(end); i++ {
				raw, err := c.Skip(time.Until(end))
				if err != nil {
					return
				}
				mu.Lock()
				if list {
					a.ListReplies++
					a.ListBytes += int64(raw.Len)
				} else {
					a.WriteReplies++
				}
				mu.Unlock()
			}
		}()
		for i := 0; i < n && ctx.Err() == nil; i++ {
			var err error
			if list {
				err = c.Send(roles.ClientRead{Client: sess, Seq: uint64(i + 1), Prefix: true})
			} else {
				err = c.Send(req(sess, i))
			}
			if err != nil {
				break
			}
			mu.Lock()
			if list {
				a.ListsSent++
			} else {
				a.WritesSent++
			}
			mu.Unlock()
		}
		<-got
	}
	if f.Lists > 0 {
		wg.Add(1)
		go run(f.Lists, nil, true)
	}
	if f.Writes > 0 {
		wg.Add(1)
		go run(f.Writes, func(sess changelog.ClientID, i int) roles.ClientWrite {
			return roles.ClientWrite{Client: sess, Seq: uint64(i + 1), Key: KeyName(i), Value: "flood"}
		}, false)
	}
	wg.Wait()
	return a, firstErr
}
