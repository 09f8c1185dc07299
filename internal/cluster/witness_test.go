package cluster_test

import (
	"bufio"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/cluster/witnessrig"
	"github.com/mfs-election/mfs-election/internal/witness/versitytest"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// The object-store witness (docs/architecture.md §7.4, docs/roles.md §7)
// on real processes: two sites, "a" (127.B.1.0/24) and "b" (127.B.2.0/24),
// each with its master(s) and two chunkservers on addresses inside the
// site's range, and versitygw on 127.0.0.1 as the store, at no site. Every
// master has the WITNESS_* keys (a short lease, so that the tests are
// quick); the witness is named with mfscli -CWITNESS on once a LEADER
// counts every chunkserver.

// The witness's timing in these tests: WITNESS_LEASE 2s, renewed every
// 500ms, each store call bounded by 250ms (the renewal rule: 500ms + 2 x
// 250ms stays below the 1.9s a holder counts from a write).
const (
	witLease       = 2 * time.Second
	witRenew       = 500 * time.Millisecond
	witCallTimeout = 250 * time.Millisecond

	witBucket = "mfs-witness"
	witPrefix = "mfs"
	witAccess = "mfswitnessaccess"
	witSecret = "mfs-witness-test-secret"
)

// witnessCfg is the WITNESS_* keys of every master: the store at
// endpoint, the keys in the 0600 file creds.
func witnessCfg(endpoint, creds string) map[string]string {
	return map[string]string{
		"WITNESS_ENDPOINT": endpoint, "WITNESS_BUCKET": witBucket, "WITNESS_PREFIX": witPrefix,
		"WITNESS_CREDENTIALS": creds, "WITNESS_LEASE": witLease.String(), "WITNESS_RENEW": witRenew.String(),
		"WITNESS_CALL_TIMEOUT": witCallTimeout.String(),
	}
}

// witnessRig is a two-site cluster with a witness named in its registry.
type witnessRig struct {
	t     *testing.T
	c     *cluster.Cluster
	store *witnessrig.Store
	l     witnessrig.Layout
	// site is each master's site (l.Site), ranges each site's addresses.
	site   []string
	ranges map[string]netip.Prefix
	id     string // the witness id the registry names
	// proxies: with rigOptions.proxies, each master's way to the store.
	proxies []*holdProxy
}

type rigOptions struct {
	perSite   int               // masters per site (1 or 2)
	masterCfg map[string]string // more keys for every master
	netns     string            // every process (and the store) in this namespace
	// proxies: each master reaches the store through its own holdProxy
	// (witnessRig.proxies, by master index).
	proxies bool
}

// startWitnessRig starts versitygw and the two sites, restarts the masters
// that started with -e once they hold the metadata (a master uses its
// store only from a start with metadata), waits until every master's
// store passed its self-test, names the witness (mfscli -CWITNESS on) and
// waits until the registry change is in force.
func startWitnessRig(t *testing.T, o rigOptions) *witnessRig {
	t.Helper()
	began := time.Now()
	dir := t.TempDir()
	if keep := os.Getenv("MFS_TEST_DIR"); keep != "" {
		dir = filepath.Join(keep, t.Name())
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	store, err := witnessrig.StartStore(versitytest.Binary(t), dir, 0, o.netns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Stop)

	l := witnessrig.TwoSites(dir, bin, base(), o.perSite, false)
	l.Spec.Netns = o.netns
	l.Spec.MasterCfg = layeredCfg(fastStart, witnessCfg(store.Endpoint, store.Creds), o.masterCfg)
	if os.Getenv("MFS_TEST_DIR") != "" {
		l.Spec.MasterCfg["LOG_LEVEL"] = "debug"
	}
	var proxies []*holdProxy
	if o.proxies {
		for range l.Spec.Masters {
			px := startHoldProxy(t, store.Endpoint)
			proxies = append(proxies, px)
			l.Spec.PerMaster = append(l.Spec.PerMaster, map[string]string{"WITNESS_ENDPOINT": px.URL})
		}
	}
	s := l.Spec
	r := &witnessRig{t: t, store: store, l: l, site: l.Site, ranges: l.Spec.Locations, proxies: proxies}
	c, err := cluster.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	t.Cleanup(func() {
		c.Stop()
		raceReports(t, s.Dir)
		if t.Failed() {
			dumpLogs(t, s.Dir)
		}
	})
	r.leaderCounting(40*time.Second, len(s.CS))

	if err := witnessrig.NameWitness(c, bin, nil, func(m string) { t.Log(m) }); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, 100*time.Millisecond, "the witness named by every master, in force", func() error {
		sts, errs := c.Statuses(time.Second)
		id := ""
		for i, st := range sts {
			if errs[i] != nil || st.Witness == nil || st.Witness.ID == "" || (id != "" && st.Witness.ID != id) {
				return fmt.Errorf("%s: %v %+v", c.Masters[i].Addr, errs[i], st.Witness)
			}
			id = st.Witness.ID
			if st.Role == roles.Leader {
				if st.InForce != st.ConfigVersion || len(st.Tallies) != 1 || !st.Tallies[0].Witness || st.Voters != len(c.CS) {
					return fmt.Errorf("LEADER %s: config %d, in force %d, tallies %+v, %d votes", st.Addr, st.ConfigVersion, st.InForce, st.Tallies, st.Voters)
				}
			}
		}
		r.id = id
		return nil
	})
	i, st, err := c.WaitLeader(5*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two sites up in %v: masters %s, witness %s on versitygw %s; LEADER %s (site %s) epoch %d",
		time.Since(began).Round(time.Millisecond), s.MasterHost(), r.id, store.Endpoint, st.Addr, r.site[i], st.Epoch)
	return r
}

// layeredCfg is the maps merged, later ones winning.
func layeredCfg(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// status asks master i (inside the rig's namespace, if any).
func (r *witnessRig) status(i int, timeout time.Duration) (protocol.StatusResp, error) {
	return witnessrig.Status(r.c, i, timeout)
}

// mfscli runs mfscli against every master (inside the namespace, if any).
func (r *witnessRig) mfscli(args ...string) (string, error) {
	out, err := witnessrig.Mfscli(r.c, bin, args...)
	return string(out), err
}

// leaderCounting waits for a LEADER counting want votes and returns it.
func (r *witnessRig) leaderCounting(within time.Duration, want int) int {
	r.t.Helper()
	lead := -1
	eventually(r.t, within, 100*time.Millisecond, fmt.Sprintf("a LEADER counting %d chunkservers", want), func() error {
		i, st, err := r.c.WaitLeader(time.Second, 50*time.Millisecond)
		if err != nil {
			return err
		}
		if st.Voters != want {
			return fmt.Errorf("LEADER %s with %d/%d votes", st.Addr, st.Voters, st.Registered)
		}
		lead = i
		return nil
	})
	return lead
}

// procs are every process of a site: its masters (with their indices) and
// its chunkservers.
func (r *witnessRig) procs(site string) ([]int, []*cluster.Proc) { return r.l.Procs(r.c, site) }

// witnessCalls sums mfs_master_witness_requests_total in each running
// master's /metrics (port 9425 on its address); -1 for one not running.
func (r *witnessRig) witnessCalls() ([]float64, error) {
	hc := &http.Client{Timeout: 3 * time.Second}
	out := make([]float64, len(r.c.Masters))
	for i, p := range r.c.Masters {
		if !p.Running() {
			out[i] = -1
			continue
		}
		resp, err := hc.Get(fmt.Sprintf("http://%s:9425/metrics", p.Addr))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "mfs_master_witness_requests_total{") {
				continue
			}
			f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				resp.Body.Close()
				return nil, fmt.Errorf("%s: %q: %v", p.Addr, line, err)
			}
			out[i] += f
		}
		resp.Body.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// statusCalls sums each master's witness calls as its status answer
// counts them (Witness.Calls).
func (r *witnessRig) statusCalls() []uint64 {
	sts, errs := r.c.Statuses(time.Second)
	out := make([]uint64, len(sts))
	for i, st := range sts {
		if errs[i] != nil || st.Witness == nil {
			continue
		}
		for _, n := range st.Witness.Calls {
			out[i] += n
		}
	}
	return out
}

// leaderWatch polls every master's status every 50 ms and records every
// round in which two masters say LEADER, and every LEADER answer with the
// instant its request was sent.
type leaderWatch struct {
	c    *cluster.Cluster
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	rounds  int
	doubles []string
	leaders []leaderSeen
}

type leaderSeen struct {
	master int
	epoch  uint64
	quorum bool
	sent   time.Time
}

func watchLeaders(t *testing.T, c *cluster.Cluster) *leaderWatch {
	w := &leaderWatch{c: c, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for range 10000 { // bounded: the tests end long before
			sent := time.Now()
			sts, errs := c.Statuses(300 * time.Millisecond)
			var ls []string
			w.mu.Lock()
			w.rounds++
			for i, st := range sts {
				if errs[i] == nil && st.Role == roles.Leader {
					ls = append(ls, fmt.Sprintf("%s@%d(quorum %v)", st.Addr, st.Epoch, st.HoldsQuorum))
					w.leaders = append(w.leaders, leaderSeen{master: i, epoch: st.Epoch, quorum: st.HoldsQuorum, sent: sent})
				}
			}
			if len(ls) > 1 {
				w.doubles = append(w.doubles, sent.Format("15:04:05.000")+" "+strings.Join(ls, " "))
			}
			w.mu.Unlock()
			select {
			case <-w.quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *leaderWatch) stop() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
}

// check stops the watch and fails t if two LEADERs were ever seen.
func (w *leaderWatch) check(t *testing.T) {
	t.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.doubles) > 0 {
		t.Fatalf("two masters said LEADER in %d of %d rounds, first: %v", len(w.doubles), w.rounds, w.doubles[:min(5, len(w.doubles))])
	}
	t.Logf("no two LEADERs in %d status rounds", w.rounds)
}

// watchLeadersSeen is every LEADER answer of master i, at any epoch, to a
// request sent after since.
func (r *witnessRig) watchLeadersSeen(w *leaderWatch, i int, since time.Time) []leaderSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []leaderSeen
	for _, l := range w.leaders {
		if l.master == i && l.sent.After(since) {
			out = append(out, l)
		}
	}
	return out
}

// leaderAfter is every LEADER answer of master i at epoch to a request sent
// after since.
func (w *leaderWatch) leaderAfter(i int, epoch uint64, since time.Time) []leaderSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []leaderSeen
	for _, l := range w.leaders {
		if l.master == i && l.epoch == epoch && l.sent.After(since) {
			out = append(out, l)
		}
	}
	return out
}

