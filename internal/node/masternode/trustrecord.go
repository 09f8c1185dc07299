package masternode

import (
	"fmt"

	"github.com/mfs-election/mfs-election/internal/node"
	"github.com/mfs-election/mfs-election/internal/obs"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// maxRecordReport bounds what a chunkserver's CSInfo may say of its voter
// record (a file name and what was wrong with it) in the listings.
const maxRecordReport = 512

// trustFor carries out mfscli -CTRUST at this master (loop only): the
// chunkserver Change.ID gets the operator's TrustRecord on its connection
// here, if it said it is uncertain. mfscli asks every master, so that the
// chunkserver hears it whichever connection is up; the voter takes it once.
func (n *MasterNode) trustFor(c *node.Conn, m protocol.AdminReq) {
	id := wire.CSID(m.Change.ID)
	answer := func(ok bool, code wire.Code, text string) {
		c.Send(protocol.AdminResp{ID: m.ID, OK: ok, Code: code, Text: text})
	}
	cs := n.cs[id]
	info, known := n.csInfo[id]
	switch {
	case id == wire.NoCS:
		answer(false, wire.CodeInvalid, "no chunkserver named")
	case cs == nil || cs.Closed():
		answer(false, wire.CodeInvalid, fmt.Sprintf("chunkserver id %d is not connected to this master", id))
	case !known || !info.Uncertain:
		answer(false, wire.CodeInvalid, fmt.Sprintf("chunkserver id %d did not say it is uncertain: nothing to vouch for", id))
	default:
		cs.Send(protocol.TrustRecord{CS: id})
		n.log.Warn().Str(obs.FieldCS, cs.Remote.String()).Uint32("id", uint32(id)).
			Msg("the operator vouches for an uncertain chunkserver's voter record (mfscli -CTRUST): sent")
		answer(true, 0, "sent: it votes on its record as it is")
	}
}
