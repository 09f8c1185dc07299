package witness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The store as a stand-in replica (docs/architecture.md §7.5). While
// fewer than ACK_REPLICAS follower masters are present, a LEADER writes
// the changes they lack to the witness's bucket: each group of changes as
// one object under log/ (create-only), then the head, log.json, swapped
// (If-Match) to name it. Only the head's swap makes an object count: a
// LEADER writes the head only at an epoch at least the head's own, so
// once a later LEADER has swapped it, no earlier one's write can ever
// count again (the store's conditional PUT is the fence).

// LogKey is the head's name under the cluster's prefix; LogDir the
// prefix of the change objects it names, SnapDir of its snapshots.
const (
	LogKey  = "log.json"
	LogDir  = "log/"
	SnapDir = "snap/"
)

// Bounds on what is read back: a head names at most MaxLogObjects
// objects, and an object holds at most MaxLogObjectSize bytes (a group
// commit is at most 1 MiB of entries: roles' maxBatchBytes).
const (
	MaxLogObjects    = 4096
	MaxLogHeadSize   = 1 << 20
	MaxLogObjectSize = 8 << 20
	// MaxLogSnapshotSize bounds a snapshot object: the namespace, held in
	// memory by every master anyway.
	MaxLogSnapshotSize = 1 << 30
)

// LogFormat is the head and object layout written by this build.
const LogFormat = 1

// LogHead is log.json: which objects hold changes, in order. Objects[0]
// continues Base, and each object continues the one before. Entries at
// or below Base are not in the store: when the head was written they were
// durable on ACK_REPLICAS follower masters, or (Snapshot set) the
// snapshot object at Base holds what they made.
type LogHead struct {
	Format    int    `json:"format"`
	WitnessID string `json:"witness_id"`
	Cluster   string `json:"cluster"`
	// Epoch: the election epoch of the LEADER that wrote it. It never
	// goes down: a LEADER swaps the head only while its epoch is at least
	// this one.
	Epoch  uint64        `json:"epoch"`
	Holder wire.MasterID `json:"holder"`
	Base   Pos           `json:"base"`
	// Snapshot, when set, is an object under snap/ holding the namespace
	// at Base (its Last; its Prev is zero): written when the LEADER can no
	// longer continue the chain from its log, or the chain grew heavy.
	Snapshot *LogObject `json:"snapshot,omitempty"`
	// Objects, oldest first.
	Objects []LogObject `json:"objects"`
	// Nonce makes every write's content (and so its ETag) unique: a
	// read-back after an ambiguous swap tells ours from another's.
	Nonce uint64 `json:"nonce"`
}

// LogObject names one object of changes and what it must hold.
type LogObject struct {
	Key    string `json:"key"`
	Epoch  uint64 `json:"epoch"` // the writer's election epoch
	Prev   Pos    `json:"prev"`  // the entry before its first
	Last   Pos    `json:"last"`  // its last entry
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"` // of the whole object
}

// Last is the newest position the head's objects reach (Base when none).
func (h *LogHead) Last() Pos {
	if len(h.Objects) == 0 {
		return h.Base
	}
	return h.Objects[len(h.Objects)-1].Last
}

// Size is the bytes of the objects the head names (its snapshot's too).
func (h *LogHead) Size() int64 {
	var n int64
	if h.Snapshot != nil {
		n += int64(h.Snapshot.Bytes)
	}
	for _, o := range h.Objects {
		n += int64(o.Bytes)
	}
	return n
}

// ObjectKey names an object: its writer's epoch, its range, and a nonce
// (never reused, so a create-only write of it is never refused for
// another's content).
func ObjectKey(epoch uint64, prev, last Pos, nonce uint64) string {
	return fmt.Sprintf("%s%016x-%016x-%016x-%016x", LogDir, epoch, prev.Version, last.Version, nonce)
}

// SnapshotKey names a snapshot object: its writer's epoch, its position,
// and a nonce.
func SnapshotKey(epoch uint64, at Pos, nonce uint64) string {
	return fmt.Sprintf("%s%016x-%016x-%016x", SnapDir, epoch, at.Version, nonce)
}

// Encode renders the head.
func (h LogHead) Encode() []byte {
	if h.Objects == nil {
		h.Objects = []LogObject{}
	}
	b, err := json.Marshal(h)
	if err != nil {
		panic(fmt.Sprintf("witness: encoding a log head: %v", err)) // plain fields only
	}
	return append(b, '\n')
}