// siteFailover kills every process of the LEADER's site and waits for a
// LEADER on the other site that counts the witness's lease; it returns that
// LEADER and the time it took.
func (r *witnessRig) siteFailover(lead int, bound time.Duration) (int, time.Duration) {
	t := r.t
	t.Helper()
	site := r.site[lead]
	dead, ps := r.procs(site)
	sts, _ := r.c.Statuses(time.Second)
	oldEpoch := sts[lead].Epoch
	killed := time.Now()
	witnessrig.KillAll(ps)
	next, st, err := r.c.WaitLeader(bound, 20*time.Millisecond, dead...)
	took := time.Since(killed)
	if err != nil {
		t.Fatalf("kill -9 of site %s (LEADER %s at epoch %d): no LEADER on site %s within %v", site, r.c.Masters[lead].Addr, oldEpoch, witnessrig.Other(site), bound)
	}
	if r.site[next] == site || st.Epoch <= oldEpoch {
		t.Fatalf("after site %s was killed: LEADER %s (site %s) at epoch %d", site, st.Addr, r.site[next], st.Epoch)
	}
	if st.Witness == nil || !st.Witness.Held || len(st.Tallies) == 0 || !st.Tallies[0].WitnessHeld {
		t.Fatalf("LEADER %s on half of the sites without the witness's lease: %+v, tallies %+v", st.Addr, st.Witness, st.Tallies)
	}
	line := r.witnessLine()
	if !strings.Contains(line, fmt.Sprintf("held by %s (lease_epoch %d,", st.Addr, st.Witness.RecordEpoch)) {
		t.Errorf("-SIM's witness line does not name the new LEADER %s as the holder: %s", st.Addr, line)
	}
	t.Logf("kill -9 of site %s (LEADER %s at epoch %d): LEADER %s on site %s at epoch %d after %v, holding the lease; -SIM: %s",
		site, r.c.Masters[lead].Addr, oldEpoch, st.Addr, r.site[next], st.Epoch, took.Round(time.Millisecond), line)
	return next, took
}

