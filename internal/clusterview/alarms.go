package clusterview

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

// The alarms: what an operator would otherwise find too late, computed
// here once from the masters' answers for every reader (mfscli's warning
// lines and -j, the web page, the masters' mfs_cluster_alarm metric).
// Each is a LayoutWarning of its kind; keep_leadership and no_tie_break
// (warnings.go) are two of them.
const (
	AlarmTwoLeaders     = "two_leaders"         // two masters report LEADER
	AlarmSingleMaster   = "single_master"       // one master: no failover is possible
	AlarmMetadataID     = "metadata_id_differs" // a master holds another cluster's metadata
	AlarmClockOffset    = "clock_offset"        // a master's clock more than 1 s off
	AlarmFollowerBehind = "follower_behind"     // a FOLLOWER's metadata more than 6 s behind
	AlarmLocationLoss   = "location_loss"       // losing one location would cost the quorum
	AlarmVersionSkew    = "version_skew"        // the masters, or masters and chunkservers, run different versions
	AlarmAckDurability  = "ack_durability"      // the LEADER's acknowledgements rest on fewer follower copies than ACK_REPLICAS
	AlarmVoterRecord    = "voter_record"        // a chunkserver's voter record was damaged or lost: named, and whether it is uncertain
	AlarmStoreReplica   = "store_replica"       // the LEADER's acknowledgements rest on the witness's store in place of follower masters
	AlarmStoreBehind    = "store_behind"        // the store stands in and does not hold what it must (calls failing, a bound reached, its oldest object past WITNESS_LOG_AGE)
)

// StoreBehindAfter is how long the store may stand in without holding
// the LEADER's newest changes, or changes wait for a copy, before
// store_behind or ack_durability say so: a few uploads' worth, past one
// slow call.
const StoreBehindAfter = 2 * time.Second

// AlarmKinds is every alarm, in the order they are listed.
var AlarmKinds = []string{AlarmTwoLeaders, AlarmSingleMaster, AlarmMetadataID, AlarmClockOffset,
	AlarmFollowerBehind, AlarmAckDurability, WarnKeep, AlarmLocationLoss, WarnTieBreak, AlarmVersionSkew, AlarmVoterRecord,
	AlarmWitness, AlarmWitnessUnheld, AlarmStoreReplica, AlarmStoreBehind}

// alarmsOf lists the alarms raised by the answers and the dataset built so
// far (its masters, locations and quorum), in AlarmKinds' order.
func alarmsOf(answers []Answer, ds Dataset) []LayoutWarning {
	var out []LayoutWarning
	add := func(w LayoutWarning, ok bool) {
		if ok {
			out = append(out, w)
		}
	}
	add(twoLeaders(answers))
	add(singleMaster(answers))
	add(masterAlarm(ds.Masters, AlarmMetadataID, func(m MasterRow) bool { return m.MetaIDDiffers },
		"ALARM: metadata of another cluster than the LEADER's (metadata id) on %s: never let such a master lead; move its metadata aside and start it with -e"))
	add(masterAlarm(ds.Masters, AlarmClockOffset, func(m MasterRow) bool { return m.OffsetLevel != LevelOK },
		"ALARM: clock more than 1 s off the LEADER's on %s: leases do not depend on it, but logs, ages and the offsets shown do; fix NTP there"))
	add(masterAlarm(ds.Masters, AlarmFollowerBehind, func(m MasterRow) bool {
		return m.Role != roles.Leader.String() && m.DelayLevel == LevelFlag
	}, "ALARM: metadata more than 6 s behind the LEADER's on %s: a master that far behind cannot take over until it has caught up"))
	add(ackDurability(answers))
	add(keepWarning(answers))
	add(locationLoss(ds.Quorum, answers))
	if w := ds.Quorum.Witness; w == nil || !w.Configured {
		add(tieWarning(ds.Locations)) // a witness breaks the tie
	}
	add(versionSkew(ds.Masters, ds.Chunkservers))
	add(voterRecord(ds.Chunkservers))
	add(witnessAlarm(answers, ds.Quorum.Witness))
	add(witnessUnheld(answers, ds.Quorum.Witness))
	add(storeReplica(answers))
	add(storeBehind(answers))
	return out
}

