package witness

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

var fakeSHA = strings.Repeat("ab", 32)

// validLogHead is a head at epoch 7 whose snapshot holds the namespace at
// 100 and whose two objects continue it to 120.
func validLogHead() LogHead {
	base := Pos{Version: 100, Epoch: 5}
	mid := Pos{Version: 110, Epoch: 6}
	last := Pos{Version: 120, Epoch: 7}
	return LogHead{
		Format:    LogFormat,
		WitnessID: "w-0001",
		Cluster:   "c1",
		Epoch:     7,
		Holder:    2,
		Base:      base,
		Snapshot:  &LogObject{Key: SnapshotKey(5, base, 1), Epoch: 5, Last: base, Bytes: 5000, SHA256: fakeSHA},
		Objects: []LogObject{
			{Key: ObjectKey(6, base, mid, 2), Epoch: 6, Prev: base, Last: mid, Bytes: 300, SHA256: fakeSHA},
			{Key: ObjectKey(7, mid, last, 3), Epoch: 7, Prev: mid, Last: last, Bytes: 400, SHA256: fakeSHA},
		},
		Nonce: 9,
	}
}

func decodeHeadOK(t *testing.T, b []byte) LogHead {
	t.Helper()
	h, err := DecodeHead(b)
	if err != nil {
		t.Fatalf("DecodeHead: %v\n%s", err, b)
	}
	return h
}

func TestDecodeHeadValid(t *testing.T) {
	in := validLogHead()
	b := in.Encode()
	if !bytes.HasSuffix(b, []byte("}\n")) {
		t.Fatalf("encoded head does not end with a newline: %q", b[max(0, len(b)-8):])
	}
	h := decodeHeadOK(t, b)
	if !reflect.DeepEqual(h, in) {
		t.Fatalf("round trip\n got %+v\nwant %+v", h, in)
	}
	if got, want := h.Last(), (Pos{Version: 120, Epoch: 7}); got != want {
		t.Fatalf("Last %v, want %v", got, want)
	}
	if got := h.Size(); got != 5000+300+400 {
		t.Fatalf("Size %d, want %d (snapshot and objects)", got, 5000+300+400)
	}
}

// A head as another writer would render it by hand decodes.
func TestDecodeHeadLiteral(t *testing.T) {
	b := fmt.Sprintf(`{"format":1,"witness_id":"w","cluster":"c","epoch":3,"holder":1,"base":{"version":4,"epoch":2},`+
		`"objects":[{"key":"log/x","epoch":3,"prev":{"version":4,"epoch":2},"last":{"version":6,"epoch":3},"bytes":10,"sha256":%q}],"nonce":1}`, fakeSHA)
	h := decodeHeadOK(t, []byte(b))
	if h.Snapshot != nil || len(h.Objects) != 1 || h.Objects[0].Key != "log/x" || h.Last() != (Pos{Version: 6, Epoch: 3}) || h.Holder != 1 {
		t.Fatalf("decoded %+v", h)
	}
}

func TestLogHeadWithoutObjects(t *testing.T) {
	h := validLogHead()
	h.Objects = nil
	b := h.Encode()
	if !bytes.Contains(b, []byte(`"objects":[]`)) {
		t.Fatalf("no objects should encode as an empty list: %s", b)
	}
	if h.Objects != nil {
		t.Fatal("Encode changed its receiver's objects")
	}
	got := decodeHeadOK(t, b)
	if len(got.Objects) != 0 {
		t.Fatalf("decoded %d objects, want none", len(got.Objects))
	}
	if got.Last() != h.Base {
		t.Fatalf("Last %v, want the base %v", got.Last(), h.Base)
	}
	if got.Size() != 5000 {
		t.Fatalf("Size %d, want the snapshot's 5000", got.Size())
	}
	var empty LogHead
	if empty.Size() != 0 || empty.Last() != (Pos{}) {
		t.Fatalf("the zero head: size %d, last %v", empty.Size(), empty.Last())
	}
}

