// Package logobj encodes and checks the objects of the witness's store
// log (pkg/witness, storelog.go) with the wire codec. It is the drivers'
// (the daemon's and the simulator's): the role machine hands them the
// entries to write and takes back what they read, already checked.
package logobj

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// batchMagic opens every object; a SHA-256 of all before it closes it.
var batchMagic = []byte("MFSLOG1\n")

// Encode renders an object and its descriptor (without Key).
func Encode(b witness.LogBatch) ([]byte, witness.LogObject) {
	body, err := frame.Marshal(b)
	if err != nil {
		panic(fmt.Sprintf("witness: encoding a log batch: %v", err)) // entries the log holds always encode
	}
	out := make([]byte, 0, len(batchMagic)+len(body)+sha256.Size)
	out = append(out, batchMagic...)
	out = append(out, body...)
	sum := sha256.Sum256(out)
	out = append(out, sum[:]...)
	all := sha256.Sum256(out)
	last := b.Prev
	if n := len(b.Entries); n > 0 {
		last = b.Entries[n-1].Pos
	}
	if b.Snapshot != nil {
		last = b.Snapshot.Pos
	}
	return out, witness.LogObject{Epoch: b.Epoch, Prev: witness.PosOf(b.Prev), Last: witness.PosOf(last), Bytes: len(out), SHA256: hex.EncodeToString(all[:])}
}

// Decode checks an object read from the store against the head's
// descriptor of it and decodes it: its checksums, and that
// its entries run from want.Prev to want.Last in order.
func Decode(body []byte, want witness.LogObject) (witness.LogBatch, error) {
	where := want.Key
	limit := witness.MaxLogObjectSize
	if strings.HasPrefix(want.Key, witness.SnapDir) {
		limit = witness.MaxLogSnapshotSize
	}
	if len(body) != want.Bytes || len(body) < len(batchMagic)+sha256.Size || len(body) > limit {
		return witness.LogBatch{}, fmt.Errorf("witness log object %s: %d bytes, the head says %d", where, len(body), want.Bytes)
	}
	all := sha256.Sum256(body)
	if hex.EncodeToString(all[:]) != want.SHA256 {
		return witness.LogBatch{}, fmt.Errorf("witness log object %s: its SHA-256 is not the one the head names: damaged or replaced", where)
	}
	n := len(body) - sha256.Size
	if sum := sha256.Sum256(body[:n]); !bytes.Equal(sum[:], body[n:]) || !bytes.HasPrefix(body, batchMagic) {
		return witness.LogBatch{}, fmt.Errorf("witness log object %s: not a change object of this build (magic or inner checksum)", where)
	}
	var b witness.LogBatch
	if err := frame.Unmarshal(body[len(batchMagic):n], &b); err != nil {
		return witness.LogBatch{}, fmt.Errorf("witness log object %s: does not decode: %v", where, err)
	}
	switch {
	case b.Format != witness.LogFormat:
		return witness.LogBatch{}, fmt.Errorf("witness log object %s: format %d, this build reads %d", where, b.Format, witness.LogFormat)
	case b.Epoch != want.Epoch || witness.PosOf(b.Prev) != want.Prev:
		return witness.LogBatch{}, fmt.Errorf("witness log object %s: epoch %d after %v, the head says epoch %d after %v", where, b.Epoch, b.Prev, want.Epoch, want.Prev)
	case strings.HasPrefix(want.Key, witness.SnapDir):
		s := b.Snapshot
		switch {
		case s == nil || len(b.Entries) > 0:
			return witness.LogBatch{}, fmt.Errorf("witness log object %s: not a snapshot", where)
		case witness.PosOf(s.Pos) != want.Last || s.Latest == nil:
			return witness.LogBatch{}, fmt.Errorf("witness log object %s: a snapshot at %v, the head says %v", where, s.Pos, want.Last)
		}
		if s.Data == nil {
			s.Data = map[string]namespace.Item{}
		}
		if s.Sessions == nil {
			s.Sessions = map[changelog.ClientID]namespace.Session{}
		}
		return b, nil
	case len(b.Entries) == 0 || b.Snapshot != nil:
		return witness.LogBatch{}, fmt.Errorf("witness log object %s: holds no changes", where)
	}
	last := b.Prev
	for _, e := range b.Entries {
		if e.Version != last.Version+1 || e.Epoch < last.Epoch || e.Epoch > b.Epoch {
			return witness.LogBatch{}, fmt.Errorf("witness log object %s: entry %v does not follow %v", where, e.Pos, last)
		}
		last = e.Pos
	}
	if witness.PosOf(last) != want.Last {
		return witness.LogBatch{}, fmt.Errorf("witness log object %s: ends at %v, the head says %v", where, last, want.Last)
	}
	return b, nil
}
