package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
)

// make run WITNESS=1: two sites and an object-store witness
// (docs/operations.md, "Two sites and a witness"), on loopback. The store
// is versitygw's posix backend on a directory of the run; the masters read
// its keys from a 0600 file of the run (WITNESS_CREDENTIALS).

const (
	witnessBucket = "mfs-witness"
	witnessPrefix = "mfs"
	// witnessPort is where versitygw listens if it is free (the port the
	// docs' examples use); else any free port.
	witnessPort = 7070
)

// objectStore is the running versitygw.
type objectStore struct {
	endpoint, root, log, creds string
	access, secret             string
	cmd                        *exec.Cmd
	exited                     chan struct{}
}

// startObjectStore runs versitygw (the binary at path) on 127.0.0.1, its
// data under dir/versitygw, with fresh random keys written to
// dir/witness.keys, and creates the witness's bucket.
func startObjectStore(path, dir string) (*objectStore, error) {
	bin, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no versitygw at %s (make versitygw installs it; make run WITNESS=1 does that first): %w", bin, err)
	}
	s := &objectStore{root: filepath.Join(dir, "versitygw"), log: filepath.Join(dir, "versitygw.log"),
		creds: filepath.Join(dir, "witness.keys"), access: "mfsrun" + randomHex(4), secret: randomHex(16), exited: make(chan struct{})}
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return nil, err
	}
	// The keys as WITNESS_CREDENTIALS wants them: "access secret",
	// readable by this user only.
	if err := os.WriteFile(s.creds, []byte(s.access+" "+s.secret+"\n"), 0o600); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", witnessPort)
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
	} else if l, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
		addr = l.Addr().String()
		l.Close()
	} else {
		return nil, err
	}
	s.endpoint = "http://" + addr
	out, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// Only what it needs from the environment (no other VGW_* or ROOT_*),
	// the keys there rather than in its arguments (which ps shows); its
	// own process group, so that Ctrl-C reaches only localrun, which stops
	// it after the cluster.
	s.cmd = exec.Command(bin, "--port", addr, "--quiet", "posix", s.root)
	s.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.root,
		"ROOT_ACCESS_KEY_ID=" + s.access, "ROOT_SECRET_ACCESS_KEY=" + s.secret}
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); out.Close(); close(s.exited) }()
	if err := waitFor(15*time.Second, nil, "versitygw to listen on "+addr, func() error {
		select {
		case <-s.exited:
			return errStop{fmt.Errorf("versitygw exited (see %s)", s.log)}
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return err
		}
		c.Close()
		return nil
	}); err != nil {
		s.stop()
		return nil, err
	}
	st, err := s3store.New(s3store.Config{Endpoint: s.endpoint, Bucket: witnessBucket, Prefix: witnessPrefix,
		AccessKey: s.access, SecretKey: s.secret, CallTimeout: 5 * time.Second})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = st.CreateBucket(ctx)
		cancel()
	}
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("creating bucket %s on versitygw %s: %w", witnessBucket, s.endpoint, err)
	}
	return s, nil
}

// stop ends versitygw (after the cluster: the masters may still call it).
func (s *objectStore) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// twoSites is the witness demo's topology: sites a (127.0.1.0/24) and b
// (127.0.2.0/24), each with a master (127.0.1.11, 127.0.2.11) and two
// chunkservers (.1 with a disk, .2 voter-only), every master with the
// WITNESS_* keys naming the store (the lease's timing at its defaults).
func twoSites(dir, bin string, store *objectStore) cluster.Spec {
	a := func(y, z uint8) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, y, z}) }
	s := cluster.Spec{Dir: dir, Bin: bin, Locations: map[string]netip.Prefix{
		"a": netip.PrefixFrom(a(1, 0), 24), "b": netip.PrefixFrom(a(2, 0), 24)},
		MasterCfg: map[string]string{"WITNESS_ENDPOINT": store.endpoint, "WITNESS_BUCKET": witnessBucket,
			"WITNESS_PREFIX": witnessPrefix, "WITNESS_CREDENTIALS": store.creds}}
	for y := uint8(1); y <= 2; y++ {
		s.Masters = append(s.Masters, a(y, 11))
		s.CS = append(s.CS, cluster.CS{Addr: a(y, 1)}, cluster.CS{Addr: a(y, 2), VoterOnly: true})
	}
	return s
}