// voterRecord: a chunkserver said its voter record was damaged this run (a
// copy unreadable at start or changed on the disk since it was written),
// or that its voter is uncertain (a damaged or lost record: it grants no
// vote until a LEADER restores it). Raised for as long as that
// chunkserver process runs, naming the file and the chunkserver: damage is
// never silent, even once the record is whole again.
func voterRecord(rows []CSRow) (LayoutWarning, bool) {
	var parts []string
	for _, r := range rows {
		if !r.Uncertain && r.Record == "" {
			continue
		}
		p := fmt.Sprintf("chunkserver %s:%d (id %d)", r.IP, r.Port, r.ID)
		if r.Record != "" {
			p += ": " + r.Record
		} else {
			p += ": its voter record was lost (registered again under its old id)"
		}
		if r.Uncertain {
			p += "; UNCERTAIN: it grants no vote until a LEADER's heartbeat restores its record"
		} else {
			p += "; its record is whole again"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return LayoutWarning{}, false
	}
	return LayoutWarning{Kind: AlarmVoterRecord, Text: "ALARM: voter record: " + strings.Join(parts, "; ") +
		" (check that disk; docs/operations.md, Lost or damaged chunkserver disk)"}, true
}

// twoLeaders: more than one master reports LEADER. Each answer is fenced,
// so this is never a stale LEADER's word: act at once.
func twoLeaders(answers []Answer) (LayoutWarning, bool) {
	var ms []netip.Addr
	for _, a := range answers {
		if a.Err == nil && a.St.Role == roles.Leader {
			ms = append(ms, a.Addr.Addr())
		}
	}
	if len(ms) < 2 {
		return LayoutWarning{}, false
	}
	return LayoutWarning{Kind: AlarmTwoLeaders, Masters: ms,
		Text: "ALARM: " + addrList(ms) + " all report LEADER: stop all but one (mfscli -CMS/ip) and report it"}, true
}

// singleMaster: the masters asked are one (MASTER_HOST, or mfscli's -H,
// names one), and that one knows of no other: a master that names others
// in its set (StatusResp.Masters) is one of several, asked alone.
func singleMaster(answers []Answer) (LayoutWarning, bool) {
	if len(answers) != 1 || len(answers[0].St.Masters) > 1 {
		return LayoutWarning{}, false
	}
	return LayoutWarning{Kind: AlarmSingleMaster, Masters: []netip.Addr{answers[0].Addr.Addr()},
		Text: "ALARM: one master only (" + answers[0].Addr.Addr().String() + "): no failover is possible; add a master (docs/operations.md, Adding a master)"}, true
}

// masterAlarm raises kind for the answering masters for which bad holds;
// text has one %s, the list of them.
func masterAlarm(rows []MasterRow, kind string, bad func(MasterRow) bool, text string) (LayoutWarning, bool) {
	var ms []netip.Addr
	for _, m := range rows {
		if m.MasterInfo != nil && bad(m) {
			ms = append(ms, m.IP)
		}
	}
	if len(ms) == 0 {
		return LayoutWarning{}, false
	}
	return LayoutWarning{Kind: kind, Masters: ms, Text: fmt.Sprintf(text, addrList(ms))}, true
}

// ackDurability: a LEADER says its newest acknowledged change rests on
// fewer follower copies than its ACK_REPLICAS (roles.Durability; review
// N7): the ack rule fell back to the masters it hears, none or too few,
// and a loss of its disk would lose acknowledged changes. The time is the
// LEADER's own (its wall clock less how long, both from its answer).
func ackDurability(answers []Answer) (LayoutWarning, bool) {
	var ms []netip.Addr
	var texts []string
	for _, a := range answers {
		st := a.St
		if a.Err == nil && st.Role == roles.Leader && st.StoreLog != nil && st.StoreLog.WaitingFor >= StoreBehindAfter {
			ms = append(ms, a.Addr.Addr())
			texts = append(texts, fmt.Sprintf("the LEADER %s has held changes unacknowledged for %v: fewer than ACK_REPLICAS=%d follower masters are present and no store holds them (ACK_ALONE = 0)",
				a.Addr.Addr(), st.StoreLog.WaitingFor.Round(100*time.Millisecond), st.AckRequired))
			continue
		}
		if a.Err != nil || st.Role != roles.Leader || !st.AckShort {
			continue
		}
		ms = append(ms, a.Addr.Addr())
		var why string
		switch {
		case len(st.AckUnheard) > 0:
			why = "it has not heard " + addrList(st.AckUnheard) + " within PEER_TIMEOUT"
		case st.AckFollowers == 0:
			why = "its MASTER_HOST names no other master"
		case st.AckFollowers < st.AckRequired:
			why = fmt.Sprintf("its MASTER_HOST names %d other master(s)", st.AckFollowers)
		default:
			why = "its followers have not confirmed them"
		}
		since := time.UnixMilli(st.WallUnixMs).Add(-st.AckShortFor).UTC().Format("2006-01-02 15:04:05")
		texts = append(texts, fmt.Sprintf("the LEADER %s acknowledges changes on %d of ACK_REPLICAS=%d follower copies, for %v (since %s UTC by its clock): %s",
			a.Addr.Addr(), st.AckReplicas, st.AckRequired, st.AckShortFor.Round(time.Second), since, why))
	}
	if len(ms) == 0 {
		return LayoutWarning{}, false
	}
	return LayoutWarning{Kind: AlarmAckDurability, Masters: ms, Text: "ALARM: " + strings.Join(texts, "; ") +
		"; a loss of its disk now loses acknowledged changes: bring a follower master back, or check MASTER_HOST (mfscli -CMR resolves it again); with one master on purpose, set ACK_REPLICAS = 0"}, true
}

// locationLoss: the quorum is held, and losing one of the locations it is
// carried by (all of its chunkservers, a site, the link to it) would lose
// it, by the quorum rule (quorum.Wins) on the count the LEADER reports. A
// change in flight counts under both configs; either is enough to warn.
// Under a witness the tie is broken for the LEADER when it can take the
// lease (canLease), by nothing else.
func locationLoss(q QuorumView, answers []Answer) (LayoutWarning, bool) {
	counter := VoteCounter(answers)
	if counter == nil || counter.St.Role != roles.Leader || !q.Held {
		return LayoutWarning{}, false
	}
	critical := map[string]bool{}
	for _, t := range counter.St.Tallies {
		if t.Outcome != "WON" {
			continue
		}
		def := false
		for _, l := range t.Locations {
			def = def || (l.Default && l.Carried)
		}
		lease := t.Witness && canLease(*counter)
		for _, l := range t.Locations {
			tie := def && !l.Default
			if t.Witness {
				tie = lease
			}
			if l.Carried && !quorum.Wins(t.Carried-1, t.Participating, tie) {
				critical[l.Name] = true
			}
		}
	}
	if len(critical) == 0 {
		return LayoutWarning{}, false
	}
	names := make([]string, 0, len(critical))
	for n := range critical {
		names = append(names, n)
	}
	sort.Strings(names)
	return LayoutWarning{Kind: AlarmLocationLoss,
		Text: "ALARM: losing location " + strings.Join(names, " or ") + " (all of its chunkservers, or the link to it) would leave no quorum, given the votes today: bring the missing chunkservers back, or add voters elsewhere"}, true
}

// versionSkew: the answering masters, and the chunkservers connected to
// them, run different versions (binary, or protocol range): an upgrade
// under way, or one left half done. Chunkservers are counted per version,
// not named (there may be thousands).
func versionSkew(rows []MasterRow, css []CSRow) (LayoutWarning, bool) {
	by := map[string][]string{}
	for _, m := range rows {
		if m.MasterInfo != nil {
			v := m.Version + " (protocol " + m.Protocol + ")"
			by[v] = append(by[v], m.IP.String())
		}
	}
	csBy := map[string]int{}
	for _, c := range css {
		if c.Version != "" {
			csBy[c.Version+" (protocol "+c.Protocol+")"]++
		}
	}
	for v, n := range csBy {
		by[v] = append(by[v], fmt.Sprintf("%d chunkserver(s)", n))
	}
	if len(by) < 2 {
		return LayoutWarning{}, false
	}
	vs := make([]string, 0, len(by))
	for v := range by {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v + " on " + strings.Join(by[v], ", ")
	}
	return LayoutWarning{Kind: AlarmVersionSkew, Text: "ALARM: different versions run (" + strings.Join(parts, "; ") + "): finish the upgrade (docs/operations.md, \"Upgrade\")"}, true
}

func addrList(ms []netip.Addr) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.String()
	}
	return strings.Join(s, ", ")
}

