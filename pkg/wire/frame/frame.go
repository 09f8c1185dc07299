// Package frame carries wire messages over a byte stream: a length, a type
// number and a msgpack body; and the hello that opens every connection,
// with the dialing side's handshake (DialHello). It is kept apart from
// package wire so that the pure election core, which needs only the ids
// and the Message interface, never links the codec.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// A frame on the wire:
//
//	+-----------------+-------------+---------------------+
//	| length: uint32  | type: uint16| body: msgpack        |
//	+-----------------+-------------+---------------------+
//
// length counts the type and the body (so it is at least 2), big-endian.
// It is checked against the connection's maximum before anything is
// allocated for the body, and the body's buffer grows only as its bytes
// arrive (readBody).

// HeaderLen is the length prefix plus the type.
const HeaderLen = 6

// DefaultMaxFrame bounds a frame unless a connection says otherwise: large
// enough for a batch of changelog entries, small enough that a peer cannot
// make a daemon allocate much by lying about a length.
const DefaultMaxFrame = 4 << 20

// Errors that end a connection. Each is wrapped with the specifics.
var (
	ErrFrameTooLarge = errors.New("frame larger than the maximum")
	ErrShortFrame    = errors.New("frame shorter than its type")
	ErrUnknownType   = errors.New("unknown message type")
	ErrBadBody       = errors.New("message body does not decode")
)

// handle is the one msgpack configuration every frame uses.
var handle = newHandle(1024)

// newHandle is the frames' msgpack configuration, provisioning at most
// initLen elements of a claimed length up front.
func newHandle(initLen int) *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.WriteExt = true
	// A peer may claim a collection of any length; provision at most this
	// many elements up front and grow only as real bytes arrive.
	h.MaxInitLen = initLen
	h.MaxDepth = 32
	// The messages' struct tags are `msgpack:...` (omitempty keeps rarely
	// set fields off the wire; a missing field decodes as its zero value).
	h.TypeInfos = codec.NewTypeInfos([]string{"msgpack", "codec", "json"})
	return h
}

// Registry maps message types to the values they decode into. Register every
// type a connection may receive; anything else ends it with ErrUnknownType.
type Registry struct {
	make map[wire.Type]func() wire.Message
}

// NewRegistry returns a registry that knows Hello.
func NewRegistry() *Registry {
	r := &Registry{make: map[wire.Type]func() wire.Message{}}
	r.Register(wire.TypeHello, func() wire.Message { return &Hello{} })
	return r
}

// Register adds a type. It panics on 0 or on a number registered twice: both
// are programming errors in the append-only table of docs/wire.md.
func (r *Registry) Register(t wire.Type, newMsg func() wire.Message) {
	if t == 0 {
		panic("wire: message type 0 is reserved")
	}
	if _, dup := r.make[t]; dup {
		panic(fmt.Sprintf("wire: message type %d registered twice", t))
	}
	r.make[t] = newMsg
}

// RegistryOf returns a registry that decodes exactly the types of msgs
// (and Hello), each into a new value of the type given: one call states
// what a port and side may receive.
func RegistryOf(msgs ...wire.Message) *Registry {
	r := NewRegistry()
	for _, m := range msgs {
		t := reflect.TypeOf(m)
		r.Register(m.MsgType(), func() wire.Message { return reflect.New(t).Interface().(wire.Message) })
	}
	return r
}

