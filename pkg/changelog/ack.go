package changelog

// AckRule is the acknowledgement rule of docs/architecture.md: the newest
// version a LEADER may acknowledge to a client. It is the largest version v
// such that (a) and (b) hold up to limit (v durable on the LEADER and on
// ACK_REPLICAS other masters, or the store standing in for them), and (c)
// the voters that report knowing "committed up to v" form a quorum. The
// caller supplies (c) as a predicate, which it evaluates with the real
// tally; candidates are the versions voters reported.
func AckRule(limit uint64, candidates []uint64, quorumKnows func(v uint64) bool) uint64 {
	best := uint64(0)
	for _, v := range candidates {
		if v <= limit && v > best && quorumKnows(v) {
			best = v
		}
	}
	return best
}

// ReplicatedVersion is (a) and (b) of the ack rule: the newest version held
// durably by the LEADER and by `required` others. With fewer followers than
// required it needs all of them, and with none only the LEADER: the caller
// passes the followers heard lately, so a LEADER that hears none
// acknowledges on its own disk. That fallback keeps the LEADER writing;
// master.Master.Durability reports each acknowledgement it carried (review
// N7).
func ReplicatedVersion(leaderDurable uint64, followerDurable []uint64, required int) uint64 {
	if required > len(followerDurable) {
		required = len(followerDurable)
	}
	if required <= 0 {
		return leaderDurable
	}
	// The required-th largest follower version.
	top := make([]uint64, 0, required)
	for _, v := range followerDurable {
		top = insertTop(top, v, required)
	}
	v := top[len(top)-1]
	if v > leaderDurable {
		v = leaderDurable
	}
	return v
}

// insertTop keeps the k largest values of top plus v, descending.
func insertTop(top []uint64, v uint64, k int) []uint64 {
	i := len(top)
	for i > 0 && top[i-1] < v {
		i--
	}
	if i >= k {
		return top
	}
	top = append(top, 0)
	copy(top[i+1:], top[i:])
	top[i] = v
	if len(top) > k {
		top = top[:k]
	}
	return top
}

// Satisfies is the catch-up rule of docs/architecture.md §7 for one voter:
// this log holds the commit position the voter was told by the LEADER of
// epoch voterTag, or this log's newest entry was written by a LEADER of a
// later epoch (which held everything acknowledged up to voterTag, and this
// log agrees with it up to that entry: the report is a proposal that LEADER
// superseded); and this config is at least as new as the config version
// the voter knows. An ELECT may become LEADER only when the counted voters
// it satisfies make a quorum by themselves; since every quorum meets every
// acknowledging quorum, that set contains a voter told of every
// acknowledged change.
func Satisfies(log *Log, configVersion uint64, voterCommit Pos, voterTag, voterReg uint64) bool {
	return (log.Has(voterCommit) || log.Last().Epoch > voterTag) && configVersion >= voterReg
}
