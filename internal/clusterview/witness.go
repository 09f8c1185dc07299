package clusterview

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/quorum"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The object-store witness in the listings (docs/architecture.md §7.4):
// each master's side of it (MasterWitness, in -SIM's JSON), the cluster's
// (WitnessView: the line under -SIM and -SLQ, quorum.witness in JSON),
// why a half of the locations cannot lead (halfReason, in the verdict),
// and the two alarms, witness and witness_unheld.

// The witness's alarms, with the others in alarms.go.
const (
	AlarmWitness       = "witness"        // the registry names a witness that some master cannot use (its store, its calls, its config)
	AlarmWitnessUnheld = "witness_unheld" // no LEADER: the count carries half of the locations and no master holds the witness's lease
)

// WitnessFailing is how long a master's calls on the store must have
// failed (refused or ambiguous, without a break) before the witness alarm
// says so: a lease (WITNESS_LEASE's default), past the odd timeout.
const WitnessFailing = 10 * time.Second

// MasterWitness is one master's side of the witness (nil in MasterInfo
// when the master reports none: no store, and the registry names none).
type MasterWitness struct {
	Store    string `json:"store"`     // "s3 ENDPOINT BUCKET/PREFIX"; "" no WITNESS_ENDPOINT
	SelfTest string `json:"self_test"` // "passed", "running", or what it found; "" no store
	NotUsed  string `json:"not_used,omitempty"`
	// Held: it counts the witness's lease now (fenced, as its role).
	Held bool `json:"held"`
	// Record is the lease object as it last read or wrote it (nil: not
	// read since it started, or absent: see RecordAbsent).
	Record       *WitnessRecord    `json:"record"`
	RecordAbsent bool              `json:"record_absent"`
	Waiting      bool              `json:"waiting"` // watching another's held record until it may take it
	Blocked      string            `json:"blocked"` // why it cannot take the lease now ("" it can)
	LastOp       string            `json:"last_op"`
	LastResult   string            `json:"last_result"`
	LastError    string            `json:"last_error"`
	LastLatency  float64           `json:"last_latency"`   // seconds
	LastWriteAge float64           `json:"last_write_age"` // seconds since it sent its last write the store took; 0: none since it started
	FailingFor   float64           `json:"failing_for"`    // seconds its calls have failed without a break
	Calls        map[string]uint64 `json:"calls"`          // by "op result"
}

// WitnessRecord is the lease object's fields the listings show.
type WitnessRecord struct {
	ID         string        `json:"witness_id"`
	State      string        `json:"state"`  // held or free
	Holder     netip.Addr    `json:"holder"` // the master that wrote it ("" not one of ours)
	HolderID   wire.MasterID `json:"holder_id"`
	LeaseEpoch uint64        `json:"lease_epoch"`
}

// WitnessView is the witness as the cluster has it: nil in QuorumView
// when no master reports one (none configured, no store set anywhere).
type WitnessView struct {
	Configured bool       `json:"configured"`
	ID         string     `json:"witness_id"`
	Store      string     `json:"store"`   // the LEADER's store (else the first master's with one)
	HeldBy     netip.Addr `json:"held_by"` // the master that counts the lease now ("" none)
	LeaseEpoch uint64     `json:"lease_epoch"`
	// LastWriteBy and LastWriteAge: the master whose write the store took
	// last, as the answers tell (each says how long ago its own was sent),
	// and how long ago in seconds ("" and 0: none since they started).
	// LastLatency: the holder's last call in seconds (0: none held).
	LastWriteBy  netip.Addr `json:"last_write_by"`
	LastWriteAge float64    `json:"last_write_age"`
	LastLatency  float64    `json:"last_latency"`
	// Problems: what keeps a master from using it, one per master and
	// kind; Line is what -SIM and -SLQ print.
	Problems []string `json:"problems"`
	Line     string   `json:"line"`
	// StoreLog: the store as a stand-in replica (docs/architecture.md
	// §7.5), from the LEADER's answer (else the master that read the
	// newest head); nil when no master knows its head.
	StoreLog *StoreLogView `json:"store_log"`
}