// witnessLine is the witness line of mfscli -SIM (not on a terminal,
// mfscli prints plain rows: the line is the last field of "Witness:").
func (r *witnessRig) witnessLine() string {
	out, _ := r.mfscli("-SIM")
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Witness:\t") {
			return l[strings.LastIndexByte(l, '\t')+1:]
		}
	}
	return "(no witness line):\n" + out
}

// restartSite starts every process of a site again and waits until the
// LEADER lead counts every chunkserver, the site's masters follow it in
// sync, and the LEADER has set the lease record free again (it held a
// strict majority for a whole WITNESS_LEASE).
func (r *witnessRig) restartSite(site string, lead int) {
	t := r.t
	t.Helper()
	masters, ps := r.procs(site)
	began := time.Now()
	for _, p := range ps {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, 100*time.Millisecond, "site "+site+" back, the lease record free", func() error {
		st, err := r.status(lead, time.Second)
		if err != nil || st.Role != roles.Leader || st.Voters != len(r.c.CS) {
			return fmt.Errorf("LEADER %s: %v, %d votes, %v", r.c.Masters[lead].Addr, st.Role, st.Voters, err)
		}
		if w := st.Witness; w == nil || w.Held || w.RecordState != "free" {
			return fmt.Errorf("LEADER %s: witness %+v", st.Addr, w)
		}
		for _, i := range masters {
			f, err := r.status(i, time.Second)
			if err != nil || f.Role != roles.Follower || f.Behind != 0 {
				return fmt.Errorf("%s: %v, %d behind, %v", r.c.Masters[i].Addr, f.Role, f.Behind, err)
			}
		}
		return nil
	})
	t.Logf("site %s back: every vote counted, its masters in sync and the lease record free after %v", site, time.Since(began).Round(time.Millisecond))
}

