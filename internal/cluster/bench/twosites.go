package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/cluster/witnessrig"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// Two locations (issue 33, docs/operations.md "Two sites and a
// witness"): sites a and b, each a master and two chunkservers (one
// voter-only), the witness's settings at their defaults, versitygw as the
// store. Beside it the other way to survive a site's loss, a voter-only
// chunkserver in a third location c and no witness, and etcd's 3 members
// (one per location: losing the LEADER's location is losing its leader).
// As root the clusters run in a network namespace of their own, so that
// the sites can be cut apart.

// The markers of the section in docs/benchmarks.md (-only sites rewrites
// it alone).
const (
	sitesBegin = "<!-- sites:begin -->"
	sitesEnd   = "<!-- sites:end -->"
)

// sitesRun is the figures of the two-location part.
type sitesRun struct {
	lease            time.Duration // WITNESS_LEASE
	free, recent     series        // kill -9 of the LEADER's site, the lease record free / written < a lease ago
	recentAge        []time.Duration
	third            series // the same with a third-location voter, no witness
	restAge          time.Duration
	restCalls        uint64 // store calls of every master over restAge at rest
	splitTrials      int    // the sites cut apart, the store up:
	splitKept        int    // the LEADER kept its epoch throughout,
	splitOther       int    // polls where the other site had a LEADER
	splitFor         time.Duration
	stepDown         series // the sites cut apart, the store stopped: the LEADER's step-down
	thirdStep        series // third-location voter: the LEADER's site cut from both others: its step-down
	thirdNew         series // and a LEADER on the other side
	netns            string // "" when not root: no split trials
	debug            bool   // every daemon logs at debug level (-keep)
	skipped, errText string
}

// sitesPhase runs the two-location trials: trials kill -9s of the
// LEADER's site for each layout, fewer of the slow ones (a lease written
// recently costs the taker a whole WITNESS_LEASE; a split is held for two).
func sitesPhase(work, bin string, base uint8, vgw string, trials int, debug bool) sitesRun {
	r := sitesRun{lease: 10 * time.Second, debug: debug}
	r.free.name = "two sites + witness: kill -9 of the LEADER's site, lease record free -> LEADER on the other site"
	r.recent.name = "two sites + witness: kill -9 of the LEADER's site, lease written < WITNESS_LEASE ago"
	r.third.name = "two sites + a voter in a third location: kill -9 of the LEADER's site -> new LEADER"
	r.stepDown.name = "two sites + witness: sites cut apart, store stopped -> the LEADER steps down"
	r.thirdStep.name = "third-location voter: LEADER's site cut off -> it steps down"
	r.thirdNew.name = "third-location voter: LEADER's site cut off -> LEADER on the other side"
	if _, err := os.Stat(vgw); err != nil {
		r.skipped = fmt.Sprintf("no versitygw at %s (make versitygw installs it; make bench does that first)", vgw)
		return r
	}
	if os.Geteuid() == 0 {
		ns := fmt.Sprintf("mfs-bench-%d", os.Getpid())
		if err := cluster.NewNetns(ns); err == nil {
			r.netns = ns
			defer func() { _ = cluster.DeleteNetns(ns) }()
		} else {
			fmt.Println("two sites: no network namespace, no split trials:", err)
		}
	}
	slow := max(3, trials/4)
	var errs []string
	if err := r.witnessTrials(work, bin, base, vgw, trials, slow); err != nil {
		errs = append(errs, "two sites with a witness: "+err.Error())
		fmt.Println(errs[len(errs)-1])
	}
	if err := r.thirdTrials(work, bin, base, trials, slow); err != nil {
		errs = append(errs, "two sites with a third-location voter: "+err.Error())
		fmt.Println(errs[len(errs)-1])
	}
	r.errText = strings.Join(errs, "; ")
	return r
}

// prepare puts a layout in the run's namespace, at debug level if asked.
func (r *sitesRun) prepare(l *witnessrig.Layout) {
	l.Spec.Netns = r.netns
	if r.debug {
		l.Spec.MasterCfg["LOG_LEVEL"] = "debug"
		l.Spec.CSCfg = map[string]string{"LOG_LEVEL": "debug"}
	}
}

// sitesCluster is a running two-site layout.
type sitesCluster struct {
	c     *cluster.Cluster
	l     witnessrig.Layout
	wit   bool
	store *witnessrig.Store // with the witness
}

func (sc sitesCluster) procs(site string) ([]int, []*cluster.Proc) { return sc.l.Procs(sc.c, site) }

