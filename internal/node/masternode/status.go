package masternode

import (
	"fmt"
	"time"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// statusWith builds what mfscli sees (and the gauges beside the role), from
// the loop goroutine, with as much of the election history as req asks.
// It is judged at its own instant, which may be later than the core's
// last step (the batch's fsync came between, or the process was frozen):
// a LEADER whose quorum lapsed meanwhile is shown as the FOLLOWER its
// next step makes it (fenceStatus).
func (n *MasterNode) statusWith(req protocol.StatusReq) protocol.StatusResp {
	f := n.core.Fence()
	now := n.now()
	cfg := n.core.Registry()
	st := protocol.StatusResp{
		Addr: n.opt.Self, Version: n.opt.Version, Role: f.Now.Role, Sync: f.Now.Sync,
		Epoch: f.Now.Epoch, Leader: n.addr(f.Now.Leader),
		MetaVersion: n.core.Log().Last().Version, Commit: n.core.Hard().Commit.Version,
		ClusterID: n.store.ClusterID(), WallUnixMs: time.Now().UnixMilli(),
		Connected: len(n.cs), Behind: n.core.Behind(),
		SnapshotVersion: n.core.SnapshotAt().Version, ChangelogEntries: n.core.Log().Held(),
		Transition: n.core.Underway(now), InForce: n.core.InForce(), LeaderChangeUnixMs: n.leaderChangeMs,
		TempRemoved: n.core.TempRemoved(), Clones: n.clones.list(),
		NoAuthCode: n.opt.AuthCode == "", AdminOpen: *n.acc.adminPassword.Load() == "",
		Keep: n.opt.Core.KeepLeadership, Yielded: n.core.Yielded(), Placed: n.core.Placed(), KeepMasters: n.keepMasters(),
	}
	if ex := n.acc.exports.Load(); ex == nil || ex.t == nil {
		st.ExportsOpen = true
	}
	st.NotEligible, st.Removed = n.notEligible(cfg), n.core.Removed()
	for _, m := range n.book.Load().set {
		st.Masters = append(st.Masters, m.Addr.Addr())
	}
	st.ProtoMin, st.Proto = frame.ProtocolMin, frame.ProtocolVersion
	if len(st.Clones) == 0 {
		st.Clones = nil
	}
	st.RSS, st.CPU = n.usage.sample()
	for _, tv := range n.core.Tallies(now) {
		st.Tallies = append(st.Tallies, tallyStatus(cfgAt(n.core, tv.Config), tv))
	}
	st.Delay = n.delay(st.Sync)
	counted := map[wire.CSID]bool{}
	for _, id := range f.CountedAt(now) {
		counted[id] = true
	}
	st.Voters = len(counted)
	if cfg != nil {
		st.ConfigVersion = cfg.Version
		def := cfg.Locations.Default()
		for _, l := range cfg.Locations.Locations() {
			ls := protocol.LocStatus{Name: l.Name, On: !l.Off, Default: l.ID == def}
			for _, r := range cfg.Locations.Ranges() {
				if r.Loc == l.ID {
					ls.Ranges = append(ls.Ranges, r.Prefix)
				}
			}
			st.Locations = append(st.Locations, ls)
		}
		st.Registered = len(cfg.Members)
		for _, m := range cfg.Members {
			loc, _ := cfg.Locations.Location(cfg.Locations.Locate(m.Addr))
			info := n.csInfo[m.ID]
			c, connected := n.cs[m.ID]
			cs := protocol.CSStatus{
				ID: m.ID, Addr: m.Addr, Port: m.Port, Location: loc.Name, VoterOnly: m.VoterOnly,
				Connected: connected, Voting: counted[m.ID], Labels: info.Labels, Total: info.Total, Used: info.Used,
				Maintenance: m.Maintenance, Version: info.Version, Record: info.Record, Uncertain: info.Uncertain,
			}
			if connected {
				cs.ProtoMin, cs.Proto = c.Peer.Versions()
			}
			st.Chunkservers = append(st.Chunkservers, cs)
		}
	}
	n.historyStatus(&st, req.History)
	st.Witness = n.witnessStatus(f, now)
	n.fenceStatus(&st, f, now)
	st.StoreLog = n.storeLogStatus(st.Role, now)
	if w, ok := n.core.CatchUpWait(); ok && st.Role == roles.Elect {
		st.CatchUp = &protocol.CatchUpStatus{NeedVersion: w.Need.Version, NeedEpoch: w.Need.Epoch, Tag: w.Tag, For: now.Sub(w.Since), Sources: w.Sources}
	}
	if st.Role == roles.Leader {
		n.ackStatus(&st, now)
	}
	return st
}

// historyStatus adds the election history: the newest want records
// (DefaultHistory when 0, all of them at most).
func (n *MasterNode) historyStatus(st *protocol.StatusResp, want int) {
	if want <= 0 {
		want = protocol.DefaultHistory
	}
	rs, total := n.core.History(min(want, namespace.MaxHistory))
	st.HistoryTotal = total
	for _, r := range rs {
		st.History = append(st.History, protocol.RoleChangeStatus{
			UnixMs: r.UnixMs, Master: n.addr(r.Master), MasterID: r.Master, From: r.From, To: r.To, Epoch: r.Epoch,
			Reason: r.Reason, Section: r.Section, Votes: r.Votes, Deposed: n.addr(r.Deposed), DeposedID: r.Deposed, Why: r.Why,
			Witness: r.Witness, LeaseEpoch: r.LeaseEpoch,
		})
	}
	if lc := n.core.LeaderChanges(); len(lc) > 0 {
		st.LeaderChanges = lc
	}
	st.HistoryWaiting, st.HistoryLost = n.core.Unrecorded()
}

// observeEvery bounds how stale the gauges that do not say whether this
// master is LEADER may be (those that do are built at each scrape: fence.go).
const observeEvery = 100 * time.Millisecond

// addrName is id's address for the logs, or "none" (no master: no
// LEADER now, or none before), never netip's "invalid IP".
func (n *MasterNode) addrName(id wire.MasterID) string {
	if a, ok := n.addrKnown(id); ok && a.IsValid() {
		return a.String()
	}
	return "none"
}

// observe updates metrics and logs a LEADER change once; called after
// every batch.
func (n *MasterNode) observe() {
	// A LEADER change is logged and counted at once; the gauges are
	// rebuilt at most every observeEvery, or when the role changes: a full
	// status is not worth its cost on every batch of a busy LEADER.
	role, leader := n.core.Role(), n.core.Leader()
	if leader != n.lastLeader {
		n.metrics.LeaderChange()
		n.log.Info().Str("leader", n.addrName(leader)).Str("previous", n.addrName(n.lastLeader)).
			Uint64(obs.FieldEpoch, n.core.Epoch()).Msg("leader changed")
		n.lastLeader = leader
		n.leaderChangeMs = time.Now().UnixMilli()
	}
	n.acc.observeGuards(n.core.Registry(), n.book.Load())
	if role == n.observedRole && time.Since(n.observedAt) < observeEvery {
		return
	}
	n.warnLayout()
	n.observedRole, n.observedAt = role, time.Now()
	n.metrics.Set(n.gauges())
	// Heartbeats whose answer never came are forgotten after a while.
	if len(n.hbSent) > 4096 {
		cut := time.Now().Add(-5 * time.Second)
		for k, at := range n.hbSent {
			if at.Before(cut) {
				delete(n.hbSent, k)
			}
		}
	}
}

// delay is how long since this master was last seen synced (0 while it
// is, and before it ever was), as of a status that says sync.
func (n *MasterNode) delay(sync roles.SyncState) time.Duration {
	if sync == roles.Synced {
		n.syncedAt = time.Now()
		return 0
	}
	if n.syncedAt.IsZero() {
		return 0
	}
	return time.Since(n.syncedAt)
}

// gauges is what the metrics show besides the role-bearing ones built at
// each scrape, judged like a status answer (the published fence, now) but
// without the listing's per-chunkserver rows: observe runs every
// observeEvery, and a full status of thousands of chunkservers each time
// was a seventh of a crowd LEADER's processor.
func (n *MasterNode) gauges() obs.MasterSnapshot {
	r := n.reportNow() // a fenced LEADER counts no vote (Fence.CountedAt)
	g := obs.MasterSnapshot{
		Role: r.Role, Epoch: r.Epoch, QuorumHeld: r.quorum, VotesByLocation: r.votes,
		Connected: len(n.cs), MetadataVersion: n.core.Log().Last().Version,
		FollowerDelay: n.delay(r.Sync), Sync: r.Sync,
		SnapshotVersion: n.core.SnapshotAt().Version, ChangelogEntries: n.core.Log().Held(),
		LeaderChanges: n.core.LeaderChanges(),
	}
	if d := n.core.Durability(); r.Role == roles.Leader {
		g.AckShort, g.AckReplicas = d.Short, d.Replicas
	}
	if l := n.storeLogStatus(r.Role, n.now()); l != nil {
		g.StoreObjects, g.StoreBytes, g.StoreOldest = l.Objects, l.Bytes, l.OldestAge
		g.AcksOnStore, g.StoreBehind, g.AckWaiting = l.OnStore, l.BehindFor, l.WaitingFor
	}
	if cfg := n.core.Registry(); cfg != nil {
		g.Registered = len(cfg.Members)
	}
	return g
}

// cfgAt returns the newest config or the one before it, whichever has
// version v.
func cfgAt(core *master.Master, v uint64) *registry.ClusterConfig {
	latest, prev := core.Log().Configs(core.Log().Len())
	if prev != nil && prev.Version == v {
		return prev
	}
	return latest
}

// tallyStatus turns a core count into its listing form, naming locations.
func tallyStatus(cfg *registry.ClusterConfig, tv master.TallyView) protocol.TallyStatus {
	t := protocol.TallyStatus{Config: tv.Config, Outcome: tv.Votes.Outcome.String(), Empty: tv.Votes.Empty, Divided: tv.Votes.Divided,
		Participating: tv.Votes.Participating, Carried: tv.Votes.Carried, Needed: tv.Votes.Needed,
		Witness: tv.Votes.Witness, WitnessHeld: tv.Votes.WitnessHeld}
	for i, lt := range tv.Votes.Locations {
		name := fmt.Sprint(lt.Loc)
		if cfg != nil {
			if l, ok := cfg.Locations.Location(lt.Loc); ok {
				name = l.Name
			}
		}
		reach := 0
		if i < len(tv.Reach.Locations) {
			reach = tv.Reach.Locations[i].For
		}
		t.Locations = append(t.Locations, protocol.LocTally{Name: name, Default: lt.Default, Registered: lt.Registered,
			Votes: lt.For, Reach: reach, Carried: lt.Carried, CanCarry: 2*reach > lt.Registered})
	}
	return t
}

// notEligible puts the core's reason why this master may not be ELECT in
// words ("" when it may).
func (n *MasterNode) notEligible(cfg *registry.ClusterConfig) string {
	switch n.core.Ineligible() {
	case "":
		return ""
	case master.IneligibleRemoved:
		return "it is out of the set of masters (MASTER_HOST no longer names it, or every master it reaches refuses it as a stranger): it takes part in nothing until it is named again"
	case master.IneligibleNoMetadata:
		return "it holds no metadata yet (started with -e): it must sync from a LEADER first"
	case master.IneligibleFounder:
		founder := "the founder"
		if cfg != nil {
			if a, ok := n.addrKnown(cfg.Founder); ok {
				founder = "the founder " + a.String()
			}
		}
		return "no chunkserver registration is in force yet: only " + founder + " can be elected"
	case master.IneligibleForeign:
		return "a master of MASTER_HOST belongs to another cluster: this founder does not bootstrap (until it restarts with that master gone)"
	}
	return "its registry could not be won even with every chunkserver's vote"
}

// observed is what observe() last saw, to log and count changes once.
// leaderChangeMs: when the LEADER last changed (wall clock, for the
// listings); usage samples memory and CPU for them; acks, the LEADER's
// acknowledgement durability as last seen (ackdurability.go).
type observed struct {
	lastLeader     wire.MasterID
	leaderChangeMs int64
	usage          usage
	syncedAt       time.Time
	observedRole   roles.Role
	observedAt     time.Time
	layout         layoutWarnings
	acks           ackWatch
}
