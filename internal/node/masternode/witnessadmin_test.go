package masternode

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/node/nodetest"
	"github.com/mfs-election/mfs-election/internal/witness/s3store"
	"github.com/mfs-election/mfs-election/internal/witness/versitytest"
	"github.com/mfs-election/mfs-election/pkg/client"
	"github.com/mfs-election/mfs-election/pkg/protocol"
	"github.com/mfs-election/mfs-election/pkg/registry"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/wire"
	"github.com/mfs-election/mfs-election/pkg/witness"
)

// fakeS3 is a path-style S3 server of one bucket (the idea of s3store's
// stub_test.go): GET, PUT with If-None-Match: * or If-Match checked and
// written under one lock (a store a witness may use), DELETE. ignore makes
// it write whatever the conditions say (a store the self-test refuses).
type fakeS3 struct {
	bucket string
	ignore bool

	mu      sync.Mutex
	objects map[string][]byte
}

func newFakeS3(t *testing.T, ignore bool) (*fakeS3, string) {
	t.Helper()
	f := &fakeS3{bucket: "witness", ignore: ignore, objects: map[string][]byte{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func fakeETag(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

func fakeError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, code)
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != f.bucket || key == "" {
		fakeError(w, http.StatusNotFound, "NoSuchBucket")
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	o, exists := f.objects[key]
	switch r.Method {
	case http.MethodGet:
		if !exists {
			fakeError(w, http.StatusNotFound, "NoSuchKey")
			return
		}
		w.Header().Set("ETag", `"`+fakeETag(o)+`"`)
		_, _ = w.Write(o)
	case http.MethodDelete:
		delete(f.objects, key)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPut:
		inm, im := r.Header.Get("If-None-Match"), r.Header.Get("If-Match")
		if !f.ignore {
			switch {
			case inm == "*" && exists:
				fakeError(w, http.StatusPreconditionFailed, "PreconditionFailed")
				return
			case im != "" && !exists:
				fakeError(w, http.StatusNotFound, "NoSuchKey")
				return
			case im != "" && s3store.NormalizeETag(im) != fakeETag(o):
				fakeError(w, http.StatusPreconditionFailed, "PreconditionFailed")
				return
			}
		}
		f.objects[key] = body
		w.Header().Set("ETag", `"`+fakeETag(body)+`"`)
	default:
		fakeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed")
	}
}

func (f *fakeS3) object(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.objects[key]
	return b, ok
}

func (f *fakeS3) put(key string, b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key] = b
}

// witnessSolo starts a solo master (the founder of cluster C1, LEADER by
// itself) with a witness store at endpoint, and waits until it leads.
func witnessSolo(t *testing.T, sc *s3store.Config) *MasterNode {
	t.Helper()
	self := netip.MustParseAddr("127.0.0.1")
	n, _, _ := startSoloWith(t, nodetest.StoreWithChanges(t, self, 3), self, func(o *MasterOptions) { o.Witness = sc })
	for end := time.Now().Add(10 * time.Second); status(t, n).Role != roles.Leader; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no LEADER: %+v", status(t, n))
		}
	}
	return n
}

