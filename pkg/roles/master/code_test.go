package master

import (
	"testing"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// TestStaleSeqCoded: a change under a sequence number below the
// session's last one is refused as an old retry, with its code (the other
// refusals' codes are in the golden scripts: client.txt, deputy.txt,
// handover.txt, admin_refusals.txt, registry_refusals.txt).
func TestStaleSeqCoded(t *testing.T) {
	r := newLeaderRig(t)
	r.step(roles.ClientWrite{Client: 9, Seq: 5, Key: "a", Value: "x"})
	r.step(roles.ClientWrite{Client: 9, Seq: 3, Key: "a", Value: "y"})
	if len(r.replies) != 2 || !r.replies[0].OK {
		t.Fatalf("replies %+v", r.replies)
	}
	if rep := r.replies[1]; rep.OK || rep.Code != wire.CodeStaleSeq || rep.Err != roles.ErrStaleSeq {
		t.Fatalf("an old retry was answered %+v, want a refusal coded %v", rep, wire.CodeStaleSeq)
	}
}
