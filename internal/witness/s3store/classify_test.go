package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// retryable marks an error retryable the way the SDK's retryer asks
// (aws-sdk-go-v2#2737: a 409 came back like this, with no code).
type retryable struct{ error }

func (retryable) RetryableError() bool { return true }
func (r retryable) Unwrap() error      { return r.error }

// sdkError builds what the SDK returns for an HTTP answer: an
// OperationError around an awshttp.ResponseError around smithy's, around
// a GenericAPIError when the body had a code.
func sdkError(status int, code string, wrap func(error) error) error {
	var inner error = errors.New("unknown error") // no code in the answer
	if code != "" {
		inner = &smithy.GenericAPIError{Code: code, Message: "stub message"}
	}
	if wrap != nil {
		inner = wrap(inner)
	}
	re := &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}},
			Err:      inner,
		},
		RequestID: "req-1",
	}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: re}
}

func transportError(err error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &smithyhttp.RequestSendError{Err: err}}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		name   string
		op     Op
		err    error
		want   Class
		status int
		code   string
		reason string // a part of the reason
	}{
		{name: "nil", op: OpSwap, err: nil, want: OK},

		// Absent: only reads of a missing key.
		{name: "GET 404 NoSuchKey", op: OpGet, err: sdkError(404, "NoSuchKey", nil), want: Absent, status: 404, code: "NoSuchKey", reason: "does not exist"},
		{name: "HEAD 404 NotFound (no body)", op: OpGet, err: sdkError(404, "NotFound", nil), want: Absent, status: 404, code: "NotFound"},
		{name: "HEAD 404 no code", op: opUnknown, err: sdkError(404, "", nil), want: Absent, status: 404},

		// Conflict: not ours now.
		{name: "create 412 PreconditionFailed", op: OpCreate, err: sdkError(412, "PreconditionFailed", nil), want: Conflict, status: 412, code: "PreconditionFailed", reason: "not ours now"},
		{name: "swap 412 with no code", op: OpSwap, err: sdkError(412, "", nil), want: Conflict, status: 412},
		{name: "create 409 ConditionalRequestConflict", op: OpCreate, err: sdkError(409, "ConditionalRequestConflict", nil), want: Conflict, status: 409, code: "ConditionalRequestConflict"},
		{name: "409 with no code, marked retryable, after the retryer", op: OpSwap,
			err:  &retry.MaxAttemptsError{Attempt: 1, Err: sdkError(409, "", func(e error) error { return retryable{e} })},
			want: Conflict, status: 409},
		{name: "swap 404 NoSuchKey (If-Match on a missing key)", op: OpSwap, err: sdkError(404, "NoSuchKey", nil), want: Conflict, status: 404, code: "NoSuchKey", reason: "gone"},
		{name: "swap 404 with no code", op: OpSwap, err: sdkError(404, "", nil), want: Conflict, status: 404},

		// Ambiguous: the write may have landed.
		{name: "500 InternalError", op: OpCreate, err: sdkError(500, "InternalError", nil), want: Ambiguous, status: 500, code: "InternalError", reason: "may have landed"},
		{name: "503 SlowDown", op: OpSwap, err: sdkError(503, "SlowDown", nil), want: Ambiguous, status: 503, code: "SlowDown"},
		{name: "503 no code", op: OpSwap, err: sdkError(503, "", nil), want: Ambiguous, status: 503},
		{name: "429", op: OpSwap, err: sdkError(429, "TooManyRequests", nil), want: Ambiguous, status: 429},
		{name: "400 RequestTimeout", op: OpCreate, err: sdkError(400, "RequestTimeout", nil), want: Ambiguous, status: 400},
		{name: "200 whose answer could not be read", op: OpSwap, err: sdkError(200, "", nil), want: Ambiguous, status: 200},
		{name: "context deadline", op: OpCreate, err: &smithy.OperationError{Err: fmt.Errorf("send: %w", context.DeadlineExceeded)}, want: Ambiguous, reason: "deadline"},
		{name: "canceled", op: OpCreate, err: &smithy.OperationError{Err: &smithy.CanceledError{Err: context.Canceled}}, want: Ambiguous, reason: "canceled"},
		{name: "connection reset", op: OpSwap, err: transportError(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), want: Ambiguous, reason: "may have landed"},
		{name: "connection refused", op: OpSwap, err: transportError(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), want: Ambiguous},
		{name: "unexpected EOF", op: OpCreate, err: transportError(io.ErrUnexpectedEOF), want: Ambiguous},
		{name: "url timeout", op: OpCreate, err: transportError(&url.Error{Op: "Put", URL: "http://x", Err: context.DeadlineExceeded}), want: Ambiguous},

		// Refused: configuration.
		{name: "403 AccessDenied", op: OpGet, err: sdkError(403, "AccessDenied", nil), want: Refused, status: 403, code: "AccessDenied", reason: "access denied: check WITNESS_CREDENTIALS"},
		{name: "403 SignatureDoesNotMatch", op: OpCreate, err: sdkError(403, "SignatureDoesNotMatch", nil), want: Refused, status: 403, reason: "access denied: the secret key"},
		{name: "403 InvalidAccessKeyId", op: OpSwap, err: sdkError(403, "InvalidAccessKeyId", nil), want: Refused, status: 403, reason: "access denied: the store does not know the access key"},
		{name: "403 RequestTimeTooSkewed", op: OpSwap, err: sdkError(403, "RequestTimeTooSkewed", nil), want: Refused, status: 403, reason: "clock"},
		{name: "GET 404 NoSuchBucket", op: OpGet, err: sdkError(404, "NoSuchBucket", nil), want: Refused, status: 404, reason: `bucket "b1" does not exist`},
		{name: "swap 404 NoSuchBucket", op: OpSwap, err: sdkError(404, "NoSuchBucket", nil), want: Refused, status: 404, reason: "does not exist"},
		{name: "create 404 with no code", op: OpCreate, err: sdkError(404, "", nil), want: Refused, status: 404, reason: "does the bucket exist"},
		{name: "400 InvalidRequest", op: OpCreate, err: sdkError(400, "InvalidRequest", nil), want: Refused, status: 400, reason: "malformed"},
		{name: "400 AuthorizationHeaderMalformed", op: OpGet, err: sdkError(400, "AuthorizationHeaderMalformed", nil), want: Refused, status: 400, reason: "region"},
		{name: "create 501 NotImplemented", op: OpCreate, err: sdkError(501, "NotImplemented", nil), want: Refused, status: 501, code: "NotImplemented",
			reason: "the store does not support conditional writes (If-None-Match/If-Match): it cannot be a witness"},
		{name: "GET 501", op: OpGet, err: sdkError(501, "NotImplemented", nil), want: Refused, status: 501, reason: "does not implement"},
		{name: "301 PermanentRedirect", op: OpGet, err: sdkError(301, "PermanentRedirect", nil), want: Refused, status: 301, reason: "redirects"},
		{name: "405", op: OpSwap, err: sdkError(405, "MethodNotAllowed", nil), want: Refused, status: 405},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, status, code, reason := classify(tc.op, "b1", tc.err)
			if c != tc.want || status != tc.status {
				t.Fatalf("classify(%s) = %v, %d; want %v, %d (reason %q)", tc.op, c, status, tc.want, tc.status, reason)
			}
			if tc.code != "" && code != tc.code {
				t.Errorf("code %q, want %q", code, tc.code)
			}
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q lacks %q", reason, tc.reason)
			}
			// Through an OpError, wrapped again: the class travels.
			if tc.err != nil {
				oe := &OpError{Op: tc.op, Bucket: "b1", Key: "k", Class: c, Status: status, Code: code, Reason: reason, Err: tc.err}
				if got := Classify(fmt.Errorf("lease: %w", oe)); got != tc.want {
					t.Errorf("Classify(wrapped OpError) = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// Classify on a raw SDK error knows no operation: a 404 is Absent unless
// the bucket is missing, and the status still decides over the code.
func TestClassifyRaw(t *testing.T) {
	cases := []struct {
		err  error
		want Class
	}{
		{nil, OK},
		{sdkError(404, "NoSuchKey", nil), Absent},
		{sdkError(404, "NoSuchBucket", nil), Refused},
		{sdkError(412, "", nil), Conflict},
		{sdkError(409, "", func(e error) error { return retryable{e} }), Conflict},
		// A code that would suggest otherwise does not beat the status.
		{sdkError(412, "InternalError", nil), Conflict},
		{sdkError(503, "SlowDown", nil), Ambiguous},
		{sdkError(501, "NotImplemented", nil), Refused},
		{sdkError(403, "AccessDenied", nil), Refused},
		{context.DeadlineExceeded, Ambiguous},
		{io.ErrUnexpectedEOF, Ambiguous},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, Ambiguous},
		// smithy's response error without the AWS wrapper.
		{&smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 412}}, Err: errors.New("x")}, Conflict},
	}
	for i, tc := range cases {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%d: Classify(%v) = %v, want %v", i, tc.err, got, tc.want)
		}
	}
}

