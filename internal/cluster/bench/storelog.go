package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/cluster/witnessrig"
	"github.com/mfs-election/mfs-election/internal/witness/s3store"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// The store as a stand-in replica (docs/architecture.md §7.5): the
// two-site layout of the sites part (sites a and b, one master each, the
// witness named, versitygw as the store), changes measured with both sites
// up, with the site that does not hold the LEADER killed and the store
// standing in for its master (WITNESS_LOG = 1, ACK_ALONE = 0: the
// defaults), and the same loss on a cluster with ACK_ALONE = 1 and
// WITNESS_LOG = 0 (acknowledged on the LEADER's disk alone). Beside them,
// the store's own latency for a create-only PUT of a small object.

// The markers of the section in docs/benchmarks.md (-only storelog
// rewrites it alone).
const (
	storelogBegin = "<!-- storelog:begin -->"
	storelogEnd   = "<!-- storelog:end -->"
)

// storelogConcs are the client counts of each configuration's runs.
var storelogConcs = []int{1, 16, 64}

// storelogFor is one round of a run; a run is up to storelogMaxRounds
// rounds (-trials), pooled.
const (
	storelogFor       = 3 * time.Second
	storelogMaxRounds = 5
	storelogPuts      = 50
	storelogPutSize   = 4 << 10
)

// storelogConfig is one configuration's figures.
type storelogConfig struct {
	name   string
	loads  []load                   // by storelogConcs, the rounds pooled
	stages map[string]time.Duration // the LEADER's stage means over the 1-client run (nil: not read)
	calls  []map[string]uint64      // the LEADER's store calls over each run, by "op result"
	took   []time.Duration          // and their mean time, as the LEADER timed them
	after  *protocol.StoreLogStatus // the LEADER's store log after the runs
	ackAft protocol.StatusResp      // the LEADER's status after the runs
	lead   string                   // the LEADER's address and site
	err    string
}

// storelogRun is the figures of the storelog part.
type storelogRun struct {
	rounds  int
	configs []storelogConfig
	put     series // create-only PUTs of storelogPutSize bytes
	putErr  string
	debug   bool
	skipped string
}

// storelogPhase runs the three configurations, one cluster at a time on
// the addresses of the two-site layout (127.B.1.0/24 and 127.B.2.0/24).
func storelogPhase(work, bin string, base uint8, vgw string, trials int, debug bool) storelogRun {
	r := storelogRun{rounds: min(max(trials, 1), storelogMaxRounds), debug: debug}
	if _, err := os.Stat(vgw); err != nil {
		r.skipped = fmt.Sprintf("no versitygw at %s (make versitygw installs it)", vgw)
		return r
	}
	both := storelogConfig{name: "both sites up"}
	lost := storelogConfig{name: "site b lost, store stands in"}
	alone := storelogConfig{name: "site b lost, ACK_ALONE=1, WITNESS_LOG=0"}
	err := r.withSites(work, bin, base, vgw, "mfs-storelog", nil, func(sc sitesCluster, store *witnessrig.Store) error {
		r.put, r.putErr = storePuts(store)
		if r.putErr != "" {
			fmt.Println("store PUTs:", r.putErr)
		} else {
			med, p90, mx := r.put.stats()
			fmt.Printf("store: %d create-only PUTs of %d bytes: median %s, p90 %s, max %s\n", len(r.put.d), storelogPutSize, us(med), us(p90), us(mx))
		}
		if err := r.measure(sc, &both); err != nil {
			both.err = err.Error()
			return err
		}
		if err := r.loseSite(sc, &lost, func(st protocol.StatusResp) error {
			switch sl := st.StoreLog; {
			case sl == nil:
				return errors.New("no store log in the LEADER's status")
			case !sl.OnStore:
				return fmt.Errorf("StoreLog.OnStore false (StandsIn %v, objects %d, error %q, waiting %v)", sl.StandsIn, sl.Objects, sl.Error, sl.WaitingFor)
			}
			return nil
		}); err != nil {
			lost.err = err.Error()
			return err
		}
		return nil
	})
	if err != nil {
		fmt.Println("storelog, store standing in:", err)
	}
	r.configs = append(r.configs, both, lost)
	err = r.withSites(work, bin, base, vgw, "mfs-storelog-alone", map[string]string{"ACK_ALONE": "1", "WITNESS_LOG": "0"}, func(sc sitesCluster, _ *witnessrig.Store) error {
		if err := r.loseSite(sc, &alone, func(st protocol.StatusResp) error {
			if !st.AckShort {
				return fmt.Errorf("AckShort false (ACK_REPLICAS %d, %d followers, %d replicas)", st.AckRequired, st.AckFollowers, st.AckReplicas)
			}
			return nil
		}); err != nil {
			alone.err = err.Error()
			return err
		}
		return nil
	})
	if err != nil {
		fmt.Println("storelog, ACK_ALONE:", err)
	}
	r.configs = append(r.configs, alone)
	return r
}

