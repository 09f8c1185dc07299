package roles

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
	ReasonNoWitness     = "no-witness"
	ReasonQuorumBack    = "quorum-available"
	ReasonQuorumLost    = "quorum-lost"
	ReasonHigherEpoch   = "higher-epoch"
	ReasonStepDown      = "step-down"
	ReasonAdminUsurper  = "admin-usurper"
	ReasonKeepLeader    = "keep-leadership"
	ReasonAdminCancel   = "admin-cancel"
	ReasonShutdown      = "shutdown"
	ReasonRemoved       = "removed"
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
	{"§3.6", Elect, Follower, ReasonNoWitness, true},
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
	{"§3.15", Leader, Follower, ReasonRemoved, true},
	{"§3.15", Elect, Follower, ReasonRemoved, true},
	{"§3.15", Deputy, Follower, ReasonRemoved, true},
	{"§3.15", Usurper, Follower, ReasonRemoved, false},
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
