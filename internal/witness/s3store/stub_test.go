package s3store

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stubMode is how the stub S3 server handles conditional PUTs.
type stubMode int

const (
	// stubAtomic checks the condition and writes under one lock, as a
	// witness store must.
	stubAtomic stubMode = iota
	// stubRacy checks, sleeps, then writes, with no lock in between: the
	// bug of many emulators, so more than one racer wins.
	stubRacy
	// stubIgnore ignores If-None-Match and If-Match altogether.
	stubIgnore
	// stubNoConditional answers 501 NotImplemented to either header.
	stubNoConditional
	// stubFail answers every object request with failStatus/failCode.
	stubFail
	// stubHang answers nothing until the client gives up.
	stubHang
	// stubReset reads the request and closes the connection unanswered.
	stubReset
)

type stubObject struct {
	body []byte
	etag string // unquoted
}

// stubS3 is a path-style S3 server for one bucket and one access key: GET,
// PUT with If-None-Match: * and If-Match, DELETE, and PUT of the bucket. It
// checks the access key in the signature, not the signature itself.
type stubS3 struct {
	bucket     string
	accessKey  string
	mode       stubMode
	raceDelay  time.Duration // stubRacy: between the check and the write
	failStatus int
	failCode   string

	requests atomic.Int64 // object requests seen

	mu      sync.Mutex
	objects map[string]stubObject
}

func newStub(t *testing.T, mode stubMode) (*stubS3, *httptest.Server) {
	t.Helper()
	st := &stubS3{bucket: "witness", accessKey: "AKSTUB", mode: mode, raceDelay: 50 * time.Millisecond, objects: map[string]stubObject{}}
	srv := httptest.NewServer(st)
	t.Cleanup(srv.Close)
	return st, srv
}

func (st *stubS3) objectCount() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.objects)
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>stub</RequestId></Error>`, code, msg)
}

func etagOf(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func (st *stubS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Authorization: AWS4-HMAC-SHA256 Credential=AK/date/region/s3/aws4_request, ...
	auth := r.Header.Get("Authorization")
	if !strings.Contains(auth, "Credential="+st.accessKey+"/") {
		s3Error(w, http.StatusForbidden, "InvalidAccessKeyId", "The AWS access key Id you provided does not exist in our records.")
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != st.bucket {
		s3Error(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
		return
	}
	if key == "" {
		if r.Method == http.MethodPut {
			return // CreateBucket
		}
		s3Error(w, http.StatusNotImplemented, "NotImplemented", "bucket operation")
		return
	}
	st.requests.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	switch st.mode {
	case stubFail:
		s3Error(w, st.failStatus, st.failCode, "stub failure")
		return
	case stubHang:
		<-r.Context().Done()
		return
	case stubReset:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	switch r.Method {
	case http.MethodGet:
		st.mu.Lock()
		o, ok := st.objects[key]
		st.mu.Unlock()
		if !ok {
			s3Error(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
			return
		}
		w.Header().Set("ETag", `"`+o.etag+`"`)
		w.Header().Set("Content-Length", fmt.Sprint(len(o.body)))
		_, _ = w.Write(o.body)
	case http.MethodDelete:
		st.mu.Lock()
		delete(st.objects, key)
		st.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPut:
		st.put(w, r, key, body)
	default:
		s3Error(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method)
	}
}

func (st *stubS3) put(w http.ResponseWriter, r *http.Request, key string, body []byte) {
	inm, im := r.Header.Get("If-None-Match"), r.Header.Get("If-Match")
	if st.mode == stubNoConditional && (inm != "" || im != "") {
		s3Error(w, http.StatusNotImplemented, "NotImplemented", "conditional writes are not implemented")
		return
	}
	if (inm != "" && inm != "*") || (inm != "" && im != "") {
		s3Error(w, http.StatusNotImplemented, "NotImplemented", "only If-None-Match: * alone")
		return
	}
	check := func() (int, string) {
		if st.mode == stubIgnore {
			return 0, ""
		}
		o, exists := st.objects[key]
		switch {
		case inm == "*" && exists:
			return http.StatusPreconditionFailed, "PreconditionFailed"
		case im != "" && !exists:
			return http.StatusNotFound, "NoSuchKey"
		case im != "" && NormalizeETag(im) != o.etag:
			return http.StatusPreconditionFailed, "PreconditionFailed"
		}
		return 0, ""
	}
	obj := stubObject{body: body, etag: etagOf(body)}
	st.mu.Lock()
	status, code := check()
	if status == 0 && st.mode == stubRacy {
		// The bug: the lock is dropped between the check and the write.
		st.mu.Unlock()
		time.Sleep(st.raceDelay)
		st.mu.Lock()
	}
	if status == 0 {
		st.objects[key] = obj
	}
	st.mu.Unlock()
	if status != 0 {
		s3Error(w, status, code, "At least one of the pre-conditions you specified did not hold")
		return
	}
	w.Header().Set("ETag", `"`+obj.etag+`"`)
}

// stubStore is a Store on srv with the stub's bucket and key.
func stubStore(t *testing.T, st *stubS3, srv *httptest.Server, edit func(*Config)) *Store {
	t.Helper()
	cfg := Config{Endpoint: srv.URL, Bucket: st.bucket, Prefix: "mfs/test", AccessKey: st.accessKey, SecretKey: "stub-secret", CallTimeout: 2 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
