package csnode

import (
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/voter"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The chunkserver's loop: one goroutine registers, steps the voter, and
// carries each group of steps out with one fsync.

// wait is how long the loop may wait for an input: until the voter's next
// deadline, or the next registration retry before it has an id.
func (n *ChunkserverNode) wait() time.Duration {
	if n.voter == nil {
		return 200 * time.Millisecond // registration retries
	}
	wait := time.Hour
	if d := n.voter.NextDeadline(); d != roles.Never {
		// After a step, from the step's time: the timer then fires
		// late by what the flush took, and a voter's deadlines all
		// allow an act (vote elsewhere, nominate, probe), none
		// obliges one in time.
		now := n.at
		if !n.stepped {
			now = n.now()
		}
		wait = max(time.Duration(d-now), 0)
	}
	return wait
}

// loop owns the voter: it registers, steps, carries out each group, and
// ends in order when asked (StopRequested, then the promise released or
// lapsed) or at the first failed write.
func (n *ChunkserverNode) loop() {
	defer n.life.End()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// An orderly stop: stopReq is set to nil once asked, stopBy bounds the
	// wait for the promise to end.
	stopReq := n.life.StopAsked()
	var stopBy <-chan time.Time
	if n.Identity().CS != wire.NoCS {
		if err := n.startVoter(netip.Addr{}, false); err != nil {
			n.fail(err)
			return
		}
	}
	for {
		// Moved on every heartbeat (a content voter's deadlines all move
		// out with it). Arming it only ever earlier, and stepping a Tick
		// when it fired early, saved an idle chunkserver nothing
		// measurable and cost a swarm a wake-up per voter and round.
		timer.Reset(n.wait())
		n.stepped = false
		var err error
		select {
		case in := <-n.inbox:
			n.life.Hold()
			// Group commit, as in the master: what is already queued is
			// stepped too, and one write makes the group's record durable
			// before any of its answers leave (a LEADER's heartbeats come
			// in bursts when changes are acknowledged).
			err = node.Group(in, n.inbox, n.handle)
		case <-timer.C:
			n.life.Hold()
			if n.voter != nil {
				err = n.step(roles.Tick{})
			} else {
				n.register()
			}
		case <-stopReq:
			stopReq = nil // asked once
			if n.voter == nil {
				n.goodbye()
				return
			}
			err = n.step(roles.StopRequested{})
			// Bounded: a promise that is neither released nor proven void
			// lapses within the longest ever made; past that the process
			// ends without the mark (and its next start keeps quiet).
			stopBy = time.After(max(n.opt.Voter.MaxPromise, n.voter.Hard().MaxGranted) + 500*time.Millisecond)
		case <-stopBy:
			n.log.Warn().Msg("chunkserver stopped with a promise standing: its next start keeps quiet")
			n.goodbye()
			return
		}
		if err == nil {
			err = n.flush()
		}
		if err != nil {
			n.fail(err)
			return
		}
		if stopReq == nil && (n.voter == nil || n.voter.Stopped()) {
			// The clean-stop mark is durable (flush wrote it before
			// anything else): nothing steps the voter after this.
			n.goodbye()
			return
		}
	}
}

func (n *ChunkserverNode) fail(err error) {
	n.life.SetErr(err)
	n.log.Error().Err(err).Msg("chunkserver stops")
	n.closeAll()
}

// goodbye ends an orderly stop: the voter already said goodbye to the
// master it voted for (StopRequested), and every connection closes.
func (n *ChunkserverNode) goodbye() {
	n.closeAll()
	// Give the goodbye a moment to leave before the process ends.
	deadline := time.Now().Add(500 * time.Millisecond)
	for _, l := range n.links {
		for l.Up() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	n.log.Info().Msg("chunkserver stopped")
}

func (n *ChunkserverNode) closeAll() {
	n.closeListener()
	for _, l := range n.links {
		l.Stop()
	}
}

func (n *ChunkserverNode) closeListener() {
	if n.ln != nil {
		_ = n.ln.Close()
	}
	n.closeDatagrams()
}

// register asks every connected master for an id; the LEADER answers.
func (n *ChunkserverNode) register() {
	if time.Since(n.regAt) < 200*time.Millisecond {
		return
	}
	n.regAt = time.Now()
	for _, l := range n.links {
		l.Send(protocol.RegisterReq{Addr: n.opt.Bind, Port: n.port, VoterOnly: len(n.opt.Disks) == 0})
	}
}

// startVoter starts the voter once the chunkserver has an id. lost: the id
// came back from a registration of this run as a known member while the
// record shows no promise (a wiped data directory: voter.Config).
func (n *ChunkserverNode) startVoter(local netip.Addr, lost bool) error {
	id := n.Identity()
	cfg := n.opt.Voter
	cfg.ID, cfg.Port, cfg.VoterOnly = id.CS, n.port, len(n.opt.Disks) == 0
	cfg.Addr = id.Addr.Addr()
	for _, m := range n.masters {
		cfg.Masters = append(cfg.Masters, m.ID)
	}
	hard, err := n.store.VoterHard()
	if err != nil {
		return err
	}
	cfg.RecordLost = lost && hard.NeverPromised()
	cfg.RecordDamaged, n.damaged = n.damaged, false
	if cfg.RecordLost {
		n.stMu.Lock()
		n.state.Record = n.recordPath() + ": lost (an empty record for an id that was already a member: removed, or a wiped DATA_PATH)"
		n.stMu.Unlock()
		n.log.Error().Str("file", n.recordPath()).Uint32("id", uint32(id.CS)).
			Msg("voter record lost: " + n.state.Record + ". The voter grants no vote until a LEADER's heartbeat has restored what it forgot")
		if n.metrics != nil {
			n.metrics.RecordDamaged()
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := n.flush(); err != nil {
		return err
	}
	v, b := voter.New(cfg, hard, n.now())
	// Carry makes the start's record (the clean-stop mark cleared) durable
	// before anything can be granted: the voter is stepped only after.
	if err := voter.Carry(n.store, csFx{n}, b); err != nil {
		return err
	}
	n.voter = v
	quiet := voter.QuietAfterStart(cfg, hard)
	why := "its last run may have left a promise: quiet until it has lapsed"
	switch {
	case cfg.RecordDamaged:
		why = "its record was read from the older copy (the newer is damaged): quiet as after a crash, then uncertain until a LEADER restores the record"
	case quiet > 0 && cfg.RecordLost:
		why = "an empty record for an id already registered (data directory wiped?): quiet as after a crash, then uncertain until a LEADER restores the record"
	case v.Uncertain():
		why = "its record is still uncertain from an earlier run: it grants no vote until a LEADER restores it"
	case quiet == 0 && hard.CleanStop:
		why = "its last run stopped in order with no promise standing: voting at once"
	case quiet == 0:
		why = "it never promised a vote: voting at once"
	}
	n.log.Info().Str(obs.FieldCS, id.Addr.String()).Uint32("id", uint32(id.CS)).Str("cluster", id.ClusterID).
		Dur("quiet", quiet).Msg("voter started: " + why)
	n.uncertain = v.Uncertain()
	n.stMu.Lock()
	n.state.Uncertain = n.uncertain
	n.stMu.Unlock()
	for _, l := range n.links {
		n.sendInfo(l)
	}
	return nil
}

func (n *ChunkserverNode) handle(in csInput) error {
	if in.ping != nil {
		close(in.ping)
		return nil
	}
	if in.masters != nil {
		return n.takeMasters(in.masters)
	}
	if in.record != "" {
		n.stMu.Lock()
		n.state.Record = in.record
		n.stMu.Unlock()
		n.log.Error().Str("file", n.recordPath()).Msg("voter record changed on the disk since it was written (rot, a bad sector, a stray write): " + in.record)
		if n.metrics != nil {
			n.metrics.RecordDamaged()
		}
		for _, l := range n.links {
			n.sendInfo(l)
		}
		return nil
	}
	if in.from != wire.NoMaster && n.links[in.from] == nil {
		return nil // from a link stopped since: that master is gone
	}
	if in.reply != nil {
		if n.voter != nil || in.reply.ID == wire.NoCS {
			return nil
		}
		addr := n.opt.Bind
		if !addr.IsValid() {
			addr = in.local
		}
		id := metadata.Identity{CS: in.reply.ID, ClusterID: in.cluster, Addr: netip.AddrPortFrom(addr, n.port)}
		if err := n.store.SetIdentity(id); err != nil {
			return err
		}
		n.idMu.Lock()
		n.id = id
		n.idMu.Unlock()
		n.log.Info().Uint32("id", uint32(id.CS)).Str("cluster", id.ClusterID).Str("master", n.addrOf[in.from].String()).Msg("registered")
		// Reconnect so every master hears the new id in the hello.
		for _, l := range n.links {
			l.Reconnect()
		}
		return n.startVoter(addr, !in.reply.New)
	}
	if in.up {
		if n.voter == nil {
			return nil
		}
		return n.step(roles.LinkUp{Master: in.from})
	}
	if n.voter == nil {
		return nil
	}
	if _, ok := in.ev.(roles.Refused); ok && !n.opt.TrustRefused {
		return nil // the fast path is off: a promise to a dead master lapses
	}
	switch e := in.ev.(type) {
	case roles.Heartbeat:
		if !n.admitHeartbeat(e, in.dgram) {
			return nil
		}
	case roles.VoteRelease:
		if !n.admitRelease(e, in.dgram) {
			return nil
		}
	case roles.Redirect:
		n.dg.Forget(uint32(in.from), e.Session)
	case roles.TrustRecord:
		n.trusted = in.from
	case roles.VoteConnLost:
		n.forgetDatagrams(e.Master)
		n.log.Debug().Str("master", n.addrOf[e.Master].String()).Bool("closed", e.Closed).Msg("master connection lost")
	case roles.Refused:
		n.log.Debug().Str("master", n.addrOf[e.Master].String()).Dur("sent_ago", time.Duration(n.now()-e.SentAt)).Msg("dial refused")
	}
	return n.step(in.ev)
}

// step runs one event through the voter; its actions wait for flush.
func (n *ChunkserverNode) step(ev roles.Event) error {
	n.at, n.stepped = n.now(), true
	if b := n.voter.Step(n.at, ev); !b.Empty() {
		n.pending = append(n.pending, b)
	}
	return nil
}

// flush carries out what the steps since the last flush asked for.
func (n *ChunkserverNode) flush() error {
	group := n.pending
	n.pending = nil
	if err := voter.Carry(n.store, csFx{n}, group...); err != nil {
		return err
	}
	n.noteUncertain()
	n.observe()
	return nil
}

// noteUncertain tells the masters and the log when the voter became
// uncertain or stopped being so (loop only, after the record is durable).
func (n *ChunkserverNode) noteUncertain() {
	now := n.voter != nil && n.voter.Uncertain()
	by := n.trusted
	n.trusted = wire.NoMaster
	if now == n.uncertain {
		return
	}
	n.uncertain = now
	n.stMu.Lock()
	n.state.Uncertain = now
	n.stMu.Unlock()
	if !now {
		h := n.voter.Hard()
		ev := n.log.Warn().Str("file", n.recordPath()).Uint64(obs.FieldEpoch, h.MaxEpoch).Str("commit", h.Commit.String())
		if by != wire.NoMaster {
			ev.Str("master", n.addrOf[by].String()).Msg("voter record vouched for by the operator (mfscli -CTRUST): voting on it as it is")
		} else {
			ev.Str("master", n.addrOf[h.EpochOwner].String()).Msg("voter record restored from the LEADER's heartbeat: voting again")
		}
	}
	for _, l := range n.links {
		n.sendInfo(l)
	}
}
