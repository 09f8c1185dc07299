package frame

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// TestReadHello: a hello is read whole; anything else first is
// ErrNotHello, whatever it is; the end of the stream stays io.EOF (a peer
// that hung up is not a garbage sender).
func TestReadHello(t *testing.T) {
	want := Hello{Proto: ProtocolVersion, Cluster: "C1", Kind: KindMaster, ID: 7, Nonce: []byte("n")}
	b, err := Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ReadHello(bytes.NewReader(b))
	if err != nil || h.Cluster != "C1" || h.ID != 7 || string(h.Nonce) != "n" {
		t.Fatalf("ReadHello = %+v, %v", h, err)
	}
	other, err := Encode(roles.Probe{CS: 1, Nonce: 2})
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{
		"http request":  []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"another type":  other,
		"over the size": append(header(MaxHelloFrame+1, wire.TypeHello), make([]byte, 16)...),
	} {
		if _, err := ReadHello(bytes.NewReader(in)); !errors.Is(err, ErrNotHello) {
			t.Errorf("%s: ReadHello = %v, want ErrNotHello", name, err)
		}
	}
	if _, err := ReadHello(bytes.NewReader(nil)); !errors.Is(err, io.EOF) || errors.Is(err, ErrNotHello) {
		t.Errorf("an empty stream: %v, want io.EOF", err)
	}
}

// TestDialHello: the dialing side sends its hello first, then takes the
// answer only if it passes the check; a failing answer is still returned,
// to say who answered.
func TestDialHello(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer Hello
		want   error
	}{
		{"a master of the cluster", Hello{Proto: ProtocolVersion, Cluster: "C1", Kind: KindMaster, ID: 3}, nil},
		{"another cluster", Hello{Proto: ProtocolVersion, Cluster: "C2", Kind: KindMaster, ID: 3}, ErrCluster},
		{"a chunkserver", Hello{Proto: ProtocolVersion, Cluster: "C1", Kind: KindChunkserver, ID: 3}, ErrKind},
	} {
		a, b := net.Pipe()
		got := make(chan Hello, 1)
		go func() {
			defer b.Close()
			h, err := ReadHello(b)
			if err != nil {
				close(got)
				return
			}
			got <- h
			_ = WriteFrame(b, tc.answer)
		}()
		h, err := DialHello(a, Hello{Proto: ProtocolVersion, Kind: KindAdmin}, "C1", KindMaster, time.Second)
		a.Close()
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: DialHello = %v, want %v", tc.name, err, tc.want)
		}
		if h.ID != 3 {
			t.Errorf("%s: the answer was not returned: %+v", tc.name, h)
		}
		if ours, ok := <-got; !ok || ours.Kind != KindAdmin {
			t.Errorf("%s: the other side read %+v as our hello", tc.name, ours)
		}
	}
}

// TestRegistryOf: a registry built from message values decodes exactly
// those types (and the hello), each into a pointer to its own type.
func TestRegistryOf(t *testing.T) {
	r := RegistryOf(roles.Probe{})
	if got := r.Types(); len(got) != 2 || got[0] != wire.TypeHello || got[1] != wire.TypeProbe {
		t.Fatalf("types %v", got)
	}
	b, err := Encode(roles.Probe{CS: 5, Nonce: 6})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Decode(b, DefaultMaxFrame)
	if p, ok := m.(*roles.Probe); err != nil || !ok || p.CS != 5 || p.Nonce != 6 {
		t.Fatalf("decoded %#v, %v", m, err)
	}
	if _, err := NewRegistry().Decode(b, DefaultMaxFrame); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("a registry without the type: %v", err)
	}
}
