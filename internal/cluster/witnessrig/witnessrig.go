// Package witnessrig runs the object-store witness's layout on loopback:
// versitygw as the store, two sites of masters and chunkservers, and the
// steps an operator takes to name the witness (docs/operations.md, "Two
// sites and a witness"). `make run WITNESS=1` and `make bench` share it.
// Every wait in it is bounded.
package witnessrig

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/witness/s3store"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// The bucket and prefix every master names.
const (
	Bucket = "mfs-witness"
	Prefix = "mfs"
)

// Store is a running versitygw (posix backend).
type Store struct {
	Endpoint string // http://127.0.0.1:PORT (inside Netns, if set)
	Root     string // its data
	Log      string // its output
	Creds    string // the keys as WITNESS_CREDENTIALS wants them (0600)
	Netns    string

	access, secret string
	cmd            *exec.Cmd
	exited         chan struct{}
	relay          net.Listener
	client         *s3store.Store // from here (through relay in a namespace)
}

// StartStore runs versitygw (the binary at path) on 127.0.0.1:port (any
// free port if port is 0 or taken), in the network namespace ns when it
// is not "", its data under dir/versitygw, with fresh random keys written
// to dir/witness.keys, and creates the witness's bucket.
func StartStore(path, dir string, port int, ns string) (*Store, error) {
	bin, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no versitygw at %s (make versitygw installs it): %w", bin, err)
	}
	s := &Store{Root: filepath.Join(dir, "versitygw"), Log: filepath.Join(dir, "versitygw.log"),
		Creds: filepath.Join(dir, "witness.keys"), Netns: ns,
		access: "mfsrun" + randomHex(4), secret: randomHex(16), exited: make(chan struct{})}
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		return nil, err
	}
	// "access secret", readable by this user only.
	if err := os.WriteFile(s.Creds, []byte(s.access+" "+s.secret+"\n"), 0o600); err != nil {
		return nil, err
	}
	addr, err := s.freeAddr(port)
	if err != nil {
		return nil, err
	}
	s.Endpoint = "http://" + addr
	out, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// Only what it needs from the environment (no other VGW_* or ROOT_*),
	// the keys there rather than in its arguments (which ps shows); its
	// own process group, so that a Ctrl-C reaches only the caller, which
	// stops it after the cluster.
	args := []string{"--port", addr, "--quiet", "posix", s.Root}
	s.cmd = exec.Command(bin, args...)
	if ns != "" {
		// ip netns exec execs the binary: the pid is versitygw's.
		s.cmd = exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	}
	s.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.Root,
		"ROOT_ACCESS_KEY_ID=" + s.access, "ROOT_SECRET_ACCESS_KEY=" + s.secret}
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); out.Close(); close(s.exited) }()
	if err := Wait(15*time.Second, nil, "versitygw to listen on "+addr, func() error {
		select {
		case <-s.exited:
			return Stop{fmt.Errorf("versitygw exited (see %s)", s.Log)}
		default:
		}
		c, err := s.dial(addr)
		if err != nil {
			return err
		}
		c.Close()
		return nil
	}); err != nil {
		s.Stop()
		return nil, err
	}
	endpoint := s.Endpoint
	if ns != "" {
		// The S3 client dials on goroutines of its own, outside the
		// namespace: the bucket is made through a relay from here.
		if endpoint, err = s.startRelay(addr); err != nil {
			s.Stop()
			return nil, err
		}
	}
	st, err := s3store.New(s3store.Config{Endpoint: endpoint, Bucket: Bucket, Prefix: Prefix,
		AccessKey: s.access, SecretKey: s.secret, CallTimeout: 5 * time.Second})
	s.client = st
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = st.CreateBucket(ctx)
		cancel()
	}
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("creating bucket %s on versitygw %s: %w", Bucket, s.Endpoint, err)
	}
	return s, nil
}

// freeAddr is 127.0.0.1:port if it is free (in the namespace), else a
// free port there.
func (s *Store) freeAddr(port int) (string, error) {
	listen := func(addr string) (l net.Listener, err error) {
		if s.Netns == "" {
			return net.Listen("tcp", addr)
		}
		if e := cluster.InNetns(s.Netns, func() { l, err = net.Listen("tcp", addr) }); e != nil {
			return nil, e
		}
		return l, err
	}
	for _, a := range []string{fmt.Sprintf("127.0.0.1:%d", port), "127.0.0.1:0"} {
		if l, err := listen(a); err == nil {
			addr := l.Addr().String()
			l.Close()
			return addr, nil
		} else if a == "127.0.0.1:0" {
			return "", err
		}
	}
	return "", errors.New("no free port")
}

// dial connects to addr (inside the namespace, if any).
func (s *Store) dial(addr string) (c net.Conn, err error) {
	if s.Netns == "" {
		return net.DialTimeout("tcp", addr, 200*time.Millisecond)
	}
	if e := cluster.InNetns(s.Netns, func() { c, err = net.DialTimeout("tcp", addr, 200*time.Millisecond) }); e != nil {
		return nil, e
	}
	return c, err
}

