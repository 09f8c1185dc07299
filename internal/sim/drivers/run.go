package drivers

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Spec is one run.
type Spec struct {
	Seed   int64
	Dir    string    // where the data directories go (the caller removes it)
	Faults int       // faults in the schedule (0: 6)
	Log    io.Writer // the drivers' logs (nil: none)
}

// Result is what a run saw.
type Result struct {
	Seed         int64
	Masters      int
	Voters       int
	Clients      int
	Datagrams    bool
	Faults       []string // what the schedule did, in order
	LeaderTerms  int      // distinct epochs some master led
	Passes       int      // the watcher's passes over the masters' roles
	Operations   int      // client operations with a known effect
	Acked        int64
	AckedAfter   bool // a client operation was acknowledged after the heal
	Violations   []string
	Liveness     string // empty: a LEADER and progress after the heal
	Elapsed      time.Duration
	FirstLeader  time.Duration // from start to the first LEADER with every voter
	HealToLeader time.Duration
}

// Failed reports a broken promise: safety or liveness.
func (r Result) Failed() bool { return len(r.Violations) > 0 || r.Liveness != "" }

func (w *world) id(i int) wire.MasterID { return masterhost.IDOf(w.masters[i].addr) }

// startLeaderWithin bounds the first election with every voter
// registered, and healLeaderWithin the one after the last fault is undone:
// both far above what they take (a few hundred ms to a few seconds), so
// that only a stuck cluster misses them.
const (
	startLeaderWithin = 30 * time.Second
	healLeaderWithin  = 15 * time.Second
	healProgress      = 5 * time.Second
)

// Run plays one seed.
func Run(spec Spec) (res Result, err error) {
	if spec.Faults == 0 {
		spec.Faults = 6
	}
	rng := rand.New(rand.NewPCG(uint64(spec.Seed), 0x64726976))
	sh := drawShape(rng)
	res = Result{Seed: spec.Seed, Masters: sh.masters, Voters: sh.voters, Clients: sh.clients, Datagrams: sh.datagrams}
	w, err := newWorld(spec, sh)
	if err != nil {
		return res, err
	}
	defer w.close()
	w.net.SetLoss(sh.loss)
	w.net.SetLatency(sh.latency)
	begin := time.Now()
	defer func() { res.Elapsed = time.Since(begin) }()
	for i := range w.masters {
		if err := w.startMaster(i); err != nil {
			return res, err
		}
	}
	for i := range w.css {
		if err := w.startCS(i); err != nil {
			return res, err
		}
	}
	x := startWatcher(w)
	if !waitFor(startLeaderWithin, func() bool { l := w.leader(); return l >= 0 && w.voting(w.id(l)) }) {
		o, _, _ := x.finish()
		res.Violations = o
		res.Liveness = fmt.Sprintf("no LEADER with every voter's vote within %v of the start", startLeaderWithin)
		return res, nil
	}
	res.FirstLeader = time.Since(begin)
	ld, err := startLoad(w, spec.Seed)
	if err != nil {
		x.finish()
		return res, err
	}
	if err := w.play(drawSchedule(rng, spec.Faults), rng, &res); err != nil {
		ld.Stop()
		x.finish()
		return res, err
	}
	healed := time.Now()
	if !waitFor(healLeaderWithin, func() bool { return w.leader() >= 0 }) {
		res.Liveness = fmt.Sprintf("no LEADER within %v of the heal", healLeaderWithin)
	} else {
		res.HealToLeader = time.Since(healed)
		since := time.Now().UnixNano()
		res.AckedAfter = waitFor(healProgress, func() bool { return ld.AckedAt.Load() > since })
		if !res.AckedAfter {
			res.Liveness = fmt.Sprintf("a LEADER after the heal, but no client operation acknowledged within %v of it", healProgress)
		}
	}
	h := ld.Stop()
	res.Operations, res.Acked = len(h), ld.Acked.Load()
	res.Violations, res.LeaderTerms, res.Passes = x.finish()
	if ok, why := linearizable(h, os.TempDir()); !ok {
		res.Violations = append(res.Violations, why)
	}
	return res, nil
}

// play carries out the schedule: each fault held, undone, then a quiet
// gap; everything healed at the end.
func (w *world) play(fs []fault, rng *rand.Rand, res *Result) error {
	for _, f := range fs {
		undo, what := w.apply(f, w.leader(), rng)
		res.Faults = append(res.Faults, what)
		w.log.Info().Str("fault", what).Dur("hold", f.hold).Msg("fault")
		time.Sleep(f.hold)
		if err := undo(); err != nil {
			return err
		}
		time.Sleep(f.gap)
	}
	return w.heal()
}