// Types returns the message types r decodes, in ascending order (for
// tests that must cover every one of them).
func (r *Registry) Types() []wire.Type {
	ts := make([]wire.Type, 0, len(r.make))
	for t := range r.make {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// encoder is a msgpack encoder and its scratch buffer, reused through
// encoders: a new encoder and a 1 KiB buffer a frame was most of what a
// LEADER allocated renewing thousands of votes.
type encoder struct {
	e   *codec.Encoder
	buf []byte
}

// encoders holds idle encoders; one holding a buffer grown past
// keepEncBuf (a large changelog batch) lets it go instead.
var encoders = sync.Pool{New: func() any {
	x := &encoder{buf: make([]byte, 0, 512)}
	x.e = codec.NewEncoderBytes(&x.buf, handle)
	return x
}}

const keepEncBuf = 64 << 10

// Encode returns the frame for m, in a buffer of its own.
func Encode(m wire.Message) ([]byte, error) {
	x := encoders.Get().(*encoder)
	defer func() {
		if cap(x.buf) > keepEncBuf {
			x.buf = make([]byte, 0, 512)
		}
		encoders.Put(x)
	}()
	x.e.ResetBytes(&x.buf)
	if err := x.e.Encode(m); err != nil {
		return nil, fmt.Errorf("wire: encoding type %d: %w", m.MsgType(), err)
	}
	buf := make([]byte, HeaderLen+len(x.buf))
	binary.BigEndian.PutUint32(buf[0:4], uint32(2+len(x.buf)))
	binary.BigEndian.PutUint16(buf[4:6], uint16(m.MsgType()))
	copy(buf[HeaderLen:], x.buf)
	return buf, nil
}

// WriteFrame encodes m and writes it in one call.
func WriteFrame(w io.Writer, m wire.Message) error {
	b, err := Encode(m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ReadFrame reads one frame and decodes it. The length is checked against
// max before the body is read, and the body's buffer grows only as bytes
// arrive (a claimed length reserves no memory); a decoding failure never
// panics.
func (r *Registry) ReadFrame(rd io.Reader, max uint32) (wire.Message, error) {
	var hdr [HeaderLen]byte
	if _, err := io.ReadFull(rd, hdr[:]); err != nil {
		return nil, err
	}
	n, t, newMsg, err := r.header(hdr[:], max)
	if err != nil {
		return nil, err
	}
	body, err := readBody(rd, int(n-2))
	if err != nil {
		return nil, fmt.Errorf("reading the %d-byte body of type %d: %w", n-2, t, err)
	}
	return decodeBody(t, newMsg(), body)
}

// bodyChunk is the most ReadFrame allocates for a body before any of it
// has arrived: a length is only a claim, and a peer that sends a header and
// then nothing (or a trickle) must not make the daemon hold the whole
// claimed size. Most frames are far smaller and are read in one go.
const bodyChunk = 64 << 10

// readBody reads a body of size bytes into a buffer that starts at
// min(size, bodyChunk) and doubles (up to size) only once it is full, so
// the memory held is at most about twice what actually arrived.
func readBody(rd io.Reader, size int) ([]byte, error) {
	body := make([]byte, min(size, bodyChunk))
	got := 0
	for {
		k, err := io.ReadFull(rd, body[got:])
		got += k
		if err == io.EOF && got > 0 {
			err = io.ErrUnexpectedEOF // as one ReadFull of the whole body says
		}
		if err != nil {
			return nil, err
		}
		if got == size {
			return body, nil
		}
		grown := make([]byte, min(2*len(body), size))
		copy(grown, body[:got])
		body = grown
	}
}

// Decode decodes one whole frame held in b (for tests and the fuzz target).
func (r *Registry) Decode(b []byte, max uint32) (wire.Message, error) {
	if len(b) < HeaderLen {
		return nil, fmt.Errorf("%w: %d bytes", ErrShortFrame, len(b))
	}
	n := binary.BigEndian.Uint32(b[0:4])
	if uint64(n) != uint64(len(b)-4) {
		return nil, fmt.Errorf("%w: length says %d, frame holds %d", ErrShortFrame, n, len(b)-4)
	}
	// ReadFrame's checks, on the bytes in place (no second copy).
	_, t, newMsg, err := r.header(b[:HeaderLen], max)
	if err != nil {
		return nil, err
	}
	return decodeBody(t, newMsg(), b[HeaderLen:])
}

// header checks a frame's header (length and type) before anything is
// read or allocated for its body: the length n, the type t and what t
// decodes into.
func (r *Registry) header(hdr []byte, max uint32) (n uint32, t wire.Type, newMsg func() wire.Message, err error) {
	n = binary.BigEndian.Uint32(hdr[0:4])
	if n < 2 {
		return 0, 0, nil, fmt.Errorf("%w: length %d", ErrShortFrame, n)
	}
	if n > max {
		return 0, 0, nil, fmt.Errorf("%w: %d bytes, at most %d", ErrFrameTooLarge, n, max)
	}
	t = wire.Type(binary.BigEndian.Uint16(hdr[4:6]))
	newMsg, ok := r.make[t]
	if !ok {
		return 0, 0, nil, fmt.Errorf("%w %d (%d-byte frame)", ErrUnknownType, t, n)
	}
	return n, t, newMsg, nil
}

// decoders holds idle msgpack decoders (a new one a frame was a
// LEADER's largest allocation but the frame itself). One that panicked on
// a body is not put back.
var decoders = sync.Pool{New: func() any { return codec.NewDecoderBytes([]byte{}, handle) }}

func decodeBody(t wire.Type, m wire.Message, body []byte) (msg wire.Message, err error) {
	defer func() {
		// The codec reports most errors itself; a panic on hostile input
		// must still end only the connection, never the process.
		if x := recover(); x != nil {
			msg, err = nil, fmt.Errorf("%w: type %d: %v", ErrBadBody, t, x)
		}
	}()
	d := decoders.Get().(*codec.Decoder)
	d.ResetBytes(body)
	err = d.Decode(m)
	d.ResetBytes([]byte{}) // hold no frame while idle
	decoders.Put(d)
	if err != nil {
		return nil, fmt.Errorf("%w: type %d: %v", ErrBadBody, t, err)
	}
	return m, nil
}

// Marshal encodes v with the frame codec, without a header: for stores that
// keep wire values (changelog entries, hard states) on disk in the same form.
func Marshal(v any) ([]byte, error) {
	// A pooled encoder, as Encode's: a new one costs more than encoding
	// a changelog entry, which every master does for every change.
	x := encoders.Get().(*encoder)
	defer func() {
		if cap(x.buf) > keepEncBuf {
			x.buf = make([]byte, 0, 512)
		}
		encoders.Put(x)
	}()
	x.buf = x.buf[:0]
	x.e.ResetBytes(&x.buf)
	if err := x.e.Encode(v); err != nil {
		return nil, fmt.Errorf("wire: encoding %T: %w", v, err)
	}
	return slices.Clone(x.buf), nil
}

// Unmarshal decodes b, made by Marshal, into v (a pointer). A value that
// does not decode is an error, never a panic.
func Unmarshal(b []byte, v any) (err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("%w: %T: %v", ErrBadBody, v, x)
		}
	}()
	d := decoders.Get().(*codec.Decoder)
	d.ResetBytes(b)
	err = d.Decode(v)
	d.ResetBytes([]byte{}) // hold no value's bytes while idle
	decoders.Put(d)
	if err != nil {
		return fmt.Errorf("%w: %T: %v", ErrBadBody, v, err)
	}
	return nil
}

// Encoder writes values one after another to a stream in the frame codec,
// without headers: for files that hold a sequence of values (a snapshot is
// a header and then one value per record), written without building the
// whole file in memory.
type Encoder struct {
	w   io.Writer
	buf []byte
	enc *codec.Encoder
}

// NewEncoder returns an Encoder writing to w (buffer w: every value is one
// Write).
func NewEncoder(w io.Writer) *Encoder {
	e := &Encoder{w: w}
	e.enc = codec.NewEncoderBytes(&e.buf, handle)
	return e
}

// Encode writes v.
func (e *Encoder) Encode(v any) error {
	e.buf = e.buf[:0]
	e.enc.ResetBytes(&e.buf)
	if err := e.enc.Encode(v); err != nil {
		return fmt.Errorf("wire: encoding %T: %w", v, err)
	}
	_, err := e.w.Write(e.buf)
	return err
}

// Decoder reads the values an Encoder wrote, one per Decode. It reads no
// further than the value it decodes when r is an io.ByteScanner (a
// bufio.Reader), so what follows the values can be read from r after.
type Decoder struct{ dec *codec.Decoder }

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{codec.NewDecoder(r, handle)} }

// NewCheckedDecoder is NewDecoder for bytes a checksum already vouched for
// (a file this program wrote): a string or byte field is given its whole
// length up to checkedInitLen at once. From a stream, the codec otherwise
// grows one MaxInitLen (1 KiB) at a time, copying what it has each time:
// quadratic in a value's size, which made reading a snapshot of 200 KiB
// values run at about 80 MB/s.
func NewCheckedDecoder(r io.Reader) *Decoder { return &Decoder{codec.NewDecoder(r, checkedHandle)} }

// checkedInitLen bounds what one claimed length may allocate up front
// when the bytes are vouched for: a writer's bug stays an error, not a
// huge allocation.
const checkedInitLen = 4 << 20

var checkedHandle = newHandle(checkedInitLen)

// Decode reads the next value into v (a pointer). A value that does not
// decode is an error, never a panic.
func (d *Decoder) Decode(v any) (err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("%w: %T: %v", ErrBadBody, v, x)
		}
	}()
	if err := d.dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %T: %v", ErrBadBody, v, err)
	}
	return nil
}
