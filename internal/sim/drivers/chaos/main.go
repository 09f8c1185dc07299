// Command chaos plays seeds of the drivers' simulation (package drivers:
// the real drivers of internal/node on an in-memory network, under
// faults) one after another, prints one line a seed and a summary, and
// with -doc rewrites the drivers' section of docs/sim.md with the figures.
// Seeds run one at a time: each runs three masters and their voters on
// real timers, and two at once would only measure the processor.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/sim/drivers"
)

func main() {
	seeds := flag.Int("seeds", 40, "number of seeds to play")
	first := flag.Int64("first", 1, "first seed")
	faults := flag.Int("faults", 6, "faults in each seed's schedule")
	doc := flag.String("doc", "", "rewrite the drivers' section of this markdown file (docs/sim.md)")
	logs := flag.String("logs", "", "keep each seed's driver logs in this directory")
	flag.Parse()
	if err := run(*first, *seeds, *faults, *doc, *logs); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// figures add up the seeds.
type figures struct {
	seeds, failed, violations, liveness, terms, dgram int
	ops, acked                                        int64
	kinds                                             map[string]int
	heal, first                                       []time.Duration
	ledAtHeal                                         int // a LEADER already in place when the last fault was undone
	elapsed                                           time.Duration
	failedSeeds                                       []string
}

func run(first int64, n, faults int, doc, logs string) error {
	f := figures{kinds: map[string]int{}}
	start := time.Now()
	for seed := first; seed < first+int64(n); seed++ {
		res, err := playOne(seed, faults, logs)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		f.add(res)
		fmt.Printf("seed %d: %d voters, %d clients, datagrams %v, %d terms, %d ops (%d acked), healed to LEADER in %v: %v %s\n",
			seed, res.Voters, res.Clients, res.Datagrams, res.LeaderTerms, res.Operations, res.Acked,
			res.HealToLeader.Round(time.Millisecond), res.Violations, res.Liveness)
	}
	f.elapsed = time.Since(start)
	fmt.Println(f.summary())
	if doc != "" {
		if err := rewrite(doc, f.section(first)); err != nil {
			return err
		}
	}
	if f.failed > 0 {
		return fmt.Errorf("%d of %d seeds failed: %s", f.failed, f.seeds, strings.Join(f.failedSeeds, ", "))
	}
	return nil
}

func playOne(seed int64, faults int, logs string) (drivers.Result, error) {
	dir, err := os.MkdirTemp("", "mfs-drivers-*")
	if err != nil {
		return drivers.Result{}, err
	}
	defer os.RemoveAll(dir)
	spec := drivers.Spec{Seed: seed, Dir: dir, Faults: faults}
	if logs != "" {
		lf, err := os.Create(fmt.Sprintf("%s/seed-%d.log", logs, seed))
		if err != nil {
			return drivers.Result{}, err
		}
		defer lf.Close()
		spec.Log = lf
	}
	return drivers.Run(spec)
}

func (f *figures) add(r drivers.Result) {
	f.seeds++
	if r.Failed() {
		f.failed++
		f.failedSeeds = append(f.failedSeeds, fmt.Sprint(r.Seed))
	}
	f.violations += len(r.Violations)
	if r.Liveness != "" {
		f.liveness++
	}
	if r.Datagrams {
		f.dgram++
	}
	f.terms += r.LeaderTerms
	f.ops += int64(r.Operations)
	f.acked += r.Acked
	for _, what := range r.Faults {
		kind, _, _ := strings.Cut(what, " ")
		f.kinds[kind]++
	}
	if r.HealToLeader >= time.Millisecond {
		f.heal = append(f.heal, r.HealToLeader)
	} else if r.Liveness == "" {
		f.ledAtHeal++
	}
	f.first = append(f.first, r.FirstLeader)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func (f *figures) summary() string {
	return fmt.Sprintf("drivers chaos: %d seeds in %v: %d violations, %d liveness failures; %d LEADER terms, %d client operations (%d acknowledged); first LEADER %v median; a LEADER in place at the heal in %d seeds, %d elected after it (%v median)",
		f.seeds, f.elapsed.Round(time.Second), f.violations, f.liveness, f.terms, f.ops, f.acked,
		median(f.first).Round(time.Millisecond), f.ledAtHeal, len(f.heal), median(f.heal).Round(time.Millisecond))
}

// section is the markdown the drivers' part of docs/sim.md is replaced by.
func (f *figures) section(first int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Latest `make chaos` run of the drivers' simulation (%s; seeds %d to %d, one at a time, on this 2-core machine):\n\n",
		time.Now().UTC().Format("2006-01-02"), first, first+int64(f.seeds)-1)
	fmt.Fprintf(&b, "- %d seeds in %v: **%d violations, %d liveness failures**.\n", f.seeds, f.elapsed.Round(time.Second), f.violations, f.liveness)
	fmt.Fprintf(&b, "- %d LEADER terms; %d client operations with a known effect, %d of them acknowledged, all in a linearizable history.\n", f.terms, f.ops, f.acked)
	fmt.Fprintf(&b, "- The datagram path was on in %d seeds.\n", f.dgram)
	fmt.Fprintf(&b, "- First LEADER with every voter's vote: %v median from the start. When the last fault was undone, a LEADER was already in place in %d of %d seeds",
		median(f.first).Round(time.Millisecond), f.ledAtHeal, f.seeds)
	if len(f.heal) > 0 {
		fmt.Fprintf(&b, "; in %d, one was elected %v after it (median)", len(f.heal), median(f.heal).Round(time.Millisecond))
	}
	b.WriteString(".\n")
	var kinds []string
	for k := range f.kinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	b.WriteString("- Faults played:")
	for i, k := range kinds {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %d", sep, k, f.kinds[k])
	}
	b.WriteString(".\n")
	return b.String()
}

// The drivers' section of the doc lies between these two lines.
const (
	begin = "<!-- drivers chaos: begin (written by make chaos) -->"
	end   = "<!-- drivers chaos: end -->"
)

func rewrite(path, section string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no drivers section (%q ... %q)", path, begin, end)
	}
	s = s[:i+len(begin)] + "\n" + section + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
