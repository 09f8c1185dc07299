package wire

import "strconv"

// Code says why a master refused a request, for programs: a client decides
// by it whether to ask again, elsewhere or later, or to give up. The
// reply's text says the same for people, in more words; programs never
// compare the text. Codes travel in ClientReply.Code and AdminResp.Code;
// the numbers are append-only, like the message types (docs/wire.md lists
// them).
type Code uint8

// Refusal codes. CodeNone (0) is no refusal, or an answer from a master
// that did not send codes.
const (
	CodeNone Code = iota
	// CodeNotLeader: this master is not the LEADER (or no longer is); ask
	// the LEADER, which the reply names when this master knows it.
	CodeNotLeader
	// CodeHandover: the LEADER is handing over; ask the master the reply
	// names, or again shortly.
	CodeHandover
	// CodeReadOnly: a DEPUTY serves reads only (possibly stale); changes
	// wait for a LEADER.
	CodeReadOnly
	// CodeChangePending: a registry or location change waits for the one
	// before it to be in force (a heartbeat or two); ask again shortly.
	CodeChangePending
	// CodeInvalid: the request itself is wrong (an empty or too long key
	// or value, a change the registry or location map cannot take, an
	// unknown command or chunkserver); asking again cannot help.
	CodeInvalid
	// CodeStaleSeq: a change under a sequence number below the session's
	// last one (an old retry); not applied.
	CodeStaleSeq
	// CodeState: this master's role or state, or the cluster's, does not
	// allow the command now (USURPER asked of a LEADER, a chunkserver
	// still active, a change that would cost the quorum, no metadata yet).
	CodeState
	// CodeDenied: mfsexports.cfg or ADMIN_PASSWORD does not allow it (no
	// access, read-only, a password missing or wrong, a command meant for
	// another master).
	CodeDenied
	// CodeThrottled: too many wrong proofs from this address lately; the
	// address is refused for a while without a try.
	CodeThrottled
	// CodeBusy: the LEADER holds as many operations waiting for their
	// acknowledgement as it takes (MAX_PENDING); nothing was done: ask the
	// same master again after a moment.
	CodeBusy
)

var codeNames = [...]string{
	CodeNone:          "NONE",
	CodeNotLeader:     "NOT_LEADER",
	CodeHandover:      "HANDOVER",
	CodeReadOnly:      "READ_ONLY",
	CodeChangePending: "CHANGE_PENDING",
	CodeInvalid:       "INVALID",
	CodeStaleSeq:      "STALE_SEQ",
	CodeState:         "STATE",
	CodeDenied:        "DENIED",
	CodeThrottled:     "THROTTLED",
	CodeBusy:          "BUSY",
}

// String is the code's name (NOT_LEADER), or "code(N)" for a number this
// build does not know.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "code(" + strconv.Itoa(int(c)) + ")"
}

// Codes returns every code this build knows, CodeNone first.
func Codes() []Code {
	out := make([]Code, len(codeNames))
	for i := range out {
		out[i] = Code(i)
	}
	return out
}
