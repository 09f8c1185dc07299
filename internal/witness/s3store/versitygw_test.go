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
	g := startVersityGW(t)
	g.missingBucketRefused(t)
	g.createBucketTwice(t)
	t.Run("sequential", g.sequential)
	t.Run("races", g.races)
	t.Run("selftest", g.selfTestPasses)
	t.Run("root prefix", g.rootPrefix)
	t.Run("wrong secret", g.wrongSecret)
	t.Run("missing bucket", g.missingBucket)
	t.Run("unreachable", g.unreachable)
}

// versityGW is TestVersityGW's fixture: a versitygw server, the store
// config that reaches it, the store, and the context (30 s) every call
// runs under.
type versityGW struct {
	ctx context.Context
	cfg Config
	s   *Store
}

// startVersityGW starts the server and a store on it whose bucket does
// not exist yet.
func startVersityGW(t *testing.T) *versityGW {
	t.Helper()
	endpoint := versitytest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cfg := Config{Endpoint: endpoint, Bucket: "mfs-witness", Prefix: "cluster1", AccessKey: versitytest.Access, SecretKey: versitytest.Secret}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &versityGW{ctx: ctx, cfg: cfg, s: s}
}

// missingBucketRefused: before the bucket exists, a create is refused, in
// operator words.
func (g *versityGW) missingBucketRefused(t *testing.T) {
	t.Helper()
	_, err := g.s.Create(g.ctx, "lease.json", []byte("x"))
	if wantClass(t, "missing bucket", err, Refused); !strings.Contains(err.Error(), `bucket "mfs-witness" does not exist`) {
		t.Errorf("missing bucket: %v", err)
	}
}

// createBucketTwice: CreateBucket makes the bucket, and a second call on
// our own bucket is no error.
func (g *versityGW) createBucketTwice(t *testing.T) {
	t.Helper()
	if err := g.s.CreateBucket(g.ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.s.CreateBucket(g.ctx); err != nil {
		t.Fatalf("a second CreateBucket of our own bucket: %v", err)
	}
}

// sequential: the answers one by one, each with its class, status and
// code.
func (g *versityGW) sequential(t *testing.T) {
	e1 := g.createOnce(t)
	e2 := g.swapOnETag(t, e1)
	body, etag, err := g.s.Get(g.ctx, "lease.json")
	if wantClass(t, "get after swaps", err, OK); string(body) != `{"v":4}` || etag != e2 {
		t.Errorf("get after swaps: %q %q", body, etag)
	}
	g.ifNoneMatchNotStar(t)
	wantClass(t, "delete", g.s.Delete(g.ctx, "lease.json"), OK)
	_, _, err = g.s.Get(g.ctx, "lease.json")
	wantClass(t, "get deleted", err, Absent)
}

// createOnce: lease.json is absent, a create makes it and a second create
// conflicts; it returns the first create's ETag, which a get sees.
func (g *versityGW) createOnce(t *testing.T) string {
	t.Helper()
	s, ctx := g.s, g.ctx
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
	return e1
}

// swapOnETag: on lease.json at ETag e1 a swap with a wrong ETag
// conflicts, one with e1 passes, then one with e1 (now stale) conflicts,
// as does a swap of an absent key; it returns the passing swap's ETag.
func (g *versityGW) swapOnETag(t *testing.T, e1 string) string {
	t.Helper()
	s, ctx := g.s, g.ctx
	_, err := s.Swap(ctx, "lease.json", "0123456789abcdef0123456789abcdef", []byte(`{"v":3}`))
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
	return e2
}

// ifNoneMatchNotStar: If-None-Match other than * is 501: refused, in
// operator words.
func (g *versityGW) ifNoneMatchNotStar(t *testing.T) {
	t.Helper()
	s := g.s
	_, err := s.client.PutObject(g.ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.ObjectKey("etag-inm")),
		Body: bytes.NewReader([]byte("x")), IfNoneMatch: aws.String(`"abc"`)})
	oe := s.opError(OpCreate, s.ObjectKey("etag-inm"), err)
	if oe.Class != Refused || oe.Status != 501 || !strings.Contains(oe.Error(), "does not support conditional writes") {
		t.Errorf("If-None-Match \"abc\": %v", oe)
	}
}

// races: explicit, besides the self-test's: 16 creates, then 16 swaps on
// one ETag, each exactly one winner.
func (g *versityGW) races(t *testing.T) {
	st := &selfTest{s: g.s, opt: SelfTestOptions{Rounds: 1, Writers: 16}, dir: "race-test", times: &timings{d: map[string][]time.Duration{}}}
	if err := st.round(g.ctx, 1); err != nil {
		t.Fatal(err)
	}
}

// selfTestPasses: the self-test passes with every phase timed, and leaves no
// probe key behind.
func (g *versityGW) selfTestPasses(t *testing.T) {
	rep, err := SelfTest(g.ctx, g.s, SelfTestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("versitygw self-test: %v", rep)
	for _, p := range phaseOrder {
		if l, ok := rep.Phase(p); !ok || l.N == 0 {
			t.Errorf("phase %s missing from %v", p, rep)
		}
	}
	_, _, err = g.s.Get(g.ctx, strings.TrimPrefix(rep.Dir, "cluster1/")+"/seq")
	wantClass(t, "probe key after the self-test", err, Absent)
}

// rootPrefix: a store without a prefix passes a self-test round.
func (g *versityGW) rootPrefix(t *testing.T) {
	c := g.cfg
	c.Prefix = ""
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SelfTest(g.ctx, r, SelfTestOptions{Rounds: 1, Writers: 4}); err != nil {
		t.Fatal(err)
	}
}

// wrongSecret: a wrong secret is refused with 403, in operator words, by
// a create and by the self-test.
func (g *versityGW) wrongSecret(t *testing.T) {
	c := g.cfg
	c.SecretKey = "not-the-secret"
	bad, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Create(g.ctx, "lease.json", []byte("x"))
	oe := wantClass(t, "wrong secret", err, Refused)
	t.Log(err)
	if oe.Status != 403 || !strings.Contains(err.Error(), "access denied") || !strings.Contains(err.Error(), "WITNESS_CREDENTIALS") {
		t.Errorf("wrong secret: %v", err)
	}
	if _, err := SelfTest(g.ctx, bad, SelfTestOptions{}); err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Errorf("self-test with a wrong secret: %v", err)
	}
}

// missingBucket: a bucket that does not exist is refused, naming it, by a
// get, a swap and the self-test.
func (g *versityGW) missingBucket(t *testing.T) {
	c := g.cfg
	c.Bucket = "no-such-bucket"
	nb, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = nb.Get(g.ctx, "lease.json")
	t.Log(err)
	if oe := wantClass(t, "get", err, Refused); oe.Status != 404 || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
		t.Errorf("get: %v", err)
	}
	_, err = nb.Swap(g.ctx, "lease.json", "abc", []byte("x"))
	if wantClass(t, "swap", err, Refused); !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("swap: %v", err)
	}
	if _, err := SelfTest(g.ctx, nb, SelfTestOptions{}); err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
		t.Errorf("self-test: %v", err)
	}
}

// unreachable: a port nothing listens on is Ambiguous, quickly, with no
// status.
func (g *versityGW) unreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := g.cfg
	c.Endpoint, c.CallTimeout = "http://"+addr, 500*time.Millisecond
	u, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	_, err = u.Create(g.ctx, "lease.json", []byte("x"))
	wantClass(t, "unreachable", err, Ambiguous)
	var oe *OpError
	if !errors.As(err, &oe) || oe.Status != 0 {
		t.Errorf("unreachable: %v", err)
	}
}
