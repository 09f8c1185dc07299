package masternode

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/masterhost"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The set of masters while everything runs (docs/architecture.md §5.3):
// MASTER_HOST is resolved again every MASTER_RESOLVE_INTERVAL, on SIGHUP
// and on mfscli -CMR; a new list starts links to the masters added, stops
// those to the masters gone, and is stepped into the core (MasterSet).

// masterSet is the master's side of the set of masters: the book (any
// goroutine reads it), MASTER_HOST and the links (the loop's).
type masterSet struct {
	// book: the set of masters and every master's address, replaced whole
	// by the loop, read by any goroutine.
	book atomic.Pointer[masterBook]
	host *node.HostSpec // MASTER_HOST, resolved again by resolver
	// strangerTo: the masters whose link refused this one as a stranger
	// (true) or took it (false); member: this master is in the set (loop
	// only).
	strangerTo map[wire.MasterID]bool
	member     bool
	foreign    map[wire.MasterID]bool       // masters of another cluster, reported once
	links      map[wire.MasterID]*node.Link // outgoing, to every other master
}

// masterBook is the set of masters as this node knows it: replaced whole,
// never changed in place, so that the readers (the accept goroutines, the
// health and metrics handlers) need no lock.
type masterBook struct {
	// addrOf holds every master named since the start, the ones removed
	// too: the history and the logs still name them.
	addrOf map[wire.MasterID]netip.Addr
	// set is the current MASTER_HOST, sorted by id.
	set []masterhost.Master
}

func newBook(list []masterhost.Master) *masterBook {
	b := &masterBook{addrOf: map[wire.MasterID]netip.Addr{}, set: slices.Clone(list)}
	for _, m := range list {
		b.addrOf[m.ID] = m.Addr.Addr()
	}
	return b
}

// with is b after a resolution gave list.
func (b *masterBook) with(list []masterhost.Master) *masterBook {
	nb := newBook(list)
	for id, a := range b.addrOf {
		if _, ok := nb.addrOf[id]; !ok {
			nb.addrOf[id] = a
		}
	}
	return nb
}

// member is the master of the current set with id, if any.
func (b *masterBook) member(id wire.MasterID) (masterhost.Master, bool) {
	i := slices.IndexFunc(b.set, func(m masterhost.Master) bool { return m.ID == id })
	if i < 0 {
		return masterhost.Master{}, false
	}
	return b.set[i], true
}

func (b *masterBook) ids() []wire.MasterID {
	out := make([]wire.MasterID, len(b.set))
	for i, m := range b.set {
		out[i] = m.ID
	}
	return out
}

// addr is the address of master id (invalid when it was never named).
func (n *MasterNode) addr(id wire.MasterID) netip.Addr { return n.book.Load().addrOf[id] }

// addrKnown is addr with whether it is known.
func (n *MasterNode) addrKnown(id wire.MasterID) (netip.Addr, bool) {
	a, ok := n.book.Load().addrOf[id]
	return a, ok
}

// Masters is the current set of masters (MASTER_HOST as last resolved).
func (n *MasterNode) Masters() []masterhost.Master { return slices.Clone(n.book.Load().set) }

// SetMasterHost puts a new MASTER_HOST in force (a reload) and resolves
// it now.
func (n *MasterNode) SetMasterHost(spec string) { n.host.Set(spec) }

// MasterHost is MASTER_HOST in force (the last SetMasterHost).
func (n *MasterNode) MasterHost() string { return n.host.Get() }

// Resolve asks for MASTER_HOST to be resolved again now (SIGHUP, mfscli
// -CMR); the resolution runs on its own goroutine and its result goes
// through the loop. It does not wait.
func (n *MasterNode) Resolve() { n.host.Ask() }

// resolveFor is mfscli -CMR: MASTER_HOST resolved now, off the loop, the
// result put in force and the command answered with the set of masters.
func (n *MasterNode) resolveFor(c *node.Conn, id uint64) {
	spec, r := n.host.Get(), masterhost.Resolver{HostsFile: n.opt.HostsFile}
	go func() {
		in := input{kind: inMasters, asked: &adminWait{c: c, id: id}}
		if spec == "" {
			in.err = errors.New("this master was started with a fixed list of masters (no MASTER_HOST to resolve)")
		} else {
			in.masters, in.err = r.Resolve(spec, n.opt.MLPort)
		}
		select {
		case n.inbox <- in:
		case <-n.life.Done():
		}
	}()
}

