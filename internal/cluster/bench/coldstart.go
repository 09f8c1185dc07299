package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// Cold start: every master and chunkserver of the make run topology
// stopped, then all started at once on the data they had; the time from
// the starts to a LEADER that counts every vote. Two ways down: SIGTERM
// of everything (a planned restart: chunkservers end in order, and since
// issue 11 part 4 vote at once when they start again) and kill -9 of
// everything (a power cut: every chunkserver may still hold a promise,
// and keeps quiet for MAX_PROMISE).

// coldRun is one build's figures.
type coldRun struct {
	label          string // "this build", or what -before named
	planned, power series
	stopped        series // how long the SIGTERM of everything took
}

// coldStartBound bounds one cold start (a broken build must not hang the
// bench): far above MAX_PROMISE and an election.
const coldStartBound = 30 * time.Second

// coldPhase runs trials of each way down on c, alternating.
func coldPhase(c *cluster.Cluster, trials int, label string) (coldRun, error) {
	r := coldRun{label: label,
		planned: series{name: "planned restart (SIGTERM of everything, then start everything)"},
		power:   series{name: "power cut (kill -9 of everything, then start everything)"},
		stopped: series{name: "SIGTERM of everything until every process exited"}}
	// Something on disk beyond the genesis: existing data.
	if err := settle(c, -1); err != nil {
		return r, err
	}
	for i := 0; i < trials; i++ {
		for _, power := range []bool{false, true} {
			d, stopTook, err := coldStart(c, power)
			if err != nil {
				return r, fmt.Errorf("cold start %d (power cut %v): %w", i+1, power, err)
			}
			what := "planned restart"
			if power {
				what = "power cut"
				r.power.d = append(r.power.d, d)
			} else {
				r.planned.d = append(r.planned.d, d)
				r.stopped.d = append(r.stopped.d, stopTook)
			}
			fmt.Printf("cold start, %s, %s #%d: %v (stop took %v)\n", label, what, i+1, d.Round(time.Millisecond), stopTook.Round(time.Millisecond))
			if err := settle(c, -1); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}

// coldStart stops every process at once (kill -9 when power, else SIGTERM
// and a wait for each to exit), starts them all at once, and measures
// until a LEADER counts every chunkserver's vote (polled every 10 ms).
func coldStart(c *cluster.Cluster, power bool) (took, stopTook time.Duration, err error) {
	procs := append(append([]*cluster.Proc{}, c.Masters...), c.CS...)
	t := time.Now()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if power {
				p.Kill()
			} else {
				p.Term(10 * time.Second)
			}
		}()
	}
	wg.Wait()
	stopTook = time.Since(t)
	for _, p := range procs {
		if p.Running() {
			return 0, stopTook, fmt.Errorf("%s still runs", p.Name)
		}
	}
	t0 := time.Now()
	for _, p := range procs {
		if err := p.Start(); err != nil {
			return 0, stopTook, err
		}
	}
	for time.Since(t0) < coldStartBound {
		st, errs := c.Statuses(200 * time.Millisecond)
		for i := range st {
			if errs[i] == nil && st[i].Role == roles.Leader && st[i].HoldsQuorum && st[i].Voters == len(c.CS) {
				return time.Since(t0), stopTook, nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, stopTook, fmt.Errorf("no LEADER counting all %d votes within %v", len(c.CS), coldStartBound)
}

// coldSection is the doc's Cold start section (between its markers).
func coldSection(runs []coldRun) string {
	var b strings.Builder
	b.WriteString(coldBegin + "\n## Cold start\n\n")
	b.WriteString("The `make run` topology (3 masters, 6 chunkservers, the default settings above: MAX_PROMISE 2s) on data it already had: every process is stopped at once, then all are started at once, ")
	b.WriteString("and the time runs from the starts to the first poll (every 10 ms) that finds a LEADER holding quorum with all 6 votes counted. ")
	b.WriteString("Planned restart: SIGTERM to every process, waiting until each has exited; power cut: kill -9 to every process. The two alternate, and the cluster settles between trials.\n\n")
	b.WriteString("| build | way down | trials | median | p90 | max |\n|---|---|---|---|---|---|\n")
	for _, r := range runs {
		for _, s := range []series{r.planned, r.power} {
			med, p90, mx := s.stats()
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", r.label, s.name, len(s.d), ms(med), ms(p90), ms(mx))
		}
	}
	b.WriteString("\n")
	for _, r := range runs {
		med, _, mx := r.stopped.stats()
		fmt.Fprintf(&b, "%s: the SIGTERM of everything took %s (median; max %s) until every process had exited. ", r.label, ms(med), ms(mx))
	}
	b.WriteString("A stop of about VOTE_LEASE (800 ms) is a chunkserver whose promise ended by lapsing, neither the release of the LEADER (stopping at the same moment) nor a refusal proving it gone having ended it first. ")
	b.WriteString("\n\nWhy: a chunkserver that may still hold a promise keeps quiet for MAX_PROMISE after it starts (docs/architecture.md §3, Restart), which is all of a power cut's figure. ")
	b.WriteString("An orderly stop ends the vote session, waits until the LEADER's release arrives (or the promise is shown void or lapses), and writes a clean-stop mark as its last record; a chunkserver that finds the mark, or whose record shows it never promised, votes at once. ")
	b.WriteString("Before that change every start kept quiet, so a planned restart cost MAX_PROMISE too.")
	b.WriteString("\n\nReproduce this section alone: `go run ./internal/cluster/bench -only coldstart` (add `-before DIR` with the daemons of an older build in DIR to measure both); it rewrites only this section of docs/benchmarks.md.\n")
	b.WriteString(coldEnd + "\n")
	return b.String()
}

const (
	coldBegin = "<!-- coldstart:begin -->"
	coldEnd   = "<!-- coldstart:end -->"
)

// spliceCold replaces the Cold start section of the doc at path (appended
// when the doc has none). A doc that cannot be read is not written over.
func spliceCold(path, section string) error {
	return splice(path, section, coldBegin, coldEnd)
}

// splice replaces the section between begin and end (markers included) of
// the doc at path with section (appended when the doc has none). A doc
// that cannot be read is not written over.
func splice(path, section, begin, end string) error {
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w (not written)", path, err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	switch {
	case i >= 0 && j > i:
		doc = doc[:i] + section + strings.TrimPrefix(doc[j+len(end):], "\n")
	case i >= 0 || j >= 0:
		return fmt.Errorf("%s: one of the markers %s and %s without the other (not written)", path, begin, end)
	default:
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}
