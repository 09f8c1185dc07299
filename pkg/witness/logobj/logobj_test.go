package logobj

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/locations"
	"github.com/mfs-election/mfs-election/pkg/namespace"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// prev is the position the test batches continue.
var prev = changelog.Pos{Version: 10, Epoch: 4}

// changeBatch is a batch of three consecutive changes after prev, the
// first a new LEADER's no-op at epoch 5.
func changeBatch() witness.LogBatch {
	return witness.LogBatch{
		Format:    witness.LogFormat,
		Cluster:   "c1",
		WitnessID: "w-0001",
		Epoch:     5,
		Holder:    2,
		Prev:      prev,
		Entries: []changelog.Entry{
			{Pos: changelog.Pos{Version: 11, Epoch: 5}, Kind: changelog.EntryNoop},
			{Pos: changelog.Pos{Version: 12, Epoch: 5}, Kind: changelog.EntryPut, Client: 3, Seq: 1, Key: "a", Value: "alpha"},
			{Pos: changelog.Pos{Version: 13, Epoch: 5}, Kind: changelog.EntryDelete, Client: 3, Seq: 2, Key: "b"},
		},
	}
}

var snapPos = changelog.Pos{Version: 20, Epoch: 5}

func config() *registry.ClusterConfig {
	return &registry.ClusterConfig{Version: 3, Founder: 1, Locations: locations.New(), Members: []registry.Chunkserver{{ID: 1}, {ID: 2}}}
}

// snapshotBatch is a snapshot object's content at snapPos.
func snapshotBatch() witness.LogBatch {
	return witness.LogBatch{
		Format:    witness.LogFormat,
		Cluster:   "c1",
		WitnessID: "w-0001",
		Epoch:     5,
		Holder:    2,
		Snapshot: &namespace.Snapshot{
			Pos:    snapPos,
			Latest: config(),
			Data: map[string]namespace.Item{
				"a": {Value: "alpha", Version: 12},
				"c": {Value: "gamma", Version: 19},
			},
			Sessions: map[changelog.ClientID]namespace.Session{3: {Seq: 2, Version: 13}},
		},
	}
}

var (
	logKey  = witness.ObjectKey(5, witness.PosOf(prev), witness.Pos{Version: 13, Epoch: 5}, 77)
	snapKey = witness.SnapshotKey(5, witness.PosOf(snapPos), 78)
)

// encodeAt encodes b and names its descriptor key.
func encodeAt(t *testing.T, b witness.LogBatch, key string) ([]byte, witness.LogObject) {
	t.Helper()
	body, d := Encode(b)
	if d.Key != "" {
		t.Fatalf("Encode's descriptor has key %q, want none", d.Key)
	}
	d.Key = key
	return body, d
}

// reseal recomputes the inner and outer checksums of a body edited
// between the magic and the inner checksum, so that only the edit is
// wrong.
func reseal(t *testing.T, body []byte, d *witness.LogObject) []byte {
	t.Helper()
	n := len(body) - sha256.Size
	out := append([]byte(nil), body[:n]...)
	sum := sha256.Sum256(out)
	out = append(out, sum[:]...)
	all := sha256.Sum256(out)
	d.Bytes, d.SHA256 = len(out), hex.EncodeToString(all[:])
	return out
}

func TestEncodeDescriptor(t *testing.T) {
	cases := []struct {
		name       string
		batch      witness.LogBatch
		prev, last witness.Pos
	}{
		{"changes", changeBatch(), witness.Pos{Version: 10, Epoch: 4}, witness.Pos{Version: 13, Epoch: 5}},
		{"snapshot", snapshotBatch(), witness.Pos{}, witness.Pos{Version: 20, Epoch: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, d := Encode(c.batch)
			all := sha256.Sum256(body)
			want := witness.LogObject{Epoch: 5, Prev: c.prev, Last: c.last, Bytes: len(body), SHA256: hex.EncodeToString(all[:])}
			if d != want {
				t.Fatalf("descriptor %+v, want %+v", d, want)
			}
			if !bytes.HasPrefix(body, []byte("MFSLOG1\n")) {
				t.Fatalf("body starts %q, want the magic", body[:min(len(body), 8)])
			}
			n := len(body) - sha256.Size
			if inner := sha256.Sum256(body[:n]); !bytes.Equal(inner[:], body[n:]) {
				t.Fatal("body does not end with the SHA-256 of what is before it")
			}
			// A change batch (no maps) encodes to the same bytes every
			// time; a snapshot's maps need not.
			if c.batch.Snapshot == nil {
				if again, _ := Encode(c.batch); !bytes.Equal(again, body) {
					t.Fatal("two encodings of one batch differ")
				}
			}
		})
	}
}