// witnessCmd sends an admin command to n as mfscli does, asking again
// while the self-test has not finished (the first seconds after a start).
func witnessCmd(t *testing.T, n *MasterNode, kind roles.AdminKind, change registry.Change) protocol.AdminResp {
	t.Helper()
	_, _, cl := n.Addrs()
	to := netip.MustParseAddrPort(cl.String())
	for end := time.Now().Add(40 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := client.Admin(to, protocol.AdminReq{ID: uint64(time.Now().UnixNano()), Kind: kind, Change: change}, "", 40*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.OK || time.Now().After(end) || !strings.Contains(r.Text, "has not finished") {
			return r
		}
	}
}

var witnessIDForm = regexp.MustCompile(`^w-[0-9a-f]{16}$`)

// witnessAdminFlow runs -CWITNESS on, on again, test, off and on once
// more against a store that passes its self-test; get reads the lease
// object.
func witnessAdminFlow(t *testing.T, sc *s3store.Config, get func(key string) ([]byte, bool)) {
	t.Helper()
	n := witnessSolo(t, sc)
	key := strings.TrimSuffix(sc.Prefix, "/") + "/" + witness.Key

	r := witnessCmd(t, n, protocol.AdminWitnessOn, registry.Change{})
	if !r.OK || !strings.Contains(r.Text, "lease object "+key) || !strings.Contains(r.Text, " made; ") || !strings.Contains(r.Text, "config version") {
		t.Fatalf("-CWITNESS/on: %+v", r)
	}
	b, ok := get(key)
	if !ok {
		t.Fatalf("no %s after -CWITNESS/on", key)
	}
	rec, err := witness.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !witnessIDForm.MatchString(rec.WitnessID) || rec.Cluster != "C1" || rec.Holder != n.opt.Core.ID || rec.Format != witness.Format {
		t.Errorf("the lease object made: %+v", rec)
	}
	if !strings.Contains(r.Text, "witness "+rec.WitnessID) {
		t.Errorf("the reply does not name %s: %s", rec.WitnessID, r.Text)
	}
	st := status(t, n)
	if w := st.Witness; w == nil || w.ID != rec.WitnessID || w.Endpoint != sc.Endpoint || w.Bucket != sc.Bucket || w.Prefix != sc.Prefix ||
		w.SelfTest != protocol.WitnessSelfTestPassed {
		t.Errorf("status witness %+v", st.Witness)
	}
	if st.Witness != nil && strings.Contains(fmt.Sprintf("%+v", *st.Witness), sc.SecretKey) {
		t.Error("the status shows the secret")
	}

	r = witnessCmd(t, n, protocol.AdminWitnessOn, registry.Change{})
	if !r.OK || !strings.Contains(r.Text, "witness "+rec.WitnessID+" is on already") {
		t.Errorf("-CWITNESS/on again: %+v", r)
	}
	r = witnessCmd(t, n, protocol.AdminWitnessTest, registry.Change{})
	if !r.OK || !strings.Contains(r.Text, "self-test passed") {
		t.Errorf("-CWITNESS/test: %+v", r)
	}
	// Off is a registry change like any: a solo founder with no voter never
	// puts the change above in force, so the core asks to wait.
	r = witnessCmd(t, n, roles.AdminChange, registry.Change{Kind: registry.ChangeWitness})
	if r.OK || r.Code != wire.CodeChangePending {
		t.Errorf("-CWITNESS/off while on is not in force: %+v", r)
	}
}

// TestWitnessAdminReuse: the lease object of this cluster is there (the
// witness was on before, then off): -CWITNESS/on names its id again.
func TestWitnessAdminReuse(t *testing.T) {
	nodetest.NoLeaks(t)
	f, url := newFakeS3(t, false)
	ours := witness.Record{Format: witness.Format, WitnessID: "w-00000000000000aa", Cluster: "C1", State: witness.Free, Holder: 9, Epoch: 4}
	f.put("mfs/lease.json", ours.Encode())
	n := witnessSolo(t, &s3store.Config{Endpoint: url, Bucket: f.bucket, Prefix: "mfs", AccessKey: "AK", SecretKey: "sk", CallTimeout: time.Second})
	r := witnessCmd(t, n, protocol.AdminWitnessOn, registry.Change{})
	if !r.OK || !strings.Contains(r.Text, "found, witness w-00000000000000aa reused") {
		t.Errorf("%+v", r)
	}
	if st := status(t, n); st.Witness == nil || st.Witness.ID != "w-00000000000000aa" {
		t.Errorf("status: %+v", st.Witness)
	}
	if b, _ := f.object("mfs/lease.json"); !bytes.Equal(b, ours.Encode()) {
		t.Errorf("the object was rewritten: %s", b)
	}
}

// TestWitnessAdmin: -CWITNESS/on makes the lease object (free, this
// cluster's, held by nobody, a new id w-<16 hex>) and names it in the
// registry; again, it says it is on; /test runs the self-test; off and on
// again reuse the id; the status shows the store, never the secret.
func TestWitnessAdmin(t *testing.T) {
	nodetest.NoLeaks(t)
	f, url := newFakeS3(t, false)
	sc := &s3store.Config{Endpoint: url, Bucket: f.bucket, Prefix: "mfs/c1", AccessKey: "AKTEST", SecretKey: "secret-never-shown", CallTimeout: time.Second}
	witnessAdminFlow(t, sc, f.object)
}

// TestWitnessAdminRefusals: another cluster's lease object under the
// prefix, a store that failed its self-test, a master without a store,
// and a registry that names a witness whose object is gone.
func TestWitnessAdminRefusals(t *testing.T) {
	nodetest.NoLeaks(t)
	t.Run("another cluster", func(t *testing.T) {
		f, url := newFakeS3(t, false)
		theirs := witness.Record{Format: witness.Format, WitnessID: "w-0123456789abcdef", Cluster: "OTHER", State: witness.Free, Holder: 7}
		f.put("mfs/lease.json", theirs.Encode())
		n := witnessSolo(t, &s3store.Config{Endpoint: url, Bucket: f.bucket, Prefix: "mfs", AccessKey: "AK", SecretKey: "sk", CallTimeout: time.Second})
		r := witnessCmd(t, n, protocol.AdminWitnessOn, registry.Change{})
		if r.OK || !strings.Contains(r.Text, "another cluster's witness") || !strings.Contains(r.Text, "WITNESS_PREFIX of its own") {
			t.Errorf("%+v", r)
		}
		if st := status(t, n); st.Witness == nil || st.Witness.ID != "" {
			t.Errorf("a witness was named: %+v", st.Witness)
		}
	})
	t.Run("self-test failed", func(t *testing.T) {
		f, url := newFakeS3(t, true)
		n := witnessSolo(t, &s3store.Config{Endpoint: url, Bucket: f.bucket, Prefix: "mfs", AccessKey: "AK", SecretKey: "sk", CallTimeout: time.Second})
		r := witnessCmd(t, n, protocol.AdminWitnessOn, registry.Change{})
		if r.OK || !strings.Contains(r.Text, "failed its self-test") {
			t.Errorf("%+v", r)
		}
		if r := witnessCmd(t, n, protocol.AdminWitnessTest, registry.Change{}); r.OK || !strings.Contains(r.Text, "self-test failed") {
			t.Errorf("-CWITNESS/test: %+v", r)
		}
		if st := status(t, n); st.Witness == nil || st.Witness.SelfTest == "" || st.Witness.SelfTest == protocol.WitnessSelfTestPassed {
			t.Errorf("status: %+v", st.Witness)
		}
	})
	t.Run("no store", func(t *testing.T) {
		n := witnessSolo(t, nil)
		for _, k := range []roles.AdminKind{protocol.AdminWitnessOn, protocol.AdminWitnessTest} {
			if r := witnessCmd(t, n, k, registry.Change{}); r.OK || !strings.Contains(r.Text, "WITNESS_ENDPOINT is not set") {
				t.Errorf("kind %d: %+v", k, r)
			}
		}
		if st := status(t, n); st.Witness != nil {
			t.Errorf("no witness, no store, yet a witness section: %+v", st.Witness)
		}
	})
	t.Run("not LEADER", func(t *testing.T) {
		f, url := newFakeS3(t, false)
		self := netip.MustParseAddr("127.0.0.1")
		n, _, _ := startSoloWith(t, nodetest.StoreWithChanges(t, self, 3), self, func(o *MasterOptions) {
			o.Core.SelfNominateAfter = 10 * time.Minute // a FOLLOWER for the test's length
			o.Witness = &s3store.Config{Endpoint: url, Bucket: f.bucket, Prefix: "mfs", AccessKey: "AK", SecretKey: "sk", CallTimeout: time.Second}
		})
		r := witnessCmd(t, n, protocol.AdminWitnessOn, registry.Change{})
		if r.OK || r.Code != wire.CodeNotLeader || !strings.Contains(r.Text, "not LEADER") {
			t.Errorf("%+v", r)
		}
		if _, ok := f.object("mfs/lease.json"); ok {
			t.Error("a FOLLOWER wrote the lease object")
		}
	})
	t.Run("object gone", func(t *testing.T) {
		f, url := newFakeS3(t, false)
		n := witnessSolo(t, &s3store.Config{Endpoint: url, Bucket: f.bucket, Prefix: "mfs", AccessKey: "AK", SecretKey: "sk", CallTimeout: time.Second})
		if r := witnessCmd(t, n, protocol.AdminWitnessOn, registry.Change{}); !r.OK {
			t.Fatalf("%+v", r)
		}
		f.mu.Lock()
		delete(f.objects, "mfs/lease.json")
		f.mu.Unlock()
		r := witnessCmd(t, n, protocol.AdminWitnessOn, registry.Change{})
		if r.OK || !strings.Contains(r.Text, "is missing") || !strings.Contains(r.Text, "-CWITNESS/off") {
			t.Errorf("%+v", r)
		}
	})
}

// TestWitnessAdminVersityGW is TestWitnessAdmin against a real S3 server
// (versitygw's posix backend): skipped without it (make versitygw, or
// MFS_VERSITYGW).
func TestWitnessAdminVersityGW(t *testing.T) {
	endpoint := versitytest.Start(t)
	sc := &s3store.Config{Endpoint: endpoint, Bucket: "mfs-witness", Prefix: "mfs", AccessKey: versitytest.Access, SecretKey: versitytest.Secret, CallTimeout: time.Second}
	s, err := s3store.New(*sc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	witnessAdminFlow(t, sc, func(key string) ([]byte, bool) {
		b, _, err := s.Get(ctx, strings.TrimPrefix(key, "mfs/"))
		return b, err == nil
	})
}
