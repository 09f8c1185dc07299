// Command chaos plays many simulator seeds on every core and prints one
// summary line; with -doc it also rewrites docs/sim.md with the figures.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/sim"
)

func main() {
	seeds := flag.Int("seeds", 20000, "number of seeds to play")
	first := flag.Int64("first", 1, "first seed")
	doc := flag.String("doc", "", "rewrite this markdown file with the figures (docs/sim.md)")
	witness := flag.Bool("witness", false, "every seed on two locations with an object-store witness (its own block of figures)")
	flag.Parse()

	start := time.Now()
	var violations, liveness, events, terms, acked int
	fail := map[string][]time.Duration{}
	var heal []time.Duration
	var failed []sim.Result
	var snaps sim.Snapshots
	tempRemovals, forged, diskFaults, stuck := 0, 0, 0, 0
	var wit witnessFigures
	var lossy, lossyDgram, lossyTCP lossyFigures
	var dgram dgramFigures
	opts := func(s int64) sim.Options {
		o := sim.DefaultOptions(s)
		o.Witness = *witness
		return o
	}
	done := 0
	sim.RunSeedsWith(*first, *seeds, opts, func(r sim.Result) {
		// As they come: a long run shows its failures and its pace early.
		if done++; done%1000 == 0 {
			fmt.Fprintf(os.Stderr, "chaos: %d seeds in %v\n", done, time.Since(start).Round(time.Second))
		}
		if r.Failed() {
			fmt.Fprintf(os.Stderr, "chaos: seed %d failed: %v %s (replay: go test ./internal/sim -run 'TestReplay$' -seed=%d%s -v)\n", r.Seed, r.Violations, r.Liveness, r.Seed, map[bool]string{true: " -witness"}[*witness])
		}
		if w := r.Witness; w != nil {
			wit.seeds++
			wit.calls += w.Calls
			wit.writes += w.Writes
			if w.HeldEvents > 0 {
				wit.held++
			}
			if w.Refused {
				wit.refused++
			}
			if w.LogObjects+w.LogSnapshots > 0 {
				wit.logSeeds++
			}
			wit.logObjects += w.LogObjects
			wit.logSnaps += w.LogSnapshots
			wit.logHeads += w.LogHeads
			wit.logReads += w.LogReads
			wit.stale += w.StaleRefused
		}
		lossy.add(r)
		if r.Datagram {
			dgram.seeds++
			dgram.first += r.DatagramFirst
			dgram.release += r.DatagramRelease
			lossyDgram.add(r)
		} else {
			lossyTCP.add(r)
		}
		violations += len(r.Violations)
		if r.Liveness != "" {
			liveness++
		}
		if r.Failed() && len(failed) < 3 {
			failed = append(failed, r)
		}
		events += r.Events
		terms += r.Leaders
		acked += r.Acked
		tempRemovals += r.TempRemovals
		forged += r.Forged
		diskFaults += r.DiskFaults
		if r.StuckUncertain != "" {
			stuck++
		}
		snaps.Saved += r.Snapshots.Saved
		snaps.Trims += r.Snapshots.Trims
		snaps.Installed += r.Snapshots.Installed
		snaps.ElectInstall += r.Snapshots.ElectInstall
		for k, v := range r.Failovers {
			fail[k] = append(fail[k], v...)
		}
		heal = append(heal, r.HealToLead)
	})
	elapsed := time.Since(start)
	for _, r := range failed {
		fmt.Fprint(os.Stderr, r.Report())
	}
	if *doc != "" {
		if err := writeDoc(*doc, *witness, wit, lossy, lossyDgram, lossyTCP, dgram, *seeds, violations, liveness, elapsed, events, terms, acked, snaps, tempRemovals, forged, diskFaults, stuck, fail, heal); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
	}
	fmt.Printf("sim: seeds=%d violations=%d liveness_failures=%d elapsed=%.0fs\n", *seeds, violations, liveness, elapsed.Seconds())
	fmt.Printf("snapshots: saved=%d trims=%d installed=%d (by an ELECT %d); temporary removals accepted: %d; forged messages: %d\n", snaps.Saved, snaps.Trims, snaps.Installed, snaps.ElectInstall, tempRemovals, forged)
	fmt.Printf("disk faults: %d chunkserver records damaged, torn or lost; %d seeds left with no quorum of certain voters after the heal (documented, not failures)\n", diskFaults, stuck)
	fmt.Printf("lossy links: on %d seeds, %.1f simulated minutes of 20%% loss both ways on a master's links, %d LEADERs deposed by their lossy link in them (%s)\n", lossy.seeds, lossy.time.Minutes(), lossy.changes, lossy.rate())
	fmt.Printf("heartbeat datagrams: on %d of %d seeds, %d heartbeats, acks and releases taken from them ahead of TCP (%d releases); lossy links with them %s, TCP only %s\n", dgram.seeds, *seeds, dgram.first, dgram.release, lossyDgram.short(), lossyTCP.short())
	fmt.Printf("witness: on %d seeds, its lease held on %d, the store refused by the self-test on %d; %d calls, %d writes\n", wit.seeds, wit.held, wit.refused, wit.calls, wit.writes)
	fmt.Printf("store log: stood in on %d seeds; %d objects, %d snapshots, %d heads written; %d objects read by a catch-up; %d head writes of a superseded LEADER refused\n", wit.logSeeds, wit.logObjects, wit.logSnaps, wit.logHeads, wit.logReads, wit.stale)
	if violations > 0 || liveness > 0 {
		os.Exit(1)
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p * float64(len(s)-1))
	return s[i].Round(time.Millisecond)
}

