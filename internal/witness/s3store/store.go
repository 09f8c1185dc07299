package s3store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mfs-election/mfs-election/pkg/witness"
)

// MaxObjectSize bounds what Get reads and what Create and Swap send: a lease
// record is a few hundred bytes, so anything near this is not ours.
const MaxObjectSize = 64 << 10

// SizeLimit is the most an object of this name may hold: a lease record
// MaxObjectSize, the store log's head and its objects their bounds
// (pkg/witness, storelog.go).
func SizeLimit(name string) int64 {
	switch name = strings.TrimPrefix(name, "/"); {
	case name == witness.LogKey:
		return witness.MaxLogHeadSize
	case strings.HasPrefix(name, witness.LogDir):
		return witness.MaxLogObjectSize
	case strings.HasPrefix(name, witness.SnapDir):
		return witness.MaxLogSnapshotSize
	}
	return MaxObjectSize
}

// Config says where the witness objects live and how to reach them.
type Config struct {
	// Endpoint is the store's base URL, http:// or https://, e.g.
	// https://s3.eu-west-1.amazonaws.com or http://10.0.0.5:7070.
	Endpoint string
	// Region signs the requests (SigV4); most non-AWS stores accept
	// any, and us-east-1 is their usual default.
	Region string
	Bucket string
	// Prefix is the folder of the witness objects inside the bucket, with
	// no leading '/'; "" is the bucket root.
	Prefix    string
	AccessKey string
	// SecretKey never appears in String, GoString, LogValue or JSON.
	SecretKey string
	// CallTimeout bounds each request, answer body included; 0 means
	// DefaultCallTimeout.
	CallTimeout time.Duration
}

// Defaults of Config.
const (
	// DefaultRegion: what AWS's global endpoint and most S3-compatible
	// servers (versitygw, MinIO, Ceph) expect when none is configured.
	DefaultRegion = "us-east-1"
	// DefaultCallTimeout: a conditional PUT of a small object answers in
	// milliseconds on a LAN and tens of milliseconds on AWS; 2 s leaves
	// room for a slow store and stays well below a lease.
	DefaultCallTimeout = 2 * time.Second
)

// DefaultConfig is a Config with every default filled in and no store.
func DefaultConfig() Config {
	return Config{Region: DefaultRegion, CallTimeout: DefaultCallTimeout}
}

// withDefaults fills the zero fields that have a default.
func (c Config) withDefaults() Config {
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	return c
}

// Validate reports every problem at once, each naming the field and its
// value (never the secret's). It does not change c; an empty Region or a
// zero CallTimeout is valid (the defaults).
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("witness "+format, a...)) }

	if c.Endpoint == "" {
		bad("Endpoint is empty: give the store's URL, e.g. http://127.0.0.1:7070")
	} else if u, err := url.Parse(c.Endpoint); err != nil {
		bad("Endpoint %q is not a URL: %v", c.Endpoint, err)
	} else {
		switch {
		case u.Scheme != "http" && u.Scheme != "https":
			bad("Endpoint %q is not an http:// or https:// URL", c.Endpoint)
		case u.Host == "":
			bad("Endpoint %q has no host", c.Endpoint)
		case u.User != nil:
			// It would be printed wherever the endpoint is.
			bad("Endpoint %q holds credentials: give them as the access and secret keys", redactURL(u))
		case u.RawQuery != "" || u.Fragment != "":
			bad("Endpoint %q has a query or fragment", c.Endpoint)
		}
	}
	if err := checkBucket(c.Bucket); err != nil {
		bad("Bucket %q: %v", c.Bucket, err)
	}
	if err := checkPrefix(c.Prefix); err != nil {
		bad("Prefix %q: %v", c.Prefix, err)
	}
	if c.AccessKey == "" {
		bad("AccessKey is empty (see WITNESS_CREDENTIALS)")
	} else if strings.ContainsAny(c.AccessKey, " \t\r\n/") {
		bad("AccessKey %q holds a space or '/'", c.AccessKey)
	}
	if c.SecretKey == "" {
		bad("SecretKey is empty (see WITNESS_CREDENTIALS)")
	}
	if c.CallTimeout < 0 {
		bad("CallTimeout %v is negative", c.CallTimeout)
	}
	if c.Region != "" && strings.ContainsAny(c.Region, " \t\r\n/") {
		bad("Region %q holds a space or '/'", c.Region)
	}
	return errors.Join(errs...)
}