// settled waits until one LEADER counts every chunkserver under a
// registry in force, every other master is a synced FOLLOWER and, with a
// witness, the LEADER does not count it and the record in the store is
// free (a holder sets it free after a whole lease of a strict majority).
func (sc sitesCluster) settled(within time.Duration) (int, protocol.StatusResp, error) {
	lead, lst := -1, protocol.StatusResp{}
	// Settled on two polls in a row, 300 ms apart: a release of the
	// lease stops the count before its write lands, and a trial must not
	// start between the two.
	var since time.Time
	err := witnessrig.Wait(within, nil, "the two sites settled", func() error {
		if err := sc.settledNow(&lead, &lst); err != nil {
			since = time.Time{}
			return err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) < 300*time.Millisecond {
			return errors.New("settled for less than 300 ms")
		}
		return nil
	})
	return lead, lst, err
}

// settledNow is one poll of settled.
func (sc sitesCluster) settledNow(leadp *int, lstp *protocol.StatusResp) error {
	sts, errs := sc.c.Statuses(time.Second)
	lead := -1
	for i, st := range sts {
		switch {
		case errs[i] != nil:
			return errs[i]
		case st.Role == roles.Leader && st.HoldsQuorum && st.Voters == len(sc.c.CS):
			if st.InForce != st.ConfigVersion {
				return fmt.Errorf("LEADER %s: config %d, in force %d", st.Addr, st.ConfigVersion, st.InForce)
			}
			if sc.wit && (st.Witness == nil || st.Witness.Held) {
				return fmt.Errorf("LEADER %s: witness %+v", st.Addr, st.Witness)
			}
			lead = i
		case st.Role == roles.Follower && st.Sync == roles.Synced:
		default:
			return fmt.Errorf("%s: %v %v, quorum %v, %d of %d votes", st.Addr, st.Role, st.Sync, st.HoldsQuorum, st.Voters, len(sc.c.CS))
		}
	}
	if lead < 0 {
		return errors.New("no LEADER counting every vote")
	}
	if sc.store != nil {
		// The record as the store holds it: a master's view is only what
		// it last read or wrote.
		rec, ok, err := sc.store.Record()
		if err != nil || (ok && rec.State != witness.Free) {
			return fmt.Errorf("the lease record: %+v (exists %v), %v", rec, ok, err)
		}
	}
	*leadp, *lstp = lead, sts[lead]
	return nil
}

func startAll(ps []*cluster.Proc) error {
	for _, p := range ps {
		if err := p.Start(); err != nil {
			return err
		}
	}
	return nil
}

// siteKill kills the LEADER's site and measures until a master of the
// other site logs `-> LEADER`; with a witness, that LEADER must hold the
// lease. The site is started again (not waited for).
func (sc sitesCluster) siteKill(lead int) (time.Duration, error) {
	site := sc.l.Site[lead]
	dead, ps := sc.procs(site)
	t0 := witnessrig.KillAll(ps)
	next, st, err := sc.c.WaitLeader(30*time.Second, 20*time.Millisecond, dead...)
	if err != nil {
		return 0, fmt.Errorf("site %s killed: %w", site, err)
	}
	if sc.wit && (st.Witness == nil || !st.Witness.Held) {
		return 0, fmt.Errorf("site %s killed: LEADER %s without the lease: %+v", site, st.Addr, st.Witness)
	}
	at := cluster.BecameLeader(sc.c.Masters[next].Log, t0)
	if at.IsZero() {
		return 0, fmt.Errorf("no role change in %s", sc.c.Masters[next].Log)
	}
	return at.Sub(t0), startAll(ps)
}

// cut drops every packet between the sites (both ways) and returns its
// undo.
func (sc sitesCluster) cut(pref int, pairs ...[2]string) (func() error, error) {
	var done []int
	heal := func() error {
		var errs []error
		for _, p := range done {
			errs = append(errs, cluster.Heal(sc.c.Spec.Netns, p))
		}
		return errors.Join(errs...)
	}
	for _, pr := range pairs {
		for _, d := range [][2]string{pr, {pr[1], pr[0]}} {
			if err := cluster.Cut(sc.c.Spec.Netns, sc.c.Spec.Locations[d[0]].String(), sc.c.Spec.Locations[d[1]].String(), pref); err != nil {
				return nil, errors.Join(err, heal())
			}
			done = append(done, pref)
			pref++
		}
	}
	return heal, nil
}

