package main

import (
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
)

// diskCost is what a run of changes cost the disks: durable writes of the
// metadata files (mfs_*_store_commits_total: a master's one bbolt commit,
// two fdatasyncs, each; a chunkserver's one record, one fdatasync) per
// acknowledged change, on the LEADER, on a follower
// (the mean of the followers) and on a chunkserver (the mean of all).
type diskCost struct {
	leader, follower, cs float64
	// stages: the mean time of each stage of the ack rule on the LEADER
	// (mfs_master_change_stage_seconds), by stage name.
	stages map[string]time.Duration
}

// diskCounts is every master's and every chunkserver's commit counter
// (-1 where it could not be read).
type diskCounts struct{ masters, cs []float64 }

func readDisk(c *cluster.Cluster) diskCounts {
	var d diskCounts
	for _, m := range c.Masters {
		v := -1.0
		if s, err := scrape(m.Addr); err == nil {
			if x, ok := s["mfs_master_store_commits_total"]; ok {
				v = x
			}
		}
		d.masters = append(d.masters, v)
	}
	for _, p := range c.CS {
		v := -1.0
		if s, err := scrapeAt(cluster.CSHTTP(p.Addr)); err == nil {
			if x, ok := s["mfs_chunkserver_store_commits_total"]; ok {
				v = x
			}
		}
		d.cs = append(d.cs, v)
	}
	return d
}

// measureDisk runs f between two readings of every counter and returns
// the cost per change of what f acknowledged (ops). The LEADER is the
// master that reports it before and after; nil when it changed or a
// counter could not be read.
func measureDisk(c *cluster.Cluster, f func() (ops int, err error)) (*diskCost, error) {
	lead, lerr := leaderOf(c, 2*time.Second)
	var ma, mb map[string]float64
	if lerr == nil {
		ma, _ = scrape(c.Masters[lead].Addr)
	}
	a := readDisk(c)
	ops, err := f()
	b := readDisk(c)
	if lerr == nil {
		mb, _ = scrape(c.Masters[lead].Addr)
	}
	if err != nil {
		return nil, err
	}
	if now, err2 := leaderOf(c, 2*time.Second); lerr != nil || err2 != nil || now != lead || ops == 0 {
		fmt.Println("disk cost: not measured (the LEADER changed, or no change acknowledged)")
		return nil, nil
	}
	delta := func(x, y float64) (float64, bool) { return y - x, x >= 0 && y >= 0 }
	d := diskCost{stages: stageMeans(ma, mb)}
	var nf, ncs int
	for i := range a.masters {
		v, ok := delta(a.masters[i], b.masters[i])
		if !ok {
			return nil, nil
		}
		if i == lead {
			d.leader = v / float64(ops)
		} else {
			d.follower += v / float64(ops)
			nf++
		}
	}
	for i := range a.cs {
		v, ok := delta(a.cs[i], b.cs[i])
		if !ok {
			return nil, nil
		}
		d.cs += v / float64(ops)
		ncs++
	}
	if nf > 0 {
		d.follower /= float64(nf)
	}
	if ncs > 0 {
		d.cs /= float64(ncs)
	}
	return &d, nil
}

// changeStages are the ack rule's stages, in order, as
// mfs_master_change_stage_seconds names them.
var changeStages = []string{"leader_write", "replication", "commit_send", "voter_round", "total"}

// stageMeans is the mean time of each stage over what the LEADER
// acknowledged between two scrapes of its metrics (nil: not measured).
func stageMeans(a, b map[string]float64) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, st := range changeStages {
		sum := fmt.Sprintf("mfs_master_change_stage_seconds_sum{stage=%q}", st)
		cnt := fmt.Sprintf("mfs_master_change_stage_seconds_count{stage=%q}", st)
		n := b[cnt] - a[cnt]
		if n <= 0 {
			return nil
		}
		out[st] = time.Duration((b[sum] - a[sum]) / n * float64(time.Second))
	}
	return out
}
