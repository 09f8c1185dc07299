package witness

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// Key is the lease object's name under the cluster's prefix (seed 000:
// cluster/lease.json).
const Key = "lease.json"

// MaxRecordSize bounds what a read of the lease object may return: a
// record is a few hundred bytes; anything larger is not one of ours.
const MaxRecordSize = 16 << 10

// Format is the record layout written by this build.
const Format = 1

// Record states.
const (
	// Held: the holder counts the lease from the write that put this
	// record there, for Config.Counted; a taker must watch it unchanged
	// for Config.Lease first.
	Held = "held"
	// Free: its writer stopped counting the lease before it wrote this; a
	// taker may swap it at once.
	Free = "free"
)

// Record is the lease object, JSON in the bucket. Nothing in it is a
// clock reading that anyone compares: the holder's lease runs on the
// holder's own clock from when it sent the write, and a taker's wait on the
// taker's own clock from when it first read the record (lease.go).
type Record struct {
	Format int `json:"format"`
	// WitnessID names this witness; the registry holds the same value, and
	// a master counts only a record whose id matches it (two stores, or two
	// prefixes, can never both be "the" witness).
	WitnessID string `json:"witness_id"`
	// Cluster is the metadata id: a bucket shared by two clusters is
	// refused, never taken over.
	Cluster string `json:"cluster"`
	State   string `json:"state"`
	// Holder, Incarnation: the master (and the run of it) that wrote it.
	Holder      wire.MasterID `json:"holder"`
	Incarnation uint64        `json:"incarnation"`
	// Epoch is lease_epoch: the writer's election epoch. A master takes a
	// record only at a higher epoch than the one in it (or it is its own
	// record from this run), so lease_epoch rises on every handoff and a
	// superseded holder is fenced by it.
	Epoch uint64 `json:"lease_epoch"`
	// Commit: the newest commit point the writer had made durable on
	// voters and the store; it never goes down (a taker writes the larger
	// of its own and this). A master that counts the witness toward an
	// election must hold it in its log before it may lead.
	Commit Pos `json:"commit"`
	// KnownReg: the newest registry version the writer knew committed;
	// like Commit it never goes down, and it makes the witness count as a
	// voter that knows that version when a config change is put in force.
	KnownReg uint64 `json:"known_reg"`
	// Nonce makes every write's content unique, so that an ETag (an MD5
	// of the content on most stores) never repeats: a taker's "unchanged
	// for the lease" is then a fact about writes, and a read-back after an
	// ambiguous answer tells our write from another's.
	Nonce uint64 `json:"nonce"`
	// WrittenUnixMs is the writer's wall clock, for operators only: no
	// decision reads it.
	WrittenUnixMs int64 `json:"written_unix_ms,omitempty"`
}

// Pos is a changelog position as the record writes it.
type Pos struct {
	Version uint64 `json:"version"`
	Epoch   uint64 `json:"epoch"`
}

// PosOf and Changelog convert to and from changelog.Pos.
func PosOf(p changelog.Pos) Pos        { return Pos{Version: p.Version, Epoch: p.Epoch} }
func (p Pos) Changelog() changelog.Pos { return changelog.Pos{Version: p.Version, Epoch: p.Epoch} }

// Encode renders the record.
func (r Record) Encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("witness: encoding a record: %v", err)) // plain fields only: cannot fail
	}
	return append(b, '\n')
}

// Decode parses and checks a record read from the store. The object is
// anyone's to write, so every field is checked before it counts.
func Decode(b []byte) (Record, error) {
	if len(b) > MaxRecordSize {
		return Record{}, fmt.Errorf("witness record: %d bytes, more than %d: not a lease record", len(b), MaxRecordSize)
	}
	var r Record
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("witness record: %v", err)
	}
	if d.More() {
		return Record{}, fmt.Errorf("witness record: more after its JSON object: not one of ours")
	}
	switch {
	case r.Format != Format:
		return Record{}, fmt.Errorf("witness record: format %d, this build reads %d", r.Format, Format)
	case r.WitnessID == "" || len(r.WitnessID) > 64:
		return Record{}, fmt.Errorf("witness record: witness_id %q is empty or too long", r.WitnessID)
	case r.Cluster == "" || len(r.Cluster) > 64:
		return Record{}, fmt.Errorf("witness record: cluster %q is empty or too long", r.Cluster)
	case r.State != Held && r.State != Free:
		return Record{}, fmt.Errorf("witness record: state %q, want %q or %q", r.State, Held, Free)
	case r.Holder == wire.NoMaster:
		return Record{}, fmt.Errorf("witness record: no holder")
	}
	return r, nil
}
