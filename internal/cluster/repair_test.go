package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/adversary"
	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// repairMaster runs `mfsmaster -c CFG [--remove-chunkservers IDS] repair`
// for master p (its own config file), within 20 s.
func repairMaster(p *cluster.Proc, remove string) (string, error) {
	args := []string{"-c", p.Cfg}
	if remove != "" {
		args = append(args, "--remove-chunkservers", remove)
	}
	args = append(args, "repair")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "mfsmaster"), args...).CombinedOutput()
	return string(out), err
}

// repairListing parses the member lines of `mfsmaster repair` ("  ID\tADDR:PORT[  (forced out...)]").
var repairListing = regexp.MustCompile(`(?m)^\s+(\d+)\t([0-9.]+):(\d+)(.*)$`)

type listedCS struct {
	ID     wire.CSID
	Addr   netip.Addr
	Port   uint16
	Forced bool
}

func parseRepairListing(out string) []listedCS {
	var l []listedCS
	for _, m := range repairListing.FindAllStringSubmatch(out, -1) {
		id, _ := strconv.ParseUint(m[1], 10, 32)
		port, _ := strconv.ParseUint(m[3], 10, 16)
		addr, err := netip.ParseAddr(m[2])
		if err != nil {
			continue
		}
		l = append(l, listedCS{ID: wire.CSID(id), Addr: addr, Port: uint16(port), Forced: strings.Contains(m[4], "forced out")})
	}
	return l
}

func idList(ids []wire.CSID) string {
	var s []string
	for _, id := range ids {
		s = append(s, strconv.FormatUint(uint64(id), 10))
	}
	return strings.Join(s, ",")
}

