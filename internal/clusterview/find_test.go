package clusterview

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// TestAskForHistory: a master is asked for its whole election history
// when the history is listed (mfscli -SLH), and for the default otherwise
// (AskAll: /api/v1/status, polled every second). A fake master on
// loopback answers with the count it was asked for.
func TestAskForHistory(t *testing.T) {
	reqs := frame.NewRegistry()
	reqs.Register(wire.TypeStatusReq, func() wire.Message { return &protocol.StatusReq{} })
	addrs := []netip.AddrPort{fixture.Listen(t, func(nc net.Conn) {
		if _, err := reqs.ReadFrame(nc, 4096); err != nil { // the hello
			return
		}
		if frame.WriteFrame(nc, frame.Hello{Proto: frame.ProtocolVersion, Kind: frame.KindMaster, ID: 1}) != nil {
			return
		}
		m, err := reqs.ReadFrame(nc, frame.DefaultMaxFrame)
		if req, ok := m.(*protocol.StatusReq); err == nil && ok {
			_ = frame.WriteFrame(nc, protocol.StatusResp{HistoryTotal: req.History})
		}
	})}
	for _, c := range []struct {
		name string
		ask  func() []Answer
		want int
	}{
		{"AskAll", func() []Answer { return AskAll(addrs, time.Second) }, 0},
		{"AskFor(-SIM -SLQ)", func() []Answer { return AskFor(addrs, Parts{Masters: true, Locations: true}, time.Second) }, 0},
		{"AskFor(-SLH)", func() []Answer { return AskFor(addrs, Parts{History: true}, time.Second) }, namespace.MaxHistory},
	} {
		a := c.ask()[0]
		if a.Err != nil || a.St.HistoryTotal != c.want {
			t.Errorf("%s asked for %d records (%v), want %d", c.name, a.St.HistoryTotal, a.Err, c.want)
		}
	}
}