// lossyFigures sums the lossy-link windows: seeds that drew one, their
// simulated time, and the LEADER changes in them.
type lossyFigures struct {
	seeds, changes, alone int
	time                  time.Duration
}

// add counts one seed's lossy-link windows, if it drew any.
func (l *lossyFigures) add(r sim.Result) {
	if r.Lossy <= 0 {
		return
	}
	l.seeds++
	l.time += r.Lossy
	l.changes += r.LossyChanges
	l.alone += r.LossyAlone
}

// short: deposed per simulated minute, over how many minutes.
func (l lossyFigures) short() string {
	if l.time <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.2f deposed per simulated minute (%d in %.1f min; with no other fault acting %d, %.2f per minute)", float64(l.changes)/l.time.Minutes(), l.changes, l.time.Minutes(), l.alone, float64(l.alone)/l.time.Minutes())
}

// dgramFigures: the seeds that drew the datagram path for heartbeats, and
// the heartbeats and acks the cores took from it ahead of TCP.
type dgramFigures struct{ seeds, first, release int }

func (l lossyFigures) rate() string {
	if l.time <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.2f per simulated minute; with no other fault acting %d, %.2f per minute", float64(l.changes)/l.time.Minutes(), l.alone, float64(l.alone)/l.time.Minutes())
}

// witnessFigures sums what the witness did over the seeds that drew it.
type witnessFigures struct {
	seeds, held, refused, calls, writes int
	// The store as a stand-in replica (W2).
	logSeeds, logObjects, logSnaps, logHeads, logReads, stale int
}

