package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// trustRisk is what -CTRUST costs, printed with every use of it.
const trustRisk = "risk: if this chunkserver's lost or damaged record held a grant or a commit point that a quorum rested on, " +
	"a change already acknowledged may be lost and two masters may write different changes at the same version; " +
	"safe only when no LEADER can be elected otherwise and you accept that (docs/operations.md, \"Lost or damaged chunkserver disk\")"

// trustRecord is -CTRUST/ip/port: with no LEADER (so no heartbeat can
// restore it), every master that answered sends the uncertain chunkserver
// the operator's TrustRecord, and it votes on its record as it is.
func trustRecord(answers []clusterview.Answer, cmd string, parts []string, password string, timeout time.Duration) error {
	var view *clusterview.Answer
	for i := range answers {
		a := &answers[i]
		if a.Err != nil {
			continue
		}
		if a.St.Role == roles.Leader {
			return fmt.Errorf("%s is LEADER: its first heartbeat restores an uncertain chunkserver's record; -CTRUST is for when no quorum is left to elect one", a.Addr.Addr())
		}
		if view == nil || len(a.St.Chunkservers) > len(view.St.Chunkservers) {
			view = a
		}
	}
	if view == nil {
		return errors.New("no master answered")
	}
	cs, err := registered(view, cmd, parts)
	if err != nil {
		return err
	}
	uncertain := false
	for _, a := range answers {
		for _, o := range a.St.Chunkservers {
			uncertain = uncertain || (o.ID == cs.ID && o.Uncertain)
		}
	}
	if !uncertain {
		return fmt.Errorf("chunkserver %s:%d (id %d) is not uncertain at any master: nothing to vouch for", cs.Addr, cs.Port, cs.ID)
	}
	fmt.Fprintln(os.Stdout, trustRisk)
	sent := 0
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		req := protocol.AdminReq{ID: uint64(time.Now().UnixNano()), Kind: roles.AdminTrust, Change: registry.Change{ID: uint32(cs.ID)}}
		r, err := send(a.Addr, req, password, timeout)
		switch {
		case err != nil:
			fmt.Fprintf(os.Stdout, "%s: %v\n", a.Addr.Addr(), err)
		default:
			if r.OK {
				sent++
			}
			fmt.Fprintf(os.Stdout, "%s: chunkserver %s:%d (id %d): %s\n", a.Addr.Addr(), cs.Addr, cs.Port, cs.ID, r.Text)
		}
	}
	if sent == 0 {
		return errors.New("no master could send it: is the chunkserver connected?")
	}
	return nil
}