// checkBucket applies S3's naming rules loosely: 3 to 63 letters, digits,
// dots, hyphens or underscores (some stores allow upper case and '_'),
// starting and ending with a letter or digit.
func checkBucket(b string) error {
	if b == "" {
		return errors.New("empty")
	}
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("%d characters, S3 wants 3 to 63", len(b))
	}
	alnum := func(r byte) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' }
	for i := 0; i < len(b); i++ {
		if r := b[i]; !alnum(r) && r != '.' && r != '-' && r != '_' {
			return fmt.Errorf("character %q: a bucket name holds letters, digits, '.', '-' and '_' only", r)
		}
	}
	if !alnum(b[0]) || !alnum(b[len(b)-1]) {
		return errors.New("must start and end with a letter or digit")
	}
	return nil
}

// checkPrefix: no leading '/' (S3 keys have none, and a path-style URL
// would get "//"), no empty, "." or ".." segments (some stores map keys to
// paths), no control characters, and room left for our own names.
func checkPrefix(p string) error {
	if p == "" {
		return nil
	}
	if strings.HasPrefix(p, "/") {
		return errors.New("starts with '/': give it relative to the bucket, e.g. mfs/cluster1")
	}
	if len(p) > 512 {
		return fmt.Errorf("%d bytes, at most 512", len(p))
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("control character %q", r)
		}
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		switch seg {
		case "":
			return errors.New("holds \"//\"")
		case ".", "..":
			return fmt.Errorf("holds a %q segment", seg)
		}
	}
	return nil
}

func redactURL(u *url.URL) string {
	v := *u
	v.User = url.User("REDACTED")
	return v.String()
}

// String prints the config with the secret masked.
func (c Config) String() string {
	return fmt.Sprintf("s3store.Config{Endpoint:%q Region:%q Bucket:%q Prefix:%q AccessKey:%q SecretKey:%s CallTimeout:%v}",
		c.Endpoint, c.Region, c.Bucket, c.Prefix, c.AccessKey, maskSecret(c.SecretKey), c.CallTimeout)
}

// GoString is String, so that %#v masks the secret too.
func (c Config) GoString() string { return c.String() }

// LogValue masks the secret in slog.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("endpoint", c.Endpoint),
		slog.String("region", c.Region),
		slog.String("bucket", c.Bucket),
		slog.String("prefix", c.Prefix),
		slog.String("access_key", c.AccessKey),
		slog.String("secret_key", maskSecret(c.SecretKey)),
		slog.Duration("call_timeout", c.CallTimeout),
	)
}

// MarshalJSON masks the secret wherever the config is logged as JSON
// (zerolog's Interface, for one). Configs are read from files, never
// written back, so nothing needs the secret in JSON.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Endpoint    string `json:"endpoint"`
		Region      string `json:"region"`
		Bucket      string `json:"bucket"`
		Prefix      string `json:"prefix"`
		AccessKey   string `json:"access_key"`
		SecretKey   string `json:"secret_key"`
		CallTimeout string `json:"call_timeout"`
	}{c.Endpoint, c.Region, c.Bucket, c.Prefix, c.AccessKey, maskSecret(c.SecretKey), c.CallTimeout.String()})
}

func maskSecret(s string) string {
	if s == "" {
		return "(unset)"
	}
	return "(set)"
}

// Store reaches the witness objects under one bucket and prefix. It is safe
// for concurrent use. The secret lives only in the client's credentials
// provider, never in a field that %+v could print.
type Store struct {
	client   *s3.Client
	endpoint string
	bucket   string
	prefix   string // without a trailing '/'
	timeout  time.Duration
}