// TestWitnessSiteLoss: two masters a site (ACK_REPLICAS 2, so that every
// acknowledged change has a copy on the other site's masters). kill -9 of
// every process of the site without the LEADER: the LEADER takes the
// lease and stays LEADER at its epoch. That site back, kill -9 of every
// process of the LEADER's site leaves a LEADER on the other site
// that holds the witness's lease, within a bound, and every change
// acknowledged to a client (before, during and after the kill) reads back.
// Then the killed site is started again and, once the lease record is
// free, the other site is killed: a LEADER on the first site again.
func TestWitnessSiteLoss(t *testing.T) {
	r := startWitnessRig(t, rigOptions{perSite: 2, masterCfg: map[string]string{"ACK_REPLICAS": "2"}})
	watch := watchLeaders(t, r.c)
	w := startDFWriter(t, r.c)
	w.await(t, 30)
	lead, _, err := r.c.WaitLeader(5*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	const bound = 10 * time.Second

	// The site without the LEADER lost: the LEADER takes the lease and
	// stays, at its epoch.
	st, _ := r.status(lead, time.Second)
	far := witnessrig.Other(r.site[lead])
	_, ps := r.procs(far)
	killed := time.Now()
	witnessrig.KillAll(ps)
	eventually(t, 5*time.Second, 20*time.Millisecond, "the LEADER to hold the lease", func() error {
		now, err := r.status(lead, time.Second)
		if err != nil || now.Role != roles.Leader || now.Epoch != st.Epoch {
			t.Fatalf("site %s (without the LEADER) killed: %s is %v at epoch %d (was LEADER at %d), %v", far, st.Addr, now.Role, now.Epoch, st.Epoch, err)
		}
		if now.Witness == nil || !now.Witness.Held {
			return fmt.Errorf("witness %+v", now.Witness)
		}
		return nil
	})
	t.Logf("kill -9 of site %s: LEADER %s holds the lease %v after the kill; -SIM: %s",
		far, st.Addr, time.Since(killed).Round(time.Millisecond), r.witnessLine())
	holdsLeader(t, r.c, lead, witLease, "site "+far+" (without the LEADER) killed")
	if now, err := r.status(lead, time.Second); err != nil || now.Epoch != st.Epoch {
		t.Fatalf("site %s killed: the LEADER moved from epoch %d to %d (%v)", far, st.Epoch, now.Epoch, err)
	}
	n := w.count()
	w.await(t, n+30)
	r.restartSite(far, lead)

	next, took1 := r.siteFailover(lead, bound)
	n = w.count()
	w.await(t, n+30)
	w.check(t, newClient(t, r.c, time.Second), "after site "+r.site[lead]+" was killed")

	// The other way round.
	r.restartSite(r.site[lead], next)
	n = w.count()
	w.await(t, n+30)
	last, took2 := r.siteFailover(next, bound)
	n = w.count()
	w.await(t, n+30)
	w.halt()
	w.check(t, newClient(t, r.c, time.Second), "after site "+r.site[next]+" was killed")
	watch.check(t)
	t.Logf("site-loss failover: %v (site %s lost), %v (site %s lost); LEADER now %s; %d writes acknowledged, %d failed or unknown",
		took1.Round(time.Millisecond), r.site[lead], took2.Round(time.Millisecond), r.site[next], r.c.Masters[last].Addr, w.count(), w.failed())
}

// TestWitnessStoreDown: versitygw stopped (SIGSTOP: calls hang until their
// timeout) while both sites are up changes nothing: the LEADER stays
// LEADER at the same epoch for three lease lengths, and no master calls
// the store (mfs_master_witness_requests_total and the status answers'
// counts do not move, at rest before the stop either). Then the other
// site is lost as well: half of the sites and no lease, so nobody leads
// (and -SLQ says the store does not answer) until the store is resumed,
// when the LEADER's site takes the lease and leads again.
func TestWitnessStoreDown(t *testing.T) {
	r := startWitnessRig(t, rigOptions{perSite: 1})
	watch := watchLeaders(t, r.c)
	lead, st, err := r.c.WaitLeader(5*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	calls := func(when string) ([]float64, []uint64) {
		t.Helper()
		m, err := r.witnessCalls()
		if err != nil {
			t.Fatalf("%s: /metrics: %v", when, err)
		}
		s := r.statusCalls()
		t.Logf("witness calls %s: /metrics %v, status %v", when, m, s)
		return m, s
	}
	m0, s0 := calls("at rest")
	holdsLeader(t, r.c, lead, witLease, "at rest, the store up")
	m1, s1 := calls("after a lease length at rest")
	if fmt.Sprint(m0, s0) != fmt.Sprint(m1, s1) {
		t.Fatalf("the store was called at rest: /metrics %v then %v, status %v then %v", m0, m1, s0, s1)
	}

	if err := r.store.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	t.Cleanup(func() { _ = r.store.Signal(syscall.SIGCONT) })
	holdsLeader(t, r.c, lead, 3*witLease, "versitygw stopped, both sites up")
	m2, s2 := calls("after three lease lengths with the store stopped")
	if fmt.Sprint(m1, s1) != fmt.Sprint(m2, s2) {
		t.Fatalf("the store was called while both sites were up: /metrics %v then %v, status %v then %v", m1, m2, s1, s2)
	}
	t.Logf("store stopped for %v: LEADER %s stayed LEADER at epoch %d, no store call", time.Since(stoppedAt).Round(time.Millisecond), st.Addr, st.Epoch)

	// The other site lost too: nobody may lead.
	site := r.site[lead]
	dead, ps := r.procs(witnessrig.Other(site))
	witnessrig.KillAll(ps)
	lostAt := time.Now()
	eventually(t, 10*time.Second, 50*time.Millisecond, "the LEADER to lose its quorum (half of the sites, the store stopped)", func() error {
		if ls := r.c.Leaders(); len(ls) > 0 {
			return fmt.Errorf("LEADER %v", ls)
		}
		return nil
	})
	t.Logf("site %s killed with the store stopped: no LEADER after %v", witnessrig.Other(site), time.Since(lostAt).Round(time.Millisecond))
	if err := throughout(2*time.Second, 100*time.Millisecond, func() error {
		if i, st, err := r.c.WaitLeader(100*time.Millisecond, 50*time.Millisecond, dead...); err == nil {
			return fmt.Errorf("%s leads on half of the sites with the store stopped: %+v", r.c.Masters[i].Addr, st.Witness)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var slq string
	eventually(t, 10*time.Second, 200*time.Millisecond, "-SLQ to say the store does not answer", func() error {
		slq, _ = r.mfscli("-SLQ")
		if !strings.Contains(slq, "does not answer") {
			return fmt.Errorf("-SLQ:\n%s", slq)
		}
		return nil
	})
	for _, l := range strings.Split(slq, "\n") {
		if strings.Contains(l, "does not answer") || strings.HasPrefix(strings.TrimSpace(l), "witness:") {
			t.Logf("-SLQ: %s", strings.TrimSpace(l))
		}
	}

	if err := r.store.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	next, st, err := r.c.WaitLeader(15*time.Second, 20*time.Millisecond, dead...)
	if err != nil {
		t.Fatalf("store resumed: %v", err)
	}
	if r.site[next] != site || st.Witness == nil || !st.Witness.Held {
		t.Fatalf("store resumed: LEADER %s (site %s), witness %+v", st.Addr, r.site[next], st.Witness)
	}
	t.Logf("store resumed: LEADER %s at epoch %d with the lease after %v", st.Addr, st.Epoch, time.Since(resumed).Round(time.Millisecond))
	// The counts that stood still above do count: the lease was taken.
	if m3, err := r.witnessCalls(); err != nil || m3[next] <= m2[next] {
		t.Fatalf("mfs_master_witness_requests_total of %s after it took the lease: %v (before: %v) %v", st.Addr, m3, m2, err)
	} else {
		t.Logf("witness calls once the lease was taken: /metrics %v", m3)
	}
	watch.check(t)
}

// TestWitnessFrozenSide: SIGSTOP of every process of the LEADER's site
// (its master and chunkservers) for longer than the witness's lease: the
// other site elects a LEADER with the lease. After SIGCONT the old LEADER
// never answers LEADER at its old epoch (not to the status request that
// waited in its socket, not to any request sent after the freeze), no two
// masters ever say LEADER, and every acknowledged change reads back.
func TestWitnessFrozenSide(t *testing.T) {
	r := startWitnessRig(t, rigOptions{perSite: 1})
	watch := watchLeaders(t, r.c)
	w := startDFWriter(t, r.c)
	w.await(t, 20)
	lead, st, err := r.c.WaitLeader(5*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	oldEpoch, old := st.Epoch, r.c.Masters[lead]
	site := r.site[lead]
	_, ps := r.procs(site)
	for _, p := range ps {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	cont := func() {
		for _, p := range ps {
			_ = p.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(cont)
	for _, p := range ps {
		if err := stopped(p.Pid(), 5*time.Second); err != nil {
			cont()
			t.Fatal(err)
		}
	}
	frozen := time.Now()
	// A status request waits in the frozen LEADER's socket.
	waiting := make(chan statusAnswer, 1)
	go func() {
		st, err := client.Status(cluster.ClientAddr(old.Addr), 20*time.Second)
		waiting <- statusAnswer{st, err}
	}()
	next, nextEpoch, err := otherLeader(r.c, lead, oldEpoch, 15*time.Second)
	if err != nil {
		cont()
		t.Fatalf("site %s frozen: %v", site, err)
	}
	took := time.Since(frozen)
	nst, _ := r.status(next, time.Second)
	if r.site[next] == site || nst.Witness == nil || !nst.Witness.Held {
		cont()
		t.Fatalf("site %s frozen: LEADER %s (site %s), witness %+v", site, nst.Addr, r.site[next], nst.Witness)
	}
	t.Logf("site %s frozen (LEADER %s at epoch %d): LEADER %s on site %s at epoch %d after %v, holding the lease",
		site, old.Addr, oldEpoch, nst.Addr, r.site[next], nextEpoch, took.Round(time.Millisecond))
	// Frozen past the witness's lease, the new LEADER undisturbed.
	if rest := witLease + time.Second - time.Since(frozen); rest > 0 {
		if err := throughout(rest, 100*time.Millisecond, func() error {
			st, err := r.status(next, time.Second)
			if err != nil || st.Role != roles.Leader || st.Epoch != nextEpoch {
				return fmt.Errorf("the new LEADER %s: %v at %d, %v", r.c.Masters[next].Addr, st.Role, st.Epoch, err)
			}
			return nil
		}); err != nil {
			cont()
			t.Fatal(err)
		}
	}
	cont()
	resumed := time.Now()
	t.Logf("site %s resumed after %v frozen", site, resumed.Sub(frozen).Round(time.Millisecond))

	s := <-waiting
	if s.err == nil && (s.st.Role == roles.Leader || s.st.HoldsQuorum) {
		t.Fatalf("the resumed old LEADER answered the status request that waited in its socket: %v at epoch %d, quorum %v", s.st.Role, s.st.Epoch, s.st.HoldsQuorum)
	}
	t.Logf("the status request that waited in the frozen LEADER's socket: %s", s)
	// Bounded: every answer for 3 s after the resume.
	if err := throughout(3*time.Second, 50*time.Millisecond, func() error {
		st, err := r.status(lead, time.Second)
		if err == nil && st.Role == roles.Leader && st.Epoch == oldEpoch {
			return fmt.Errorf("the resumed %s answered LEADER at its old epoch %d", old.Addr, oldEpoch)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen := watch.leaderAfter(lead, oldEpoch, frozen); len(seen) > 0 {
		t.Fatalf("%s said LEADER at its old epoch %d to %d requests sent after the freeze, first sent %v after it",
			old.Addr, oldEpoch, len(seen), seen[0].sent.Sub(frozen))
	}
	n := w.count()
	w.await(t, n+20)
	w.halt()
	w.check(t, newClient(t, r.c, time.Second), "after the freeze")
	watch.check(t)
}

// TestWitnessPartition (as root: a network namespace of its own) cuts
// site a from site b (every packet dropped both ways, masters and
// chunkservers alike; both still reach the store): exactly one side has a
// LEADER, the one that holds the witness's lease, and never two, through
// three lease lengths; after the heal one LEADER is left.
func TestWitnessPartition(t *testing.T) {
	ns := fmt.Sprintf("mfs-wit-%d", os.Getpid())
	if err := cluster.NewNetns(ns); err != nil {
		t.Skipf("no network namespace for a partition: %v", err)
	}
	t.Cleanup(func() { _ = cluster.DeleteNetns(ns) })
	r := startWitnessRig(t, rigOptions{perSite: 1, netns: ns})
	watch := watchLeaders(t, r.c)
	lead, st, err := r.c.WaitLeader(5*time.Second, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	pref := 100
	var prefs []int
	for _, d := range [][2]string{{r.ranges["a"].String(), r.ranges["b"].String()}, {r.ranges["b"].String(), r.ranges["a"].String()}} {
		if err := cluster.Cut(ns, d[0], d[1], pref); err != nil {
			t.Fatal(err)
		}
		prefs = append(prefs, pref)
		pref++
	}
	cut := time.Now()
	t.Logf("sites cut apart; the LEADER was %s (site %s) at epoch %d", st.Addr, r.site[lead], st.Epoch)
	// Settled within two lease lengths: one LEADER, holding the lease.
	var holder int
	eventually(t, 2*witLease, 50*time.Millisecond, "one LEADER holding the witness's lease", func() error {
		i, st, err := r.c.WaitLeader(200*time.Millisecond, 50*time.Millisecond)
		if err != nil {
			return err
		}
		if st.Witness == nil || !st.Witness.Held {
			return fmt.Errorf("LEADER %s without the lease: %+v", st.Addr, st.Witness)
		}
		holder = i
		return nil
	})
	t.Logf("partition: LEADER %s (site %s) holds the lease %v after the cut", r.c.Masters[holder].Addr, r.site[holder], time.Since(cut).Round(time.Millisecond))
	if err := throughout(3*witLease, 100*time.Millisecond, func() error {
		sts, errs := r.c.Statuses(time.Second)
		var ls []string
		for i, st := range sts {
			if errs[i] == nil && st.Role == roles.Leader {
				ls = append(ls, fmt.Sprintf("%s (site %s) at %d", st.Addr, r.site[i], st.Epoch))
			}
		}
		if len(ls) != 1 || errs[holder] != nil || sts[holder].Role != roles.Leader {
			return fmt.Errorf("LEADERs during the partition: %v", ls)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range r.c.Masters {
		if r.site[i] == r.site[holder] {
			continue
		}
		w := r.watchLeadersSeen(watch, i, cut)
		if len(w) > 0 {
			t.Fatalf("%s (site %s, cut off from the lease's holder) said LEADER during the partition: %d answers, first at epoch %d", r.c.Masters[i].Addr, r.site[i], len(w), w[0].epoch)
		}
		if st, err := r.status(i, time.Second); err == nil {
			t.Logf("partition: %s (site %s) is %v at epoch %d; witness: waiting %v, record %s by %s at lease_epoch %d",
				st.Addr, r.site[i], st.Role, st.Epoch, st.Witness != nil && st.Witness.Waiting, st.Witness.RecordState, st.Witness.RecordHolder, st.Witness.RecordEpoch)
		}
	}
	t.Logf("partition: only %s (site %s) led through %v; -SIM witness line: %s", r.c.Masters[holder].Addr, r.site[holder], 3*witLease, r.witnessLine())
	if out, err := r.mfscli("-SLQ"); err == nil {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "Quorum:") {
				t.Logf("-SLQ: %s", l)
			}
		}
	}
	for _, p := range prefs {
		if err := cluster.Heal(ns, p); err != nil {
			t.Fatal(err)
		}
	}
	healed := time.Now()
	r.leaderCounting(20*time.Second, len(r.c.CS))
	t.Logf("healed: a LEADER counting every chunkserver after %v", time.Since(healed).Round(time.Millisecond))
	watch.check(t)
}

// racyS3 is a small S3 server that is not fit to be a witness: a
// conditional PUT checks its condition, sleeps, then writes, with no lock
// held in between, so several concurrent writers all win. Path-style, one
// bucket, any credentials (the signature is not checked).
type racyS3 struct {
	bucket string
	delay  time.Duration

	mu      sync.Mutex
	objects map[string]racyObject
}

type racyObject struct {
	body []byte
	etag string
}

func s3Fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>racy</RequestId></Error>`, code, code)
}

func (s *racyS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != s.bucket {
		s3Fail(w, http.StatusNotFound, "NoSuchBucket")
		return
	}
	if key == "" {
		s3Fail(w, http.StatusNotImplemented, "NotImplemented")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		o, ok := s.objects[key]
		s.mu.Unlock()
		if !ok {
			s3Fail(w, http.StatusNotFound, "NoSuchKey")
			return
		}
		w.Header().Set("ETag", `"`+o.etag+`"`)
		_, _ = w.Write(o.body)
	case http.MethodDelete:
		s.mu.Lock()
		delete(s.objects, key)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPut:
		inm, im := r.Header.Get("If-None-Match"), strings.Trim(r.Header.Get("If-Match"), `"`)
		s.mu.Lock()
		o, exists := s.objects[key]
		s.mu.Unlock()
		switch {
		case inm == "*" && exists, im != "" && exists && o.etag != im:
			s3Fail(w, http.StatusPreconditionFailed, "PreconditionFailed")
			return
		case im != "" && !exists:
			s3Fail(w, http.StatusNotFound, "NoSuchKey")
			return
		}
		time.Sleep(s.delay) // the bug: the check and the write are apart
		sum := md5.Sum(body)
		n := racyObject{body: body, etag: hex.EncodeToString(sum[:])}
		s.mu.Lock()
		s.objects[key] = n
		s.mu.Unlock()
		w.Header().Set("ETag", `"`+n.etag+`"`)
	default:
		s3Fail(w, http.StatusMethodNotAllowed, "MethodNotAllowed")
	}
}

// TestWitnessSelfTestRefuses: a master whose store lets two concurrent
// conditional writers win (racyS3) is refused by its self-test at start:
// its status says so (the finding, not "passed"), mfscli -CWITNESS test
// reports the race and exits 1, and -CWITNESS on is refused with the
// finding. The keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
// here (no WITNESS_CREDENTIALS).
func TestWitnessSelfTestRefuses(t *testing.T) {
	stub := httptest.NewServer(&racyS3{bucket: witBucket, delay: 20 * time.Millisecond, objects: map[string]racyObject{}})
	t.Cleanup(stub.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", witAccess)
	t.Setenv("AWS_SECRET_ACCESS_KEY", witSecret)
	dir := t.TempDir()
	b := base()
	s := cluster.Spec{Dir: dir, Bin: bin,
		Masters: []netip.Addr{netip.AddrFrom4([4]byte{127, b, 1, 11})},
		CS:      []cluster.CS{{Addr: netip.AddrFrom4([4]byte{127, b, 1, 1}), VoterOnly: true}},
		MasterCfg: layeredCfg(fastStart, map[string]string{"WITNESS_ENDPOINT": stub.URL, "WITNESS_BUCKET": witBucket,
			"WITNESS_LEASE": witLease.String(), "WITNESS_RENEW": witRenew.String(), "WITNESS_CALL_TIMEOUT": witCallTimeout.String()})}
	c, err := cluster.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			dumpLogs(t, dir)
		}
	})
	const finding = "does not serialise conditional writes"
	var st protocol.StatusResp
	eventually(t, 40*time.Second, 100*time.Millisecond, "the LEADER's self-test to end", func() error {
		if !c.Masters[0].Running() {
			t.Fatalf("%s exited", c.Masters[0].Name)
		}
		var err error
		if st, err = client.Status(cluster.ClientAddr(s.Masters[0]), time.Second); err != nil {
			return err
		}
		if st.Role != roles.Leader || st.Witness == nil || st.Witness.SelfTest == "" {
			return fmt.Errorf("%v, witness %+v", st.Role, st.Witness)
		}
		return nil
	})
	if st.Witness.SelfTest == protocol.WitnessSelfTestPassed || !strings.Contains(st.Witness.SelfTest, finding) {
		t.Fatalf("the self-test at start on a store that lets two writers win: %q", st.Witness.SelfTest)
	}
	t.Logf("status: self-test %q", st.Witness.SelfTest)
	mustLog(t, c.Masters[0].Log, finding)

	out, err := mfscli(t, c, "-CWITNESS", "test")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "self-test failed") || !strings.Contains(out, finding) {
		t.Fatalf("mfscli -CWITNESS test on a racy store: %v\n%s", err, out)
	}
	t.Logf("mfscli -CWITNESS test: %s", strings.TrimSpace(out))
	if st, err = client.Status(cluster.ClientAddr(s.Masters[0]), time.Second); err != nil || st.Witness == nil || !strings.Contains(st.Witness.SelfTest, finding) {
		t.Fatalf("status after -CWITNESS test: %+v %v", st.Witness, err)
	}
	out, err = mfscli(t, c, "-CWITNESS", "on")
	if err == nil || !strings.Contains(out, finding) {
		t.Fatalf("mfscli -CWITNESS on with a refused store: %v\n%s", err, out)
	}
	t.Logf("mfscli -CWITNESS on: %s", strings.TrimSpace(out))
	if out, err := mfscli(t, c, "-SIM"); err != nil || !strings.Contains(out, "witness: not configured") {
		t.Fatalf("-SIM: %v\n%s", err, out)
	}
}
