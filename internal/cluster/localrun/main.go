// Command localrun is `make run`: a real local cluster in the foreground on
// loopback, with a listing of who leads; Ctrl-C stops it in order. With
// -witness (make run WITNESS=1) it is two sites and an object-store
// witness instead (witness.go).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/cluster/witnessrig"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

func main() {
	dir := flag.String("dir", "run", "where configs, data and logs go (wiped at start)")
	bin := flag.String("bin", "bin", "where the built daemons are")
	wit := flag.Bool("witness", false, "two sites (a: 127.0.1.0/24, b: 127.0.2.0/24, a master and two chunkservers each) and an object-store witness: versitygw on 127.0.0.1 (from -versitygw; make versitygw installs it), named with mfscli -CWITNESS on")
	vgw := flag.String("versitygw", ".bin/versitygw", "the versitygw binary, with -witness")
	flag.Parse()
	if err := run(*dir, *bin, *wit, *vgw); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

func run(dir, bin string, wit bool, vgw string) error {
	dir, _ = filepath.Abs(dir)
	bin, _ = filepath.Abs(bin)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)

	s := cluster.Local(dir, bin, 0)
	var store *witnessrig.Store
	if wit {
		var err error
		if store, err = witnessrig.StartStore(vgw, dir, witnessPort, ""); err != nil {
			return err
		}
		defer store.Stop()
		s = twoSites(dir, bin, store)
	}
	c, err := cluster.Start(s)
	if err != nil {
		return err
	}
	defer stopAll(c, bin)
	if wit {
		fmt.Printf("cluster started: 2 masters (%s), 4 chunkservers in two sites, a 127.0.1.0/24 and b 127.0.2.0/24\n", s.MasterHost())
		fmt.Printf("witness store: versitygw %s, bucket %s, prefix %s (data %s, log %s, keys %s)\n",
			store.Endpoint, witnessrig.Bucket, witnessrig.Prefix, store.Root, store.Log, store.Creds)
	} else {
		fmt.Printf("cluster started: 3 masters (%s), 6 chunkservers in dc1 127.0.1.0/24, dc2 127.0.2.0/24, dc3 127.0.3.0/24\n", s.MasterHost())
	}
	fmt.Printf("logs: %s/*.log   configs and data: %s/master*/, %s/cs*/\n", dir, dir, dir)
	fmt.Printf("listing: %s/mfscli -H %s -SIM   (-SCS for chunkservers)\n", bin, s.MasterHost())
	fmt.Printf("a master's pid: %s/mfsmaster -c %s/master1/mfsmaster.cfg test   (run it again after kill -9: ... start)\n\n", bin, dir)
	start := time.Now()
	if _, st, err := c.WaitLeader(20*time.Second, 100*time.Millisecond); err == nil {
		fmt.Printf("LEADER %s (epoch %d) after %.1f s\n", st.Addr, st.Epoch, time.Since(start).Seconds())
	} else {
		fmt.Println(err)
	}
	if wit {
		if err := witnessrig.NameWitness(c, bin, sigs, say); err != nil {
			return err
		}
	}
	last := ""
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	shown := time.Time{}
	for {
		// Show the listing when who leads, or how many vote for it, changes.
		state := "-"
		st, errs := c.Statuses(500 * time.Millisecond)
		for i := range st {
			if errs[i] == nil && st[i].Role == roles.Leader {
				state = fmt.Sprintf("%s %d/%d", st[i].Addr, st[i].Voters, st[i].Registered)
			}
		}
		if state != last || time.Since(shown) > time.Minute {
			cli := exec.Command(filepath.Join(bin, "mfscli"), "-H", s.MasterHost(), "-SIM")
			cli.Stdout, cli.Stderr = os.Stdout, os.Stderr
			fmt.Println(time.Now().Format("15:04:05"))
			_ = cli.Run()
			fmt.Println()
			last, shown = state, time.Now()
		}
		select {
		case <-sigs:
			fmt.Println("stopping: chunkservers, then masters")
			return nil
		case <-tick.C:
		}
	}
}

// stopAll stops the cluster's processes, then asks each daemon's config
// for one more stop: a master or chunkserver killed and started again by
// hand (mfsmaster -c CFG start) runs in the background, out of c's reach,
// and Ctrl-C must not leave it running.
func stopAll(c *cluster.Cluster, bin string) {
	c.Stop()
	for _, group := range []struct {
		bin   string
		procs []*cluster.Proc
	}{{"mfsmaster", c.Masters}, {"mfschunkserver", c.CS}} {
		for _, p := range group.procs {
			_ = exec.Command(filepath.Join(bin, group.bin), "-c", p.Cfg, "stop").Run() // "not running": nothing to do
		}
	}
}
