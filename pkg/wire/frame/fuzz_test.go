package frame_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/changelog"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/wire/frame"
)

// Fuzz targets for the forms the stores keep (frame.Marshal/Unmarshal
// values in bbolt, the snapshot file's stream of values) and for reading
// frames off a stream in pieces. Each target's corpus is
// testdata/fuzz/<target>: valid encodings of every form (written by
// -write-corpus), plus what fuzzing runs found worth keeping.

var writeCorpus = flag.Bool("write-corpus", false, "write the fuzz seeds to testdata/fuzz/<target>/")

func saveCorpus(tb testing.TB, seeds map[string][]byte) {
	tb.Helper()
	dir := filepath.Join("testdata", "fuzz", tb.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, b := range seeds {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%+q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

func config() *registry.ClusterConfig {
	c := changelog.Genesis(1)[0].Config
	locs, err := c.Locations.MapRange(netip.MustParsePrefix("10.0.2.0/24"), "west")
	if err != nil {
		panic(err)
	}
	c.Locations = locs
	c.Members = []registry.Chunkserver{{ID: 4, Addr: netip.MustParseAddr("10.0.2.4"), Port: 9422, VoterOnly: true}}
	return c
}

// storedForms are the values the stores keep with frame.Marshal, each
// with a sample; the first byte of a fuzz input picks one.
var storedForms = []struct {
	name   string
	new    func() any
	sample any
}{
	{"entry", func() any { return &changelog.Entry{} }, &changelog.Entry{Pos: changelog.Pos{Version: 2, Epoch: 5}, Kind: changelog.EntryCAS, Client: 1, Seq: 2, Key: "k", Value: "v", Expect: 1}},
	{"config-entry", func() any { return &changelog.Entry{} }, &changelog.Entry{Pos: changelog.Pos{Version: 3, Epoch: 5}, Kind: changelog.EntryConfig, Config: config()}},
	{"hard", func() any { return &roles.HardState{} }, &roles.HardState{Incarnation: 3, Epoch: 5, MaxEpoch: 6, LeaderEpoch: 5, Commit: changelog.Pos{Version: 9, Epoch: 5}, InForce: 2, Yielded: true}},
	{"base", func() any { return &changelog.LogBase{} }, &changelog.LogBase{Pos: changelog.Pos{Version: 9, Epoch: 5}, Latest: config(), Previous: changelog.Genesis(1)[0].Config}},
	{"voter", func() any { return &roles.VoterHardState{} }, &roles.VoterHardState{Boot: 2, MaxEpoch: 5, EpochOwner: 1, KnownReg: 2, InForce: 2,
		Commit: changelog.Pos{Version: 9, Epoch: 5}, CommitTag: 5, EpochInc: 3, MaxGranted: 800 * time.Millisecond}},
	{"identity", func() any { return &metadata.Identity{} }, &metadata.Identity{CS: 4, ClusterID: "5f2c", Addr: netip.MustParseAddrPort("10.0.2.4:9422")}},
}

// FuzzStoredValue: frame.Unmarshal of any bytes into any stored form
// returns a value or an error, never a panic; a value it returns marshals
// to bytes that unmarshal and marshal again to the same bytes.
func FuzzStoredValue(f *testing.F) {
	seeds := map[string][]byte{}
	for i, s := range storedForms {
		b, err := frame.Marshal(s.sample)
		if err != nil {
			f.Fatal(err)
		}
		in := append([]byte{byte(i)}, b...)
		seeds[s.name] = in
		f.Add(in)
	}
	if *writeCorpus {
		saveCorpus(f, seeds)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		form := storedForms[int(in[0])%len(storedForms)]
		v := form.new()
		if err := frame.Unmarshal(in[1:], v); err != nil {
			if !errors.Is(err, frame.ErrBadBody) {
				t.Fatalf("%s: an error that is not ErrBadBody: %v", form.name, err)
			}
			return
		}
		b1, err := frame.Marshal(v)
		if err != nil {
			t.Fatalf("%s: decoded %+v but cannot encode it: %v", form.name, v, err)
		}
		v2 := form.new()
		if err := frame.Unmarshal(b1, v2); err != nil {
			t.Fatalf("%s: decoded %+v, re-encoded, and that does not decode: %v", form.name, v, err)
		}
		if b2, err := frame.Marshal(v2); err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("%s: changes on a second round through the codec:\n%+v\n%+v (%v)", form.name, v, v2, err)
		}
	})
}

// The snapshot file's records, as pkg/metadata writes them (redeclared:
// the header is a map keyed by field name, the records are arrays, so
// these encode exactly as metadata's own unexported types do).
type snapHeader struct {
	Cluster  string
	Pos      changelog.Pos
	Latest   *registry.ClusterConfig
	Previous *registry.ClusterConfig
	Items    uint64
	Sessions uint64
}

type snapItem struct {
	//lint:ignore U1000 the codec reads this field's tag (toarray), never its value
	_struct struct{} `codec:",toarray"`
	Key     string
	Value   string
	Version uint64
}

type snapSession struct {
	//lint:ignore U1000 the codec reads this field's tag (toarray), never its value
	_struct struct{} `codec:",toarray"`
	Client  changelog.ClientID
	Seq     uint64
	Version uint64
	Failed  bool
}

// snapRecords is what a snapshot stream decodes to.
type snapRecords struct {
	h        snapHeader
	items    []snapItem
	sessions []snapSession
}

// maxFuzzRecords bounds the records one input may claim to hold (the
// counts are only claims; a run must stay short).
const maxFuzzRecords = 1000

// decodeSnapshot reads a header and then the records it announces (at
// most maxFuzzRecords of each) through one frame.Decoder, as
// metadata.readSnapshot does.
func decodeSnapshot(b []byte) (snapRecords, error) {
	var s snapRecords
	dec := frame.NewDecoder(bufio.NewReader(bytes.NewReader(b)))
	if err := dec.Decode(&s.h); err != nil {
		return s, err
	}
	for i := uint64(0); i < min(s.h.Items, maxFuzzRecords); i++ {
		var it snapItem
		if err := dec.Decode(&it); err != nil {
			return s, err
		}
		s.items = append(s.items, it)
	}
	for i := uint64(0); i < min(s.h.Sessions, maxFuzzRecords); i++ {
		var ss snapSession
		if err := dec.Decode(&ss); err != nil {
			return s, err
		}
		s.sessions = append(s.sessions, ss)
	}
	return s, nil
}

func encodeSnapshot(t testing.TB, s snapRecords) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := frame.NewEncoder(&buf)
	if err := enc.Encode(&s.h); err != nil {
		t.Fatalf("encoding the header %+v: %v", s.h, err)
	}
	for i := range s.items {
		if err := enc.Encode(&s.items[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range s.sessions {
		if err := enc.Encode(&s.sessions[i]); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// FuzzSnapshotStream: a snapshot body of any bytes decodes record by
// record through frame.Decoder or stops with an error, never a panic; what
// decoded encodes with frame.Encoder to a stream that decodes to the same
// records and encodes to the same bytes.
func FuzzSnapshotStream(f *testing.F) {
	valid := encodeSnapshot(f, snapRecords{
		h:     snapHeader{Cluster: "5f2c", Pos: changelog.Pos{Version: 9, Epoch: 5}, Latest: config(), Previous: changelog.Genesis(1)[0].Config, Items: 2, Sessions: 1},
		items: []snapItem{{Key: "a", Value: "x", Version: 2}, {Key: "b", Value: "", Version: 8}}, sessions: []snapSession{{Client: 1, Seq: 4, Version: 4, Failed: true}}})
	empty := encodeSnapshot(f, snapRecords{h: snapHeader{Cluster: "5f2c", Pos: changelog.Pos{Version: 1}, Latest: changelog.Genesis(1)[0].Config}})
	liar := encodeSnapshot(f, snapRecords{h: snapHeader{Cluster: "c", Latest: config(), Items: 1 << 40, Sessions: 1 << 40}})
	seeds := map[string][]byte{"snapshot": valid, "empty": empty, "counts-lie": liar}
	for _, b := range seeds {
		f.Add(b)
	}
	if *writeCorpus {
		saveCorpus(f, seeds)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, frame.ErrBadBody) {
				t.Fatalf("an error that is not ErrBadBody: %v", err)
			}
			return
		}
		// Re-encode the records that decoded, with the counts they make.
		s.h.Items, s.h.Sessions = uint64(len(s.items)), uint64(len(s.sessions))
		e1 := encodeSnapshot(t, s)
		s2, err := decodeSnapshot(e1)
		if err != nil {
			t.Fatalf("re-encoded records do not decode: %v", err)
		}
		if e2 := encodeSnapshot(t, s2); !bytes.Equal(e1, e2) {
			t.Fatalf("records change on a second round through the codec:\n%+v\n%+v", s, s2)
		}
	})
}

// streamRegistry takes Hello and the election core's messages.
var streamRegistry = func() *frame.Registry {
	r := frame.NewRegistry()
	for _, m := range []wire.Message{roles.Append{}, roles.AppendAck{}, roles.SnapshotChunk{}, roles.ClientRead{}, roles.ClientReply{}} {
		t := reflect.TypeOf(m)
		r.Register(m.MsgType(), func() wire.Message { return reflect.New(t).Interface().(wire.Message) })
	}
	return r
}()

// pieces returns at most step bytes per Read.
type pieces struct {
	b    []byte
	step int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.step)], p.b)
	p.b = p.b[n:]
	return n, nil
}