// DecodeHead parses and checks a head read from the store: anyone may
// write the bucket, so every field is checked before it counts.
func DecodeHead(b []byte) (LogHead, error) {
	if len(b) > MaxLogHeadSize {
		return LogHead{}, fmt.Errorf("witness log head: %d bytes, more than %d", len(b), MaxLogHeadSize)
	}
	var h LogHead
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&h); err != nil {
		return LogHead{}, fmt.Errorf("witness log head: %v", err)
	}
	if d.More() {
		return LogHead{}, fmt.Errorf("witness log head: more after its JSON object: not one of ours")
	}
	switch {
	case h.Format != LogFormat:
		return LogHead{}, fmt.Errorf("witness log head: format %d, this build reads %d", h.Format, LogFormat)
	case h.WitnessID == "" || len(h.WitnessID) > 64:
		return LogHead{}, fmt.Errorf("witness log head: witness_id %q is empty or too long", h.WitnessID)
	case h.Cluster == "" || len(h.Cluster) > 64:
		return LogHead{}, fmt.Errorf("witness log head: cluster %q is empty or too long", h.Cluster)
	case h.Holder == wire.NoMaster:
		return LogHead{}, fmt.Errorf("witness log head: no holder")
	case len(h.Objects) > MaxLogObjects:
		return LogHead{}, fmt.Errorf("witness log head: %d objects, more than %d", len(h.Objects), MaxLogObjects)
	}
	if s := h.Snapshot; s != nil {
		switch {
		case !strings.HasPrefix(s.Key, SnapDir) || len(s.Key) > 128:
			return LogHead{}, fmt.Errorf("witness log head: snapshot key %q is not under %s", s.Key, SnapDir)
		case s.Last != h.Base || s.Prev != (Pos{}) || s.Last.Version == 0:
			return LogHead{}, fmt.Errorf("witness log head: snapshot at %v after %v, the head's base is %v", s.Last, s.Prev, h.Base)
		case s.Epoch > h.Epoch || s.Last.Epoch > s.Epoch:
			return LogHead{}, fmt.Errorf("witness log head: snapshot of epoch %d at %v, the head's epoch is %d", s.Epoch, s.Last, h.Epoch)
		case s.Bytes <= 0 || s.Bytes > MaxLogSnapshotSize || len(s.SHA256) != 64:
			return LogHead{}, fmt.Errorf("witness log head: snapshot: size %d or checksum %q is not one of ours", s.Bytes, s.SHA256)
		}
	}
	prev := h.Base
	for i, o := range h.Objects {
		switch {
		case !strings.HasPrefix(o.Key, LogDir) || len(o.Key) > 128:
			return LogHead{}, fmt.Errorf("witness log head: object %d: key %q is not under %s", i, o.Key, LogDir)
		case o.Prev != prev:
			return LogHead{}, fmt.Errorf("witness log head: object %d continues %v, the one before ends at %v", i, o.Prev, prev)
		case o.Last.Version <= o.Prev.Version || o.Last.Epoch < o.Prev.Epoch || o.Last.Epoch > o.Epoch:
			return LogHead{}, fmt.Errorf("witness log head: object %d: range %v..%v of epoch %d does not hold together", i, o.Prev, o.Last, o.Epoch)
		case o.Epoch > h.Epoch:
			return LogHead{}, fmt.Errorf("witness log head: object %d of epoch %d, above the head's %d", i, o.Epoch, h.Epoch)
		case o.Bytes <= 0 || o.Bytes > MaxLogObjectSize || len(o.SHA256) != 64:
			return LogHead{}, fmt.Errorf("witness log head: object %d: size %d or checksum %q is not one of ours", i, o.Bytes, o.SHA256)
		}
		prev = o.Last
	}
	return h, nil
}

// LogBatch is one object's content: changes Prev+1 .. last, written by
// the LEADER of Epoch; or, for a snapshot object, Snapshot (no entries,
// Prev zero).
type LogBatch struct {
	Format    int
	Cluster   string
	WitnessID string
	Epoch     uint64
	Holder    wire.MasterID
	Prev      changelog.Pos
	Entries   []changelog.Entry
	Snapshot  *namespace.Snapshot `msgpack:",omitempty"`
}