// answerResolve answers mfscli -CMR (loop only).
func (n *MasterNode) answerResolve(w adminWait, err error) {
	if err != nil {
		w.c.Send(protocol.AdminResp{ID: w.id, Code: wire.CodeInvalid, Text: "MASTER_HOST not resolved; the set of masters stays as it was: " + err.Error()})
		return
	}
	var names []string
	for _, m := range n.book.Load().set {
		names = append(names, m.Addr.Addr().String())
	}
	text := fmt.Sprintf("MASTER_HOST resolved: %d masters (%s)", len(names), strings.Join(names, ", "))
	if !n.member {
		text += "; this master is out of the set of masters (not named, or refused as a stranger by every master it reaches): it takes part in nothing"
	}
	w.c.Send(protocol.AdminResp{ID: w.id, OK: true, Text: text})
}

// resolver resolves MASTER_HOST for the loop (node.ResolveLoop).
func (n *MasterNode) resolver() {
	if n.opt.MasterHost == "" {
		return // a test node built with a fixed list
	}
	node.ResolveLoop(n.log, n.host, n.opt.HostsFile, n.opt.MLPort, n.opt.ResolveInterval, n.life.Done(),
		func(list []masterhost.Master) bool {
			select {
			case n.inbox <- input{kind: inMasters, masters: list}:
				return true
			case <-n.life.Done():
				return false
			}
		})
}

// takeMasters puts a resolved list in force (loop only): links to the
// masters added, none to the masters gone, the core told.
func (n *MasterNode) takeMasters(list []masterhost.Master) {
	old := n.book.Load()
	same := slices.Equal(old.set, list)
	if !same {
		var added, removed []string
		for _, m := range list {
			if _, ok := old.member(m.ID); !ok {
				added = append(added, m.Addr.String())
			}
		}
		nb := old.with(list)
		for _, m := range old.set {
			if _, ok := nb.member(m.ID); !ok {
				removed = append(removed, m.Addr.String())
			}
		}
		n.book.Store(nb)
		for id, l := range n.links {
			if _, ok := nb.member(id); !ok {
				l.Stop()
				delete(n.links, id)
				delete(n.strangerTo, id)
			}
		}
		for c := range n.peersIn {
			if _, ok := nb.member(wire.MasterID(c.Peer.ID)); !ok {
				// Its own link dials again, and is told it is a stranger.
				c.Close()
			}
		}
		for _, m := range list {
			if m.ID != n.opt.Core.ID && n.links[m.ID] == nil {
				n.links[m.ID] = startMasterLink(n, m)
			}
		}
		n.log.Info().Strs("added", added).Strs("removed", removed).Int("masters", len(list)).Msg("set of masters changed (MASTER_HOST resolved again)")
	}
	n.stepMasterSet(!same)
}

// stepMasterSet tells the core the set and whether this master is in it:
// named in its own list, and not refused as a stranger by every master of
// the list that answered (each of them resolved MASTER_HOST without it).
// changed: the list changed (else only membership may have).
func (n *MasterNode) stepMasterSet(changed bool) {
	b := n.book.Load()
	_, named := b.member(n.opt.Core.ID)
	refused, answered := 0, 0
	for id := range n.links {
		switch v, ok := n.strangerTo[id]; {
		case !ok:
		case v:
			refused++
			answered++
		default:
			answered++
		}
	}
	member := named && (answered == 0 || refused < answered)
	if !changed && member == n.member {
		return
	}
	if member != n.member {
		if member {
			n.log.Info().Msg("this master is in the set of masters again: it takes part as a FOLLOWER and syncs")
		} else {
			why := "MASTER_HOST no longer names it"
			if named {
				why = "every master that answered refused it as a stranger (their MASTER_HOST does not name it)"
			}
			n.log.Error().Str(obs.FieldReason, why).Msg("this master is out of the set of masters: it takes part in nothing (no votes, no status, not eligible) until it is named again; stop it, or fix MASTER_HOST")
		}
		n.member = member
	}
	n.step(roles.MasterSet{Masters: b.ids(), Member: member})
}

// linkAnswered records how master id answered this master's link: as a
// member (stranger false) or refusing it as a stranger (loop only).
func (n *MasterNode) linkAnswered(id wire.MasterID, stranger bool) {
	if _, ok := n.book.Load().member(id); !ok {
		return // a link already stopped
	}
	if v, ok := n.strangerTo[id]; ok && v == stranger {
		return
	}
	n.strangerTo[id] = stranger
	if stranger {
		n.log.Warn().Str(obs.FieldPeer, n.addr(id).String()).Msg("that master's MASTER_HOST does not name this master (removed, or not resolved there yet)")
	}
	n.stepMasterSet(false)
}