// startRelay listens on 127.0.0.1 here and copies each connection to one
// dialled to addr in the namespace; Stop closes it. At most 1,000
// connections: it serves the bucket's creation only.
func (s *Store) startRelay(addr string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s.relay = l
	go func() {
		for range 1000 {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := s.dial(addr)
			if err != nil {
				in.Close()
				continue
			}
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return "http://" + l.Addr().String(), nil
}

// Record reads the lease object as the masters would: ok false when it
// does not exist.
func (s *Store) Record() (rec witness.Record, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body, _, err := s.client.Get(ctx, witness.Key)
	if err != nil {
		if s3store.Classify(err) == s3store.Absent {
			return rec, false, nil
		}
		return rec, false, err
	}
	rec, err = witness.Decode(body)
	return rec, err == nil, err
}

// LogHead reads the store log's head (log.json) as a master would: ok
// false when it does not exist.
func (s *Store) LogHead() (h witness.LogHead, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body, _, err := s.client.Get(ctx, witness.LogKey)
	if err != nil {
		if s3store.Classify(err) == s3store.Absent {
			return h, false, nil
		}
		return h, false, err
	}
	h, err = witness.DecodeHead(body)
	return h, err == nil, err
}

// Signal sends sig to versitygw (SIGSTOP: its calls hang until their
// timeout; SIGCONT resumes it).
func (s *Store) Signal(sig syscall.Signal) error { return s.cmd.Process.Signal(sig) }

// Stop ends versitygw (after the cluster: the masters may still call it).
func (s *Store) Stop() {
	if s.relay != nil {
		s.relay.Close()
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Keys are the WITNESS_* keys of every master naming the store (the
// lease's timing at its defaults).
func (s *Store) Keys() map[string]string {
	return map[string]string{"WITNESS_ENDPOINT": s.Endpoint, "WITNESS_BUCKET": Bucket,
		"WITNESS_PREFIX": Prefix, "WITNESS_CREDENTIALS": s.Creds}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Layout is a two-site cluster spec and which site each process is in.
type Layout struct {
	Spec   cluster.Spec
	Site   []string // by master index
	CSSite []string // by chunkserver index
}

// TwoSites is sites a (127.B.1.0/24) and b (127.B.2.0/24), each with
// perSite masters (127.B.y.11, .12, ...) and two chunkservers (.1 with a
// disk, .2 voter-only); the founder is on site a. With third, a location
// c (127.B.3.0/24) holds one voter-only chunkserver (127.B.3.2) and no
// master: the other way to survive a site's loss. The witness's keys are
// the caller's to add to Spec.MasterCfg.
func TwoSites(dir, bin string, b uint8, perSite int, third bool) Layout {
	a := func(y, z uint8) netip.Addr { return netip.AddrFrom4([4]byte{127, b, y, z}) }
	l := Layout{Spec: cluster.Spec{Dir: dir, Bin: bin, Locations: map[string]netip.Prefix{
		"a": netip.PrefixFrom(a(1, 0), 24), "b": netip.PrefixFrom(a(2, 0), 24)}, MasterCfg: map[string]string{}}}
	for i := range perSite {
		for y, name := range []string{"a", "b"} {
			l.Spec.Masters = append(l.Spec.Masters, a(uint8(y+1), uint8(11+i)))
			l.Site = append(l.Site, name)
		}
	}
	for y, name := range []string{"a", "b"} {
		l.Spec.CS = append(l.Spec.CS, cluster.CS{Addr: a(uint8(y+1), 1)}, cluster.CS{Addr: a(uint8(y+1), 2), VoterOnly: true})
		l.CSSite = append(l.CSSite, name, name)
	}
	if third {
		l.Spec.Locations["c"] = netip.PrefixFrom(a(3, 0), 24)
		l.Spec.CS = append(l.Spec.CS, cluster.CS{Addr: a(3, 2), VoterOnly: true})
		l.CSSite = append(l.CSSite, "c")
	}
	return l
}

// Procs are every process of a site in c: its masters' indices, and its
// masters and chunkservers.
func (l Layout) Procs(c *cluster.Cluster, site string) (masters []int, all []*cluster.Proc) {
	for i, p := range c.Masters {
		if l.Site[i] == site {
			masters = append(masters, i)
			all = append(all, p)
		}
	}
	for i, p := range c.CS {
		if l.CSSite[i] == site {
			all = append(all, p)
		}
	}
	return masters, all
}

// KillAll is kill -9 of every process of ps at once; it returns when they
// are gone (at most 5 s each).
func KillAll(ps []*cluster.Proc) time.Time {
	t0 := time.Now()
	for _, p := range ps {
		_ = p.Signal(syscall.SIGKILL)
	}
	for _, p := range ps {
		p.Wait(5 * time.Second)
	}
	return t0
}

// Other is the other one of the two sites.
func Other(site string) string {
	if site == "a" {
		return "b"
	}
	return "a"
}

// Stop ends a Wait at once with its error.
type Stop struct{ error }

// ErrInterrupted is a Wait ended by a signal.
var ErrInterrupted = errors.New("interrupted")

// Wait calls check every 100 ms until it returns nil, for at most within;
// a signal on sigs, or a Stop from check, ends it early.
func Wait(within time.Duration, sigs <-chan os.Signal, what string, check func() error) error {
	end := time.Now().Add(within)
	var seen []string // the last few different reasons, for the error
	for {
		err := check()
		if err == nil {
			return nil
		}
		var stop Stop
		if errors.As(err, &stop) {
			return stop.error
		}
		if e := err.Error(); len(seen) == 0 || seen[len(seen)-1] != e {
			seen = append(seen, e)
			if len(seen) > 4 {
				seen = seen[1:]
			}
		}
		if time.Now().After(end) {
			if len(seen) > 1 {
				return fmt.Errorf("waiting for %s: not within %v: %w (before that: %s)", what, within, err, strings.Join(seen[:len(seen)-1], "; "))
			}
			return fmt.Errorf("waiting for %s: not within %v: %w", what, within, err)
		}
		select {
		case <-sigs:
			return ErrInterrupted
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// NameWitness readies the masters of c for the witness and names it, as
// docs/operations.md says: a master started with -e uses its store from
// its next start, so each is restarted once it follows with the metadata;
// once every master's store passed its self-test and the registry is in
// force, mfscli -CWITNESS on (from bin). say, when not nil, is told each
// step.
func NameWitness(c *cluster.Cluster, bin string, sigs <-chan os.Signal, say func(string)) error {
	if say == nil {
		say = func(string) {}
	}
	status := func(i int) (protocol.StatusResp, error) { return Status(c, i, time.Second) }
	for i := 1; i < len(c.Masters); i++ {
		p := c.Masters[i]
		if err := Wait(30*time.Second, sigs, p.Addr.String()+" to follow with the metadata", func() error {
			st, err := status(i)
			if err != nil || st.Role != roles.Follower || st.ClusterID == "" || st.Behind != 0 {
				return fmt.Errorf("%v, %d behind, %v", st.Role, st.Behind, err)
			}
			return nil
		}); err != nil {
			return err
		}
		say(fmt.Sprintf("restarting %s: started with -e, it uses its witness store from a start with metadata", p.Addr))
		p.Term(10 * time.Second)
		if err := p.Start(); err != nil {
			return err
		}
	}
	for i, p := range c.Masters {
		if err := Wait(60*time.Second, sigs, p.Addr.String()+"'s witness store to pass its self-test", func() error {
			st, err := status(i)
			if err != nil {
				return err
			}
			w := st.Witness
			switch {
			case w == nil:
				return errors.New("no witness store")
			case w.SelfTest != "" && w.SelfTest != protocol.WitnessSelfTestPassed:
				return Stop{fmt.Errorf("%s: the witness store failed its self-test: %s", p.Addr, w.SelfTest)}
			case w.SelfTest == "" || w.NotUsed != "":
				return fmt.Errorf("self-test %q, %s", w.SelfTest, w.NotUsed)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	say("every master's witness store passed its self-test")
	if err := Wait(30*time.Second, sigs, "a LEADER counting every chunkserver, its registry in force", func() error {
		_, st, err := c.WaitLeader(time.Second, 100*time.Millisecond)
		if err != nil || st.Voters != len(c.CS) || st.InForce != st.ConfigVersion {
			return fmt.Errorf("%d votes, config %d in force %d, %v", st.Voters, st.ConfigVersion, st.InForce, err)
		}
		return nil
	}); err != nil {
		return err
	}
	var out []byte
	if err := Wait(20*time.Second, sigs, "mfscli -CWITNESS on", func() error {
		var err error
		out, err = Mfscli(c, bin, "-CWITNESS", "on")
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}); err != nil {
		return err
	}
	say("mfscli -CWITNESS on\n" + strings.TrimRight(string(out), "\n"))
	// Every master follows the registry change.
	return Wait(10*time.Second, sigs, "every master to name the witness", func() error {
		sts, errs := c.Statuses(time.Second)
		for i, st := range sts {
			if errs[i] != nil || st.Witness == nil || st.Witness.ID == "" {
				return fmt.Errorf("%s: %v", c.Masters[i].Addr, errs[i])
			}
		}
		return nil
	})
}

// Mfscli runs bin/mfscli against every master of c (inside its namespace,
// if any) and returns its output.
func Mfscli(c *cluster.Cluster, bin string, args ...string) ([]byte, error) {
	cli := filepath.Join(bin, "mfscli")
	full := append([]string{"-H", c.Spec.MasterHost()}, args...)
	cmd := exec.Command(cli, full...)
	if ns := c.Spec.Netns; ns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", ns, cli}, full...)...)
	}
	return cmd.CombinedOutput()
}

// Status asks master i of c alone (inside its namespace, if any).
func Status(c *cluster.Cluster, i int, timeout time.Duration) (st protocol.StatusResp, err error) {
	addr := cluster.ClientAddr(c.Masters[i].Addr)
	if ns := c.Spec.Netns; ns != "" {
		if e := cluster.InNetns(ns, func() { st, err = client.Status(addr, timeout) }); e != nil {
			return st, e
		}
		return st, err
	}
	return client.Status(addr, timeout)
}