// StoreLogView is the store log as -SIM, -SLQ and the page show it.
type StoreLogView struct {
	From      netip.Addr `json:"from"` // the master whose answer it is
	Objects   int        `json:"objects"`
	Bytes     int64      `json:"bytes"`
	Snapshot  uint64     `json:"snapshot"`   // its snapshot holds the namespace at this version (0: none)
	Base      uint64     `json:"base"`       // it holds the changes after this version
	Last      uint64     `json:"last"`       // up to this one
	OldestAge float64    `json:"oldest_age"` // seconds the head has named objects
	// The bounds: WITNESS_LOG_OBJECTS, WITNESS_LOG_BYTES, WITNESS_LOG_AGE (seconds; 0: none).
	MaxObjects int     `json:"max_objects"`
	MaxBytes   uint64  `json:"max_bytes"`
	MaxAge     float64 `json:"max_age"`
	// The LEADER's: the store stands in for missing followers; its newest
	// acknowledgement rests on it; seconds the store has been behind; seconds
	// changes have waited for a copy.
	StandsIn   bool    `json:"stands_in"`
	OnStore    bool    `json:"acks_on_store"`
	BehindFor  float64 `json:"behind_for"`
	WaitingFor float64 `json:"waiting_for"`
	Garbage    int     `json:"garbage"`
	Error      string  `json:"error"`
	// Refused: head writes the store refused to the answering master (a
	// LEADER superseded, fence 1), since it started.
	Refused int `json:"refused"`
}

// storeLogView picks the answer that knows the store log best.
func storeLogView(answers []Answer) *StoreLogView {
	var best *Answer
	for i := range answers {
		a := &answers[i]
		l := a.St.StoreLog
		if a.Err != nil || l == nil || !l.Known && a.St.Role != roles.Leader {
			continue
		}
		if best == nil || a.St.Role == roles.Leader && best.St.Role != roles.Leader ||
			best.St.Role != roles.Leader && l.Epoch > best.St.StoreLog.Epoch {
			best = a
		}
	}
	if best == nil {
		return nil
	}
	l := best.St.StoreLog
	return &StoreLogView{From: best.Addr.Addr(), Objects: l.Objects, Bytes: l.Bytes, Snapshot: l.Snapshot, Base: l.Base, Last: l.Last, Refused: l.Refused,
		OldestAge: l.OldestAge.Seconds(), MaxObjects: l.MaxObjects, MaxBytes: l.MaxBytes, MaxAge: l.MaxAge.Seconds(),
		StandsIn: l.StandsIn, OnStore: l.OnStore, BehindFor: l.BehindFor.Seconds(), WaitingFor: l.WaitingFor.Seconds(),
		Garbage: l.Garbage, Error: l.Error}
}

// Text is the store log's part of the witness line.
func (l *StoreLogView) Text() string {
	t := "store log: "
	switch {
	case l.Snapshot > 0:
		t += fmt.Sprintf("a snapshot at %d and %d object(s), %s, changes %d..%d, oldest %v", l.Snapshot, l.Objects, byteSize(l.Bytes), l.Base+1, l.Last,
			secondsDur(l.OldestAge).Round(time.Second))
	case l.Objects == 0:
		t += "empty"
	default:
		t += fmt.Sprintf("%d object(s), %s, changes %d..%d, oldest %v", l.Objects, byteSize(l.Bytes), l.Base+1, l.Last,
			secondsDur(l.OldestAge).Round(time.Second))
	}
	switch {
	case l.OnStore:
		t += "; the LEADER's acknowledgements rest on it"
	case l.StandsIn:
		t += "; it stands in for missing follower masters"
	}
	if l.WaitingFor > 0 {
		t += fmt.Sprintf("; changes have waited %v for a copy", secondsDur(l.WaitingFor).Round(100*time.Millisecond))
	}
	if l.Error != "" {
		t += "; last error: " + l.Error
	}
	return t
}

// byteSize is n bytes in the largest unit that keeps it above one.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// masterWitness is st's witness section as the listings show it.
func masterWitness(st protocol.StatusResp) *MasterWitness {
	w := st.Witness
	if w == nil {
		return nil
	}
	m := &MasterWitness{Store: w.StoreText(), SelfTest: w.SelfTest, NotUsed: w.NotUsed, Held: w.Held, RecordAbsent: w.Absent,
		Waiting: w.Waiting, Blocked: w.Blocked, LastOp: w.LastOp, LastResult: w.LastResult, LastError: w.LastError,
		LastLatency: w.LastLatency.Seconds(), LastWriteAge: w.LastWriteAge.Seconds(), FailingFor: w.FailingFor.Seconds(), Calls: w.Calls}
	if m.Store != "" && m.SelfTest == "" {
		m.SelfTest = "running"
	}
	if w.Known && w.RecordID != "" {
		m.Record = &WitnessRecord{ID: w.RecordID, State: w.RecordState, Holder: w.RecordHolder, HolderID: w.RecordHolderID, LeaseEpoch: w.RecordEpoch}
	}
	if m.Calls == nil {
		m.Calls = map[string]uint64{}
	}
	return m
}