func TestObjectAndSnapshotKeys(t *testing.T) {
	k := ObjectKey(7, Pos{Version: 0x10, Epoch: 6}, Pos{Version: 0x20, Epoch: 7}, 0xff)
	if want := "log/0000000000000007-0000000000000010-0000000000000020-00000000000000ff"; k != want {
		t.Fatalf("ObjectKey %q, want %q", k, want)
	}
	s := SnapshotKey(5, Pos{Version: 0x64, Epoch: 5}, 1)
	if want := "snap/0000000000000005-0000000000000064-0000000000000001"; s != want {
		t.Fatalf("SnapshotKey %q, want %q", s, want)
	}
	// Both fit the head's bound on key length.
	if len(k) > 128 || len(s) > 128 {
		t.Fatalf("keys of %d and %d bytes are over the head's bound", len(k), len(s))
	}
}

// chainOf is a head with n chained objects and short keys.
func chainOf(n int) LogHead {
	h := validLogHead()
	h.Snapshot = nil
	h.Base = Pos{Version: 1, Epoch: 7}
	h.Objects = make([]LogObject, n)
	prev := h.Base
	for i := range h.Objects {
		last := Pos{Version: prev.Version + 1, Epoch: 7}
		h.Objects[i] = LogObject{Key: fmt.Sprintf("log/%x", i), Epoch: 7, Prev: prev, Last: last, Bytes: 1, SHA256: fakeSHA}
		prev = last
	}
	return h
}

func TestDecodeHeadBounds(t *testing.T) {
	t.Run("MaxLogObjects objects", func(t *testing.T) {
		h := decodeHeadOK(t, chainOf(MaxLogObjects).Encode())
		if len(h.Objects) != MaxLogObjects {
			t.Fatalf("%d objects, want %d", len(h.Objects), MaxLogObjects)
		}
	})
	t.Run("snapshot of MaxLogSnapshotSize bytes", func(t *testing.T) {
		h := validLogHead()
		h.Snapshot.Bytes = MaxLogSnapshotSize
		decodeHeadOK(t, h.Encode())
	})
	t.Run("object of MaxLogObjectSize bytes", func(t *testing.T) {
		h := validLogHead()
		h.Objects[1].Bytes = MaxLogObjectSize
		decodeHeadOK(t, h.Encode())
	})
	t.Run("body of MaxLogHeadSize bytes", func(t *testing.T) {
		b := validLogHead().Encode()
		b = append(b, bytes.Repeat([]byte{' '}, MaxLogHeadSize-len(b))...)
		decodeHeadOK(t, b)
	})
}

