package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// etcdMember is one etcd process of the comparison cluster.
type etcdMember struct {
	name, addr, dir, log string
	netns                string // run inside this network namespace ("": none)
	args                 []string
	cmd                  *exec.Cmd
	done                 chan struct{}
}

func (m *etcdMember) start() error {
	f, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	m.cmd = exec.Command("etcd", m.args...)
	if m.netns != "" {
		m.cmd = exec.Command("ip", append([]string{"netns", "exec", m.netns, "etcd"}, m.args...)...)
	}
	m.cmd.Stdout, m.cmd.Stderr = f, f
	if err := m.cmd.Start(); err != nil {
		f.Close()
		return err
	}
	m.done = make(chan struct{})
	go func() { _ = m.cmd.Wait(); f.Close(); close(m.done) }()
	return nil
}

func (m *etcdMember) kill() {
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-m.done:
	case <-time.After(5 * time.Second):
	}
}

// status asks a member, through etcd's JSON gateway, for its id and the
// leader it knows.
func (m *etcdMember) status() (id, leader string, err error) {
	cl := http.Client{Timeout: 300 * time.Millisecond}
	r, err := cl.Post("http://"+m.addr+":2379/v3/maintenance/status", "application/json", bytes.NewReader([]byte("{}")))
	if err != nil {
		return "", "", err
	}
	defer r.Body.Close()
	var s struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
		return "", "", err
	}
	return s.Header.MemberID, s.Leader, nil
}

// ensureEtcd installs Debian's etcd when it is missing.
func ensureEtcd() error {
	if _, err := exec.LookPath("etcd"); err == nil {
		return nil
	}
	fmt.Println("etcd missing: installing etcd-server and etcd-client from Debian's packages")
	for _, args := range [][]string{{"apt-get", "update"}, {"apt-get", "install", "-y", "etcd-server", "etcd-client"}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, lastLines(out, 5))
		}
	}
	_, err := exec.LookPath("etcd")
	return err
}

func lastLines(b []byte, n int) string {
	l := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// etcdStart starts a 3-member etcd cluster with its default settings on
// 127.B.0.21-23 and waits for a leader.
func etcdStart(work string, base uint8) ([]*etcdMember, string, error) {
	return etcdStartIn(work, base, "")
}

// etcdStartIn is etcdStart inside the network namespace ns ("": none),
// where the members are not reachable from here: a leader is then waited
// for in their logs.
func etcdStartIn(work string, base uint8, ns string) ([]*etcdMember, string, error) {
	if err := ensureEtcd(); err != nil {
		return nil, "", err
	}
	ver, _ := exec.Command("etcd", "--version").Output()
	version := strings.TrimPrefix(strings.SplitN(string(ver), "\n", 2)[0], "etcd Version: ")
	var ms []*etcdMember
	var initial []string
	for i := 0; i < 3; i++ {
		addr := fmt.Sprintf("127.%d.0.%d", base, 21+i)
		name := fmt.Sprintf("e%d", i+1)
		initial = append(initial, fmt.Sprintf("%s=http://%s:2380", name, addr))
		ms = append(ms, &etcdMember{name: name, addr: addr, dir: filepath.Join(work, "etcd", name), log: filepath.Join(work, "etcd", name+".log"), netns: ns})
	}
	if err := os.MkdirAll(filepath.Join(work, "etcd"), 0o755); err != nil {
		return nil, version, err
	}
	for _, m := range ms {
		m.args = []string{"--name", m.name, "--data-dir", m.dir, "--logger", "zap",
			"--listen-peer-urls", "http://" + m.addr + ":2380", "--initial-advertise-peer-urls", "http://" + m.addr + ":2380",
			"--listen-client-urls", "http://" + m.addr + ":2379", "--advertise-client-urls", "http://" + m.addr + ":2379",
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new", "--initial-cluster-token", "mfs-bench"}
		if err := m.start(); err != nil {
			etcdStop(ms)
			return nil, version, err
		}
	}
	if ns != "" {
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if etcdLogLeader(ms) >= 0 {
				return ms, version, nil
			}
		}
		etcdStop(ms)
		return nil, version, fmt.Errorf("no etcd member logged `became leader` within 30 s (logs in %s)", filepath.Join(work, "etcd"))
	}
	if _, err := etcdLeader(ms, -1, 30*time.Second); err != nil {
		etcdStop(ms)
		return nil, version, err
	}
	return ms, version, nil
}

func etcdStop(ms []*etcdMember) {
	for _, m := range ms {
		if m.cmd != nil {
			m.kill()
		}
	}
}

// etcdKillTrials: kill -9 of the leader -> a survivor logs `became leader`.
func etcdKillTrials(ms []*etcdMember, trials int, out *series) error {
	for i := 0; i < trials; i++ {
		lead, err := etcdLeader(ms, -1, 30*time.Second)
		if err != nil {
			return err
		}
		time.Sleep(time.Second) // let the restarted member catch up
		t0 := time.Now()
		ms[lead].kill()
		next, err := etcdLeader(ms, lead, 30*time.Second)
		if err != nil {
			return err
		}
		at := becameLeaderEtcd(ms[next].log, t0)
		if at.IsZero() {
			return fmt.Errorf("no `became leader` line in %s", ms[next].log)
		}
		out.d = append(out.d, at.Sub(t0))
		fmt.Printf("etcd kill -9 #%d: %v\n", i+1, at.Sub(t0).Round(time.Millisecond))
		if err := ms[lead].start(); err != nil {
			return err
		}
	}
	_, err := etcdLeader(ms, -1, 30*time.Second)
	return err
}

// etcdLeader polls until every running member but not agrees on a leader
// that is one of them, and returns its index.
func etcdLeader(ms []*etcdMember, not int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ids := map[string]int{}
		var leaders []string
		for i, m := range ms {
			if i == not {
				continue
			}
			id, leader, err := m.status()
			if err != nil {
				continue
			}
			ids[id] = i
			leaders = append(leaders, leader)
		}
		if len(leaders) == len(ms)-btoi(not >= 0) {
			if i, ok := ids[leaders[0]]; ok && allSame(leaders) {
				return i, nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return -1, fmt.Errorf("etcd: no leader within %v", timeout)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func allSame(xs []string) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}

// becameLeaderEtcd finds the newest "became leader" line at or after since.
func becameLeaderEtcd(path string, since time.Time) time.Time {
	return cluster.LastLogTime(path, since, func(line []byte) (time.Time, bool) {
		if !bytes.Contains(line, []byte("became leader")) {
			return time.Time{}, false
		}
		var l struct {
			TS string `json:"ts"`
		}
		if json.Unmarshal(line, &l) != nil {
			return time.Time{}, false
		}
		t, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", l.TS)
		return t, err == nil
	})
}
