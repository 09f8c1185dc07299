package roles

import (
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/namespace"
)

// Client-facing error texts, for people: a reply carries its wire.Code
// beside the text, and programs go by the code.
const (
	ErrNotLeader = "not the leading master"
	ErrHandover  = "leadership handover in progress, retry"
	ErrReadOnly  = "DEPUTY is read-only"
	ErrNoSession = "a change needs a session id"
	// ErrChangePending: a registry or location change waits for the one
	// before it to be in force (a heartbeat or two).
	ErrChangePending = "another registry change is still being put in force"
	ErrStaleSeq      = "sequence number below the session's last change (an old retry); not applied"
	ErrBusy          = "busy: as many operations wait for their acknowledgement as this LEADER takes (MAX_PENDING); not applied, retry shortly"
)

// Limits on what one change may hold: entries, snapshot chunks and list
// answers are built to fit a frame.
const (
	MaxKey   = 4096
	MaxValue = 256 << 10
)

// CheckWrite names what is wrong with a change, or returns "".
func CheckWrite(w ClientWrite) string {
	switch {
	case w.Client == 0:
		return ErrNoSession
	case w.Key == "":
		return "empty key"
	case len(w.Key) > MaxKey:
		return fmt.Sprintf("key of %d bytes, at most %d", len(w.Key), MaxKey)
	case !namespace.Client(w.Key):
		return "key starts with a NUL byte: those are the cluster's own (the election history)"
	case len(w.Value) > MaxValue:
		return fmt.Sprintf("value of %d bytes, at most %d", len(w.Value), MaxValue)
	}
	return ""
}
