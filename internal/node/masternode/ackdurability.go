package masternode

import (
	"fmt"
	"strings"

	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// ackWatch is what watchAcks last saw of the LEADER's acknowledgement
// durability (roles.Durability), so that each episode of acknowledgements
// resting on fewer follower copies than ACK_REPLICAS is logged once as it
// begins and once as it ends (review N7). Loop only.
type ackWatch struct {
	short bool
	since roles.Instant // the episode's beginning, on the core's clock
}

// watchAcks logs the beginning (error) and the end (info) of an episode;
// called after every group. The gauges follow with the others (observe).
func (n *MasterNode) watchAcks() {
	d := n.core.Durability()
	w := &n.acks
	if w.short && (!d.Short || d.Since != w.since) {
		reason, how := "caught_up", "rest on enough follower copies again"
		if n.core.Role() != roles.Leader {
			reason, how = "not_leader", "no longer concern this master: it is not LEADER"
		}
		n.log.Info().Int("replicas", d.Replicas).Int("ack_replicas", d.Required).Str(obs.FieldReason, reason).
			Dur("lasted", n.now().Sub(w.since)).Uint64(obs.FieldEpoch, n.core.Epoch()).
			Msgf("acknowledged changes %s (%d of ACK_REPLICAS=%d follower copies)", how, d.Replicas, d.Required)
	}
	if d.Short && (!w.short || d.Since != w.since) {
		unheard := make([]string, 0, len(d.Unheard))
		for _, id := range d.Unheard {
			unheard = append(unheard, n.addr(id).String())
		}
		var reason, why string
		switch {
		case len(unheard) > 0:
			reason, why = "unheard", "masters not heard within PEER_TIMEOUT: "+strings.Join(unheard, ", ")
		case d.Followers == 0:
			reason, why = "alone", "MASTER_HOST names no other master"
		case d.Followers < d.Required:
			reason, why = "too_few_masters", fmt.Sprintf("MASTER_HOST names %d other master(s)", d.Followers)
		default:
			reason, why = "behind", "the followers have not confirmed them"
		}
		n.log.Error().Int("replicas", d.Replicas).Int("ack_replicas", d.Required).Strs("unheard", unheard).
			Str(obs.FieldReason, reason).Uint64(obs.FieldEpoch, n.core.Epoch()).
			Msgf("acknowledged changes rest on %d of ACK_REPLICAS=%d follower copies: %s; a loss of this master's disk now loses acknowledged changes: bring a follower master back, or check MASTER_HOST",
				d.Replicas, d.Required, why)
	}
	w.short, w.since = d.Short, d.Since
}

// ackStatus adds what a LEADER's acknowledgements rest on to its status
// answer, judged at now (the answer's instant).
func (n *MasterNode) ackStatus(st *protocol.StatusResp, now roles.Instant) {
	d := n.core.Durability()
	st.AckKnown, st.AckRequired, st.AckFollowers, st.AckReplicas, st.AckShort = true, d.Required, d.Followers, d.Replicas, d.Short
	if !d.Short {
		return
	}
	st.AckShortFor = now.Sub(d.Since)
	for _, id := range d.Unheard {
		if a, ok := n.addrKnown(id); ok {
			st.AckUnheard = append(st.AckUnheard, a)
		}
	}
}