func TestDecodeHeadRefusals(t *testing.T) {
	edit := func(f func(h *LogHead)) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			h := validLogHead()
			f(&h)
			return h.Encode()
		}
	}
	cases := []struct {
		name string
		body func(t *testing.T) []byte
		word string
	}{
		{"unknown JSON field", func(t *testing.T) []byte {
			b := validLogHead().Encode()
			if !bytes.HasPrefix(b, []byte(`{"format"`)) {
				t.Fatalf("encoded head starts %q", b[:10])
			}
			return append([]byte(`{"extra":1,`), b[1:]...)
		}, `unknown field "extra"`},
		{"not JSON", func(t *testing.T) []byte { return []byte("<Error>NoSuchKey</Error>") }, "witness log head"},
		{"wrong format", edit(func(h *LogHead) { h.Format = LogFormat + 1 }), "format 2"},
		{"empty witness id", edit(func(h *LogHead) { h.WitnessID = "" }), "witness_id"},
		{"witness id too long", edit(func(h *LogHead) { h.WitnessID = strings.Repeat("w", 65) }), "witness_id"},
		{"empty cluster", edit(func(h *LogHead) { h.Cluster = "" }), "cluster"},
		{"cluster too long", edit(func(h *LogHead) { h.Cluster = strings.Repeat("c", 65) }), "cluster"},
		{"no holder", edit(func(h *LogHead) { h.Holder = 0 }), "no holder"},
		{"objects not chained", edit(func(h *LogHead) { h.Objects[1].Prev = Pos{Version: 111, Epoch: 6} }), "continues"},
		{"first object does not continue the base", edit(func(h *LogHead) { h.Objects[0].Prev = Pos{Version: 99, Epoch: 5} }), "continues"},
		{"object epoch above the head's", edit(func(h *LogHead) { h.Objects[1].Epoch = 8 }), "above the head's"},
		{"object key not under log/", edit(func(h *LogHead) { h.Objects[0].Key = "snap/x" }), "not under log/"},
		{"object key too long", edit(func(h *LogHead) { h.Objects[0].Key = LogDir + strings.Repeat("k", 125) }), "not under log/"},
		{"object range backwards", edit(func(h *LogHead) { h.Objects[1].Last = Pos{Version: 110, Epoch: 7} }), "does not hold together"},
		{"object last epoch above its writer's", edit(func(h *LogHead) { h.Objects[0].Last.Epoch = 7 }), "does not hold together"},
		{"object last epoch below its prev's", edit(func(h *LogHead) { h.Objects[1].Last.Epoch = 5 }), "does not hold together"},
		{"object of no bytes", edit(func(h *LogHead) { h.Objects[0].Bytes = 0 }), "size"},
		{"object over MaxLogObjectSize", edit(func(h *LogHead) { h.Objects[0].Bytes = MaxLogObjectSize + 1 }), "size"},
		{"object checksum not hex SHA-256 length", edit(func(h *LogHead) { h.Objects[0].SHA256 = "abc" }), "checksum"},
		{"snapshot key not under snap/", edit(func(h *LogHead) { h.Snapshot.Key = "log/x" }), "not under snap/"},
		{"snapshot last differs from base", edit(func(h *LogHead) { h.Snapshot.Last = Pos{Version: 99, Epoch: 5} }), "base"},
		{"snapshot with nonzero prev", edit(func(h *LogHead) { h.Snapshot.Prev = Pos{Version: 50, Epoch: 5} }), "base"},
		{"snapshot at version zero", edit(func(h *LogHead) {
			h.Base = Pos{}
			h.Snapshot.Last = Pos{}
			h.Objects = nil
		}), "snapshot at"},
		{"snapshot epoch above the head's", edit(func(h *LogHead) { h.Snapshot.Epoch = 8 }), "the head's epoch is 7"},
		{"snapshot position epoch above the snapshot's", edit(func(h *LogHead) { h.Snapshot.Epoch = 4 }), "the head's epoch is 7"},
		{"snapshot over MaxLogSnapshotSize", edit(func(h *LogHead) { h.Snapshot.Bytes = MaxLogSnapshotSize + 1 }), "size"},
		{"snapshot of no bytes", edit(func(h *LogHead) { h.Snapshot.Bytes = 0 }), "size"},
		{"snapshot checksum not SHA-256 length", edit(func(h *LogHead) { h.Snapshot.SHA256 = fakeSHA + "00" }), "checksum"},
		{"more than MaxLogObjects objects", func(t *testing.T) []byte {
			b := chainOf(MaxLogObjects + 1).Encode()
			if len(b) > MaxLogHeadSize {
				t.Fatalf("head of %d bytes is over the size bound: the object count would not be what is refused", len(b))
			}
			return b
		}, fmt.Sprintf("%d objects, more than %d", MaxLogObjects+1, MaxLogObjects)},
		{"body over MaxLogHeadSize", func(t *testing.T) []byte {
			b := validLogHead().Encode()
			return append(b, bytes.Repeat([]byte{' '}, MaxLogHeadSize+1-len(b))...)
		}, fmt.Sprintf("%d bytes, more than %d", MaxLogHeadSize+1, MaxLogHeadSize)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := DecodeHead(c.body(t))
			if err == nil {
				t.Fatalf("DecodeHead accepted it: %+v", h)
			}
			if !strings.Contains(err.Error(), c.word) {
				t.Fatalf("error %q does not say %q", err, c.word)
			}
			if !reflect.DeepEqual(h, LogHead{}) {
				t.Fatalf("a refusal returned a head: %+v", h)
			}
		})
	}
}