// errStop ends a waitFor at once.
type errStop struct{ error }

var errInterrupted = errors.New("interrupted")

// waitFor calls check every 100 ms until it returns nil, for at most
// within; a signal on sigs, or an errStop from check, ends it early.
func waitFor(within time.Duration, sigs <-chan os.Signal, what string, check func() error) error {
	end := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return nil
		}
		var stop errStop
		if errors.As(err, &stop) {
			return stop.error
		}
		if time.Now().After(end) {
			return fmt.Errorf("waiting for %s: not within %v: %w", what, within, err)
		}
		select {
		case <-sigs:
			return errInterrupted
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// nameWitness readies the masters for the witness and names it, as
// docs/operations.md says: a master started with -e uses its store from
// its next start, so each is restarted once it follows with the metadata;
// once every master's store passed its self-test and the registry is in
// force, mfscli -CWITNESS on.
func nameWitness(c *cluster.Cluster, bin string, sigs <-chan os.Signal) error {
	status := func(i int) (protocol.StatusResp, error) {
		return client.Status(cluster.ClientAddr(c.Masters[i].Addr), time.Second)
	}
	for i := 1; i < len(c.Masters); i++ {
		p := c.Masters[i]
		if err := waitFor(30*time.Second, sigs, p.Addr.String()+" to follow with the metadata", func() error {
			st, err := status(i)
			if err != nil || st.Role != roles.Follower || st.ClusterID == "" || st.Behind != 0 {
				return fmt.Errorf("%v, %d behind, %v", st.Role, st.Behind, err)
			}
			return nil
		}); err != nil {
			return err
		}
		fmt.Printf("restarting %s: started with -e, it uses its witness store from a start with metadata\n", p.Addr)
		p.Term(10 * time.Second)
		if err := p.Start(); err != nil {
			return err
		}
	}
	for i, p := range c.Masters {
		if err := waitFor(60*time.Second, sigs, p.Addr.String()+"'s witness store to pass its self-test", func() error {
			st, err := status(i)
			if err != nil {
				return err
			}
			w := st.Witness
			switch {
			case w == nil:
				return errors.New("no witness store")
			case w.SelfTest != "" && w.SelfTest != protocol.WitnessSelfTestPassed:
				return errStop{fmt.Errorf("%s: the witness store failed its self-test: %s", p.Addr, w.SelfTest)}
			case w.SelfTest == "" || w.NotUsed != "":
				return fmt.Errorf("self-test %q, %s", w.SelfTest, w.NotUsed)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	fmt.Println("every master's witness store passed its self-test")
	if err := waitFor(30*time.Second, sigs, "a LEADER counting every chunkserver, its registry in force", func() error {
		_, st, err := c.WaitLeader(time.Second, 100*time.Millisecond)
		if err != nil || st.Voters != len(c.CS) || st.InForce != st.ConfigVersion {
			return fmt.Errorf("%d votes, config %d in force %d, %v", st.Voters, st.ConfigVersion, st.InForce, err)
		}
		return nil
	}); err != nil {
		return err
	}
	var out []byte
	if err := waitFor(20*time.Second, sigs, "mfscli -CWITNESS on", func() error {
		var err error
		out, err = exec.Command(filepath.Join(bin, "mfscli"), "-H", c.Spec.MasterHost(), "-CWITNESS", "on").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Printf("mfscli -CWITNESS on\n%s", out)
	// Every master follows the registry change before the first listing.
	return waitFor(10*time.Second, sigs, "every master to name the witness", func() error {
		sts, errs := c.Statuses(time.Second)
		for i, st := range sts {
			if errs[i] != nil || st.Witness == nil || st.Witness.ID == "" {
				return fmt.Errorf("%s: %v", c.Masters[i].Addr, errs[i])
			}
		}
		return nil
	})
}
