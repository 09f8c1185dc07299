package masternode

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// TestRefuseReasonEnded: a connection its peer closed or reset before the
// handshake was over (a restart, a reconnect storm) is "ended", logged at
// debug level; one whose handshake ran out of time is "slow"; a frame cut
// short, or bytes that do not decode, stay "garbage".
func TestRefuseReasonEnded(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, c := range []struct {
		err  error
		want string
	}{
		{io.EOF, reasonEnded},
		{fmt.Errorf("hello: %w", reset), reasonEnded},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, "slow"},
		{io.ErrUnexpectedEOF, "garbage"},
		{fmt.Errorf("%w: Hello: bad", frame.ErrBadBody), "garbage"},
	} {
		if got := refuseReason(c.err); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}
