package protocol

import (
	"net/netip"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// The admin commands of the object-store witness that the master's driver
// carries out itself (mfscli -CWITNESS/on and -CWITNESS/test): both need
// the witness's store, which only the driver calls, off its loop. The core
// never sees them (a build that does not know them answers "unknown admin
// command"). -CWITNESS/off is an ordinary roles.AdminChange. They are
// numbered far above roles' own kinds, so that a kind roles adds later
// never takes their numbers.
const (
	// AdminWitnessOn: at the LEADER, make (or find) the lease object
	// under its WITNESS_PREFIX and name its witness id in the registry.
	AdminWitnessOn roles.AdminKind = 200
	// AdminWitnessTest: run the store's self-test now on this master's
	// store and answer with the report or what it found.
	AdminWitnessTest roles.AdminKind = 201
)

// WitnessSelfTestPassed is WitnessStatus.SelfTest once the store passed.
const WitnessSelfTestPassed = "passed"

// WitnessStatus is the object-store witness as one master sees it
// (StatusResp.Witness): nil from a master that has no store configured
// while the registry names no witness, and from a build before it.
type WitnessStatus struct {
	// ID is the witness the registry names ("": none).
	ID string `msgpack:",omitempty"`
	// Endpoint, Bucket, Prefix: this master's store (WITNESS_ENDPOINT,
	// WITNESS_BUCKET, WITNESS_PREFIX; Endpoint "": none). Never the
	// credentials.
	Endpoint string `msgpack:",omitempty"`
	Bucket   string `msgpack:",omitempty"`
	Prefix   string `msgpack:",omitempty"`
	// SelfTest: "" until the store's first self-test ended,
	// WitnessSelfTestPassed, or what it found (the store is not used).
	SelfTest string `msgpack:",omitempty"`
	// NotUsed says why this master does not use a store it has ("": it
	// does): started without metadata (-e), it uses it from its next start.
	NotUsed string `msgpack:",omitempty"`
	// Held: it counts the witness's lease at the instant of the answer
	// (fenced, as its role is).
	Held bool `msgpack:",omitempty"`
	// The lease object as this master last read or wrote it: Known (or
	// Absent: it does not exist), and its fields.
	Known          bool          `msgpack:",omitempty"`
	Absent         bool          `msgpack:",omitempty"`
	RecordID       string        `msgpack:",omitempty"` // its witness_id
	RecordState    string        `msgpack:",omitempty"` // held or free
	RecordHolder   netip.Addr    `msgpack:",omitempty"` // the master that wrote it
	RecordHolderID wire.MasterID `msgpack:",omitempty"`
	RecordEpoch    uint64        `msgpack:",omitempty"` // lease_epoch
	// Waiting: it watches another master's held record until it may take
	// it; Blocked says why it cannot take the lease now ("": it can).
	Waiting bool   `msgpack:",omitempty"`
	Blocked string `msgpack:",omitempty"`
	// The last call on the store: its operation (get, create, swap), its
	// result (ok, absent, conflict, ambiguous, refused), the store's words
	// when it failed, and its time.
	LastOp      string        `msgpack:",omitempty"`
	LastResult  string        `msgpack:",omitempty"`
	LastError   string        `msgpack:",omitempty"`
	LastLatency time.Duration `msgpack:",omitempty"`
	// LastWriteAge: how long before this answer it sent the last write of
	// its own that the store took (0: none since it started).
	LastWriteAge time.Duration `msgpack:",omitempty"`
	// FailingFor: how long its calls have been answered refused or
	// ambiguous without a break, up to this answer (0: the last was not).
	FailingFor time.Duration `msgpack:",omitempty"`
	// Calls counts its calls by "op result" ("swap ok": 3).
	Calls map[string]uint64 `msgpack:",omitempty"`
}

// StoreText names the store as the listings do: "s3 ENDPOINT
// BUCKET/PREFIX" ("" when none is set).
func (w *WitnessStatus) StoreText() string {
	if w == nil || w.Endpoint == "" {
		return ""
	}
	where := w.Bucket
	if w.Prefix != "" {
		where += "/" + w.Prefix
	}
	return "s3 " + w.Endpoint + " " + where
}

// StoreLogStatus is the witness's store as a stand-in replica, as one
// master sees it (docs/architecture.md §7.5): what the store log holds
// (from the head this master last read or wrote), and on a LEADER what
// its acknowledgements rest on. Durations are up to the answer, so that
// no two clocks are compared.
type StoreLogStatus struct {
	// Known: the head was read or written by this master (since it became
	// LEADER, or in an ELECT's catch-up); the figures below are from it.
	Known   bool   `msgpack:",omitempty"`
	Objects int    `msgpack:",omitempty"`
	Bytes   int64  `msgpack:",omitempty"`
	Base    uint64 `msgpack:",omitempty"` // the version below which it holds nothing
	Last    uint64 `msgpack:",omitempty"` // the newest version it holds
	Epoch   uint64 `msgpack:",omitempty"` // the epoch of the LEADER that wrote the head
	// Snapshot: the version the head's snapshot object holds the
	// namespace at (0: none; the objects then start at Base).
	Snapshot uint64 `msgpack:",omitempty"`
	// OldestAge: how long the head has named objects, as far as this
	// master has seen it.
	OldestAge time.Duration `msgpack:",omitempty"`
	// The bounds (WITNESS_LOG_OBJECTS, WITNESS_LOG_BYTES, WITNESS_LOG_AGE).
	MaxObjects int           `msgpack:",omitempty"`
	MaxBytes   uint64        `msgpack:",omitempty"`
	MaxAge     time.Duration `msgpack:",omitempty"`
	// A LEADER's: StandsIn, fewer than ACK_REPLICAS followers are present
	// and the store holds what they lack; OnStore, its newest
	// acknowledgement rests on the store; BehindFor, the store has stood
	// in with changes it does not hold yet for this long; WaitingFor,
	// changes have waited for a copy (no follower, no store that holds
	// them, ACK_ALONE off) for this long.
	StandsIn   bool          `msgpack:",omitempty"`
	OnStore    bool          `msgpack:",omitempty"`
	BehindFor  time.Duration `msgpack:",omitempty"`
	WaitingFor time.Duration `msgpack:",omitempty"`
	// Garbage: objects no head names, still to delete; Error: the last
	// failure of a call on the store log ("" after a success).
	Garbage int    `msgpack:",omitempty"`
	Error   string `msgpack:",omitempty"`
	// Refused: this master's head writes the store refused since it
	// started, and head reads that showed it superseded (fence 1 at work).
	Refused int `msgpack:",omitempty"`
}
