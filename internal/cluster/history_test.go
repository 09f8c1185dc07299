package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// TestElectionHistory: the election history is in the replicated
// metadata, so it survives kill -9 of two LEADERs in a row: the third
// LEADER holds the first one's records, and records of its own that name
// the LEADER each new one replaced and why it went; every master ends up
// with the same history; the metric counts the changes by cause.
func TestElectionHistory(t *testing.T) {
	c, first := start(t, nil)
	leaders := []int{first}
	for range 2 {
		lead := leaders[len(leaders)-1]
		killed := c.Masters[lead].Addr
		// The LEADER's own record must be committed before it dies, or
		// there is nothing of it to survive.
		eventually(t, 5*time.Second, 50*time.Millisecond, "the LEADER's record in the history", func() error {
			_, err := leaderRecord(c, lead)
			return err
		})
		c.Masters[lead].Kill()
		next, st, err := c.WaitLeader(10*time.Second, 20*time.Millisecond, lead)
		if err != nil {
			t.Fatalf("after kill -9 of %s: %v", killed, err)
		}
		t.Logf("kill -9 of %s: LEADER %s at epoch %d", killed, st.Addr, st.Epoch)
		// Back, so that the next LEADER's changes are acknowledged by
		// ACK_REPLICAS followers; it must learn the history too.
		if err := c.Masters[lead].Start(); err != nil {
			t.Fatal(err)
		}
		var rec protocol.RoleChangeStatus
		eventually(t, 5*time.Second, 50*time.Millisecond, "the new LEADER's record naming the killed one", func() error {
			r, err := leaderRecord(c, next)
			if err != nil {
				return err
			}
			if r.Deposed != killed {
				return fmt.Errorf("its record names %v as deposed, want %s: %+v", r.Deposed, killed, r)
			}
			rec = r
			return nil
		})
		// A killed process: its host closes the vote connections and
		// refuses new ones; a voter whose session only lapsed says so.
		if !slices.Contains([]string{changelog.WhyRefused, changelog.WhyClosed, changelog.WhyLeaseLapsed}, rec.Why) {
			t.Errorf("the deposed LEADER %s went for %q, want a closed or refused connection or a lapsed lease", killed, rec.Why)
		}
		if rec.Reason != roles.ReasonWon || rec.Section != "§3.4" || len(rec.Votes) == 0 || rec.UnixMs == 0 {
			t.Errorf("the new LEADER's record lacks its reason, votes or time: %+v", rec)
		}
		t.Logf("history: %s", recordText(rec))
		leaders = append(leaders, next)
	}

	// Every master holds the same history, with the first LEADER's
	// records (written before both kills) and one LEADER record per term.
	var hist []protocol.RoleChangeStatus
	eventually(t, 10*time.Second, 100*time.Millisecond, "the same history on every master", func() error {
		var first []protocol.RoleChangeStatus
		for i, m := range c.Masters {
			st, err := client.StatusWith(cluster.ClientAddr(m.Addr), protocol.StatusReq{History: namespace.MaxHistory}, time.Second)
			if err != nil {
				return err
			}
			if st.HistoryWaiting > 0 {
				return fmt.Errorf("%s has %d role changes not yet in the history", m.Addr, st.HistoryWaiting)
			}
			if i == 0 {
				first = st.History
			} else if !slices.EqualFunc(first, st.History, func(a, b protocol.RoleChangeStatus) bool { return recordText(a) == recordText(b) }) {
				return fmt.Errorf("%s holds %d records, %s %d", m.Addr, len(st.History), c.Masters[0].Addr, len(first))
			}
		}
		hist = first
		return nil
	})
	var led []string
	for _, r := range hist {
		t.Logf("  %s", recordText(r))
		if r.To == roles.Leader.String() {
			led = append(led, r.Master.String())
		}
	}
	want := []string{c.Masters[leaders[0]].Addr.String(), c.Masters[leaders[1]].Addr.String(), c.Masters[leaders[2]].Addr.String()}
	if len(led) < 3 || !slices.Equal(led[len(led)-3:], want) {
		t.Fatalf("LEADER records name %v, want the three LEADERs in turn %v", led, want)
	}

	// The count by cause is the cluster's, on every master.
	eventually(t, 3*time.Second, 100*time.Millisecond, "mfs_cluster_leader_changes_total", func() error {
		body := scrape(t, "http://"+cluster.MasterHTTP(c.Masters[leaders[0]].Addr).String()+"/metrics")
		total := 0.0
		for _, line := range strings.Split(body, "\n") {
			var why string
			var n float64
			if _, err := fmt.Sscanf(line, "mfs_cluster_leader_changes_total{why=%q} %g", &why, &n); err == nil {
				total += n
			}
		}
		if total < 3 {
			return fmt.Errorf("%g LEADER changes counted, want at least 3", total)
		}
		return nil
	})
}

// leaderRecord returns the newest record of master i becoming LEADER, as
// that master's status shows it (committed: what it has applied).
func leaderRecord(c *cluster.Cluster, i int) (protocol.RoleChangeStatus, error) {
	st, err := client.Status(cluster.ClientAddr(c.Masters[i].Addr), time.Second)
	if err != nil {
		return protocol.RoleChangeStatus{}, err
	}
	for j := len(st.History) - 1; j >= 0; j-- {
		r := st.History[j]
		if r.To == roles.Leader.String() && r.Master == c.Masters[i].Addr && r.Epoch == st.Epoch {
			return r, nil
		}
	}
	return protocol.RoleChangeStatus{}, fmt.Errorf("%s (epoch %d) holds no record of its becoming LEADER yet (%d records)", c.Masters[i].Addr, st.Epoch, len(st.History))
}

func recordText(r protocol.RoleChangeStatus) string {
	s := fmt.Sprintf("%s %s -> %s epoch %d (%s %s) votes %v", r.Master, r.From, r.To, r.Epoch, r.Reason, r.Section, r.Votes)
	if r.Why != "" {
		s += fmt.Sprintf(" deposed %v: %s", r.Deposed, r.Why)
	}
	return s
}
