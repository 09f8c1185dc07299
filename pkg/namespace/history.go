package namespace

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Reserved starts the keys under which the cluster keeps records of its
// own (the election history) in the namespace, beside the clients' keys:
// snapshots, their transfer and their files then carry them with nothing
// added, and a new LEADER holds them as it holds any committed key. No
// client may name a key that starts with a NUL byte (Client); List never
// shows one.
const Reserved = "\x00mfs/"

const (
	historyPrefix = Reserved + "history/"        // + the entry's version (20 digits) / the record's place in it: one RoleChange (JSON)
	seenPrefix    = Reserved + "history-seen/"   // + master id: "inc seq" of its newest record kept
	changesPrefix = Reserved + "leader-changes/" // + why: LEADER changes with that cause, ever
	lastLeaderKey = Reserved + "last-leader"     // the master of the newest LEADER record
)

// MaxHistory bounds the election history: past it the oldest record is
// dropped, the same way on every master (they apply the same entries).
const MaxHistory = 1000

// Client reports whether a client may read or write key: not one of the
// cluster's own.
func Client(key string) bool { return !strings.HasPrefix(key, "\x00") }

// applyHistory keeps one role change: the record (unless its master's
// newest kept record is as new: a report sent again, or written again by
// a LEADER that had not yet applied the first), its master's newest
// number, and for a new LEADER the count of its cause.
func (kv *KV) applyHistory(version uint64, i int, r *changelog.RoleChange) {
	seen := seenPrefix + strconv.FormatUint(uint64(r.Master), 10)
	if inc, seq, ok := parseSeen(kv.Data[seen].Value); ok && inc == r.Inc && seq >= r.Seq {
		return
	}
	kv.put(seen, Item{fmt.Sprintf("%d %d", r.Inc, r.Seq), version})
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("invariant history-record: %v", err)) // plain fields: cannot fail
	}
	kv.put(historyKey(version, i), Item{string(b), version})
	if r.To == "LEADER" {
		kv.put(lastLeaderKey, Item{strconv.FormatUint(uint64(r.Master), 10), version})
		k := changesPrefix + whyKey(r.Why)
		n, _ := strconv.ParseUint(kv.Data[k].Value, 10, 64)
		kv.put(k, Item{strconv.FormatUint(n+1, 10), version})
	}
	n, oldest := 0, ""
	kv.keys.ascend(historyPrefix, true, func(k string) bool {
		if !strings.HasPrefix(k, historyPrefix) {
			return false
		}
		if n == 0 {
			oldest = k
		}
		n++
		return true
	})
	if n > MaxHistory {
		delete(kv.Data, oldest)
		kv.keys.remove(oldest)
	}
}

// whyKey bounds the counters to the known causes: a record's Why is a
// peer's word.
func whyKey(why string) string {
	if slices.Contains(changelog.Whys, why) {
		return why
	}
	return "other"
}

func historyKey(v uint64, i int) string { return fmt.Sprintf("%s%020d/%02d", historyPrefix, v, i) }

func parseSeen(s string) (inc, seq uint64, ok bool) {
	a, b, found := strings.Cut(s, " ")
	if !found {
		return 0, 0, false
	}
	inc, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return inc, seq, err1 == nil && err2 == nil
}

// History returns the newest max records of the election history (all of
// them when max <= 0), oldest first, and how many it holds. A record that
// does not decode (a store damaged) is skipped.
func (kv *KV) History(max int) (out []changelog.RoleChange, total int) {
	kv.index()
	var keys []string
	kv.keys.ascend(historyPrefix, true, func(k string) bool {
		if !strings.HasPrefix(k, historyPrefix) {
			return false
		}
		keys = append(keys, k)
		return true
	})
	total = len(keys)
	if max > 0 && len(keys) > max {
		keys = keys[len(keys)-max:]
	}
	out = make([]changelog.RoleChange, 0, len(keys))
	for _, k := range keys {
		var r changelog.RoleChange
		if json.Unmarshal([]byte(kv.Data[k].Value), &r) == nil {
			out = append(out, r)
		}
	}
	return out, total
}

// Recorded returns the number of the newest record of master m kept in
// the history in incarnation inc (0: none).
func (kv *KV) Recorded(m wire.MasterID, inc uint64) uint64 {
	i, seq, ok := parseSeen(kv.Data[seenPrefix+strconv.FormatUint(uint64(m), 10)].Value)
	if !ok || i != inc {
		return 0
	}
	return seq
}

// LastLeader is the master of the newest LEADER record (none: NoMaster).
func (kv *KV) LastLeader() wire.MasterID {
	n, err := strconv.ParseUint(kv.Data[lastLeaderKey].Value, 10, 32)
	if err != nil {
		return wire.NoMaster
	}
	return wire.MasterID(n)
}

// LeaderChanges counts the LEADER changes ever recorded, by cause
// (changelog.Whys, "" for none given, "other").
func (kv *KV) LeaderChanges() map[string]uint64 {
	kv.index()
	out := map[string]uint64{}
	kv.keys.ascend(changesPrefix, true, func(k string) bool {
		if !strings.HasPrefix(k, changesPrefix) {
			return false
		}
		n, err := strconv.ParseUint(kv.Data[k].Value, 10, 64)
		if err == nil {
			out[strings.TrimPrefix(k, changesPrefix)] = n
		}
		return true
	})
	return out
}
