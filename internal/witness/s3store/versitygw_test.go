package s3store

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/mfs-election/mfs-election/internal/witness/versitytest"
)

// TestVersityGW runs everything a witness needs against a real S3 server:
// the answers one by one, the 501 for an If-None-Match other than *, the
// refusals, and the self-test with its races.
func TestVersityGW(t *testing.T) {
	endpoint := versitytest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{Endpoint: endpoint, Bucket: "mfs-witness", Prefix: "cluster1", AccessKey: versitytest.Access, SecretKey: versitytest.Secret}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The bucket does not exist yet: refused, in operator words.
	_, err = s.Create(ctx, "lease.json", []byte("x"))
	if wantClass(t, "missing bucket", err, Refused); !strings.Contains(err.Error(), `bucket "mfs-witness" does not exist`) {
		t.Errorf("missing bucket: %v", err)
	}
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatalf("a second CreateBucket of our own bucket: %v", err)
	}

	t.Run("sequential", func(t *testing.T) {
		_, _, err := s.Get(ctx, "lease.json")
		if oe := wantClass(t, "get missing", err, Absent); oe.Status != 404 || oe.Code != "NoSuchKey" {
			t.Errorf("get missing: %v", err)
		}
		e1, err := s.Create(ctx, "lease.json", []byte(`{"v":1}`))
		wantClass(t, "create", err, OK)
		if e1 == "" || strings.Contains(e1, `"`) {
			t.Errorf("create ETag %q", e1)
		}
		_, err = s.Create(ctx, "lease.json", []byte(`{"v":2}`))
		if oe := wantClass(t, "create again", err, Conflict); oe.Status != 412 || oe.Code != "PreconditionFailed" {
			t.Errorf("create again: %v", err)
		}
		body, etag, err := s.Get(ctx, "lease.json")
		if wantClass(t, "get", err, OK); string(body) != `{"v":1}` || etag != e1 {
			t.Errorf("get: %q %q, want ETag %q", body, etag, e1)
		}
		_, err = s.Swap(ctx, "lease.json", "0123456789abcdef0123456789abcdef", []byte(`{"v":3}`))
		if oe := wantClass(t, "swap wrong", err, Conflict); oe.Status != 412 {
			t.Errorf("swap wrong: %v", err)
		}
		e2, err := s.Swap(ctx, "lease.json", e1, []byte(`{"v":4}`))
		if wantClass(t, "swap", err, OK); e2 == e1 || e2 == "" {
			t.Errorf("swap ETag %q after %q", e2, e1)
		}
		_, err = s.Swap(ctx, "lease.json", e1, []byte(`{"v":5}`))
		if oe := wantClass(t, "swap stale", err, Conflict); oe.Status != 412 {
			t.Errorf("swap stale: %v", err)
		}
		// AWS and versitygw: 404 NoSuchKey, which for a swap is Conflict.
		_, err = s.Swap(ctx, "absent.json", e2, []byte(`{"v":6}`))
		if oe := wantClass(t, "swap missing", err, Conflict); oe.Status != 404 || oe.Code != "NoSuchKey" {
			t.Errorf("swap missing: %v", err)
		}
		body, etag, err = s.Get(ctx, "lease.json")
		if wantClass(t, "get after swaps", err, OK); string(body) != `{"v":4}` || etag != e2 {
			t.Errorf("get after swaps: %q %q", body, etag)
		}

		// If-None-Match other than * is 501: refused, in operator words.
		_, err = s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.ObjectKey("etag-inm")),
			Body: bytes.NewReader([]byte("x")), IfNoneMatch: aws.String(`"abc"`)})
		oe := s.opError(OpCreate, s.ObjectKey("etag-inm"), err)
		if oe.Class != Refused || oe.Status != 501 || !strings.Contains(oe.Error(), "does not support conditional writes") {
			t.Errorf("If-None-Match \"abc\": %v", oe)
		}
		wantClass(t, "delete", s.Delete(ctx, "lease.json"), OK)
		_, _, err = s.Get(ctx, "lease.json")
		wantClass(t, "get deleted", err, Absent)
	})

	t.Run("races", func(t *testing.T) {
		// Explicit, besides the self-test's: 16 creates, then 16 swaps
		// on one ETag, each exactly one winner.
		st := &selfTest{s: s, opt: SelfTestOptions{Rounds: 1, Writers: 16}, dir: "race-test", times: &timings{d: map[string][]time.Duration{}}}
		if err := st.round(ctx, 1); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("selftest", func(t *testing.T) {
		rep, err := SelfTest(ctx, s, SelfTestOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("versitygw self-test: %v", rep)
		for _, p := range phaseOrder {
			if l, ok := rep.Phase(p); !ok || l.N == 0 {
				t.Errorf("phase %s missing from %v", p, rep)
			}
		}
		_, _, err = s.Get(ctx, strings.TrimPrefix(rep.Dir, "cluster1/")+"/seq")
		wantClass(t, "probe key after the self-test", err, Absent)
	})

	t.Run("root prefix", func(t *testing.T) {
		c := cfg
		c.Prefix = ""
		r, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := SelfTest(ctx, r, SelfTestOptions{Rounds: 1, Writers: 4}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("wrong secret", func(t *testing.T) {
		c := cfg
		c.SecretKey = "not-the-secret"
		bad, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bad.Create(ctx, "lease.json", []byte("x"))
		oe := wantClass(t, "wrong secret", err, Refused)
		t.Log(err)
		if oe.Status != 403 || !strings.Contains(err.Error(), "access denied") || !strings.Contains(err.Error(), "WITNESS_CREDENTIALS") {
			t.Errorf("wrong secret: %v", err)
		}
		if _, err := SelfTest(ctx, bad, SelfTestOptions{}); err == nil || !strings.Contains(err.Error(), "access denied") {
			t.Errorf("self-test with a wrong secret: %v", err)
		}
	})

	t.Run("missing bucket", func(t *testing.T) {
		c := cfg
		c.Bucket = "no-such-bucket"
		nb, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = nb.Get(ctx, "lease.json")
		t.Log(err)
		if oe := wantClass(t, "get", err, Refused); oe.Status != 404 || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
			t.Errorf("get: %v", err)
		}
		_, err = nb.Swap(ctx, "lease.json", "abc", []byte("x"))
		if wantClass(t, "swap", err, Refused); !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("swap: %v", err)
		}
		if _, err := SelfTest(ctx, nb, SelfTestOptions{}); err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
			t.Errorf("self-test: %v", err)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		// A port nothing listens on: Ambiguous, quickly.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		c := cfg
		c.Endpoint, c.CallTimeout = "http://"+addr, 500*time.Millisecond
		u, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = u.Create(ctx, "lease.json", []byte("x"))
		wantClass(t, "unreachable", err, Ambiguous)
		var oe *OpError
		if !errors.As(err, &oe) || oe.Status != 0 {
			t.Errorf("unreachable: %v", err)
		}
	})
}
