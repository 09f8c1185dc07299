package cluster_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// fenceCycles: how many times TestFrozenLeaderNeverSaysLeader freezes the
// LEADER. A cycle is about one lease of freeze plus the settling after it:
// under a second with the defaults (20 cycles took 17 s on 2 cores).
const fenceCycles = 20

// TestFrozenLeaderNeverSaysLeader (issue 11): a LEADER frozen (SIGSTOP)
// with a /metrics scrape, a /healthz check and a 9421 status request (as
// mfscli asks) waiting in its sockets, deposed meanwhile by a LEADER at a
// higher epoch, answers all three after SIGCONT without saying LEADER:
// no role gauge at 1 on LEADER, no quorum held, no 200, no status with
// role LEADER. Nothing is timed: the order of events is the assertion
// (the new LEADER is seen by the other masters before SIGCONT, so no
// answer built after it may say LEADER). Repeated fenceCycles times, each
// time freezing whichever master leads.
func TestFrozenLeaderNeverSaysLeader(t *testing.T) {
	c, lead := start(t, nil)
	began := time.Now()
	cut := 0
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for cycle := 1; cycle <= fenceCycles; cycle++ {
		old := c.Masters[lead]
		sts, errs := c.Statuses(2 * time.Second)
		if errs[lead] != nil || sts[lead].Role != roles.Leader {
			t.Fatalf("cycle %d: %s is not LEADER before the freeze: %+v %v", cycle, old.Addr, sts[lead], errs[lead])
		}
		oldEpoch := sts[lead].Epoch

		if err := old.Signal(sigStop); err != nil {
			t.Fatal(err)
		}
		if err := stopped(old.Pid(), 5*time.Second); err != nil {
			_ = old.Signal(sigCont)
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		// The three requests, sent once every thread has stopped (kill
		// returns before they do: a request sent at once may be answered
		// first, truly, as LEADER), wait in the frozen master's sockets:
		// the kernel accepts for it.
		base := fmt.Sprintf("http://%s:9425", old.Addr)
		metrics, metricsSent := httpAsk(hc, base+"/metrics")
		health, healthSent := httpAsk(hc, base+"/healthz")
		status := make(chan statusAnswer, 1)
		go func() {
			st, err := client.Status(cluster.ClientAddr(old.Addr), 15*time.Second)
			status <- statusAnswer{st, err}
		}()

		next, nextEpoch, err := otherLeader(c, lead, oldEpoch, 10*time.Second)
		if err != nil {
			_ = old.Signal(sigCont)
			t.Fatalf("cycle %d: SIGSTOP of %s: %v", cycle, old.Addr, err)
		}
		// Both HTTP requests were written before SIGCONT (bounded wait;
		// the status request dialed long before: a new LEADER takes a
		// lease).
		for _, sent := range []chan struct{}{metricsSent, healthSent} {
			select {
			case <-sent:
			case <-time.After(5 * time.Second):
				_ = old.Signal(sigCont)
				t.Fatalf("cycle %d: a request to the frozen master was not sent", cycle)
			}
		}
		if err := old.Signal(sigCont); err != nil {
			t.Fatal(err)
		}

		// Every answer was built after SIGCONT, hence after a LEADER at a
		// higher epoch was seen.
		m := <-metrics
		if m.err != nil {
			t.Fatalf("cycle %d: /metrics of the resumed master: %v", cycle, m.err)
		}
		if saysLeader.MatchString(m.body) {
			t.Errorf("cycle %d: the deposed master (epoch %d; LEADER %s at %d seen before SIGCONT) scraped as LEADER:\n%s",
				cycle, oldEpoch, c.Masters[next].Addr, nextEpoch, roleLines(m.body))
		}
		h := <-health
		if h.err != nil {
			t.Fatalf("cycle %d: /healthz of the resumed master: %v", cycle, h.err)
		}
		if h.code == 200 || strings.HasPrefix(h.body, "LEADER") {
			t.Errorf("cycle %d: the deposed master (epoch %d) answered /healthz %d %q", cycle, oldEpoch, h.code, h.body)
		}
		// A status request whose connection was open when the master
		// stepped down is cut by the disconnect rules (roles.md §3.8:
		// clients are disconnected): no answer, and no LEADER either.
		s := <-status
		if s.err != nil && !errors.Is(s.err, client.ErrBusy) {
			t.Fatalf("cycle %d: status of the resumed master: %v", cycle, s.err)
		}
		if s.err != nil {
			cut++
		} else if s.st.Role == roles.Leader || s.st.HoldsQuorum {
			t.Errorf("cycle %d: the deposed master (epoch %d) answered status %v at epoch %d, quorum %v",
				cycle, oldEpoch, s.st.Role, s.st.Epoch, s.st.HoldsQuorum)
		}
		if t.Failed() {
			t.FailNow()
		}
		t.Logf("cycle %d: froze %s (LEADER at %d), %s LEADER at %d; resumed: metrics %s, healthz %d %q, status %s",
			cycle, old.Addr, oldEpoch, c.Masters[next].Addr, nextEpoch, roleOf(m.body), h.code, strings.TrimSpace(h.body), s)

		// Settle before the next freeze: the new LEADER counts every
		// chunkserver again (those promised to the frozen one came over).
		if err := counting(c, next, len(c.CS), 10*time.Second); err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		lead = next
	}
	t.Logf("%d freezes in %v; %d status requests cut by the step-down", fenceCycles, time.Since(began).Round(100*time.Millisecond), cut)
	if cut == fenceCycles {
		t.Error("no status request was answered: the test saw nothing of the status on 9421")
	}
}

type httpAnswer struct {
	code int
	body string
	err  error
}

type statusAnswer struct {
	st  protocol.StatusResp
	err error
}

func (s statusAnswer) String() string {
	if s.err != nil {
		return s.err.Error()
	}
	return fmt.Sprintf("%v at %d", s.st.Role, s.st.Epoch)
}

// httpAsk GETs url in the background; sent is closed once the request
// is written.
func httpAsk(cl *http.Client, url string) (<-chan httpAnswer, chan struct{}) {
	out, sent := make(chan httpAnswer, 1), make(chan struct{})
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		out <- httpAnswer{err: err}
		close(sent)
		return out, sent
	}
	var once sync.Once
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(sent) }) },
	}))
	go func() {
		r, err := cl.Do(req)
		if err != nil {
			out <- httpAnswer{err: err}
			return
		}
		defer r.Body.Close()
		b, err := io.ReadAll(r.Body)
		out <- httpAnswer{code: r.StatusCode, body: string(b), err: err}
	}()
	return out, sent
}