// leaseable says whether the master that answered st can take the
// witness's lease, as far as its answer tells, and why not.
func leaseable(w *protocol.WitnessStatus) (bool, string) {
	switch {
	case w == nil || w.Endpoint == "":
		return false, "it has no witness store (WITNESS_ENDPOINT is not set on it)"
	case w.NotUsed != "":
		return false, "it does not use its witness store: " + w.NotUsed
	case w.SelfTest == "":
		return false, "its witness store's self-test has not finished"
	case w.SelfTest != protocol.WitnessSelfTestPassed:
		return false, "its witness store failed its self-test: " + w.SelfTest
	case w.FailingFor > 0:
		return false, "the witness's store does not answer it (" + lastCall(w) + ")"
	case blockedForGood(w.Blocked):
		return false, w.Blocked
	}
	return true, ""
}

// blockedForGood: the lease object itself keeps the master from the lease
// (missing, another witness's or another cluster's: pkg/witness's words),
// not a wait that ends by itself.
func blockedForGood(b string) bool { return strings.HasPrefix(b, "the lease object") }

func lastCall(w *protocol.WitnessStatus) string {
	s := w.LastOp + " " + w.LastResult
	if w.LastError != "" {
		s += ": " + w.LastError
	}
	return strings.TrimSpace(s)
}

// halfReason says why a master that carries exactly half of the
// locations, with a witness named, does not hold the quorum: what stands
// between it and the lease.
func halfReason(w *protocol.WitnessStatus) string {
	const half = "half of the locations"
	if ok, why := leaseable(w); !ok {
		if w != nil && w.FailingFor > 0 {
			if w.LastResult == "refused" {
				return half + ", and the witness's store refuses this master (" + lastCall(w) + "): nobody may lead until that is fixed or the other site returns"
			}
			return half + ", and the witness's store does not answer (" + lastCall(w) + "): nobody may lead until it does or the other site returns"
		}
		return half + ", and " + why + ": this master cannot take the witness's lease"
	}
	switch {
	case w.Waiting && w.Known:
		return fmt.Sprintf("%s; the witness's lease is held by %s (lease_epoch %d): it is taken once that record has stood unchanged for WITNESS_LEASE",
			half, holderText(w.RecordHolder, w.RecordHolderID), w.RecordEpoch)
	case w.Blocked != "":
		return half + "; the witness's lease cannot be taken yet: " + w.Blocked
	}
	return half + "; the witness's lease is being asked for (after WITNESS_DELAY)"
}

func holderText(a netip.Addr, id wire.MasterID) string {
	if a.IsValid() {
		return a.String()
	}
	return "master " + id.String()
}

// witnessView gathers every answering master's witness section.
func witnessView(answers []Answer) *WitnessView {
	var v WitnessView
	reported := false
	stores := map[string][]netip.Addr{}
	var storeOrder []string
	var noStore []netip.Addr
	leader := FirstWithRole(answers, roles.Leader)
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		w := a.St.Witness
		if w == nil {
			noStore = append(noStore, a.Addr.Addr())
			continue
		}
		reported = true
		ip := a.Addr.Addr()
		if w.ID != "" {
			v.Configured, v.ID = true, w.ID
		}
		if s := w.StoreText(); s != "" {
			if _, seen := stores[s]; !seen {
				storeOrder = append(storeOrder, s)
			}
			stores[s] = append(stores[s], ip)
		} else {
			noStore = append(noStore, ip)
		}
		if w.Held {
			v.HeldBy, v.LeaseEpoch, v.LastLatency = ip, w.RecordEpoch, w.LastLatency.Seconds()
		}
		if age := w.LastWriteAge.Seconds(); age > 0 && (v.LastWriteAge == 0 || age < v.LastWriteAge) {
			v.LastWriteBy, v.LastWriteAge = ip, age
		}
	}
	if !reported {
		return nil
	}
	if leader != nil && leader.St.Witness.StoreText() != "" {
		v.Store = leader.St.Witness.StoreText()
	} else if len(storeOrder) > 0 {
		v.Store = storeOrder[0]
	}
	if !v.Configured {
		v.Problems = []string{}
		v.Line = "witness: not configured"
		if len(storeOrder) > 0 {
			var with []netip.Addr
			for _, s := range storeOrder {
				with = append(with, stores[s]...)
			}
			slices.SortFunc(with, netip.Addr.Compare)
			v.Line += fmt.Sprintf(" (WITNESS_ENDPOINT set on %s: mfscli -CWITNESS/on names it)", addrList(with))
		}
		return &v
	}
	v.Problems = witnessProblems(answers, stores, storeOrder, noStore)
	line := fmt.Sprintf("witness: %s", v.ID)
	if len(storeOrder) > 1 {
		parts := make([]string, len(storeOrder))
		for i, s := range storeOrder {
			parts[i] = s + " on " + addrList(stores[s])
		}
		line += " (stores differ: " + strings.Join(parts, "; ") + ")"
	} else if v.Store != "" {
		line += " (" + v.Store + ")"
	}
	switch {
	case v.HeldBy.IsValid():
		line += fmt.Sprintf(" held by %s (lease_epoch %d", v.HeldBy, v.LeaseEpoch)
		if v.LastWriteBy == v.HeldBy {
			line += ", written " + agoText(v.LastWriteAge)
		}
		if v.LastLatency > 0 {
			line += fmt.Sprintf(", last call %v", secondsDur(v.LastLatency).Round(time.Millisecond))
		}
		line += ")"
	default:
		line += " not held" + lastRecord(answers)
	}
	if len(v.Problems) > 0 {
		line += "; " + strings.Join(v.Problems, "; ")
	}
	if v.StoreLog = storeLogView(answers); v.StoreLog != nil {
		line += "; " + v.StoreLog.Text()
	}
	v.Line = line
	return &v
}

