package secret

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKeyDerivation: a key is HMAC(PBKDF2-HMAC-SHA256(secret, salt with
// the cluster id, Iterations), purpose), as docs/wire.md states; it
// differs by secret, cluster and purpose.
func TestKeyDerivation(t *testing.T) {
	const s = "0123456789abcdef0123"
	base, err := pbkdf2.Key(sha256.New, s, []byte("mfs-election\x00C1"), Iterations, 32)
	if err != nil {
		t.Fatal(err)
	}
	h := hmac.New(sha256.New, base)
	h.Write([]byte("mfs-master\x00"))
	if got := Key(s, "C1", Master); !bytes.Equal(got, h.Sum(nil)) {
		t.Fatalf("Key = %x, want %x", got, h.Sum(nil))
	}
	keys := map[string]bool{}
	for _, k := range [][]byte{Key(s, "C1", Master), Key(s, "C1", Chunkserver), Key(s, "C1", Admin), Key(s, "C1", Client),
		Key(s, "C2", Master), Key(s, "", Master), Key(s+"x", "C1", Master)} {
		keys[string(k)] = true
	}
	if len(keys) != 7 {
		t.Fatalf("%d distinct keys of 7", len(keys))
	}
}

// TestKeyCached: only the first derivation for a secret and cluster is
// slow; concurrent first calls share one.
func TestKeyCached(t *testing.T) {
	s := "cache-test-secret-" + time.Now().String()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); Key(s, "C9", Admin) }()
	}
	wg.Wait()
	start := time.Now()
	for i := 0; i < 100; i++ {
		Key(s, "C9", Admin)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Fatalf("100 cached keys took %v", d)
	}
}

// TestCheck: secrets shorter than MinLen are refused with their name and
// a way out; empty ones are the caller's business.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		s  string
		ok bool
	}{{"", true}, {"s3cret", false}, {strings.Repeat("x", MinLen-1), false}, {strings.Repeat("x", MinLen), true}} {
		err := Check("AUTH_CODE", c.s)
		if (err == nil) != c.ok {
			t.Errorf("%q: %v", c.s, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "AUTH_CODE") || !strings.Contains(err.Error(), "at least 16")) {
			t.Errorf("%q: unclear: %v", c.s, err)
		}
	}
}

// TestGenerate: 128 random bits as 32 hex digits, never twice the same,
// and good for Check.
func TestGenerate(t *testing.T) {
	a, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate()
	if raw, err := hex.DecodeString(a); err != nil || len(raw) != 16 || a == b || Check("x", a) != nil {
		t.Fatalf("%q %q %v", a, b, err)
	}
}

// BenchmarkDerive is the cost of the slow part, paid once per secret and
// cluster (the docs quote it).
func BenchmarkDerive(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Stretch("0123456789abcdef0123", "5A1F0C3E9B7D2468")
	}
}
