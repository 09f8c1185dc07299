package roles

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// Rule is one row of the master's transition table. docs/roles.md prints
// the same rows; a test keeps the two in step.
type Rule struct {
	Section    string // "§3.4": the docs/roles.md section that explains it
	From, To   Role
	Reason     string // stable reason word carried by the Transition
	Disconnect bool   // the disconnect rules apply before it takes effect
}

// Stable transition reasons.
const (
	ReasonNominated     = "nominated"
	ReasonSelfNominated = "self-nominated"
	ReasonHandover      = "handover"
	ReasonWon           = "quorum-won"
	ReasonDeputyTime    = "deputy-election-time"
	ReasonLeaderSeen    = "leader-seen"
	ReasonBetterElect   = "better-elect"
	ReasonNoVotes       = "no-votes"
	ReasonQuorumBack    = "quorum-available"
	ReasonQuorumLost    = "quorum-lost"
	ReasonHigherEpoch   = "higher-epoch"
	ReasonStepDown      = "step-down"
	ReasonAdminUsurper  = "admin-usurper"
	ReasonKeepLeader    = "keep-leadership"
	ReasonAdminCancel   = "admin-cancel"
	ReasonShutdown      = "shutdown"
)

// Transitions is the whole table: every role change a master may make.
// Disconnect is true exactly when the move leaves LEADER or DEPUTY, or is an
// ordered move out of ELECT back to FOLLOWER (or to DUMMY).
var Transitions = []Rule{
	{"§3.1", Follower, Elect, ReasonNominated, false},
	{"§3.2", Follower, Elect, ReasonSelfNominated, false},
	{"§3.3", Usurper, Elect, ReasonNominated, false},
	{"§3.3", Usurper, Elect, ReasonSelfNominated, false},
	{"§3.4", Elect, Leader, ReasonWon, false},
	{"§3.5", Elect, Deputy, ReasonDeputyTime, false},
	{"§3.6", Elect, Follower, ReasonLeaderSeen, true},
	{"§3.6", Elect, Follower, ReasonBetterElect, true},
	{"§3.6", Elect, Follower, ReasonNoVotes, true},
	{"§3.7", Deputy, Follower, ReasonQuorumBack, true},
	{"§3.7", Deputy, Follower, ReasonLeaderSeen, true},
	{"§3.7", Deputy, Follower, ReasonHigherEpoch, true},
	{"§3.8", Leader, Follower, ReasonQuorumLost, true},
	{"§3.9", Leader, Follower, ReasonHigherEpoch, true},
	{"§3.10", Leader, Follower, ReasonHandover, true},
	{"§3.10", Leader, Follower, ReasonStepDown, true},
	{"§3.11", Follower, Usurper, ReasonAdminUsurper, false},
	{"§3.12", Follower, Usurper, ReasonKeepLeader, false},
	{"§3.13", Usurper, Follower, ReasonAdminCancel, false},
	{"§3.14", Follower, Dummy, ReasonShutdown, false},
	{"§3.14", Usurper, Dummy, ReasonShutdown, false},
	{"§3.14", Elect, Dummy, ReasonShutdown, true},
	{"§3.14", Leader, Dummy, ReasonShutdown, true},
	{"§3.14", Deputy, Dummy, ReasonShutdown, true},
}

// FindRule returns the table row for a move, if the move is allowed.
func FindRule(from, to Role, reason string) (Rule, bool) {
	for _, r := range Transitions {
		if r.From == from && r.To == to && r.Reason == reason {
			return r, true
		}
	}
	return Rule{}, false
}

// MustDisconnect is the disconnect rule of docs/roles.md §4 as a function.
func MustDisconnect(from, to Role) bool {
	if from == to {
		return false
	}
	if from.Serves() {
		return true
	}
	return from == Elect && (to == Follower || to == Dummy)
}

// ChangeKind names one registry or location-map change.
type ChangeKind uint8

// Registry and location changes (docs/architecture.md §5).
const (
	ChangeRegister ChangeKind = 1 + iota
	ChangeRemove
	ChangeMapRange
	ChangeUnmapRange
	ChangeRename
	ChangeSetDefault
	ChangeSetOn
	ChangeMaintenance
)