// New validates cfg, fills the defaults and builds the client. It does not
// contact the store: SelfTest does.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ak, sk := cfg.AccessKey, cfg.SecretKey
	client := s3.New(s3.Options{
		Region:       cfg.Region,
		BaseEndpoint: aws.String(cfg.Endpoint),
		// Path style (http://host/bucket/key): S3-compatible servers on
		// an IP or a single name have no per-bucket DNS.
		UsePathStyle: true,
		// Static keys without the config module, which pulls in SSO,
		// STS and IMDS.
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk, Source: "mfs witness config"}, nil
		}),
		// One attempt: an SDK retry of a create that won gets 412 and
		// would read as a loss. Ambiguity is handled by the caller.
		RetryMaxAttempts: 1,
		// The 2025 default checksums (CRC32 trailers, aws-chunked) are
		// not understood by every S3-compatible server.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		HTTPClient:                 newHTTPClient(cfg.CallTimeout),
	})
	return &Store{
		client:   client,
		endpoint: cfg.Endpoint,
		bucket:   cfg.Bucket,
		prefix:   strings.TrimSuffix(cfg.Prefix, "/"),
		timeout:  cfg.CallTimeout,
	}, nil
}

// minRate is the slowest transfer a call is given time for: a call on n
// bytes may take the call timeout plus n/minRate (a snapshot of the
// store log is up to 1 GiB; a lease record answers within the timeout).
const minRate = 8 << 20 // bytes a second

// deadline bounds a call that moves up to n bytes.
func (s *Store) deadline(n int64) time.Duration {
	return s.timeout + time.Duration(n)*time.Second/minRate
}

// newHTTPClient bounds each phase of a request by the call timeout (the
// context deadline of each call bounds the whole) and never follows a
// redirect: a witness that redirects is misconfigured, and the 3xx is
// reported as Refused.
func newHTTPClient(callTimeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: callTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   callTimeout,
		ResponseHeaderTimeout: callTimeout,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		// The self-test races 16 writers by default; keep their
		// connections for the next round.
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       2*callTimeout + witness.MaxLogSnapshotSize*time.Second/minRate, // a backstop: every call has a context deadline (deadline)
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// String names the store for logs: endpoint, bucket and prefix.
func (s *Store) String() string {
	return fmt.Sprintf("s3 %s bucket %q prefix %q", s.endpoint, s.bucket, s.prefix)
}

// Bucket is the configured bucket.
func (s *Store) Bucket() string { return s.bucket }

// CallTimeout is the deadline applied to each call.
func (s *Store) CallTimeout() time.Duration { return s.timeout }

// ObjectKey is the full key of name in the bucket: Prefix + "/" + name, or
// name alone when Prefix is "".
func (s *Store) ObjectKey(name string) string {
	name = strings.TrimPrefix(name, "/")
	if s.prefix == "" {
		return name
	}
	return s.prefix + "/" + name
}

// NormalizeETag strips the quotes (and a weak W/ marker) that HTTP puts
// around an ETag: ETags are returned and compared in this form.
func NormalizeETag(etag string) string {
	etag = strings.TrimSpace(etag)
	etag = strings.TrimPrefix(etag, "W/")
	if len(etag) >= 2 && etag[0] == '"' && etag[len(etag)-1] == '"' {
		etag = etag[1 : len(etag)-1]
	}
	return etag
}

// quoteETag is how AWS expects an ETag in If-Match.
func quoteETag(etag string) string { return `"` + NormalizeETag(etag) + `"` }

func (s *Store) opError(op Op, key string, err error) *OpError {
	c, status, code, reason := classify(op, s.bucket, err)
	return &OpError{Op: op, Bucket: s.bucket, Key: key, Class: c, Status: status, Code: code, Reason: reason, Err: err}
}

// localError is an OpError for a request refused before it was sent.
func (s *Store) localError(op Op, key, reason string) *OpError {
	return &OpError{Op: op, Bucket: s.bucket, Key: key, Class: Refused, Reason: reason}
}

func (s *Store) checkName(op Op, name string) (string, *OpError) {
	if strings.TrimPrefix(name, "/") == "" {
		return "", s.localError(op, name, "empty object name")
	}
	return s.ObjectKey(name), nil
}

// Get reads the object name and its ETag. A missing key is Absent; an
// object larger than the bound for its name (SizeLimit) is Refused.
func (s *Store) Get(ctx context.Context, name string) ([]byte, string, error) {
	key, oe := s.checkName(OpGet, name)
	if oe != nil {
		return nil, "", oe
	}
	limit := SizeLimit(name)
	ctx, cancel := context.WithTimeout(ctx, s.deadline(limit))
	defer cancel()
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, "", s.opError(OpGet, key, err)
	}
	defer out.Body.Close()
	tooLarge := func(n int64) *OpError {
		return &OpError{Op: OpGet, Bucket: s.bucket, Key: key, Class: Refused, Status: http.StatusOK,
			Reason: fmt.Sprintf("the object is %d bytes, more than the %d it may be: is the prefix shared with something else?", n, limit)}
	}
	if n := aws.ToInt64(out.ContentLength); n > limit {
		return nil, "", tooLarge(n)
	}
	body, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, "", &OpError{Op: OpGet, Bucket: s.bucket, Key: key, Class: Ambiguous,
			Reason: "the answer was cut short: read again", Err: err}
	}
	if int64(len(body)) > limit {
		return nil, "", tooLarge(int64(len(body)))
	}
	etag := NormalizeETag(aws.ToString(out.ETag))
	if etag == "" {
		return nil, "", &OpError{Op: OpGet, Bucket: s.bucket, Key: key, Class: Refused, Status: http.StatusOK,
			Reason: "the store returned the object without an ETag: it cannot be a witness"}
	}
	return body, etag, nil
}