func TestOpErrorMessage(t *testing.T) {
	c, status, code, reason := classify(OpSwap, "witness", sdkError(412, "PreconditionFailed", nil))
	oe := &OpError{Op: OpSwap, Bucket: "witness", Key: "mfs/lease.json", Class: c, Status: status, Code: code, Reason: reason, Err: sdkError(412, "PreconditionFailed", nil)}
	got := oe.Error()
	for _, want := range []string{"s3 swap witness/mfs/lease.json", "412 PreconditionFailed", "conflict", "not ours now"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	// A transport error keeps its cause in the text.
	c, status, code, reason = classify(OpCreate, "witness", transportError(io.ErrUnexpectedEOF))
	oe = &OpError{Op: OpCreate, Bucket: "witness", Key: "k", Class: c, Status: status, Code: code, Reason: reason, Err: transportError(io.ErrUnexpectedEOF)}
	if got := oe.Error(); !strings.Contains(got, "unexpected EOF") || !strings.Contains(got, "ambiguous") {
		t.Errorf("transport OpError %q lacks its cause or class", got)
	}
	if !errors.Is(oe, io.ErrUnexpectedEOF) {
		t.Error("OpError does not unwrap to its cause")
	}
}

func TestClassString(t *testing.T) {
	for c, want := range map[Class]string{OK: "ok", Absent: "absent", Conflict: "conflict", Ambiguous: "ambiguous", Refused: "refused", 0: "Class(0)"} {
		if c.String() != want {
			t.Errorf("%d prints %q, want %q", int(c), c.String(), want)
		}
	}
}