func writeDoc(path string, withWitness bool, wit witnessFigures, lossy, lossyDgram, lossyTCP lossyFigures, dgram dgramFigures, seeds, violations, liveness int, elapsed time.Duration, events, terms, acked int, snaps sim.Snapshots, tempRemovals, forged, diskFaults, stuck int, fail map[string][]time.Duration, heal []time.Duration) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin, end := "<!-- chaos:begin -->", "<!-- chaos:end -->"
	cmd := "make chaos"
	if withWitness {
		begin, end, cmd = "<!-- chaos-witness:begin -->", "<!-- chaos-witness:end -->", "make chaos WITNESS=1"
	}
	i, j := strings.Index(string(old), begin), strings.Index(string(old), end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s block to replace", path, begin, end)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nLatest `%s` run (%s, %d cores):\n\n", begin, cmd, time.Now().UTC().Format("2006-01-02"), runtime.GOMAXPROCS(0))
	fmt.Fprintf(&b, "```\nsim: seeds=%d violations=%d liveness_failures=%d elapsed=%.0fs\n```\n\n", seeds, violations, liveness, elapsed.Seconds())
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| seeds per second | %.1f |\n", float64(seeds)/elapsed.Seconds())
	fmt.Fprintf(&b, "| simulated events | %d (%.0f per seed) |\n", events, float64(events)/float64(seeds))
	fmt.Fprintf(&b, "| LEADER terms | %d |\n", terms)
	fmt.Fprintf(&b, "| acknowledged client writes | %d |\n", acked)
	fmt.Fprintf(&b, "| snapshots saved / log trims | %d / %d |\n", snaps.Saved, snaps.Trims)
	fmt.Fprintf(&b, "| snapshots sent to a lagging master (to an ELECT) | %d (%d) |\n", snaps.Installed, snaps.ElectInstall)
	fmt.Fprintf(&b, "| temporary removals (-CTR) a master took | %d |\n", tempRemovals)
	fmt.Fprintf(&b, "| forged messages (impostor acks, a clone's echoes, epoch bombs) | %d |\n", forged)
	fmt.Fprintf(&b, "| chunkserver records damaged, torn or lost (rot-cs, torn-cs, lose-cs) | %d |\n", diskFaults)
	fmt.Fprintf(&b, "| seeds with no quorum of certain voters after the heal (no LEADER, as documented) | %d |\n", stuck)
	fmt.Fprintf(&b, "| lossy links (lossy-link: 20%% loss both ways, TCP resends): seeds / simulated minutes / LEADERs deposed by their lossy link (quorum-lost while it lasted) | %d / %.1f / %d (%s) |\n", lossy.seeds, lossy.time.Minutes(), lossy.changes, lossy.rate())
	fmt.Fprintf(&b, "| heartbeat and release datagrams (beside TCP, through a sequence filter): seeds / heartbeats, acks and releases taken from them ahead of TCP / of which releases | %d / %d / %d |\n", dgram.seeds, dgram.first, dgram.release)
	fmt.Fprintf(&b, "| LEADERs deposed by their lossy link: seeds with heartbeat datagrams / TCP only | %s / %s |\n", lossyDgram.short(), lossyTCP.short())
	fmt.Fprintf(&b, "| seeds with a witness / its lease held / the store refused by the self-test | %d / %d / %d |\n", wit.seeds, wit.held, wit.refused)
	fmt.Fprintf(&b, "| calls on the witness's store / writes it took | %d / %d |\n", wit.calls, wit.writes)
	if withWitness {
		fmt.Fprintf(&b, "| seeds where the store stood in for followers (W2 checked on every head write) | %d |\n", wit.logSeeds)
		fmt.Fprintf(&b, "| store log objects / snapshots / heads written | %d / %d / %d |\n", wit.logObjects, wit.logSnaps, wit.logHeads)
		fmt.Fprintf(&b, "| objects and snapshots read back by a catch-up / head writes of a superseded LEADER refused | %d / %d |\n", wit.logReads, wit.stale)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Virtual time from the fault to the next LEADER (only faults that hit the sitting LEADER):\n\n")
	fmt.Fprintf(&b, "| fault | samples | median | p90 | p99 | max |\n|---|---|---|---|---|---|\n")
	kinds := []string{"kill", "pause", "partition", "step-down", "usurper"}
	if withWitness {
		kinds = append(kinds, "kill-site")
	}
	for _, k := range kinds {
		ds := fail[k]
		fmt.Fprintf(&b, "| %s | %d | %v | %v | %v | %v |\n", k, len(ds), pct(ds, 0.5), pct(ds, 0.9), pct(ds, 0.99), pct(ds, 1))
	}
	fmt.Fprintf(&b, "| heal -> LEADER (liveness phase) | %d | %v | %v | %v | %v |\n", len(heal), pct(heal, 0.5), pct(heal, 0.9), pct(heal, 0.99), pct(heal, 1))
	b.WriteString(end)
	out := string(old[:i]) + b.String() + string(old[j+len(end):])
	return os.WriteFile(path, []byte(out), 0o644)
}