// withSites starts a store and the two-site layout with the witness
// named and extra in every master's config, waits until it settles, runs
// f and stops both.
func (r *storelogRun) withSites(work, bin string, base uint8, vgw, name string, extra map[string]string, f func(sitesCluster, *witnessrig.Store) error) error {
	dir := filepath.Join(work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	store, err := witnessrig.StartStore(vgw, dir, 0, "")
	if err != nil {
		return err
	}
	defer store.Stop()
	l := witnessrig.TwoSites(dir, bin, base, 1, false)
	if r.debug {
		l.Spec.MasterCfg["LOG_LEVEL"] = "debug"
		l.Spec.CSCfg = map[string]string{"LOG_LEVEL": "debug"}
	}
	maps.Copy(l.Spec.MasterCfg, store.Keys())
	maps.Copy(l.Spec.MasterCfg, extra)
	c, err := cluster.Start(l.Spec)
	if err != nil {
		return err
	}
	defer c.Stop()
	sc := sitesCluster{c: c, l: l, wit: true, store: store}
	if _, _, err := c.WaitLeader(60*time.Second, 100*time.Millisecond); err != nil {
		return err
	}
	if err := witnessrig.NameWitness(c, bin, nil, nil); err != nil {
		return err
	}
	if _, _, err := sc.settled(60 * time.Second); err != nil {
		return err
	}
	return f(sc, store)
}

// loseSite kills every process of the site that does not hold the
// LEADER, waits until the LEADER holds the lease and has acknowledged a
// change since, checks its status with ok (bounded), and measures.
func (r *storelogRun) loseSite(sc sitesCluster, cf *storelogConfig, ok func(protocol.StatusResp) error) error {
	lead, _, err := sc.settled(60 * time.Second)
	if err != nil {
		return err
	}
	far := witnessrig.Other(sc.l.Site[lead])
	_, ps := sc.procs(far)
	witnessrig.KillAll(ps)
	fmt.Printf("storelog: killed site %s (%d processes); the LEADER %s is on site %s\n", far, len(ps), sc.c.Masters[lead].Addr, sc.l.Site[lead])
	c := sc.c
	if err := witnessrig.Wait(30*time.Second, nil, "the LEADER to hold the lease", func() error {
		st, err := witnessrig.Status(c, lead, time.Second)
		if err != nil || st.Role != roles.Leader || !st.HoldsQuorum || st.Witness == nil || !st.Witness.Held {
			return fmt.Errorf("%v, quorum %v, %+v, %v", st.Role, st.HoldsQuorum, st.Witness, err)
		}
		return nil
	}); err != nil {
		return err
	}
	// A few changes, so that the newest acknowledgement is one made
	// without the follower; then the status must say what rests on what.
	put, done, err := oursPut(c)(0)
	if err != nil {
		return err
	}
	var last error
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last = put(ctx, fmt.Sprintf("bench/storelog/warm/%d", i), "v")
		cancel()
	}
	done()
	if last != nil {
		return fmt.Errorf("changes after site %s was lost: %w", far, last)
	}
	var st protocol.StatusResp
	if err := witnessrig.Wait(10*time.Second, nil, "the LEADER's status to show "+cf.name, func() error {
		var err error
		if st, err = witnessrig.Status(c, lead, time.Second); err != nil {
			return err
		}
		if st.Role != roles.Leader {
			return fmt.Errorf("%s is %v", c.Masters[lead].Addr, st.Role)
		}
		return ok(st)
	}); err != nil {
		return fmt.Errorf("site %s lost: %w", far, err)
	}
	return r.measure(sc, cf)
}