// agoText is an age in seconds as the witness line says it.
func agoText(s float64) string {
	return fmt.Sprintf("%v ago", secondsDur(s).Round(100*time.Millisecond))
}

func secondsDur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// lastRecord: the newest lease record any master has seen (the highest
// lease_epoch), when no master holds the lease.
func lastRecord(answers []Answer) string {
	var best *protocol.WitnessStatus
	for _, a := range answers {
		if w := a.St.Witness; a.Err == nil && w != nil && w.Known && w.RecordID != "" && (best == nil || w.RecordEpoch > best.RecordEpoch) {
			best = w
		}
	}
	if best == nil {
		return ""
	}
	return fmt.Sprintf(" (record: %s, lease_epoch %d, written by %s)", best.RecordState, best.RecordEpoch, holderText(best.RecordHolder, best.RecordHolderID))
}

// witnessProblems lists what keeps each master from the witness, by kind
// then address: no store, stores that differ, a failed self-test, calls
// failing, a lease object it cannot use; a self-test still running.
func witnessProblems(answers []Answer, stores map[string][]netip.Addr, order []string, noStore []netip.Addr) []string {
	out := []string{}
	if len(noStore) > 0 {
		slices.SortFunc(noStore, netip.Addr.Compare)
		out = append(out, "no store on "+addrList(noStore)+" (WITNESS_ENDPOINT not set: it cannot take the lease)")
	}
	for _, a := range byAddr(answers) {
		w := a.St.Witness
		if a.Err != nil || w == nil || w.Endpoint == "" {
			continue
		}
		ip := a.Addr.Addr()
		switch {
		case w.NotUsed != "":
			out = append(out, fmt.Sprintf("store not used on %s: %s", ip, w.NotUsed))
		case w.SelfTest == "":
			out = append(out, fmt.Sprintf("self-test still running on %s", ip))
		case w.SelfTest != protocol.WitnessSelfTestPassed:
			out = append(out, fmt.Sprintf("store refused on %s: %s", ip, w.SelfTest))
		case w.FailingFor > 0:
			out = append(out, fmt.Sprintf("calls failing on %s for %v: %s", ip, w.FailingFor.Round(time.Second), lastCall(w)))
		case blockedForGood(w.Blocked):
			out = append(out, fmt.Sprintf("lease refused on %s: %s", ip, w.Blocked))
		}
	}
	return out
}

// byAddr is the answers by master address.
func byAddr(answers []Answer) []Answer {
	out := slices.Clone(answers)
	slices.SortFunc(out, func(a, b Answer) int { return a.Addr.Compare(b.Addr) })
	return out
}

