package frame

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

func TestRoundTrip(t *testing.T) {
	r := NewRegistry()
	in := Hello{Proto: ProtocolVersion, Cluster: "5f2c", Kind: KindChunkserver, ID: 7, Incarnation: 3}
	var buf bytes.Buffer
	if err := WriteFrame(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := r.ReadFrame(&buf, DefaultMaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	if got := *out.(*Hello); !reflect.DeepEqual(got, in) {
		t.Fatalf("got %+v, want %+v", got, in)
	}
}

// countingReader fails the test if more than limit bytes are read: an
// oversized frame must be refused from its header alone.
type countingReader struct {
	t     *testing.T
	r     io.Reader
	limit int
	n     int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	if c.n > c.limit {
		c.t.Fatalf("read %d bytes, the header alone (%d) should have decided", c.n, c.limit)
	}
	return n, err
}

func header(n uint32, t wire.Type) []byte {
	var h [HeaderLen]byte
	binary.BigEndian.PutUint32(h[0:4], n)
	binary.BigEndian.PutUint16(h[4:6], uint16(t))
	return h[:]
}

func TestRefusals(t *testing.T) {
	r := NewRegistry()
	for _, c := range []struct {
		name  string
		input []byte
		want  error
		text  string
	}{
		{name: "oversized", input: append(header(1<<30, wire.TypeHello), make([]byte, 64)...), want: ErrFrameTooLarge, text: "1073741824 bytes, at most 4194304"},
		{name: "shorter than its type", input: header(1, wire.TypeHello), want: ErrShortFrame, text: "length 1"},
		{name: "unknown type", input: append(header(3, 999), 0xc0), want: ErrUnknownType, text: "999"},
		{name: "garbage body", input: append(header(6, wire.TypeHello), 0xc1, 0xff, 0xff, 0xff), want: ErrBadBody, text: "type 1"},
		{name: "wrong shape", input: append(header(3, wire.TypeHello), 0x2a), want: ErrBadBody, text: "type 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rd := &countingReader{t: t, r: bytes.NewReader(c.input), limit: len(c.input)}
			if c.want == ErrFrameTooLarge {
				rd.limit = HeaderLen
			}
			_, err := r.ReadFrame(rd, DefaultMaxFrame)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("got %v, want %v naming %q", err, c.want, c.text)
			}
		})
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("registering a type twice did not panic")
		}
	}()
	NewRegistry().Register(wire.TypeHello, func() wire.Message { return &Hello{} })
}

func TestHelloCheck(t *testing.T) {
	good := Hello{Proto: ProtocolVersion, Cluster: "abc", Kind: KindChunkserver}
	for _, c := range []struct {
		name    string
		h       Hello
		cluster string
		want    error
	}{
		{name: "accepted", h: good, cluster: "abc"},
		{name: "new node joins any cluster", h: Hello{Proto: ProtocolVersion, Kind: KindChunkserver}, cluster: "abc"},
		{name: "this node has none yet", h: good, cluster: ""},
		{name: "other cluster", h: good, cluster: "xyz", want: ErrCluster},
		{name: "other protocol", h: Hello{Proto: 9, Cluster: "abc", Kind: KindChunkserver}, cluster: "abc", want: ErrProtocol},
		{name: "wrong port", h: Hello{Proto: ProtocolVersion, Cluster: "abc", Kind: KindClient}, cluster: "abc", want: ErrKind},
	} {
		err := c.h.Check(c.cluster, KindChunkserver, KindAdmin)
		if !errors.Is(err, c.want) && !(err == nil && c.want == nil) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// Two peers use the newest version both speak; a peer of version 1
	// (no AUTH_CODE challenge on 9419 nor the admin proof's target) shares
	// none with this binary and is refused with both ranges named.
	for _, c := range []struct {
		h    Hello
		want uint16
	}{
		{Hello{Proto: 2}, 2},              // a version-2 node: Proto only
		{Hello{Proto: 2, ProtoMax: 3}, 3}, // a version-3 node
		{Hello{Proto: 2, ProtoMax: 4}, 4}, // this binary
		{Hello{Proto: 3, ProtoMax: 7}, 4}, // a newer one that still speaks 4
		{Hello{Proto: 1}, 0},
		{Hello{Proto: 5, ProtoMax: 6}, 0},
	} {
		if got := c.h.Common(); got != c.want {
			t.Errorf("%+v: common version %d, want %d", c.h, got, c.want)
		}
	}
	err := Hello{Proto: 1, Cluster: "abc", Kind: KindChunkserver}.Check("abc", KindChunkserver)
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "peer speaks 1, this node 2-4") {
		t.Errorf("a version 1 peer: %v", err)
	}
	if h := Ours(KindMaster); h.Proto != ProtocolMin || h.ProtoMax != ProtocolVersion || h.Check("", KindMaster) != nil {
		t.Errorf("this binary's own hello %+v", h)
	}
	err = good.Check("xyz", KindChunkserver)
	if !strings.Contains(err.Error(), "metadata id abc") || !strings.Contains(err.Error(), "clear its data directory") {
		t.Errorf("the cluster refusal does not say what to do: %v", err)
	}
}

// FuzzDecode: no input makes the decoder panic, and whatever decodes
// encodes back to a frame that decodes to the same value.
func FuzzDecode(f *testing.F) {
	ok, _ := Encode(Hello{Proto: 1, Cluster: "c", Kind: KindMaster, ID: 1, Incarnation: 2})
	f.Add(ok)
	f.Add(append(header(6, wire.TypeHello), 0xc1, 0xff, 0xff, 0xff))
	f.Add(append(header(7, wire.TypeHello), 0xdd, 0xff, 0xff, 0xff, 0xff))
	f.Add(header(1<<31, wire.TypeHello))
	r := NewRegistry()
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := r.Decode(b, 1<<16)
		if err != nil {
			return
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatalf("decoded %+v but cannot encode it: %v", m, err)
		}
		m2, err := r.Decode(again, 1<<16)
		first, second := *m.(*Hello), Hello{}
		if err == nil {
			second = *m2.(*Hello)
		}
		if len(first.Nonce) == 0 {
			first.Nonce = nil // an empty nonce is left out on the wire
		}
		if err != nil || !reflect.DeepEqual(first, second) {
			t.Fatalf("re-encoding changed %+v into %+v (%v)", m, m2, err)
		}
	})
}

// TestStream: values written one after another by an Encoder come back in
// order from a Decoder, which reads no further than the last one, so what
// follows them is still there to read.
func TestStream(t *testing.T) {
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	in := []Hello{{Proto: 1, Cluster: "a"}, {Proto: 2, Cluster: strings.Repeat("b", 5000)}, {ID: 3}}
	for i := range in {
		if err := enc.Encode(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString("trailer")
	br := bufio.NewReader(&buf)
	dec := NewDecoder(br)
	for i := range in {
		var got Hello
		if err := dec.Decode(&got); err != nil || !reflect.DeepEqual(got, in[i]) {
			t.Fatalf("value %d: %+v %v, want %+v", i, got, err, in[i])
		}
	}
	if rest, _ := io.ReadAll(br); string(rest) != "trailer" {
		t.Fatalf("after the values: %q", rest)
	}
	var h Hello
	if err := NewDecoder(bytes.NewReader([]byte{0xc1})).Decode(&h); !errors.Is(err, ErrBadBody) {
		t.Fatalf("a bad value: %v", err)
	}
}