// Create writes name only if it does not exist (If-None-Match: *) and
// returns the new ETag. An existing key is Conflict.
func (s *Store) Create(ctx context.Context, name string, body []byte) (string, error) {
	key, oe := s.checkName(OpCreate, name)
	if oe != nil {
		return "", oe
	}
	return s.put(ctx, OpCreate, key, SizeLimit(name), body, &s3.PutObjectInput{IfNoneMatch: aws.String("*")})
}

// Swap replaces name only if its ETag is still etag (If-Match) and returns
// the new ETag. Another ETag or a missing key is Conflict: not ours now.
func (s *Store) Swap(ctx context.Context, name, etag string, body []byte) (string, error) {
	key, oe := s.checkName(OpSwap, name)
	if oe != nil {
		return "", oe
	}
	if NormalizeETag(etag) == "" {
		return "", s.localError(OpSwap, key, "empty ETag: a swap needs the ETag of the version it replaces")
	}
	return s.put(ctx, OpSwap, key, SizeLimit(name), body, &s3.PutObjectInput{IfMatch: aws.String(quoteETag(etag))})
}

func (s *Store) put(ctx context.Context, op Op, key string, limit int64, body []byte, in *s3.PutObjectInput) (string, error) {
	if int64(len(body)) > limit {
		return "", s.localError(op, key, fmt.Sprintf("the body is %d bytes, more than %d", len(body), limit))
	}
	in.Bucket = aws.String(s.bucket)
	in.Key = aws.String(key)
	// A seekable body with its length: the SDK signs its SHA-256 and
	// sends it plainly (no aws-chunked encoding).
	in.Body = bytes.NewReader(body)
	in.ContentLength = aws.Int64(int64(len(body)))
	ctx, cancel := context.WithTimeout(ctx, s.deadline(int64(len(body))))
	defer cancel()
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		return "", s.opError(op, key, err)
	}
	etag := NormalizeETag(aws.ToString(out.ETag))
	if etag == "" {
		// It landed, but without its ETag the next swap cannot be
		// made: read it back to learn it.
		return "", &OpError{Op: op, Bucket: s.bucket, Key: key, Class: Ambiguous, Status: http.StatusOK,
			Reason: "the store answered success without an ETag: read the object back"}
	}
	return etag, nil
}

// Delete removes name; a missing key is not an error. It is for the self-test's probe keys: the lease
// itself is never deleted, only swapped.
func (s *Store) Delete(ctx context.Context, name string) error {
	key, oe := s.checkName(OpDelete, name)
	if oe != nil {
		return oe
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if oe := s.opError(OpDelete, key, err); err != nil && oe.Class != Absent {
		return oe
	}
	// Deleting a missing key is done, as S3 itself answers (204).
	return nil
}

// CreateBucket makes the bucket; one that is already ours is fine. For
// tests and local demos: a real witness bucket is made by its operator.
func (s *Store) CreateBucket(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	in := &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}
	if r := s.client.Options().Region; r != DefaultRegion {
		// Outside us-east-1, AWS wants the region restated.
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err := s.client.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	if err == nil || errors.As(err, &owned) {
		return nil
	}
	return s.opError(OpCreateBucket, "", err)
}
