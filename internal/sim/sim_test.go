package sim

import (
	"flag"
	"runtime"
	"sync"
	"testing"
)

var (
	seedFlag  = flag.Int64("seed", 1, "the seed TestReplay plays")
	seedsFlag = flag.Int("seeds", 500, "how many seeds TestSeeds plays")
	firstFlag = flag.Int64("first", 1, "the first seed TestSeeds plays")
)

// TestSeeds plays many seeds across all cores; any failure prints its
// seed, profile, trace tail and replay command.
func TestSeeds(t *testing.T) {
	n := *seedsFlag
	if testing.Short() {
		n = min(n, 50)
	}
	results := make(chan Result, n)
	seeds := make(chan int64)
	var wg sync.WaitGroup
	for k := 0; k < runtime.GOMAXPROCS(0); k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seeds {
				results <- Run(DefaultOptions(s))
			}
		}()
	}
	go func() {
		for s := *firstFlag; s < *firstFlag+int64(n); s++ {
			seeds <- s
		}
		close(seeds)
		wg.Wait()
		close(results)
	}()
	failed := 0
	for r := range results {
		if r.Failed() {
			failed++
			if failed <= 3 {
				t.Error(r.Report())
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d seeds failed", failed, n)
	}
}

// TestReplay plays one seed with the full trace: the command a failure
// prints.
func TestReplay(t *testing.T) {
	opt := DefaultOptions(*seedFlag)
	opt.FullTrace = testing.Verbose()
	r := Run(opt)
	t.Logf("seed %d: %d events, %d leader terms, %d acknowledged writes, heal->leader %v (bound %v)", r.Seed, r.Events, r.Leaders, r.Acked, r.HealToLead, r.Bound)
	if r.Failed() {
		t.Fatal(r.Report())
	}
}

// TestDeterminism: the same seed gives the same trace.
func TestDeterminism(t *testing.T) {
	for _, s := range []int64{3, 17, 101} {
		a, b := Run(DefaultOptions(s)), Run(DefaultOptions(s))
		if a.TraceHash != b.TraceHash || a.Events != b.Events {
			t.Fatalf("seed %d: trace hash %x (%d events) then %x (%d events)", s, a.TraceHash, a.Events, b.TraceHash, b.Events)
		}
	}
}