func TestChangeBatchRoundTrip(t *testing.T) {
	in := changeBatch()
	body, d := encodeAt(t, in, logKey)
	out, err := Decode(body, d)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if out.Format != in.Format || out.Cluster != in.Cluster || out.WitnessID != in.WitnessID || out.Epoch != in.Epoch || out.Holder != in.Holder || out.Prev != in.Prev {
		t.Fatalf("header %+v, want %+v", out, in)
	}
	if out.Snapshot != nil {
		t.Fatalf("a change batch decoded with a snapshot: %+v", out.Snapshot)
	}
	if !reflect.DeepEqual(out.Entries, in.Entries) {
		t.Fatalf("entries\n got %+v\nwant %+v", out.Entries, in.Entries)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	in := snapshotBatch()
	body, d := encodeAt(t, in, snapKey)
	out, err := Decode(body, d)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	s := out.Snapshot
	if s == nil {
		t.Fatal("no snapshot decoded")
	}
	if len(out.Entries) != 0 {
		t.Fatalf("a snapshot decoded with %d entries", len(out.Entries))
	}
	if s.Pos != snapPos {
		t.Fatalf("snapshot at %v, want %v", s.Pos, snapPos)
	}
	if !reflect.DeepEqual(s.Data, in.Snapshot.Data) {
		t.Fatalf("data %v, want %v", s.Data, in.Snapshot.Data)
	}
	if !reflect.DeepEqual(s.Sessions, in.Snapshot.Sessions) {
		t.Fatalf("sessions %v, want %v", s.Sessions, in.Snapshot.Sessions)
	}
	if s.Latest == nil || s.Latest.Version != 3 || s.Latest.Founder != 1 || len(s.Latest.Members) != 2 || s.Latest.Members[1].ID != 2 {
		t.Fatalf("config %+v, want version 3, founder 1, members 1 and 2", s.Latest)
	}
	if s.Previous != nil {
		t.Fatalf("previous config %+v, want none", s.Previous)
	}
}

func TestEmptySnapshotDecodesToEmptyMaps(t *testing.T) {
	in := snapshotBatch()
	in.Snapshot.Data, in.Snapshot.Sessions = nil, nil
	body, d := encodeAt(t, in, snapKey)
	out, err := Decode(body, d)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if out.Snapshot.Data == nil || len(out.Snapshot.Data) != 0 {
		t.Fatalf("data %#v, want an empty map", out.Snapshot.Data)
	}
	if out.Snapshot.Sessions == nil || len(out.Snapshot.Sessions) != 0 {
		t.Fatalf("sessions %#v, want an empty map", out.Snapshot.Sessions)
	}
}

// A snapshot may be larger than a change object's bound.
func TestLargeSnapshotUnderSnapDecodes(t *testing.T) {
	in := snapshotBatch()
	big := strings.Repeat("x", witness.MaxLogObjectSize+1)
	in.Snapshot.Data["big"] = namespace.Item{Value: big, Version: 15}
	body, d := encodeAt(t, in, snapKey)
	if len(body) <= witness.MaxLogObjectSize {
		t.Fatalf("body of %d bytes is not over the change bound %d", len(body), witness.MaxLogObjectSize)
	}
	out, err := Decode(body, d)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got := out.Snapshot.Data["big"].Value; got != big {
		t.Fatalf("big item of %d bytes, want %d", len(got), len(big))
	}
}

// decodeFixture holds the sound objects the refusal cases break: a change
// batch and a snapshot, each encoded with its descriptor.
type decodeFixture struct {
	changeBody, snapBody []byte
	changeDesc, snapDesc witness.LogObject
}

// refusedObject is a body Decode must refuse and the descriptor it is
// checked against.
type refusedObject struct {
	body []byte
	want witness.LogObject
}

// refusal is one case of TestDecodeRefusals: make builds the object from
// the fixture, and the error names word besides the key.
type refusal struct {
	name string
	make func(t *testing.T, f decodeFixture) refusedObject
	word string
}

// bodyRefusals: the body is not the one the descriptor sums and sizes.
var bodyRefusals = []refusal{
	{"flipped byte", func(t *testing.T, f decodeFixture) refusedObject {
		b := slices.Clone(f.changeBody)
		b[len(b)/2] ^= 1
		return refusedObject{b, f.changeDesc}
	}, "SHA-256"},
	{"flipped byte in the inner checksum", func(t *testing.T, f decodeFixture) refusedObject {
		b := slices.Clone(f.changeBody)
		b[len(b)-1] ^= 0x80
		return refusedObject{b, f.changeDesc}
	}, "SHA-256"},
	{"head says longer", func(t *testing.T, f decodeFixture) refusedObject {
		d := f.changeDesc
		d.Bytes++
		return refusedObject{f.changeBody, d}
	}, "bytes"},
	{"truncated body", func(t *testing.T, f decodeFixture) refusedObject {
		return refusedObject{f.changeBody[:len(f.changeBody)-1], f.changeDesc}
	}, "bytes"},
	{"shorter than magic and checksum", func(t *testing.T, f decodeFixture) refusedObject {
		b := []byte("MFSLOG1\n")
		all := sha256.Sum256(b)
		return refusedObject{b, witness.LogObject{Key: logKey, Epoch: 5, Bytes: len(b), SHA256: hex.EncodeToString(all[:])}}
	}, "bytes"},
}

// descriptorRefusals: a sound body under a descriptor (or key) that
// says something else of it.
var descriptorRefusals = []refusal{
	{"descriptor's last differs", func(t *testing.T, f decodeFixture) refusedObject {
		d := f.changeDesc
		d.Last = witness.Pos{Version: 14, Epoch: 5}
		return refusedObject{f.changeBody, d}
	}, "ends at"},
	{"descriptor of another epoch", func(t *testing.T, f decodeFixture) refusedObject {
		d := f.changeDesc
		d.Epoch = 6
		return refusedObject{f.changeBody, d}
	}, "epoch"},
	{"descriptor's prev differs", func(t *testing.T, f decodeFixture) refusedObject {
		d := f.changeDesc
		d.Prev = witness.Pos{Version: 9, Epoch: 4}
		return refusedObject{f.changeBody, d}
	}, "after"},
	{"snapshot body under log/", func(t *testing.T, f decodeFixture) refusedObject {
		d := f.snapDesc
		d.Key = logKey
		return refusedObject{f.snapBody, d}
	}, "holds no changes"},
	{"change batch under snap/", func(t *testing.T, f decodeFixture) refusedObject {
		d := f.changeDesc
		d.Key = snapKey
		return refusedObject{f.changeBody, d}
	}, "not a snapshot"},
	{"snapshot at another position", func(t *testing.T, f decodeFixture) refusedObject {
		d := f.snapDesc
		d.Last = witness.Pos{Version: 21, Epoch: 5}
		return refusedObject{f.snapBody, d}
	}, "a snapshot at"},
}

// contentRefusals: sealed bodies whose batch breaks a rule of its kind.
var contentRefusals = []refusal{
	{"snapshot without a config", func(t *testing.T, f decodeFixture) refusedObject {
		b := snapshotBatch()
		b.Snapshot.Latest = nil
		body, d := encodeAt(t, b, snapKey)
		return refusedObject{body, d}
	}, "a snapshot at"},
	{"snapshot with entries", func(t *testing.T, f decodeFixture) refusedObject {
		b := snapshotBatch()
		b.Entries = changeBatch().Entries[:1]
		body, d := encodeAt(t, b, snapKey)
		return refusedObject{body, d}
	}, "not a snapshot"},
	{"change batch with a snapshot", func(t *testing.T, f decodeFixture) refusedObject {
		b := changeBatch()
		b.Snapshot = snapshotBatch().Snapshot
		body, d := encodeAt(t, b, logKey)
		d.Last = witness.Pos{Version: 13, Epoch: 5}
		return refusedObject{body, d}
	}, "holds no changes"},
	{"no entries", func(t *testing.T, f decodeFixture) refusedObject {
		b := changeBatch()
		b.Entries = nil
		body, d := encodeAt(t, b, logKey)
		return refusedObject{body, d}
	}, "holds no changes"},
	{"body over the size bound", func(t *testing.T, f decodeFixture) refusedObject {
		b := changeBatch()
		b.Entries[1].Value = strings.Repeat("v", witness.MaxLogObjectSize)
		body, d := encodeAt(t, b, logKey)
		if len(body) <= witness.MaxLogObjectSize {
			t.Fatalf("body of %d bytes is within the bound", len(body))
		}
		return refusedObject{body, d}
	}, "bytes"},
	{"wrong format", func(t *testing.T, f decodeFixture) refusedObject {
		b := changeBatch()
		b.Format = witness.LogFormat + 1
		body, d := encodeAt(t, b, logKey)
		return refusedObject{body, d}
	}, "format"},
	{"version gap", func(t *testing.T, f decodeFixture) refusedObject {
		b := changeBatch()
		b.Entries[2].Version = 14
		body, d := encodeAt(t, b, logKey)
		return refusedObject{body, d}
	}, "does not follow"},
	{"first entry does not continue prev", func(t *testing.T, f decodeFixture) refusedObject {
		b := changeBatch()
		b.Prev = changelog.Pos{Version: 9, Epoch: 4}
		body, d := encodeAt(t, b, logKey)
		return refusedObject{body, d}
	}, "does not follow"},
	{"entry epoch goes down", func(t *testing.T, f decodeFixture) refusedObject {
		b := changeBatch()
		b.Entries[2].Epoch = 3
		body, d := encodeAt(t, b, logKey)
		return refusedObject{body, d}
	}, "does not follow"},
	{"entry epoch above the writer's", func(t *testing.T, f decodeFixture) refusedObject {
		b := changeBatch()
		b.Entries[2].Epoch = 6
		body, d := encodeAt(t, b, logKey)
		return refusedObject{body, d}
	}, "does not follow"},
}

// resealedRefusals: bodies broken inside with both checksums made to
// match, so that only the break is wrong.
var resealedRefusals = []refusal{
	{"wrong magic, checksums resealed", func(t *testing.T, f decodeFixture) refusedObject {
		b := slices.Clone(f.changeBody)
		b[0] = 'X'
		d := f.changeDesc
		return refusedObject{reseal(t, b, &d), d}
	}, "magic"},
	{"body that does not decode, checksums resealed", func(t *testing.T, f decodeFixture) refusedObject {
		b := append([]byte("MFSLOG1\n\xc1\xc1\xc1"), make([]byte, sha256.Size)...)
		d := witness.LogObject{Key: logKey, Epoch: 5, Prev: witness.PosOf(prev)}
		return refusedObject{reseal(t, b, &d), d}
	}, "does not decode"},
}

func TestDecodeRefusals(t *testing.T) {
	changeBody, changeDesc := encodeAt(t, changeBatch(), logKey)
	snapBody, snapDesc := encodeAt(t, snapshotBatch(), snapKey)
	f := decodeFixture{changeBody: changeBody, changeDesc: changeDesc, snapBody: snapBody, snapDesc: snapDesc}
	for _, c := range slices.Concat(bodyRefusals, descriptorRefusals, contentRefusals, resealedRefusals) {
		t.Run(c.name, func(t *testing.T) {
			o := c.make(t, f)
			b, err := Decode(o.body, o.want)
			if err == nil {
				t.Fatalf("Decode accepted it: %+v", b)
			}
			if !strings.Contains(err.Error(), o.want.Key) {
				t.Errorf("error %q does not name the key %q", err, o.want.Key)
			}
			if !strings.Contains(err.Error(), c.word) {
				t.Errorf("error %q does not say %q", err, c.word)
			}
			if b.Entries != nil || b.Snapshot != nil {
				t.Errorf("a refusal returned content: %+v", b)
			}
		})
	}
}

func etagOf(body []byte) string {
	sum := md5.Sum(body)
	return hex.EncodeToString(sum[:])
}

func TestBucketCreateTwiceConflicts(t *testing.T) {
	var b Bucket
	in := changeBatch()
	first := b.Apply(witness.Request{Seq: 1, Op: witness.Create, Key: logKey, Batch: &in})
	body, d := encodeAt(t, in, logKey)
	if first.Class != witness.OK || first.Seq != 1 || first.Key != logKey {
		t.Fatalf("first create: %+v, want ok, seq 1, key %s", first, logKey)
	}
	if first.ETag != etagOf(body) {
		t.Fatalf("etag %q, want the MD5 of the body %q", first.ETag, etagOf(body))
	}
	if first.Object == nil || *first.Object != d {
		t.Fatalf("descriptor %+v, want %+v", first.Object, d)
	}
	second := b.Apply(witness.Request{Seq: 2, Op: witness.Create, Key: logKey, Batch: &in})
	if second.Class != witness.Conflict || second.Seq != 2 {
		t.Fatalf("second create: %+v, want a conflict with seq 2", second)
	}
	// The descriptor comes back on every answer to a Create.
	if second.Object == nil || *second.Object != d {
		t.Fatalf("refused create's descriptor %+v, want %+v", second.Object, d)
	}
	if b.Writes != 1 {
		t.Fatalf("%d writes landed, want 1", b.Writes)
	}
}

func TestBucketSwap(t *testing.T) {
	var b Bucket
	if r := b.Apply(witness.Request{Op: witness.Swap, Key: witness.LogKey, ETag: etagOf([]byte("x")), Body: []byte("y")}); r.Class != witness.Conflict {
		t.Fatalf("swap of a missing object: %v, want conflict", r.Class)
	}
	created := b.Apply(witness.Request{Op: witness.Create, Key: witness.LogKey, Body: []byte("one")})
	if created.Class != witness.OK {
		t.Fatalf("create: %v", created.Class)
	}
	if r := b.Apply(witness.Request{Op: witness.Swap, Key: witness.LogKey, ETag: etagOf([]byte("other")), Body: []byte("two")}); r.Class != witness.Conflict {
		t.Fatalf("swap with a wrong etag: %v, want conflict", r.Class)
	}
	if r := b.Apply(witness.Request{Op: witness.Get, Key: witness.LogKey}); string(r.Body) != "one" {
		t.Fatalf("after a refused swap the object holds %q, want %q", r.Body, "one")
	}
	swapped := b.Apply(witness.Request{Op: witness.Swap, Key: witness.LogKey, ETag: created.ETag, Body: []byte("two")})
	if swapped.Class != witness.OK || swapped.ETag != etagOf([]byte("two")) {
		t.Fatalf("swap with the right etag: %+v, want ok with etag %s", swapped, etagOf([]byte("two")))
	}
	got := b.Apply(witness.Request{Op: witness.Get, Key: witness.LogKey})
	if got.Class != witness.OK || string(got.Body) != "two" || got.ETag != swapped.ETag {
		t.Fatalf("read back %+v (body %q), want %q with etag %s", got, got.Body, "two", swapped.ETag)
	}
	// The old ETag no longer swaps.
	if r := b.Apply(witness.Request{Op: witness.Swap, Key: witness.LogKey, ETag: created.ETag, Body: []byte("three")}); r.Class != witness.Conflict {
		t.Fatalf("swap with a stale etag: %v, want conflict", r.Class)
	}
	if b.Writes != 2 {
		t.Fatalf("%d writes landed, want 2", b.Writes)
	}
}

func TestBucketGetWithWant(t *testing.T) {
	var b Bucket
	in := changeBatch()
	created := b.Apply(witness.Request{Op: witness.Create, Key: logKey, Batch: &in})
	want := *created.Object
	r := b.Apply(witness.Request{Seq: 7, Op: witness.Get, Key: logKey, Want: &want})
	if r.Class != witness.OK || r.Seq != 7 || r.Err != "" || r.ETag != created.ETag {
		t.Fatalf("get: %+v, want ok, seq 7, no error, etag %s", r, created.ETag)
	}
	if r.Body != nil {
		t.Fatalf("a checked read returned the body too (%d bytes)", len(r.Body))
	}
	if r.Batch == nil || !reflect.DeepEqual(r.Batch.Entries, in.Entries) {
		t.Fatalf("batch %+v, want entries %+v", r.Batch, in.Entries)
	}
	// Without Want the body comes back as stored.
	raw := b.Apply(witness.Request{Op: witness.Get, Key: logKey})
	body, _ := encodeAt(t, in, logKey)
	if raw.Batch != nil || !bytes.Equal(raw.Body, body) {
		t.Fatalf("plain get: batch %+v, body of %d bytes, want the %d encoded bytes", raw.Batch, len(raw.Body), len(body))
	}
}

func TestBucketGetWithWantOfDamagedObject(t *testing.T) {
	var b Bucket
	in := changeBatch()
	created := b.Apply(witness.Request{Op: witness.Create, Key: logKey, Batch: &in})
	want := *created.Object
	damaged, _ := encodeAt(t, in, logKey)
	damaged[len(damaged)/2] ^= 1
	if r := b.Apply(witness.Request{Op: witness.Swap, Key: logKey, ETag: created.ETag, Body: damaged}); r.Class != witness.OK {
		t.Fatalf("swap in the damaged body: %v", r.Class)
	}
	r := b.Apply(witness.Request{Op: witness.Get, Key: logKey, Want: &want})
	if r.Batch != nil {
		t.Fatalf("a damaged object decoded: %+v", r.Batch)
	}
	if r.Err == "" || !strings.Contains(r.Err, logKey) || !strings.Contains(r.Err, "SHA-256") {
		t.Fatalf("err %q, want a SHA-256 mismatch naming %s", r.Err, logKey)
	}
	if !bytes.Equal(r.Body, damaged) {
		t.Fatalf("the refused read's body is not what the store holds")
	}
}

func TestBucketGetMissing(t *testing.T) {
	var b Bucket
	want := witness.LogObject{Key: logKey}
	r := b.Apply(witness.Request{Seq: 3, Op: witness.Get, Key: logKey, Want: &want})
	if r.Class != witness.Absent || r.Seq != 3 || r.Batch != nil || r.Body != nil || r.Err != "" {
		t.Fatalf("get of a missing object: %+v, want absent with nothing else", r)
	}
}

func TestBucketDelete(t *testing.T) {
	var b Bucket
	in := changeBatch()
	b.Apply(witness.Request{Op: witness.Create, Key: logKey, Batch: &in})
	if !b.Exists(logKey) {
		t.Fatal("created object does not exist")
	}
	if r := b.Apply(witness.Request{Op: witness.Delete, Key: logKey}); r.Class != witness.OK {
		t.Fatalf("delete: %v", r.Class)
	}
	if b.Exists(logKey) {
		t.Fatal("deleted object still exists")
	}
	if r := b.Apply(witness.Request{Op: witness.Get, Key: logKey}); r.Class != witness.Absent {
		t.Fatalf("get after delete: %v, want absent", r.Class)
	}
	// A missing object's delete is done.
	if r := b.Apply(witness.Request{Op: witness.Delete, Key: logKey}); r.Class != witness.OK {
		t.Fatalf("delete of a missing object: %v, want ok", r.Class)
	}
	if b.Writes != 1 {
		t.Fatalf("%d writes counted, want 1 (deletes are not writes)", b.Writes)
	}
	// Once deleted, the key can be created again.
	if r := b.Apply(witness.Request{Op: witness.Create, Key: logKey, Batch: &in}); r.Class != witness.OK {
		t.Fatalf("create after delete: %v", r.Class)
	}
}

func TestBucketKeysSorted(t *testing.T) {
	var b Bucket
	if ks := b.Keys(); len(ks) != 0 {
		t.Fatalf("empty bucket lists %v", ks)
	}
	for _, k := range []string{"snap/a", "log/b", witness.LogKey, "log/a", ""} {
		if r := b.Apply(witness.Request{Op: witness.Create, Key: k, Body: []byte(k)}); r.Class != witness.OK {
			t.Fatalf("create %q: %v", k, r.Class)
		}
	}
	want := []string{witness.Key, witness.LogKey, "log/a", "log/b", "snap/a"}
	if ks := b.Keys(); !slices.Equal(ks, want) {
		t.Fatalf("keys %v, want %v", ks, want)
	}
	if !b.Exists(witness.Key) {
		t.Fatalf("the empty key did not store the lease object %q", witness.Key)
	}
}
