package main

import (
	"fmt"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/cluster/witnessrig"
)

// make run WITNESS=1: two sites and an object-store witness
// (docs/operations.md, "Two sites and a witness"), on loopback. The store
// is versitygw's posix backend on a directory of the run; the masters read
// its keys from a 0600 file of the run (WITNESS_CREDENTIALS).

// witnessPort is where versitygw listens if it is free (the port the
// docs' examples use); else any free port.
const witnessPort = 7070

// twoSites is the witness demo's topology: sites a (127.0.1.0/24) and b
// (127.0.2.0/24), each with a master (127.0.1.11, 127.0.2.11) and two
// chunkservers (.1 with a disk, .2 voter-only), every master with the
// WITNESS_* keys naming the store (the lease's timing at its defaults).
func twoSites(dir, bin string, store *witnessrig.Store) cluster.Spec {
	l := witnessrig.TwoSites(dir, bin, 0, 1, false)
	l.Spec.MasterCfg = store.Keys()
	return l.Spec
}

func say(s string) { fmt.Println(s) }