// measure runs the loads at the LEADER, reading its store calls around
// each and its stage means around the 1-client one.
func (r *storelogRun) measure(sc sitesCluster, cf *storelogConfig) error {
	c := sc.c
	lead, err := leaderOf(c, 2*time.Second)
	if err != nil {
		return err
	}
	cf.lead = fmt.Sprintf("%s (site %s)", c.Masters[lead].Addr, sc.l.Site[lead])
	for _, n := range storelogConcs {
		l := load{conc: n}
		ma, _ := scrape(c.Masters[lead].Addr)
		for round := range r.rounds {
			one, err := runLoad(n, storelogFor, oursPut(c))
			if err != nil {
				return fmt.Errorf("%s, %d clients, round %d: %w", cf.name, n, round+1, err)
			}
			l.ops += one.ops
			l.d += one.d
			l.lat.d = append(l.lat.d, one.lat.d...)
		}
		mb, _ := scrape(c.Masters[lead].Addr)
		if now, err := leaderOf(c, 2*time.Second); err != nil || now != lead {
			return fmt.Errorf("%s, %d clients: the LEADER changed during the run (%d, %v)", cf.name, n, now, err)
		}
		d, took := witnessDelta(ma, mb)
		cf.calls, cf.took = append(cf.calls, d), append(cf.took, took)
		if n == 1 {
			cf.stages = stagesSeen(ma, mb)
		}
		cf.loads = append(cf.loads, l)
		med, _, _ := l.lat.stats()
		fmt.Printf("storelog, %s, %d clients: %.0f changes/s, median %s, p99 %s; LEADER's store calls %s, %s each on mean; stages %v\n",
			cf.name, n, l.rate(), us(med), us(l.lat.pct(0.99)), callsPer(d, l.ops), us(took), stagesSeen(ma, mb))
	}
	st, err := witnessrig.Status(c, lead, time.Second)
	if err != nil {
		return err
	}
	cf.after, cf.ackAft = st.StoreLog, st
	if sl := st.StoreLog; sl != nil {
		fmt.Printf("storelog, %s: after the runs the LEADER's store log: stands in %v, on store %v, %d objects, %d bytes, snapshot at %d, garbage %d, refused %d, error %q; AckShort %v\n",
			cf.name, sl.StandsIn, sl.OnStore, sl.Objects, sl.Bytes, sl.Snapshot, sl.Garbage, sl.Refused, sl.Error, st.AckShort)
	}
	return nil
}

// witnessDelta is the store calls the LEADER made between two scrapes of
// its metrics (mfs_master_witness_requests_total: the lease's and the
// store log's), by "op result", and their mean time
// (mfs_master_witness_request_seconds); nil, 0 without both scrapes.
func witnessDelta(a, b map[string]float64) (map[string]uint64, time.Duration) {
	if a == nil || b == nil {
		return nil, 0
	}
	const name = "mfs_master_witness_requests_total{"
	out := map[string]uint64{}
	for k, v := range b {
		if !strings.HasPrefix(k, name) || v <= a[k] {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(k, name), "}"), ",") {
			if n, val, ok := strings.Cut(kv, "="); ok {
				labels[n] = strings.Trim(val, `"`)
			}
		}
		out[labels["op"]+" "+labels["result"]] += uint64(v - a[k])
	}
	var took time.Duration
	if n := b["mfs_master_witness_request_seconds_count"] - a["mfs_master_witness_request_seconds_count"]; n > 0 {
		took = time.Duration((b["mfs_master_witness_request_seconds_sum"] - a["mfs_master_witness_request_seconds_sum"]) / n * float64(time.Second))
	}
	return out, took
}

// stagesSeen is stageMeans for the stages observed between the two
// scrapes only: with no follower a change never reaches replication, and
// only leader_write and total are observed.
func stagesSeen(a, b map[string]float64) map[string]time.Duration {
	if a == nil || b == nil {
		return nil
	}
	out := map[string]time.Duration{}
	for _, st := range changeStages {
		sum := fmt.Sprintf("mfs_master_change_stage_seconds_sum{stage=%q}", st)
		cnt := fmt.Sprintf("mfs_master_change_stage_seconds_count{stage=%q}", st)
		if n := b[cnt] - a[cnt]; n > 0 {
			out[st] = time.Duration((b[sum] - a[sum]) / n * float64(time.Second))
		}
	}
	return out
}

// callsPer is the store calls of a run, by "op result", per change.
func callsPer(calls map[string]uint64, ops int) string {
	if len(calls) == 0 {
		return "none"
	}
	return callsShort(calls, ops) + " per change"
}