// slqVerdict is mfscli -SLQ -j's quorum view (held, verdict).
func slqVerdict(t *testing.T, c *cluster.Cluster) (bool, string, string) {
	out, _ := mfscli(t, c, "-SLQ", "-j")
	var j struct {
		Dataset struct {
			Quorum *struct {
				Held    bool   `json:"held"`
				Verdict string `json:"verdict"`
			} `json:"quorum"`
		} `json:"dataset"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.Dataset.Quorum == nil {
		return false, "", out
	}
	return j.Dataset.Quorum.Held, j.Dataset.Quorum.Verdict, out
}

// TestRepairStuffedRegistry (issue 10, H1): a holder of the AUTH_CODE
// registers made-up chunkservers (4 from one source, the most a minute
// allows) beside the one real chunkserver; they vote, then leave for good.
// From then on no master can win: kill -9 and restart of the LEADER, and
// nobody is elected. The way out is offline (docs/operations.md, "A
// registry no LEADER can be elected under"): every master stopped,
// `mfsmaster repair` lists the registry, `--remove-chunkservers` with the
// fakes' ids on every master (refused while a master runs, and for every
// member), then the masters start, elect a LEADER, the LEADER removes the
// fakes from the registry, and a client write succeeds. Throughout, never
// two LEADERs holding quorum, and no daemon panics.
func TestRepairStuffedRegistry(t *testing.T) {
	s := startStuffedRegistry(t)
	s.flood(t)
	s.stuck(t)
	s.writeRefusedWhileStuck(t)
	s.stopMasters(t)
	s.listRegistry(t)
	s.refusedRepairs(t)
	s.refusedWhileRunning(t)
	s.repair(t)
	lead, restarted := s.restartElects(t)
	s.fakesLeave(t, restarted)
	s.writeAfterRepair(t, lead)
	s.a.aftermath()
	t.Logf("%v in all", time.Since(s.began).Round(time.Millisecond))
}

// stuffedReal is how many real chunkservers TestRepairStuffedRegistry
// runs.
const stuffedReal = 1

// stuffedRegistry is TestRepairStuffedRegistry's fixture: the cluster
// under attack and what the flood and the listing found.
type stuffedRegistry struct {
	began      time.Time
	a          *advCluster
	realID     wire.CSID           // the real chunkserver's id
	fakeAddrs  map[netip.Addr]bool // the flooders' source addresses
	registered int                 // the registry's members after the flood
	fakes      int                 // registered - stuffedReal
	fakeIDs    []wire.CSID         // the fakes' ids, as the listing names them
	ids        string              // fakeIDs as --remove-chunkservers takes them
}

// startStuffedRegistry starts two masters and the one real chunkserver,
// with AUTH_CODE set.
func startStuffedRegistry(t *testing.T) *stuffedRegistry {
	t.Helper()
	s := &stuffedRegistry{began: time.Now(), fakeAddrs: map[netip.Addr]bool{}}
	s.a = startAdv(t, 2, stuffedReal, nil)
	s.realID = s.a.csID(0)
	return s
}

// flood is step 1, the flood: fakes from one source with the code,
// voting for a while, then gone. More than one round if the first gets
// fewer ids (each from another source address). It fails the test unless
// the fakes outnumber the real chunkservers.
func (s *stuffedRegistry) flood(t *testing.T) {
	t.Helper()
	const real = stuffedReal
	a := s.a
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	registered := real
	for round := 0; round < 3 && registered-real < 4; round++ {
		flooder := a.attacker(uint8(91 - round))
		lead := a.leaderNow()
		if lead < 0 {
			var err error
			if lead, err = a.steadyLeader(10 * time.Second); err != nil {
				t.Fatalf("no LEADER to flood (round %d): %v", round, err)
			}
		}
		a.proveCode(flooder)
		r, err := adversary.RegistrationFlood{Target: a.target(lead, 9420, flooder, advCode),
			Ports: adversary.FloodPorts(41001, 4-(registered-real)), Window: 4 * time.Second, Hold: 4 * time.Second}.Run(ctx)
		if err != nil {
			t.Fatalf("flood from %s: %v", flooder, err)
		}
		s.fakeAddrs[flooder] = true
		// The registry as the master that reports the most members sees it
		// (what it holds after 3 s, if not every id given out shows).
		_ = waitUntil(3*time.Second, 100*time.Millisecond, func() error {
			sts, errs := a.Statuses(time.Second)
			for i := range sts {
				if errs[i] == nil && sts[i].Registered > registered {
					registered = sts[i].Registered
				}
			}
			if registered-real < len(r.Assigned) {
				return fmt.Errorf("%d members", registered)
			}
			return nil
		})
		t.Logf("flood %d from %s at %s: %d asked, %d ids given (%v), %d fakes voted (%d acks); registry now %d members (%d real)",
			round, flooder, a.Masters[lead].Addr, r.Asked, len(r.Assigned), r.Assigned, r.Voters, r.Acks, registered, real)
	}
	s.registered, s.fakes = registered, registered-real
	if s.fakes <= real {
		t.Fatalf("the flood registered %d fakes beside %d real chunkservers: not enough to stick the cluster", s.fakes, real)
	}
	if out, err := mfscli(t, a.Cluster, "-SCS"); err == nil {
		t.Logf("-SCS after the flood:\n%s", out)
	}
}

// stuck is step 2: whichever master leads (if any still does) is killed
// and restarted, none wins within 8 s, and mfscli -SLQ says quorum is
// missing.
func (s *stuffedRegistry) stuck(t *testing.T) {
	t.Helper()
	a := s.a
	time.Sleep(500 * time.Millisecond)
	old := a.leaderNow()
	if old < 0 {
		old = a.lead
	}
	killedAt := time.Now()
	a.kill(a.Masters[old])
	if err := a.Masters[old].Start(); err != nil {
		t.Fatal(err)
	}
	if _, st, err := a.WaitLeader(8*time.Second, 100*time.Millisecond); err == nil {
		t.Fatalf("the cluster is not stuck: %s became LEADER at epoch %d with %d of %d votes, %v after the kill -9 of %s",
			st.Addr, st.Epoch, st.Voters, st.Registered, time.Since(killedAt).Round(time.Millisecond), a.Masters[old].Addr)
	}
	held, verdict, raw := slqVerdict(t, a.Cluster)
	t.Logf("stuck: no LEADER %v after the kill -9 of %s; -SLQ verdict: %q", time.Since(killedAt).Round(time.Millisecond), a.Masters[old].Addr, verdict)
	if held || !strings.Contains(verdict, "no quorum") && !strings.Contains(verdict, "no LEADER") {
		t.Errorf("mfscli -SLQ does not say quorum is missing (held %v):\n%s", held, raw)
	}
}

// writeRefusedWhileStuck: a client write does not succeed within 1.5 s
// while the cluster is stuck.
func (s *stuffedRegistry) writeRefusedWhileStuck(t *testing.T) {
	t.Helper()
	cl, err := client.New(client.Config{MasterHost: s.a.Spec.MasterHost()})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, err = cl.Put(wctx, "repair/stuck", "v")
	wcancel()
	cl.Close()
	if err == nil {
		t.Errorf("a write succeeded while the cluster was stuck")
	} else {
		t.Logf("a write while stuck: %v", err)
	}
}

// stopMasters is step 3: every master stopped in order.
func (s *stuffedRegistry) stopMasters(t *testing.T) {
	t.Helper()
	for _, p := range s.a.Masters {
		p.Term(10 * time.Second)
		if p.Running() {
			t.Fatalf("%s did not exit", p.Name)
		}
	}
}

// listRegistry: the listing on every master names the fakes (by their
// source address) and the real one, the same on every master; it notes
// the fakes' ids.
func (s *stuffedRegistry) listRegistry(t *testing.T) {
	t.Helper()
	a := s.a
	var listed [][]listedCS
	for _, p := range a.Masters {
		out, err := repairMaster(p, "")
		if err != nil {
			t.Fatalf("%s: mfsmaster repair: %v\n%s", p.Name, err, out)
		}
		t.Logf("%s: mfsmaster repair:\n%s", p.Name, strings.TrimRight(out, "\n"))
		listed = append(listed, parseRepairListing(out))
	}
	for _, cs := range listed[0] {
		if s.fakeAddrs[cs.Addr] {
			s.fakeIDs = append(s.fakeIDs, cs.ID)
		} else if cs.Addr != a.CS[0].Addr || cs.ID != s.realID {
			t.Errorf("the listing names %d %s:%d, neither the real chunkserver (%d %s) nor a fake", cs.ID, cs.Addr, cs.Port, s.realID, a.CS[0].Addr)
		}
	}
	if len(s.fakeIDs) != s.fakes || len(listed[0]) != s.registered {
		t.Fatalf("the listing of %s names %d fakes among %d members (the masters reported %d fakes among %d)", a.Masters[0].Name, len(s.fakeIDs), len(listed[0]), s.fakes, s.registered)
	}
	for i := 1; i < len(listed); i++ {
		if !slices.Equal(listed[i], listed[0]) {
			t.Errorf("%s lists another registry than %s: %v vs %v", a.Masters[i].Name, a.Masters[0].Name, listed[i], listed[0])
		}
	}
	s.ids = idList(s.fakeIDs)
}

// refusedRepairs: removing every member (nothing left to count) and
// removing an id that is not registered are refused.
func (s *stuffedRegistry) refusedRepairs(t *testing.T) {
	t.Helper()
	a := s.a
	if out, err := repairMaster(a.Masters[0], idList(append(slices.Clone(s.fakeIDs), s.realID))); err == nil {
		t.Errorf("removing every member was accepted:\n%s", out)
	} else {
		t.Logf("removing every member: %v: %s", err, strings.TrimSpace(out))
	}
	if out, err := repairMaster(a.Masters[0], "999"); err == nil {
		t.Errorf("removing an id that is not registered was accepted:\n%s", out)
	}
}

// refusedWhileRunning: any repair while the master runs is refused,
// saying the master must be stopped; the master is stopped again after.
func (s *stuffedRegistry) refusedWhileRunning(t *testing.T) {
	t.Helper()
	a := s.a
	p := a.Masters[0]
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, 100*time.Millisecond, p.Name+" to answer after a start", func() error {
		_, err := a.status(0)
		return err
	})
	out, err := repairMaster(p, s.ids)
	var ee *exec.ExitError
	if err == nil || !errors.As(err, &ee) || !strings.Contains(out, "stopped") {
		t.Errorf("repair while %s runs: %v\n%s", p.Name, err, out)
	} else {
		t.Logf("repair while %s runs: %v: %s", p.Name, err, strings.TrimSpace(out))
	}
	p.Term(10 * time.Second)
	if p.Running() {
		t.Fatalf("%s did not exit", p.Name)
	}
}

// repair is step 4: the repair, the same on every master; the listing
// then marks exactly the fakes forced out.
func (s *stuffedRegistry) repair(t *testing.T) {
	t.Helper()
	for _, p := range s.a.Masters {
		out, err := repairMaster(p, s.ids)
		if err != nil {
			t.Fatalf("%s: mfsmaster --remove-chunkservers %s repair: %v\n%s", p.Name, s.ids, err, out)
		}
		t.Logf("%s: %s", p.Name, strings.TrimSpace(out))
		out, _ = repairMaster(p, "")
		for _, cs := range parseRepairListing(out) {
			if cs.Forced != slices.Contains(s.fakeIDs, cs.ID) {
				t.Errorf("%s: after the repair the listing marks %d forced out: %v", p.Name, cs.ID, cs.Forced)
			}
		}
	}
}

// restartElects is step 5: the masters started again elect a LEADER
// within 15 s. It returns the LEADER and when the masters were started.
func (s *stuffedRegistry) restartElects(t *testing.T) (int, time.Time) {
	t.Helper()
	a := s.a
	restarted := time.Now()
	for _, p := range a.Masters {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	lead, st, err := a.WaitLeader(15*time.Second, 100*time.Millisecond)
	if err != nil {
		sts, errs := a.Statuses(time.Second)
		for i := range sts {
			t.Logf("%s: %v %v at epoch %d, %d of %d votes: %v", a.Masters[i].Addr, sts[i].Role, sts[i].Transition, sts[i].Epoch, sts[i].Voters, sts[i].Registered, errs[i])
		}
		_, verdict, _ := slqVerdict(t, a.Cluster)
		t.Fatalf("after the repair: %v (-SLQ: %s)", err, verdict)
	}
	t.Logf("after the repair: LEADER %s at epoch %d after %v (%d of %d votes)", st.Addr, st.Epoch,
		time.Since(restarted).Round(time.Millisecond), st.Voters, st.Registered)
	s.logLeftOut(t)
	return lead, restarted
}

// logLeftOut logs mfscli -SCS -j's members and whom they are left out
// by.
func (s *stuffedRegistry) logLeftOut(t *testing.T) {
	t.Helper()
	out, err := mfscli(t, s.a.Cluster, "-SCS", "-j")
	if err != nil {
		return
	}
	var j struct {
		Dataset struct {
			Chunkservers []struct {
				ID        wire.CSID    `json:"csid"`
				LeftOutBy []netip.Addr `json:"left_out_by"`
			} `json:"chunkservers"`
		} `json:"dataset"`
	}
	if json.Unmarshal([]byte(out), &j) == nil {
		var lo []string
		for _, r := range j.Dataset.Chunkservers {
			if len(r.LeftOutBy) > 0 {
				lo = append(lo, fmt.Sprintf("%d by %v", r.ID, r.LeftOutBy))
			}
		}
		t.Logf("-SCS right after the election: %d members, left out: %v", len(j.Dataset.Chunkservers), lo)
	}
}

// fakesLeave: within 10 s every master counts only the real chunkserver,
// its config in force.
func (s *stuffedRegistry) fakesLeave(t *testing.T, restarted time.Time) {
	t.Helper()
	const real = stuffedReal
	a := s.a
	var last []string
	eventually(t, 10*time.Second, 100*time.Millisecond, fmt.Sprintf("the fakes %s to leave the registry after the election", s.ids), func() error {
		sts, errs := a.Statuses(time.Second)
		removed := true
		last = last[:0]
		for i := range sts {
			if errs[i] != nil {
				removed = false
				last = append(last, fmt.Sprintf("%s: %v", a.Masters[i].Addr, errs[i]))
				continue
			}
			last = append(last, fmt.Sprintf("%s: %v, %d registered, config %d in force %d", a.Masters[i].Addr, sts[i].Role, sts[i].Registered, sts[i].ConfigVersion, sts[i].InForce))
			removed = removed && sts[i].Registered == real && sts[i].InForce == sts[i].ConfigVersion
		}
		if !removed {
			return fmt.Errorf("%v", last)
		}
		return nil
	})
	t.Logf("the fakes are out of the registry %v after the restart: %v", time.Since(restarted).Round(time.Millisecond), last)
}

// writeAfterRepair: a client write succeeds, mfscli -SLQ says quorum is
// held, and the LEADER lead still reports LEADER.
func (s *stuffedRegistry) writeAfterRepair(t *testing.T, lead int) {
	t.Helper()
	a := s.a
	if lines := cluster.LogLines(a.Masters[lead].Log, 3, "forced-removal"); len(lines) > 0 {
		t.Logf("LEADER log: %s", strings.Join(lines, " | "))
	}
	cl := newClient(t, a.Cluster, 0)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if v, err := cl.Put(wctx, "repair/after", "v"); err != nil {
		t.Errorf("a write after the repair: %v", err)
	} else {
		t.Logf("a write after the repair: version %d", v)
	}
	if held, verdict, raw := slqVerdict(t, a.Cluster); !held {
		t.Errorf("after the repair mfscli -SLQ says quorum is not held:\n%s", raw)
	} else {
		t.Logf("-SLQ verdict: %s", verdict)
	}
	if sts, errs := a.Statuses(time.Second); errs[lead] != nil || sts[lead].Role != roles.Leader {
		t.Errorf("the LEADER %s now reports %v: %v", a.Masters[lead].Addr, sts[lead].Role, errs[lead])
	}
}