// witnessAlarm: the registry names a witness that some master cannot use
// for good (no store, stores that differ, a failed self-test, a lease
// object it cannot use) or whose calls have failed for WitnessFailing.
// A self-test still running, or calls failing for less, is not raised.
func witnessAlarm(answers []Answer, v *WitnessView) (LayoutWarning, bool) {
	if v == nil || !v.Configured {
		return LayoutWarning{}, false
	}
	var parts []string
	var ms []netip.Addr
	seen := map[netip.Addr]bool{}
	note := func(ip netip.Addr, text string) {
		parts = append(parts, text)
		if !seen[ip] {
			seen[ip] = true
			ms = append(ms, ip)
		}
	}
	stores := map[string]bool{}
	for _, a := range byAddr(answers) {
		if a.Err != nil {
			continue
		}
		ip, w := a.Addr.Addr(), a.St.Witness
		switch {
		case w == nil || w.Endpoint == "":
			note(ip, fmt.Sprintf("%s has no store (WITNESS_ENDPOINT not set)", ip))
			continue
		case w.NotUsed != "":
			note(ip, fmt.Sprintf("%s does not use its store: %s", ip, w.NotUsed))
		case w.SelfTest != "" && w.SelfTest != protocol.WitnessSelfTestPassed:
			note(ip, fmt.Sprintf("the store of %s failed its self-test: %s", ip, w.SelfTest))
		case w.FailingFor >= WitnessFailing:
			note(ip, fmt.Sprintf("the calls of %s on the store have failed for %v (%s)", ip, w.FailingFor.Round(time.Second), lastCall(w)))
		case blockedForGood(w.Blocked):
			note(ip, fmt.Sprintf("%s cannot take the lease: %s", ip, w.Blocked))
		}
		stores[w.StoreText()] = true
	}
	if len(stores) > 1 {
		parts = append(parts, "the masters name different stores (every master must use the same WITNESS_ENDPOINT, WITNESS_BUCKET and WITNESS_PREFIX)")
	}
	if len(parts) == 0 {
		return LayoutWarning{}, false
	}
	slices.SortFunc(ms, netip.Addr.Compare)
	return LayoutWarning{Kind: AlarmWitness, Masters: ms, Text: "ALARM: witness " + v.ID + ": " + strings.Join(parts, "; ") +
		": a master that cannot use the witness leads only with a strict majority of the locations; fix the store or the WITNESS_* keys, then mfscli -CWITNESS/test"}, true
}

// witnessUnheld: no LEADER holds a quorum, the master that counts votes
// carries exactly half of the locations under a registry that names a
// witness, and no master holds the lease: the cluster waits for the
// witness (or for the other half).
func witnessUnheld(answers []Answer, v *WitnessView) (LayoutWarning, bool) {
	counter := VoteCounter(answers)
	if v == nil || !v.Configured || v.HeldBy.IsValid() || counter == nil || counter.St.Role == roles.Leader || len(counter.St.Tallies) == 0 {
		return LayoutWarning{}, false
	}
	t := counter.St.Tallies[0]
	if !t.Witness || t.WitnessHeld || t.Participating == 0 || 2*t.Carried != t.Participating {
		return LayoutWarning{}, false
	}
	return LayoutWarning{Kind: AlarmWitnessUnheld, Masters: []netip.Addr{counter.Addr.Addr()},
		Text: fmt.Sprintf("ALARM: no LEADER: %s %s carries %s", counter.St.Role, counter.Addr.Addr(), halfReason(counter.St.Witness))}, true
}

// canLease says, for a registry that names a witness, whether the master
// that answered a can break a tie with the lease (it holds it, or could
// take it as far as its answer tells).
func canLease(a Answer) bool {
	if a.St.Witness != nil && a.St.Witness.Held {
		return true
	}
	ok, _ := leaseable(a.St.Witness)
	return ok
}

// marginOf is Tally.Margin under the witness: with a witness named, the
// tie is broken for the master when it holds (or is given) the lease,
// WitnessHeld, and by nothing else; without one, Tally.Margin.
func marginOf(t quorum.Tally) (margin int, weakest []wire.LocationID) {
	if !t.Witness {
		return t.Margin()
	}
	if t.Outcome != quorum.Won || t.Empty {
		return -1, nil
	}
	var carried []quorum.LocationTally
	for _, l := range t.Locations {
		if l.Carried {
			carried = append(carried, l)
		}
	}
	slices.SortStableFunc(carried, func(a, b quorum.LocationTally) int { return cmp.Compare(a.Spare(), b.Spare()) })
	cost := 0
	for k := 1; k <= len(carried); k++ {
		cost += carried[k-1].Spare() + 1
		if !quorum.Wins(t.Carried-k, t.Participating, t.WitnessHeld) {
			for _, l := range carried[:k] {
				weakest = append(weakest, l.Loc)
			}
			slices.Sort(weakest)
			return cost - 1, weakest
		}
	}
	return cost - 1, nil // not reached: none carried does not win
}