// otherLeader polls the masters other than frozen (never the frozen one:
// its answers would wait) until one reports LEADER holding quorum at an
// epoch above epoch, at most timeout.
func otherLeader(c *cluster.Cluster, frozen int, epoch uint64, timeout time.Duration) (int, uint64, error) {
	next, nextEpoch := -1, uint64(0)
	err := waitUntil(timeout, 20*time.Millisecond, func() error {
		for i, p := range c.Masters {
			if i == frozen {
				continue
			}
			st, err := client.Status(cluster.ClientAddr(p.Addr), 300*time.Millisecond)
			if err == nil && st.Role == roles.Leader && st.HoldsQuorum && st.Epoch > epoch {
				next, nextEpoch = i, st.Epoch
				return nil
			}
		}
		return fmt.Errorf("no other master is LEADER at an epoch above %d", epoch)
	})
	return next, nextEpoch, err
}

// counting waits until master i is LEADER counting want votes, at most
// timeout.
func counting(c *cluster.Cluster, i, want int, timeout time.Duration) error {
	return waitUntil(timeout, 50*time.Millisecond, func() error {
		st, err := client.Status(cluster.ClientAddr(c.Masters[i].Addr), time.Second)
		if err == nil && st.Role == roles.Leader && st.Voters == want {
			return nil
		}
		return fmt.Errorf("%s not LEADER counting %d votes: %v, %d votes, %v", c.Masters[i].Addr, want, st.Role, st.Voters, err)
	})
}

// saysLeader matches a scrape's samples (not its HELP lines) that say
// LEADER: the LEADER series at 1, or a quorum held.
var saysLeader = regexp.MustCompile(`(?m)^(mfs_master_role\{role="LEADER"\} 1|mfs_master_quorum_held 1)$`)

var roleLine = regexp.MustCompile(`(?m)^mfs_master_(role|epoch|quorum_held|votes)\b.*$`)

// roleLines are the lines of a scrape that say whether it is LEADER.
func roleLines(body string) string { return strings.Join(roleLine.FindAllString(body, -1), "\n") }

// roleOf is the role a scrape has at 1, with its epoch.
func roleOf(body string) string {
	role, epoch := "?", "?"
	for _, l := range roleLine.FindAllString(body, -1) {
		if strings.HasPrefix(l, "mfs_master_role{") && strings.HasSuffix(l, " 1") {
			role = strings.TrimSuffix(strings.TrimPrefix(l, `mfs_master_role{role="`), `"} 1`)
		}
		if v, ok := strings.CutPrefix(l, "mfs_master_epoch "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				epoch = strconv.FormatUint(uint64(f), 10)
			}
		}
	}
	return role + " at " + epoch
}

// stopped waits until every thread of process pid is stopped (state T in
// /proc/PID/task/*/stat), at most timeout: kill(SIGSTOP) returns before
// the threads have stopped, and one still running may answer a request
// sent at once.
func stopped(pid int, timeout time.Duration) error {
	return waitUntil(timeout, time.Millisecond, func() error {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			return fmt.Errorf("threads of %d: %v", pid, err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			// The state follows the command name, which is in parentheses.
			i := strings.LastIndexByte(string(b), ')')
			if err != nil || i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				return fmt.Errorf("process %d not stopped after SIGSTOP: %s still runs", pid, task)
			}
		}
		return nil
	})
}