// storePuts times storelogPuts create-only PUTs of storelogPutSize bytes
// to the store, through a client built as witnessrig builds its own (the
// keys from the store's credentials file), under a prefix of their own;
// then deletes them.
func storePuts(store *witnessrig.Store) (series, string) {
	out := series{name: "store PUT"}
	raw, err := os.ReadFile(store.Creds)
	if err != nil {
		return out, err.Error()
	}
	keys := strings.Fields(string(raw))
	if len(keys) != 2 {
		return out, fmt.Sprintf("%s: not \"access secret\"", store.Creds)
	}
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	cl, err := s3store.New(s3store.Config{Endpoint: store.Endpoint, Bucket: witnessrig.Bucket, Prefix: "bench-put-" + hex.EncodeToString(id),
		AccessKey: keys[0], SecretKey: keys[1], CallTimeout: 5 * time.Second})
	if err != nil {
		return out, err.Error()
	}
	body := make([]byte, storelogPutSize)
	_, _ = rand.Read(body)
	var names []string
	defer func() {
		for _, n := range names {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = cl.Delete(ctx, n)
			cancel()
		}
	}()
	end := time.Now().Add(time.Minute)
	for i := range storelogPuts {
		if time.Now().After(end) {
			return out, fmt.Sprintf("only %d PUTs within a minute", i)
		}
		name := fmt.Sprintf("put-%03d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t := time.Now()
		_, err := cl.Create(ctx, name, body)
		d := time.Since(t)
		cancel()
		if err != nil {
			return out, fmt.Sprintf("PUT %d: %v", i+1, err)
		}
		names = append(names, name)
		out.d = append(out.d, d)
	}
	return out, ""
}

// storelogSection is the storelog part of docs/benchmarks.md, markers
// excluded.
func storelogSection(r storelogRun) string {
	var b strings.Builder
	b.WriteString("## One site lost: the store as a stand-in replica\n\n")
	fmt.Fprintf(&b, "Measured %s by `go run ./internal/cluster/bench -only storelog -trials=%d`, %d cores, shared with other work: compare the ratios, not the absolute figures.\n\n", time.Now().UTC().Format("2006-01-02"), r.rounds, nproc())
	if r.skipped != "" {
		fmt.Fprintf(&b, "Not run: %s.\n\n", r.skipped)
		return b.String()
	}
	b.WriteString("The two-site layout of the part above: sites a (127.B.1.0/24) and b (127.B.2.0/24), one master and two chunkservers (one voter-only) each, all real processes, the witness named, versitygw (posix backend) on 127.0.0.1 as its store, ACK_REPLICAS at its default (1). ")
	b.WriteString("Three configurations, side by side in one run: both sites up (a change is acknowledged once the follower master holds it); ")
	b.WriteString("every process of the site that does not hold the LEADER killed (kill -9; called site b below), the defaults (WITNESS_LOG = 1, ACK_ALONE = 0), so that the LEADER writes what the lost follower lacks to the bucket (one create-only object per group commit, then the head `log.json` swapped If-Match) before it acknowledges, and its status says `StoreLog.OnStore` before the runs start; ")
	b.WriteString("and the same loss on a second cluster with ACK_ALONE = 1 and WITNESS_LOG = 0 in every master's config, where a change is acknowledged on the LEADER's disk alone (its status says `AckShort`). ")
	fmt.Fprintf(&b, "Each client (`pkg/client`, a session of its own) changes its own keys, one change at a time; each cell is %d rounds of %v pooled.", r.rounds, storelogFor)
	if r.debug {
		b.WriteString(" Every daemon logged at debug level in this run (-keep).")
	}
	b.WriteString("\n\n")
	var errs []string
	for _, cf := range r.configs {
		if cf.err != "" {
			errs = append(errs, cf.name+": "+cf.err)
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(&b, "**The run failed:** %s. The figures below are those measured before it.\n\n", strings.Join(errs, "; "))
	}
	b.WriteString("| config | 1 client changes/s | median | p99 | 16 clients changes/s | 64 clients changes/s |\n|---|---|---|---|---|---|\n")
	for _, cf := range r.configs {
		cells := []string{"-", "-", "-", "-", "-"}
		for i, l := range cf.loads {
			switch i {
			case 0:
				med, _, _ := l.lat.stats()
				cells[0], cells[1], cells[2] = fmt.Sprintf("%.0f", l.rate()), us(med), us(l.lat.pct(0.99))
			default:
				cells[i+2] = fmt.Sprintf("%.0f", l.rate())
			}
		}
		fmt.Fprintf(&b, "| %s | %s |\n", cf.name, strings.Join(cells, " | "))
	}
	b.WriteString("\n")
	if r.putErr != "" {
		fmt.Fprintf(&b, "The store's own PUT latency was not measured: %s.\n\n", r.putErr)
	} else if len(r.put.d) > 0 {
		med, p90, mx := r.put.stats()
		fmt.Fprintf(&b, "The store's own latency, measured in the same run on the same versitygw with the cluster at rest: %d create-only PUTs (If-None-Match: *) of a %d KiB object through `internal/witness/s3store`, one at a time: median %s, p90 %s, max %s.\n\n", len(r.put.d), storelogPutSize>>10, us(med), us(p90), us(mx))
	}
	if len(r.configs) == 3 {
		ratio := func(x, y storelogConfig) string {
			if len(x.loads) == 0 || len(x.loads) != len(y.loads) {
				return "n/a"
			}
			var parts []string
			for i, l := range x.loads {
				parts = append(parts, fmt.Sprintf("%.2f at %d", l.rate()/y.loads[i].rate(), l.conc))
			}
			xm, _, _ := x.loads[0].lat.stats()
			ym, _, _ := y.loads[0].lat.stats()
			return fmt.Sprintf("changes/s %s clients; median latency at 1 client %.2fx", strings.Join(parts, ", "), float64(xm)/float64(ym))
		}
		fmt.Fprintf(&b, "Ratios, store standing in / both sites up: %s. Store standing in / ACK_ALONE: %s.\n\n", ratio(r.configs[1], r.configs[0]), ratio(r.configs[1], r.configs[2]))
	}
	b.WriteString("Where the time goes, on the LEADER: the mean of each stage of the ack rule over the 1-client runs, from `mfs_master_change_stage_seconds`, which counts a change only once a follower acknowledged it (none while site b is lost: the dashes); and the LEADER's calls on the store per change at 1, 16 and 64 clients, by operation and result, with their mean time as it timed them (`mfs_master_witness_requests_total` and `mfs_master_witness_request_seconds`, read before and after each run: the lease record's calls and the store log's together):\n\n")
	b.WriteString("| config | leader_write | replication | commit_send | voter_round | total | store calls per change (1 / 16 / 64 clients) |\n|---|---|---|---|---|---|---|\n")
	for _, cf := range r.configs {
		st := []string{"-", "-", "-", "-", "-"}
		for i, s := range changeStages {
			if d, ok := cf.stages[s]; ok {
				st[i] = us(d)
			}
		}
		var per []string
		for i, c := range cf.calls {
			if i < len(cf.loads) {
				x := callsShort(c, cf.loads[i].ops)
				if cf.took[i] > 0 {
					x += fmt.Sprintf(" (%s each)", us(cf.took[i]))
				}
				per = append(per, x)
			}
		}
		if len(per) == 0 {
			per = []string{"-"}
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cf.name, strings.Join(st, " | "), strings.Join(per, " / "))
	}
	b.WriteString("\n")
	if len(r.configs) > 1 && len(r.configs[1].calls) > 0 && len(r.configs[1].loads) > 0 {
		cf := r.configs[1]
		var n uint64
		for _, v := range cf.calls[0] {
			n += v
		}
		if per := float64(n) / float64(max(cf.loads[0].ops, 1)); per > 0 {
			med, _, _ := cf.loads[0].lat.stats()
			fmt.Fprintf(&b, "At 1 client, while the store stood in, each change cost the LEADER %.1f calls on the store at %s each on mean (%s of calls per change, against a median change of %s; the lease record's calls and the log's go on workers of their own, so some overlap): the object, the head's swap, the lease record's swap (it carries the commit point while the witness is the tie-breaking vote, as in the ACK_ALONE row) and the deletes of objects the merging of small ones left behind. ",
				per, us(cf.took[0]), us(time.Duration(per*float64(cf.took[0]))), us(med))
		}
		if sl := cf.after; sl != nil {
			fmt.Fprintf(&b, "After those runs the LEADER's store log held %d objects (%d bytes), snapshot at version %d, %d garbage objects still to delete, %d refused head writes, last error %q.", sl.Objects, sl.Bytes, sl.Snapshot, sl.Garbage, sl.Refused, sl.Error)
		}
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Reproduce: `go run ./internal/cluster/bench -only storelog -trials=N` (N rounds of %v per cell, at most %d; versitygw at .bin/versitygw, `make versitygw`).\n\n", storelogFor, storelogMaxRounds)
	return b.String()
}

// callsShort is a run's store calls per change, by "op result" ("0" for
// none).
func callsShort(calls map[string]uint64, ops int) string {
	if len(calls) == 0 || ops == 0 {
		return "0"
	}
	keys := make([]string, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(calls[k])/float64(ops)))
	}
	return strings.Join(parts, ", ")
}
