package adversary

import (
	"context"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// RegistrationFlood registers many fake chunkservers from one source
// address (review H1, E1): it asks the LEADER's 9420 for an id for each of
// Ports (the identity is source address plus claimed port), then connects
// with every id it got, opens a vote session and acks heartbeats for Hold,
// and leaves. Fakes that ack a heartbeat join the registry today, and once
// they are gone they count against every later election.
type RegistrationFlood struct {
	Target
	Ports []uint16
	// Window bounds how long it keeps asking for ids (0: 5 s).
	Window time.Duration
	// Hold is how long the fakes vote before they leave (0: 3 s).
	Hold time.Duration
}

// FloodPorts is ports first, first+1, ... (n of them).
func FloodPorts(first uint16, n int) []uint16 {
	out := make([]uint16, n)
	for i := range out {
		out[i] = first + uint16(i)
	}
	return out
}

// FloodResult is what the flood got.
type FloodResult struct {
	Asked      int // RegisterReq frames sent
	Refused    int // connections the master closed before any answer
	Assigned   map[uint16]wire.CSID
	Voters     int // fakes whose vote session got heartbeats
	Heartbeats int
	Acks       int
}

// Run floods until every port has an id or Window ends, then votes with the
// ids for Hold. An error means it never reached the master.
func (f RegistrationFlood) Run(ctx context.Context) (FloodResult, error) {
	r := FloodResult{Assigned: map[uint16]wire.CSID{}}
	window, hold := f.Window, f.Hold
	if window <= 0 {
		window = 5 * time.Second
	}
	if hold <= 0 {
		hold = 3 * time.Second
	}
	end := time.Now().Add(window)
	reached := false
	var firstErr error
	// Rounds: one connection each (hello id 0, like a new chunkserver),
	// one RegisterReq per port still without an id, then the answers.
	for round := 0; round < 100 && time.Now().Before(end) && ctx.Err() == nil && len(r.Assigned) < len(f.Ports); round++ {
		if round > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		c, _, err := OpenCS(ctx, f.Target, wire.NoCS)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		reached = true
		var asked []uint16
		for _, p := range f.Ports {
			if _, ok := r.Assigned[p]; ok {
				continue
			}
			if c.Send(protocol.RegisterReq{Addr: f.Bind, Port: p, VoterOnly: true}) != nil {
				break
			}
			asked = append(asked, p)
			r.Asked++
		}
		// Answers come in order, one per request.
		got := 0
		for got < len(asked) && time.Now().Before(end) {
			m, err := c.Recv(time.Until(end))
			if err != nil {
				if Closed(err) && got == 0 {
					r.Refused++
				}
				break
			}
			if rep, ok := m.(protocol.RegisterReply); ok {
				if rep.ID != wire.NoCS {
					r.Assigned[asked[got]] = rep.ID
				}
				got++
			}
		}
		c.Close()
	}
	if !reached {
		return r, firstErr
	}
	// Every fake votes at once for Hold, then all leave together.
	hctx, cancel := context.WithTimeout(ctx, hold)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for port, id := range r.Assigned {
		wg.Add(1)
		go func() {
			defer wg.Done()
			im := Impostor{Target: f.Target, ID: id, VoteHello: true, Port: port}
			res, _ := im.Run(hctx)
			mu.Lock()
			defer mu.Unlock()
			if res.Heartbeats > 0 {
				r.Voters++
			}
			r.Heartbeats += res.Heartbeats
			r.Acks += res.Acks
		}()
	}
	wg.Wait()
	return r, nil
}