func (r *sitesRun) witnessTrials(work, bin string, base uint8, vgw string, trials, slow int) error {
	dir := filepath.Join(work, "mfs-sites-witness")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	store, err := witnessrig.StartStore(vgw, dir, 0, r.netns)
	if err != nil {
		return err
	}
	defer store.Stop()
	l := witnessrig.TwoSites(dir, bin, base, 1, false)
	r.prepare(&l)
	maps.Copy(l.Spec.MasterCfg, store.Keys())
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
	lead, _, err := sc.settled(60 * time.Second)
	if err != nil {
		return err
	}

	// At rest: no master calls the store.
	before := storeCalls(c)
	r.restAge = time.Minute
	time.Sleep(r.restAge)
	r.restCalls = storeCalls(c) - before
	fmt.Printf("two sites at rest for %v: %d store calls\n", r.restAge, r.restCalls)

	for i := range trials {
		d, err := sc.siteKill(lead)
		if err != nil {
			return fmt.Errorf("trial %d: %w", i+1, err)
		}
		r.free.d = append(r.free.d, d)
		fmt.Printf("two sites + witness, site kill (record free) #%d: %v\n", i+1, d.Round(time.Millisecond))
		if lead, _, err = sc.settled(90 * time.Second); err != nil {
			return err
		}
	}

	// The lease written recently: the site without the LEADER lost, the
	// LEADER takes the lease; that site back (the LEADER still holds it:
	// it sets it free only after a whole lease of a strict majority), the
	// LEADER's site lost.
	for i := range slow {
		far := witnessrig.Other(l.Site[lead])
		_, ps := sc.procs(far)
		witnessrig.KillAll(ps)
		if err := witnessrig.Wait(10*time.Second, nil, "the LEADER to take the lease", func() error {
			st, err := witnessrig.Status(c, lead, time.Second)
			if err != nil || st.Role != roles.Leader || st.Witness == nil || !st.Witness.Held {
				return fmt.Errorf("%v %+v %v", st.Role, st.Witness, err)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := startAll(ps); err != nil {
			return err
		}
		// Back: its masters synced FOLLOWERs of this run, its voters
		// counted on sessions of their new runs; the lease still held.
		var age time.Duration
		if err := witnessrig.Wait(r.lease, nil, "site "+far+" back, the lease still held", func() error {
			sts, errs := c.Statuses(time.Second)
			for i, st := range sts {
				if i != lead && (errs[i] != nil || st.Role != roles.Follower || st.Sync != roles.Synced) {
					return fmt.Errorf("%s: %v %v %v", c.Masters[i].Addr, st.Role, st.Sync, errs[i])
				}
			}
			st := sts[lead]
			if errs[lead] != nil || st.Role != roles.Leader || st.Voters != len(c.CS) || st.Witness == nil || !st.Witness.Held {
				return fmt.Errorf("%v, %d votes, %+v, %v", st.Role, st.Voters, st.Witness, errs[lead])
			}
			age = st.Witness.LastWriteAge
			return nil
		}); err != nil {
			return err
		}
		r.recentAge = append(r.recentAge, age)
		d, err := sc.siteKill(lead)
		if err != nil {
			return fmt.Errorf("recent-lease trial %d: %w", i+1, err)
		}
		r.recent.d = append(r.recent.d, d)
		fmt.Printf("two sites + witness, site kill (lease held, last written %v before) #%d: %v\n", r.recentAge[i].Round(time.Millisecond), i+1, d.Round(time.Millisecond))
		if lead, _, err = sc.settled(90 * time.Second); err != nil {
			return err
		}
	}

	if r.netns == "" {
		return nil
	}
	// The sites cut apart, the store up: the LEADER's side keeps it, the
	// other side never leads.
	r.splitFor = 2 * r.lease
	for i := range slow {
		st, err := witnessrig.Status(c, lead, time.Second)
		if err != nil {
			return err
		}
		heal, err := sc.cut(100, [2]string{"a", "b"})
		if err != nil {
			return err
		}
		kept := true
		for end := time.Now().Add(r.splitFor); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			sts, errs := c.Statuses(time.Second)
			for j, s := range sts {
				if errs[j] != nil || s.Role != roles.Leader {
					if j == lead {
						kept = false
					}
					continue
				}
				if j != lead {
					r.splitOther++
				} else if s.Epoch != st.Epoch {
					kept = false
				}
			}
		}
		r.splitTrials++
		if kept {
			r.splitKept++
		}
		fmt.Printf("two sites + witness, sites cut apart for %v #%d: LEADER kept %v\n", r.splitFor, i+1, kept)
		if err := heal(); err != nil {
			return err
		}
		if lead, _, err = sc.settled(90 * time.Second); err != nil {
			return err
		}
	}
	// The sites cut apart and the store stopped: the LEADER, on half of
	// the votes with no lease, steps down.
	for i := range slow {
		if err := store.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		t0 := time.Now()
		heal, err := sc.cut(100, [2]string{"a", "b"})
		if err != nil {
			_ = store.Signal(syscall.SIGCONT)
			return err
		}
		err = witnessrig.Wait(10*time.Second, nil, "the LEADER to step down", func() error {
			if ls := c.Leaders(); len(ls) > 0 {
				return fmt.Errorf("LEADER %v", ls)
			}
			return nil
		})
		at := cluster.LeftLeader(c.Masters[lead].Log, t0)
		herr := heal()
		_ = store.Signal(syscall.SIGCONT)
		if err = errors.Join(err, herr); err != nil {
			return err
		}
		if at.IsZero() {
			return fmt.Errorf("no step-down in %s", c.Masters[lead].Log)
		}
		r.stepDown.d = append(r.stepDown.d, at.Sub(t0))
		fmt.Printf("two sites + witness, cut apart with the store stopped #%d: the LEADER stepped down after %v\n", i+1, at.Sub(t0).Round(time.Millisecond))
		if lead, _, err = sc.settled(90 * time.Second); err != nil {
			return err
		}
	}
	return nil
}

func (r *sitesRun) thirdTrials(work, bin string, base uint8, trials, slow int) error {
	dir := filepath.Join(work, "mfs-sites-third")
	l := witnessrig.TwoSites(dir, bin, base, 1, true)
	r.prepare(&l)
	c, err := cluster.Start(l.Spec)
	if err != nil {
		return err
	}
	defer c.Stop()
	sc := sitesCluster{c: c, l: l}
	if _, _, err := c.WaitLeader(60*time.Second, 100*time.Millisecond); err != nil {
		return err
	}
	lead, _, err := sc.settled(60 * time.Second)
	if err != nil {
		return err
	}
	for i := range trials {
		d, err := sc.siteKill(lead)
		if err != nil {
			return fmt.Errorf("trial %d: %w", i+1, err)
		}
		r.third.d = append(r.third.d, d)
		fmt.Printf("two sites + third-location voter, site kill #%d: %v\n", i+1, d.Round(time.Millisecond))
		if lead, _, err = sc.settled(60 * time.Second); err != nil {
			return err
		}
	}
	if r.netns == "" {
		return nil
	}
	for i := range slow {
		site := l.Site[lead]
		t0 := time.Now()
		heal, err := sc.cut(100, [2]string{site, witnessrig.Other(site)}, [2]string{site, "c"})
		if err != nil {
			return err
		}
		dead, _ := sc.procs(site)
		next, _, err := c.WaitLeader(15*time.Second, 20*time.Millisecond, dead...)
		var down, up time.Time
		if err == nil {
			err = witnessrig.Wait(10*time.Second, nil, "the cut-off LEADER to step down", func() error {
				if down = cluster.LeftLeader(c.Masters[lead].Log, t0); down.IsZero() {
					return errors.New("still LEADER")
				}
				return nil
			})
			up = cluster.BecameLeader(c.Masters[next].Log, t0)
		}
		if err = errors.Join(err, heal()); err != nil {
			return err
		}
		if up.IsZero() {
			return fmt.Errorf("no role change in %s", c.Masters[next].Log)
		}
		r.thirdStep.d = append(r.thirdStep.d, down.Sub(t0))
		r.thirdNew.d = append(r.thirdNew.d, up.Sub(t0))
		fmt.Printf("two sites + third-location voter, the LEADER's site cut off #%d: stepped down after %v, LEADER on site %s after %v\n",
			i+1, down.Sub(t0).Round(time.Millisecond), l.Site[next], up.Sub(t0).Round(time.Millisecond))
		if lead, _, err = sc.settled(60 * time.Second); err != nil {
			return err
		}
	}
	return nil
}

// storeCalls is the store calls every master of c counted (its status's
// witness counts; a master that does not answer counts 0).
func storeCalls(c *cluster.Cluster) uint64 {
	sts, errs := c.Statuses(time.Second)
	var n uint64
	for i, st := range sts {
		if errs[i] != nil || st.Witness == nil {
			continue
		}
		for _, v := range st.Witness.Calls {
			n += v
		}
	}
	return n
}

// sitesSection is the two-location part of docs/benchmarks.md.
func sitesSection(r sitesRun, etcdKill series, etcdVersion string) string {
	var b strings.Builder
	b.WriteString("## Two locations: losing a whole location\n\n")
	fmt.Fprintf(&b, "Measured %s by `make bench` (alone: `make bench BENCH=sites`, about 20 minutes at TRIALS=20), in the same run as etcd's row.\n\n", time.Now().UTC().Format("2006-01-02"))
	if r.skipped != "" {
		fmt.Fprintf(&b, "Not run: %s.\n\n", r.skipped)
		return b.String()
	}
	b.WriteString("Two sites, a (127.B.1.0/24) and b (127.B.2.0/24), each a master and two chunkservers (one voter-only), all real processes; the witness is versitygw (posix backend) on 127.0.0.1, ")
	b.WriteString("the `WITNESS_*` timing at its defaults (lease 10 s, renewed every 2.5 s, calls bounded by 1 s, `WITNESS_DELAY` 300 ms). ")
	b.WriteString("A trial kills every process of the LEADER's site at once (kill -9) and measures until a master of the other site logs `ELECT -> LEADER` (with the witness: holding the lease); then the site is started again and the cluster settles (a LEADER counting every vote and, with the witness, the lease record set free) before the next. ")
	b.WriteString("Beside it, the other way to survive a site's loss: the same two sites and a voter-only chunkserver in a third location c, no witness; and etcd, 3 members with default settings, one per location, where losing the leader's location is losing its leader")
	if r.netns != "" {
		b.WriteString(". The clusters ran in a network namespace of their own, where a split drops every packet between the sites' address ranges")
	}
	b.WriteString(".")
	if r.debug {
		b.WriteString(" Every daemon logged at debug level in this run (-keep).")
	}
	b.WriteString("\n\n")
	if r.errText != "" {
		fmt.Fprintf(&b, "**The run failed:** %s. The figures below are the trials before it.\n\n", r.errText)
	}
	b.WriteString("| what | trials | median | p90 | max |\n|---|---|---|---|---|\n")
	row := func(s series) {
		if len(s.d) == 0 {
			return
		}
		med, p90, mx := s.stats()
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", s.name, len(s.d), ms(med), ms(p90), ms(mx))
	}
	row(r.free)
	row(r.recent)
	row(r.third)
	if len(etcdKill.d) > 0 {
		e := etcdKill
		e.name = "etcd " + etcdVersion + " (3 members, one per location): kill -9 of the leader -> new leader"
		row(e)
	}
	row(r.stepDown)
	row(r.thirdStep)
	row(r.thirdNew)
	b.WriteString("\n")
	if len(r.free.d) > 0 {
		b.WriteString("Most of the witness's first row is `WITNESS_DELAY`: an ELECT on exactly half of the locations waits that long for the other half's votes before it calls the store, so that a healthy election never does; the read and the swap take a few milliseconds. The third-location row is the kill -9 fast path of the Failover section: the voters of the surviving site and of c see the LEADER's connections close and its address refuse them, and vote at once.\n\n")
	}
	if len(r.recentAge) > 0 {
		ages := series{d: r.recentAge}
		med, _, mx := ages.stats()
		fmt.Fprintf(&b, "With the lease record written recently (the LEADER took the lease when the other site was lost and renews it until it has held a strict majority for a whole lease again: its last write %s before the kill on median, at most %s), ", ms(med), ms(mx))
		b.WriteString("the surviving site's master finds the record held by a master it cannot ask, and takes it only a whole `WITNESS_LEASE` after its first read of that record: the bound is the time to notice the loss and reach half of the votes, plus up to 2 × `PEER_INTERVAL` (the killed holder's last status said it held the lease, and a half side does not propose its epoch while a peer heard that recently says so), plus `WITNESS_DELAY`, plus `WITNESS_LEASE`, plus two store calls (≤ 2 × `WITNESS_CALL_TIMEOUT`): about 10.5 s at the defaults. A shorter `WITNESS_LEASE` shortens it, and costs renewals while a site is down (docs/operations.md).\n\n")
	}
	fmt.Fprintf(&b, "At rest (both sites up, the lease record free) no master calls the store: %d calls by all masters in %v.", r.restCalls, r.restAge)
	switch {
	case r.splitTrials > 0:
		fmt.Fprintf(&b, " Sites cut apart with the store up, held for %v: the LEADER kept its epoch in %d of %d splits, and %d polls (every 100 ms) saw a LEADER on the other site.", r.splitFor, r.splitKept, r.splitTrials, r.splitOther)
	case r.netns == "":
		b.WriteString(" No split trials: they need root for a network namespace.")
	}
	b.WriteString("\n\n")
	return b.String()
}
