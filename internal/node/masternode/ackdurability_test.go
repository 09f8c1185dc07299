package masternode

import (
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/rs/zerolog"
)

// TestAckDurabilityShort (review N7): a LEADER whose MASTER_HOST names it
// alone, with ACK_REPLICAS = 1, acknowledges on its own disk. It says so:
// one error line naming the cause and what a loss of its disk costs, the
// gauges, and its status answer. With ACK_REPLICAS = 0 nothing falls
// short and nothing is said.
func TestAckDurabilityShort(t *testing.T) {
	for _, acks := range []int{1, 0} {
		var logs nodetest.SyncBuffer
		n, reg, _ := leaderWithVoter(t, "127.0.1.1", freePort(t, "127.0.1.1"), func(o *MasterOptions) {
			o.Core.AckReplicas = acks
			o.Log = zerolog.New(&logs)
		})
		if acks == 0 {
			time.Sleep(2 * n.opt.Core.PeerTimeout)
			var st protocol.StatusResp
			nodetest.Until(5*time.Second, func() bool { st = nodetest.StatusOf(t, n); return st.Role == roles.Leader })
			if !st.AckKnown || st.AckShort || st.AckRequired != 0 || strings.Contains(logs.String(), "acknowledged changes rest on") {
				t.Errorf("ACK_REPLICAS = 0: status %v short %v required %d, log:\n%s", st.AckKnown, st.AckShort, st.AckRequired, logs.String())
			}
			if g := gauge(t, reg, "mfs_master_ack_replicas_short"); g != 0 {
				t.Errorf("ACK_REPLICAS = 0: mfs_master_ack_replicas_short %v", g)
			}
			continue
		}
		var st protocol.StatusResp
		if !nodetest.Until(5*time.Second, func() bool { st = nodetest.StatusOf(t, n); return st.AckShort }) {
			t.Fatalf("a LEADER alone with ACK_REPLICAS = 1 is not short: %+v", st)
		}
		if !st.AckKnown || st.AckRequired != 1 || st.AckReplicas != 0 || st.AckFollowers != 0 || st.AckShortFor <= 0 || len(st.AckUnheard) != 0 {
			t.Errorf("status: known %v required %d replicas %d followers %d for %v unheard %v; want true 1 0 0 >0 none",
				st.AckKnown, st.AckRequired, st.AckReplicas, st.AckFollowers, st.AckShortFor, st.AckUnheard)
		}
		if !nodetest.Until(2*time.Second, func() bool { return gauge(t, reg, "mfs_master_ack_replicas_short") == 1 }) {
			t.Errorf("mfs_master_ack_replicas_short %v, want 1", gauge(t, reg, "mfs_master_ack_replicas_short"))
		}
		if g := gauge(t, reg, "mfs_master_ack_replicas"); g != 0 {
			t.Errorf("mfs_master_ack_replicas %v, want 0", g)
		}
		// Once per episode, however many changes it acknowledges: each
		// beginning (error) is followed by its end (info) before the next
		// one (a LEADER that lost its votes on a loaded host and won them
		// again starts a new episode).
		time.Sleep(3 * n.opt.Core.PeerTimeout)
		var begins []string
		open := false
		for _, l := range strings.Split(logs.String(), "\n") {
			switch {
			case strings.Contains(l, `"level":"error"`) && strings.Contains(l, "acknowledged changes rest on"):
				if open {
					t.Errorf("a second beginning before the episode ended:\n%s", logs.String())
				}
				begins, open = append(begins, l), true
			case strings.Contains(l, `"level":"info"`) && strings.Contains(l, "acknowledged changes"):
				if !open {
					t.Errorf("an end without a beginning: %s", l)
				}
				open = false
			}
		}
		if len(begins) == 0 {
			t.Fatalf("no line about the shortfall:\n%s", logs.String())
		}
		for _, want := range []string{"0 of ACK_REPLICAS=1 follower copies", "MASTER_HOST names no other master",
			"a loss of this master's disk now loses acknowledged changes", `"reason":"alone"`, `"replicas":0`, `"ack_replicas":1`} {
			if !strings.Contains(begins[0], want) {
				t.Errorf("the line lacks %q: %s", want, begins[0])
			}
		}
	}
}
