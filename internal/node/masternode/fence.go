package masternode

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Outward reports of the role (/healthz, the role, epoch, sync, quorum and
// vote gauges, the status on 9421) say LEADER only if this master's counted
// votes make a quorum at the instant the report is built, read on the
// core's clock (n.now) and judged with the core's arithmetic (roles.Fence).
// A LEADER frozen past its lease (SIGSTOP, a stalled disk, a long pause)
// therefore answers the requests that waited for it as what its next step
// makes it, a FOLLOWER, whether or not its loop has run since it resumed.
//
// The HTTP handlers never wait for the loop: they judge the newest fence
// the loop published (fenceOut) at their own instant. The loop publishes
// after every batch's persist and before its sends, so a step-down is
// visible before the vote releases that let the chunkservers move on leave,
// and renewed votes are visible within one batch.

// outward is one published fence with what the gauges need beside it.
type outward struct {
	fence master.Fence
	locs  *locIndex
}

// locIndex names the location of each registered chunkserver under one
// config. Shared read-only between the loop and the HTTP handlers: it is
// replaced, never changed.
type locIndex struct {
	cfg   *registry.ClusterConfig
	of    map[wire.CSID]string
	names []string // every location with a registered chunkserver (its gauge shows 0 votes, not nothing)
}

func newLocIndex(cfg *registry.ClusterConfig) *locIndex {
	x := &locIndex{cfg: cfg, of: map[wire.CSID]string{}}
	if cfg == nil {
		return x
	}
	seen := map[string]bool{}
	for _, m := range cfg.Members {
		loc, _ := cfg.Locations.Location(cfg.Locations.Locate(m.Addr))
		x.of[m.ID] = loc.Name
		if !seen[loc.Name] {
			seen[loc.Name] = true
			x.names = append(x.names, loc.Name)
		}
	}
	return x
}

// fenceEvery: the loop takes a fence (O(voters): every counted vote, and
// the exact lapse of the quorum) at most this often while nothing that
// could move the lapse earlier happened (master.Master.FenceStamp) and the
// role it reports is unchanged; otherwise after every batch. A fence older
// than this says less than a new one would (renewals are missing from it),
// never more: its lapse is no later than the core's. Past a thousand
// voters the spacing grows by 10 µs a voter, to 100 ms at 9,000: a fence
// of thousands every 20 ms cost a crowd's LEADER a sixth of a core, and
// its heartbeat rounds (Config.Scaled) are 200 ms to 1.1 s apart there,
// so a fence 100 ms old misses at most one round's renewals.
func fenceEvery(voters int) time.Duration {
	const base, per, most = 20 * time.Millisecond, 10 * time.Microsecond, 100 * time.Millisecond
	return min(most, base+time.Duration(max(0, voters-1000))*per)
}

// publishFence makes the core's fence as of its last step the one the
// outward reports judge, at the cadence above. Loop only.
func (n *MasterNode) publishFence() {
	report := master.RoleReport{Role: n.core.Role(), Epoch: n.core.Epoch(), Leader: n.core.Leader(), Sync: n.core.Sync()}
	stamp := n.core.Stamp()
	if report == n.fenceReport && stamp == n.fenceStamp && time.Since(n.fenceAt) < fenceEvery(n.core.Voters()) {
		return
	}
	n.fenceReport, n.fenceStamp, n.fenceAt = report, stamp, time.Now()

	if x := n.locs; x == nil || x.cfg != n.core.Registry() {
		n.locs = newLocIndex(n.core.Registry())
	}
	n.fenceOut.Store(&outward{fence: n.core.Fence(), locs: n.locs})
}

// roleReport is what this master may say of its role now, from any
// goroutine.
type roleReport struct {
	master.RoleReport
	quorum  bool
	witness bool           // it counts the witness's lease
	votes   map[string]int // per location of registered chunkservers
}

// reportNow judges the newest published fence at this instant. The fence
// is loaded before the clock is read, so the instant is never before the
// step the fence was taken after (the fence's precondition).
func (n *MasterNode) reportNow() roleReport {
	o := n.fenceOut.Load()
	return o.at(n.now())
}

func (o *outward) at(t roles.Instant) roleReport {
	r := roleReport{RoleReport: o.fence.ReportAt(t), quorum: o.fence.HoldsQuorum(t), witness: o.fence.WitnessAt(t), votes: map[string]int{}}
	for _, name := range o.locs.names {
		r.votes[name] = 0
	}
	for _, id := range o.fence.CountedAt(t) {
		if name, ok := o.locs.of[id]; ok {
			r.votes[name]++
		}
	}
	return r
}

// Role is the role this master may claim at this instant, judged as
// /healthz judges it: LEADER only while its counted votes hold a quorum.
// From any goroutine; the driver simulation watches it for two LEADERs.
func (n *MasterNode) Role() master.RoleReport { return n.reportNow().RoleReport }

// metricsRole is the role gauges' source (obs.MasterMetrics.RoleFrom).
func (n *MasterNode) metricsRole() obs.MasterRole {
	r := n.reportNow()
	return obs.MasterRole{Role: r.Role, Epoch: r.Epoch, Sync: r.Sync, QuorumHeld: r.quorum, VotesByLocation: r.votes, WitnessHeld: r.witness}
}

// Health is the /healthz answer: healthy only while this master is LEADER
// holding a quorum at this instant, so that a load balancer (or anything
// that routes to "whoever says LEADER") never routes to a master fenced by
// its lease. The text names the role, epoch and LEADER either way.
func (n *MasterNode) Health() (ok bool, text string) { return n.health(n.reportNow()) }

func (n *MasterNode) health(r roleReport) (ok bool, text string) {
	leader := "none"
	if a, ok := n.addrKnown(r.Leader); ok {
		leader = a.String()
	}
	text = fmt.Sprintf("%v epoch %d leader %s", r.Role, r.Epoch, leader)
	if !r.quorum {
		if r.Role == roles.Leader {
			text += " (no quorum)" // never, by the fence's arithmetic; said if it ever were
		}
		return false, text
	}
	return true, text
}

// fenceStatus makes st, built from the core as it stood at its last step,
// say what the core would say after a re-tally at t (f taken after that
// step, t not before it): a LEADER whose quorum has lapsed is shown as the
// FOLLOWER it becomes, counting no vote.
func (n *MasterNode) fenceStatus(st *protocol.StatusResp, f master.Fence, t roles.Instant) {
	st.HoldsQuorum = f.HoldsQuorum(t)
	rep := f.ReportAt(t)
	if rep == f.Now {
		return
	}
	st.Role, st.Epoch, st.Sync, st.Leader = rep.Role, rep.Epoch, rep.Sync, n.addr(rep.Leader)
	st.Tallies, st.Transition, st.Behind, st.Voters = nil, "", 0, 0
	for i := range st.Chunkservers {
		st.Chunkservers[i].Voting = false
	}
}

// fence is the core's fence as reports see it: fenceOut, as of the
// newest batch, with the location index the gauges need, for the reports
// built away from the loop; the last fence taken: what it reported,
// under which stamp, when; and locs, the location index of the loop's
// fence.
type fence struct {
	fenceOut    atomic.Pointer[outward]
	fenceReport master.RoleReport
	fenceStamp  master.FenceStamp
	fenceAt     time.Time
	locs        *locIndex
}