// storeReplica: a LEADER's newest acknowledgement rests on the witness's
// store in place of missing follower masters. Nothing is lost yet (the
// store holds the changes), but one more failure (the store, or its
// bucket) and they rest on one disk again.
func storeReplica(answers []Answer) (LayoutWarning, bool) {
	for _, a := range answers {
		l := a.St.StoreLog
		if a.Err != nil || a.St.Role != roles.Leader || l == nil || !l.OnStore {
			continue
		}
		return LayoutWarning{Kind: AlarmStoreReplica, Masters: []netip.Addr{a.Addr.Addr()}, Text: fmt.Sprintf(
			"ALARM: the LEADER %s acknowledges changes on the witness's store in place of follower masters (%d object(s), %d bytes, changes up to %d): bring a follower master back; the store log empties as it catches up",
			a.Addr.Addr(), l.Objects, l.Bytes, l.Last)}, true
	}
	return LayoutWarning{}, false
}

// storeBehind: the store stands in for missing followers and does not
// hold the LEADER's newest changes for StoreBehindAfter (its calls fail,
// or a bound is reached), or its oldest object is older than
// WITNESS_LOG_AGE.
func storeBehind(answers []Answer) (LayoutWarning, bool) {
	for _, a := range answers {
		l := a.St.StoreLog
		if a.Err != nil || a.St.Role != roles.Leader || l == nil {
			continue
		}
		var why string
		switch {
		case l.StandsIn && l.BehindFor >= StoreBehindAfter:
			why = fmt.Sprintf("the store has not held its newest changes for %v", l.BehindFor.Round(100*time.Millisecond))
			if l.Error != "" {
				why += " (" + l.Error + ")"
			}
		case l.MaxAge > 0 && l.OldestAge > l.MaxAge:
			why = fmt.Sprintf("the store log's oldest object is %v old, past WITNESS_LOG_AGE %v", l.OldestAge.Round(time.Second), l.MaxAge)
		default:
			continue
		}
		return LayoutWarning{Kind: AlarmStoreBehind, Masters: []netip.Addr{a.Addr.Addr()}, Text: fmt.Sprintf(
			"ALARM: the LEADER %s: %s: bring a follower master back, or the store (mfscli -CWITNESS/test)", a.Addr.Addr(), why)}, true
	}
	return LayoutWarning{}, false
}
