package roles

// Role is what a master reports. The numbers are MooseFS's state ids.
type Role uint8

// The six roles. DUMMY is 0 as in MooseFS; Unset is never reported.
const (
	Dummy    Role = 0
	Leader   Role = 1
	Elect    Role = 2
	Follower Role = 3
	Usurper  Role = 4
	Deputy   Role = 5
)

var roleNames = [...]string{"DUMMY", "LEADER", "ELECT", "FOLLOWER", "USURPER", "DEPUTY"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "ROLE?"
}

// Serves reports whether the role serves chunkservers and clients, which is
// what the disconnect rules are about.
func (r Role) Serves() bool { return r == Leader || r == Deputy }

// TakesVotes reports whether chunkserver vote connections are accepted and
// counted in this role.
func (r Role) TakesVotes() bool { return r == Elect || r == Leader || r == Deputy }

// SyncState is how far a FOLLOWER or USURPER is from the LEADER.
type SyncState uint8

// Sync states; Synced prints as no suffix.
const (
	Synced  SyncState = 1 + iota
	Init              // no metadata yet
	Desync            // not following anybody
	Delayed           // following, but behind
)

// Suffix is the text listings append to FOLLOWER.
func (s SyncState) Suffix() string {
	switch s {
	case Init:
		return " (INIT)"
	case Desync:
		return " (DESYNC)"
	case Delayed:
		return " (DELAYED)"
	}
	return ""
}

func (s SyncState) String() string {
	switch s {
	case Synced:
		return "SYNCED"
	case Init:
		return "INIT"
	case Desync:
		return "DESYNC"
	case Delayed:
		return "DELAYED"
	}
	return "SYNC?"
}
