package roles

import (
	"net/netip"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Sender stamping: a message's claim of who sent it counts for nothing;
// the driver fills in what the connection (or the authenticated
// datagram) proves instead, over whatever the message said. One place for
// both daemons and the simulator, so that what the simulator steps is what
// the drivers step. Each returns the message as the core's event, and
// false for a type that is no input of that direction: it is not stepped.

// FromPeerMaster is an input a master takes from another master, id.
func FromPeerMaster(msg wire.Message, id wire.MasterID) (Event, bool) {
	switch m := msg.(type) {
	case PeerStatus:
		m.From = id
		return m, true
	case Append:
		m.From = id
		return m, true
	case SnapshotChunk:
		m.From = id
		return m, true
	case AppendAck:
		m.From = id
		return m, true
	case FetchReq:
		m.From = id
		return m, true
	case FetchResp:
		m.From = id
		return m, true
	}
	return nil, false
}

// FromVoter is an input a master takes from chunkserver id, connected
// from addr (the address a vote session and its acknowledgements must
// come from).
func FromVoter(msg wire.Message, id wire.CSID, addr netip.Addr) (Event, bool) {
	switch m := msg.(type) {
	case Probe:
		m.CS = id
		return m, true
	case VoteHello:
		m.CS, m.Addr = id, addr
		return m, true
	case VoteBye:
		m.CS, m.Addr = id, addr
		return m, true
	case HeartbeatAck:
		m.CS, m.Addr = id, addr
		return m, true
	}
	return nil, false
}

// FromMaster is an input a voter takes from master id.
func FromMaster(msg wire.Message, id wire.MasterID) (Event, bool) {
	switch m := msg.(type) {
	case ProbeReply:
		m.From = id
		return m, true
	case Heartbeat:
		m.From = id
		return m, true
	case VoteRelease:
		m.From = id
		return m, true
	case Redirect:
		m.From = id
		return m, true
	}
	return nil, false
}
