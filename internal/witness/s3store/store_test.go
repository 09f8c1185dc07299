package s3store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{Endpoint: "http://127.0.0.1:7070", Bucket: "witness", Prefix: "mfs/c1", AccessKey: "AK", SecretKey: "s3cr3t-value"}
}

func TestConfigValidate(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"empty endpoint", func(c *Config) { c.Endpoint = "" }, "Endpoint is empty"},
		{"endpoint not a URL scheme", func(c *Config) { c.Endpoint = "127.0.0.1:7070" }, "Endpoint"},
		{"endpoint ftp", func(c *Config) { c.Endpoint = "ftp://h" }, `Endpoint "ftp://h" is not an http:// or https:// URL`},
		{"endpoint no host", func(c *Config) { c.Endpoint = "http://" }, "has no host"},
		{"endpoint with user", func(c *Config) { c.Endpoint = "http://ak:pw@h" }, "holds credentials"},
		{"endpoint with query", func(c *Config) { c.Endpoint = "http://h/?x=1" }, "query"},
		{"empty bucket", func(c *Config) { c.Bucket = "" }, `Bucket "": empty`},
		{"short bucket", func(c *Config) { c.Bucket = "ab" }, `Bucket "ab": 2 characters`},
		{"bucket with slash", func(c *Config) { c.Bucket = "a/b" }, `Bucket "a/b": character '/'`},
		{"bucket ends with dash", func(c *Config) { c.Bucket = "abc-" }, "start and end"},
		{"prefix leading slash", func(c *Config) { c.Prefix = "/mfs" }, `Prefix "/mfs": starts with '/'`},
		{"prefix double slash", func(c *Config) { c.Prefix = "mfs//c1" }, `holds "//"`},
		{"prefix dotdot", func(c *Config) { c.Prefix = "mfs/../x" }, `".." segment`},
		{"prefix control", func(c *Config) { c.Prefix = "mfs\n" }, "control character"},
		{"no access key", func(c *Config) { c.AccessKey = "" }, "AccessKey is empty"},
		{"no secret", func(c *Config) { c.SecretKey = "" }, "SecretKey is empty"},
		{"negative timeout", func(c *Config) { c.CallTimeout = -time.Second }, "CallTimeout -1s is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want it to say %q", err, tc.want)
			}
			if _, err := New(c); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	// All problems at once.
	err := Config{Prefix: "/x"}.Validate()
	for _, want := range []string{"Endpoint", "Bucket", "Prefix", "AccessKey", "SecretKey"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v: does not name %s", err, want)
		}
	}
	// Accepted: a trailing '/', an empty prefix, https with a path.
	for _, edit := range []func(*Config){
		func(c *Config) { c.Prefix = "mfs/" },
		func(c *Config) { c.Prefix = "" },
		func(c *Config) { c.Endpoint = "https://s3.example.com/gw" },
	} {
		c := validConfig()
		edit(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
}

func TestConfigMasksSecret(t *testing.T) {
	c := validConfig()
	var js bytes.Buffer
	slog.New(slog.NewJSONHandler(&js, nil)).Info("cfg", "witness", c)
	b, err := json.Marshal(struct{ W Config }{c})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	outs := map[string]string{
		"String": c.String(), "%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
		"slog": js.String(), "json": string(b), "store %+v": fmt.Sprintf("%+v", s), "store %#v": fmt.Sprintf("%#v", *s),
		"pointer %+v": fmt.Sprintf("%+v", &c), "field %+v": fmt.Sprintf("%+v", struct{ W Config }{c}),
	}
	for how, out := range outs {
		if strings.Contains(out, c.SecretKey) {
			t.Errorf("%s prints the secret: %s", how, out)
		}
	}
	if !strings.Contains(outs["%+v"], "(set)") || !strings.Contains(outs["slog"], `"secret_key":"(set)"`) {
		t.Errorf("the secret is not shown as set: %s / %s", outs["%+v"], outs["slog"])
	}
}

func TestObjectKeyAndETag(t *testing.T) {
	for _, tc := range []struct{ prefix, name, want string }{
		{"", "lease.json", "lease.json"},
		{"mfs", "lease.json", "mfs/lease.json"},
		{"mfs/c1/", "lease.json", "mfs/c1/lease.json"},
		{"mfs", "/lease.json", "mfs/lease.json"},
		{"mfs", "selftest/ab/seq", "mfs/selftest/ab/seq"},
	} {
		c := validConfig()
		c.Prefix = tc.prefix
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.ObjectKey(tc.name); got != tc.want {
			t.Errorf("prefix %q name %q: %q, want %q", tc.prefix, tc.name, got, tc.want)
		}
	}
	for in, want := range map[string]string{`"abc"`: "abc", "abc": "abc", `W/"abc"`: "abc", ` "abc" `: "abc", `""`: "", "": ""} {
		if got := NormalizeETag(in); got != want {
			t.Errorf("NormalizeETag(%q) = %q, want %q", in, got, want)
		}
	}
	if got := quoteETag(`"abc"`); got != `"abc"` {
		t.Errorf("quoteETag = %s", got)
	}
}

func TestNewDefaults(t *testing.T) {
	c := validConfig()
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if s.CallTimeout() != DefaultCallTimeout || s.client.Options().Region != DefaultRegion {
		t.Errorf("defaults: timeout %v region %q", s.CallTimeout(), s.client.Options().Region)
	}
	if o := s.client.Options(); o.RetryMaxAttempts != 1 || !o.UsePathStyle {
		t.Errorf("options: RetryMaxAttempts %d UsePathStyle %v", o.RetryMaxAttempts, o.UsePathStyle)
	}
}

func wantClass(t *testing.T, what string, err error, want Class) *OpError {
	t.Helper()
	if got := Classify(err); got != want {
		t.Fatalf("%s: class %v, want %v (%v)", what, got, want, err)
	}
	var oe *OpError
	if err != nil && !errors.As(err, &oe) {
		t.Fatalf("%s: %T is not an *OpError", what, err)
	}
	return oe
}

// The operations through the real SDK against the stub: the answers a
// witness relies on, with the statuses AWS documents.
func TestStoreOperations(t *testing.T) {
	st, srv := newStub(t, stubAtomic)
	s := stubStore(t, st, srv, nil)
	ctx := context.Background()

	_, _, err := s.Get(ctx, "lease.json")
	if oe := wantClass(t, "get missing", err, Absent); oe.Status != 404 || oe.Code != "NoSuchKey" || oe.Key != "mfs/test/lease.json" {
		t.Errorf("get missing: %+v", oe)
	}
	e1, err := s.Create(ctx, "lease.json", []byte("one"))
	wantClass(t, "create", err, OK)
	if e1 != etagOf([]byte("one")) {
		t.Errorf("create ETag %q is not normalised", e1)
	}
	_, err = s.Create(ctx, "lease.json", []byte("two"))
	if oe := wantClass(t, "create again", err, Conflict); oe.Status != 412 || oe.Op != OpCreate {
		t.Errorf("create again: %+v", oe)
	}
	body, etag, err := s.Get(ctx, "lease.json")
	wantClass(t, "get", err, OK)
	if string(body) != "one" || etag != e1 {
		t.Errorf("get: %q %q", body, etag)
	}
	_, err = s.Swap(ctx, "lease.json", "nope", []byte("x"))
	wantClass(t, "swap wrong", err, Conflict)
	e2, err := s.Swap(ctx, "lease.json", `"`+e1+`"`, []byte("two")) // a quoted ETag works too
	wantClass(t, "swap", err, OK)
	_, err = s.Swap(ctx, "lease.json", e1, []byte("three"))
	wantClass(t, "swap stale", err, Conflict)
	_, err = s.Swap(ctx, "other.json", e2, []byte("x"))
	if oe := wantClass(t, "swap missing", err, Conflict); oe.Status != 404 {
		t.Errorf("swap missing: %+v", oe)
	}
	_, err = s.Swap(ctx, "lease.json", "", []byte("x"))
	wantClass(t, "swap with no ETag", err, Refused)
	_, err = s.Create(ctx, "big", make([]byte, MaxObjectSize+1))
	wantClass(t, "create too big", err, Refused)
	wantClass(t, "delete", s.Delete(ctx, "lease.json"), OK)
	if n := st.objectCount(); n != 0 {
		t.Errorf("%d objects left", n)
	}

	// An object too large to be ours is refused, naming its size.
	st.mu.Lock()
	st.objects["mfs/test/huge"] = stubObject{body: make([]byte, MaxObjectSize+10), etag: "e"}
	st.mu.Unlock()
	_, _, err = s.Get(ctx, "huge")
	wantClass(t, "get huge", err, Refused)
	if !strings.Contains(err.Error(), fmt.Sprint(MaxObjectSize+10)) {
		t.Errorf("get huge: %v does not name the size", err)
	}

	// An empty prefix is the bucket root.
	root := stubStore(t, st, srv, func(c *Config) { c.Prefix = "" })
	if _, err := root.Create(ctx, "at-root", []byte("r")); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	_, ok := st.objects["at-root"]
	st.mu.Unlock()
	if !ok {
		t.Error("empty prefix: the object is not at the bucket root")
	}
}

// Refusals in operator words, through the SDK.
func TestStoreRefusals(t *testing.T) {
	st, srv := newStub(t, stubAtomic)
	ctx := context.Background()

	_, err := stubStore(t, st, srv, func(c *Config) { c.Bucket = "nope-bucket" }).Create(ctx, "k", []byte("x"))
	if wantClass(t, "missing bucket", err, Refused); !strings.Contains(err.Error(), `bucket "nope-bucket" does not exist`) {
		t.Errorf("missing bucket: %v", err)
	}
	_, _, err = stubStore(t, st, srv, func(c *Config) { c.AccessKey = "WRONG" }).Get(ctx, "k")
	if wantClass(t, "wrong key", err, Refused); !strings.Contains(err.Error(), "access denied") || !strings.Contains(err.Error(), "WITNESS_CREDENTIALS") {
		t.Errorf("wrong key: %v", err)
	}
	st2, srv2 := newStub(t, stubNoConditional)
	_, err = stubStore(t, st2, srv2, nil).Create(ctx, "k", []byte("x"))
	if wantClass(t, "501", err, Refused); !strings.Contains(err.Error(), "does not support conditional writes") {
		t.Errorf("501: %v", err)
	}
}

// No SDK retries (RetryMaxAttempts 1), and every failure that may hide a
// landed write is Ambiguous.
func TestStoreAmbiguous(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mode   stubMode
		status int
		code   string
	}{
		{"503 SlowDown", stubFail, 503, "SlowDown"},
		{"500", stubFail, 500, "InternalError"},
		{"429", stubFail, 429, "TooManyRequests"},
		{"reset", stubReset, 0, ""},
		{"hang", stubHang, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, srv := newStub(t, tc.mode)
			st.failStatus, st.failCode = tc.status, tc.code
			s := stubStore(t, st, srv, func(c *Config) { c.CallTimeout = 300 * time.Millisecond })
			t0 := time.Now()
			_, err := s.Create(ctx, "k", []byte("x"))
			oe := wantClass(t, "create", err, Ambiguous)
			if oe.Status != tc.status {
				t.Errorf("status %d, want %d", oe.Status, tc.status)
			}
			if n := st.requests.Load(); n != 1 {
				t.Errorf("%d requests: the SDK retried", n)
			}
			if d := time.Since(t0); d > 2*time.Second {
				t.Errorf("took %v: the call timeout did not bound it", d)
			}
			if tc.mode == stubHang && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("hang: %v is not a deadline", err)
			}
		})
	}
}
