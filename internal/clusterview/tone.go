package clusterview

import (
	"errors"

	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// Tone is what a cell means, which decides its colour on a terminal.
type Tone uint8

const (
	ToneNone Tone = iota
	ToneDummy
	ToneLeader
	ToneElect
	ToneFollower // FOLLOWER or USURPER, synced
	ToneDesync   // FOLLOWER or USURPER, not synced (INIT, DESYNC, DELAYED)
	ToneDeputy
	ToneUnreachable
	ToneBusy
	ToneTransition
	ToneGood // quorum held, location carried
	ToneWarn // clock offset > 1 s, delay > 1 s
	ToneBad  // offset > 2 s, delay > 6 s, other metadata id, no quorum
)

// ToneOf is the colour class of a master's state word.
func ToneOf(a Answer) Tone {
	switch {
	case errors.Is(a.Err, client.ErrUnreachable):
		return ToneUnreachable
	case a.Err != nil:
		return ToneBusy
	case a.St.Transition != "":
		return ToneTransition
	case a.St.Removed:
		return ToneDummy // out of the set of masters: it takes part in nothing
	}
	return RoleTone(a.St)
}

// RoleTone is the colour class of a master's role, as it reports it.
func RoleTone(st protocol.StatusResp) Tone { return roleTone(st.Role, st.Sync == roles.Synced) }

// RoleNameTone is the colour class of a role named in the election
// history: FOLLOWER and USURPER as synced (a record has no sync state);
// a name this version does not know is not coloured.
func RoleNameTone(name string) Tone {
	r, ok := roleByName(name)
	if !ok {
		return ToneNone
	}
	return roleTone(r, true)
}

func roleTone(r roles.Role, synced bool) Tone {
	switch r {
	case roles.Leader:
		return ToneLeader
	case roles.Elect:
		return ToneElect
	case roles.Deputy:
		return ToneDeputy
	case roles.Follower, roles.Usurper:
		if synced {
			return ToneFollower
		}
		return ToneDesync
	}
	return ToneDummy
}

func LevelTone(l Level) Tone {
	return [...]Tone{ToneNone, ToneWarn, ToneBad}[l]
}
