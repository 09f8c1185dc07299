package frame

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/mfs-election/mfs-election/pkg/wire"
)

// liar sends a header claiming a body of claim bytes, then only deliver
// bytes of it (one byte at a time, to be as slow as a trickling peer), then
// EOF: the connection ends before the body does.
type liar struct {
	hdr     []byte
	deliver int
}

func (l *liar) Read(p []byte) (int, error) {
	if len(l.hdr) > 0 {
		n := copy(p, l.hdr)
		l.hdr = l.hdr[n:]
		return n, nil
	}
	if l.deliver == 0 || len(p) == 0 {
		return 0, io.EOF
	}
	p[0] = 0xc0
	l.deliver--
	return 1, nil
}

// allocated returns the bytes allocated by runs calls of f, per call.
func allocated(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < runs; i++ {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestLyingLengthAllocatesWhatArrives: a header that claims the maximum
// frame reserves no memory by itself; the body's buffer grows with the bytes
// that actually arrive (security review M1: 200 connections each claiming
// 4 MiB held 800 MB before a single body byte came).
func TestLyingLengthAllocatesWhatArrives(t *testing.T) {
	r := NewRegistry()
	for _, c := range []struct {
		deliver int
		atMost  uint64 // bytes allocated per frame
	}{
		{deliver: 0, atMost: 2 * bodyChunk},
		{deliver: 10, atMost: 2 * bodyChunk},
		{deliver: 100 << 10, atMost: 8 * bodyChunk}, // 64 KiB + 128 KiB buffers
	} {
		per := allocated(8, func() {
			_, err := r.ReadFrame(&liar{hdr: header(DefaultMaxFrame, wire.TypeHello), deliver: c.deliver}, DefaultMaxFrame)
			want := io.ErrUnexpectedEOF
			if c.deliver == 0 {
				want = io.EOF
			}
			if !errors.Is(err, want) {
				t.Fatalf("a frame cut after %d body bytes: %v, want %v", c.deliver, err, want)
			}
		})
		t.Logf("claimed 4 MiB, sent %d body bytes: %d bytes allocated per frame", c.deliver, per)
		if per > c.atMost {
			t.Errorf("a 4 MiB claim with %d body bytes sent allocated %d bytes per frame, want at most %d", c.deliver, per, c.atMost)
		}
	}
}

// TestBodySizes: bodies around and across the chunk and doubling
// boundaries arrive whole, from a reader that returns a few bytes at a time.
func TestBodySizes(t *testing.T) {
	r := NewRegistry()
	for _, size := range []int{0, 1, bodyChunk - 1, bodyChunk, bodyChunk + 1, 2*bodyChunk + 7, 5*bodyChunk + 3} {
		in := Hello{Proto: 1, Cluster: string(bytes.Repeat([]byte{'c'}, size))}
		b, err := Encode(in)
		if err != nil {
			t.Fatal(err)
		}
		m, err := r.ReadFrame(&trickle{b: b, step: 977}, 1<<30)
		if err != nil {
			t.Fatalf("cluster id of %d bytes: %v", size, err)
		}
		if got := m.(*Hello); got.Cluster != in.Cluster {
			t.Fatalf("cluster id of %d bytes came back as %d bytes", size, len(got.Cluster))
		}
	}
}

// trickle returns at most step bytes per Read.
type trickle struct {
	b    []byte
	step int
}

func (t *trickle) Read(p []byte) (int, error) {
	if len(t.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), t.step)], t.b)
	t.b = t.b[n:]
	return n, nil
}

// BenchmarkReadFrame reads whole frames of a few sizes from memory: the
// normal path, which must not pay for the lying-length defence.
func BenchmarkReadFrame(b *testing.B) {
	r := NewRegistry()
	for _, c := range []struct {
		name string
		size int
	}{{"64B", 64}, {"1KiB", 1 << 10}, {"60KiB", 60 << 10}, {"1MiB", 1 << 20}} {
		frame, err := Encode(Hello{Proto: 1, Cluster: string(bytes.Repeat([]byte{'c'}, c.size))})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			rd := bytes.NewReader(frame)
			for b.Loop() {
				rd.Reset(frame)
				if _, err := r.ReadFrame(rd, DefaultMaxFrame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