// FuzzReadFrameInPieces: frames read off a stream that delivers a few
// bytes at a time (the first input byte says how many) decode exactly as
// from one that delivers everything at once, whatever the lengths claim,
// with a small maximum so that a claimed length past what arrived and the
// growing body buffer are both exercised.
func FuzzReadFrameInPieces(f *testing.F) {
	seeds := map[string][]byte{}
	for _, m := range []wire.Message{
		frame.Hello{Proto: 1, Cluster: "c", Kind: frame.KindMaster, ID: 1},
		roles.Append{From: 1, Epoch: 5, Entries: []changelog.Entry{{Pos: changelog.Pos{Version: 2, Epoch: 5}, Kind: changelog.EntryPut, Key: "k", Value: string(bytes.Repeat([]byte("v"), 3000))}}},
		roles.ClientRead{Client: 1, Seq: 2, Key: "d/", Prefix: true, After: "d/a", Limit: 10},
	} {
		b, err := frame.Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		seeds[fmt.Sprintf("type-%d", m.MsgType())] = append([]byte{7}, b...)
	}
	two := append(bytes.Clone(seeds["type-31"]), seeds["type-1"][1:]...)
	seeds["two-frames"] = two
	seeds["lying-length"] = append([]byte{3, 0, 0, 0x10, 0, 0, 1}, bytes.Repeat([]byte{0x80}, 100)...)
	for _, b := range seeds {
		f.Add(b)
	}
	if *writeCorpus {
		saveCorpus(f, seeds)
	}
	const max = 1 << 20
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		whole, cut := bytes.NewReader(in[1:]), &pieces{b: in[1:], step: int(in[0]%64) + 1}
		for i := 0; i < 16; i++ {
			m1, err1 := streamRegistry.ReadFrame(whole, max)
			m2, err2 := streamRegistry.ReadFrame(cut, max)
			if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
				t.Fatalf("frame %d: read whole %v, in pieces %v", i, err1, err2)
			}
			if err1 != nil {
				return
			}
			if !reflect.DeepEqual(m1, m2) {
				t.Fatalf("frame %d: read whole %+v, in pieces %+v", i, m1, m2)
			}
		}
	})
}