// Change is one registry or location change, made by the LEADER as a
// config entry. Only one is in flight at a time (docs/architecture.md).
type Change struct {
	Kind    ChangeKind
	CS      Chunkserver  // Register
	ID      uint32       // Remove, Maintenance: the chunkserver id
	Prefix  netip.Prefix // MapRange, UnmapRange
	Name    string       // the location
	NewName string       // Rename
	On      bool         // SetOn, Maintenance
}

func (c Change) String() string {
	switch c.Kind {
	case ChangeRegister:
		return fmt.Sprintf("register %v %v", c.CS.ID, c.CS.Addr)
	case ChangeRemove:
		return fmt.Sprintf("remove CS%d", c.ID)
	case ChangeMapRange:
		return fmt.Sprintf("map %v %s", c.Prefix, c.Name)
	case ChangeUnmapRange:
		return fmt.Sprintf("unmap %v", c.Prefix)
	case ChangeRename:
		return fmt.Sprintf("rename %s %s", c.Name, c.NewName)
	case ChangeSetDefault:
		return fmt.Sprintf("default %s", c.Name)
	case ChangeSetOn:
		return fmt.Sprintf("location %s on=%v", c.Name, c.On)
	case ChangeMaintenance:
		return fmt.Sprintf("maintenance CS%d on=%v", c.ID, c.On)
	}
	return "change?"
}

// apply returns the config that results from c, one version up. It never
// edits cur.
func (c Change) apply(cur *ClusterConfig) (*ClusterConfig, error) {
	n := cur.clone()
	n.Version++
	var err error
	switch c.Kind {
	case ChangeRegister:
		if _, ok := cur.Member(c.CS.ID); ok {
			return nil, fmt.Errorf("chunkserver %v is already registered", c.CS.ID)
		}
		if c.CS.ID == 0 || !c.CS.Addr.IsValid() {
			return nil, fmt.Errorf("registration needs an id and an address, got %v %v", c.CS.ID, c.CS.Addr)
		}
		n.Members = append(n.Members, c.CS)
		n.Bootstrap = false
		slices.SortFunc(n.Members, func(a, b Chunkserver) int { return cmp.Compare(a.ID, b.ID) })
		// Members are sorted: the last has the highest id (a config
		// written before TopID was kept starts from it).
		n.TopID = max(cur.TopID, n.Members[len(n.Members)-1].ID)
	case ChangeRemove:
		i := slices.IndexFunc(n.Members, func(m Chunkserver) bool { return uint32(m.ID) == c.ID })
		if i < 0 {
			return nil, fmt.Errorf("chunkserver CS%d is not registered", c.ID)
		}
		if len(n.Members) == 1 {
			return nil, fmt.Errorf("chunkserver CS%d is the last registered one; removing it would leave no quorum", c.ID)
		}
		n.Members = slices.Delete(n.Members, i, i+1)
	case ChangeMapRange:
		n.Locations, err = cur.Locations.MapRange(c.Prefix, c.Name)
	case ChangeUnmapRange:
		n.Locations, err = cur.Locations.UnmapRange(c.Prefix)
	case ChangeRename:
		n.Locations, err = cur.Locations.Rename(c.Name, c.NewName)
	case ChangeSetDefault:
		n.Locations, err = cur.Locations.SetDefault(c.Name)
	case ChangeSetOn:
		n.Locations, err = cur.Locations.SetOn(c.Name, c.On)
	case ChangeMaintenance:
		i := slices.IndexFunc(n.Members, func(m Chunkserver) bool { return uint32(m.ID) == c.ID })
		if i < 0 {
			return nil, fmt.Errorf("chunkserver CS%d is not registered", c.ID)
		}
		if n.Members[i].Maintenance == c.On {
			return nil, fmt.Errorf("chunkserver CS%d is already %s maintenance", c.ID, map[bool]string{true: "in", false: "out of"}[c.On])
		}
		n.Members[i].Maintenance = c.On
	default:
		return nil, fmt.Errorf("unknown change kind %d", c.Kind)
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}
