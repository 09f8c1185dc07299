package s3store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Class is what an answer from the store means for the caller.
type Class int

const (
	// OK: the operation happened (nil error).
	OK Class = 1 + iota
	// Absent: the key does not exist (GET 404 NoSuchKey, HEAD 404 NotFound).
	Absent
	// Conflict: not ours now; re-read the object before doing anything
	// (412 PreconditionFailed, 409 ConditionalRequestConflict, 404 on an
	// If-Match PUT).
	Conflict
	// Ambiguous: the write may or may not have landed (timeout, connection
	// lost after sending, 5xx, 429/503 SlowDown); read back before acting.
	// A blind retry of a create that won gets 412, so never retry blindly.
	Ambiguous
	// Refused: a configuration problem that retrying will not fix (403,
	// 404 NoSuchBucket, 400, 501, a redirect).
	Refused
)

// String prints the class as it appears in logs and metric labels.
func (c Class) String() string {
	switch c {
	case OK:
		return "ok"
	case Absent:
		return "absent"
	case Conflict:
		return "conflict"
	case Ambiguous:
		return "ambiguous"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Op names a store operation in an OpError. Its class rules differ: a 404 is
// Absent for a GET but Conflict for an If-Match PUT.
type Op string

// The operations of a Store.
const (
	OpGet          Op = "get"
	OpCreate       Op = "create"        // PUT If-None-Match: *
	OpSwap         Op = "swap"          // PUT If-Match: <etag>
	OpDelete       Op = "delete"        // self-test probe keys only
	OpCreateBucket Op = "create-bucket" // tests and demos
	opUnknown      Op = ""
)

// OpError is the error of every Store operation: it carries its class, so
// callers switch on Classify(err) and never re-derive it from the status.
type OpError struct {
	Op     Op
	Bucket string
	Key    string // the full object key, prefix included
	Class  Class
	Status int    // HTTP status; 0 when no response came back
	Code   string // S3 error code, "" when the answer had none
	// Reason says what the answer means, in operator words.
	Reason string
	Err    error // the SDK's error, or nil
}

// Error names the operation, the object, the answer and what it means.
func (e *OpError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s3 %s %s", e.Op, e.Bucket)
	if e.Key != "" {
		b.WriteString("/" + e.Key)
	}
	b.WriteString(": ")
	switch {
	case e.Status != 0 && e.Code != "":
		fmt.Fprintf(&b, "%d %s: ", e.Status, e.Code)
	case e.Status != 0:
		fmt.Fprintf(&b, "%d: ", e.Status)
	}
	b.WriteString(e.Class.String())
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	// The SDK's text adds to a transport error or an unreadable success;
	// for an HTTP error it only repeats the status and code.
	if e.Err != nil && e.Status < 300 {
		b.WriteString(" (" + e.Err.Error() + ")")
	}
	return b.String()
}

// Unwrap gives the SDK's error to errors.Is and errors.As.
func (e *OpError) Unwrap() error { return e.Err }

// Classify says what err means: the class of an *OpError, else the rules of
// classify for an operation whose kind is unknown (a 404 is then Absent
// unless the bucket is missing). nil is OK.
func Classify(err error) Class {
	if err == nil {
		return OK
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return oe.Class
	}
	c, _, _, _ := classify(opUnknown, "", err)
	return c
}

// classify maps an SDK error to a class, the HTTP status, the S3 code and a
// reason. The status decides first: the SDK can deliver a 412 or 409 with
// no code and marked retryable (aws/aws-sdk-go-v2#1825, #2737), so the code
// only refines a status.
func classify(op Op, bucket string, err error) (Class, int, string, string) {
	if err == nil {
		return OK, 0, "", ""
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	status := httpStatus(err)
	if status == 0 {
		// No answer: deadline, reset, EOF, even a refused dial. The
		// caller cannot know that the write did not land, so it reads
		// back (which fails the same way if the store is down).
		return Ambiguous, 0, code, transportReason(op, err)
	}
	c, reason := classifyStatus(op, bucket, status, code)
	return c, status, code, reason
}

// httpStatus is the status of the answer inside err, 0 when there was none.
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.ResponseError != nil && re.Response != nil && re.Response.Response != nil {
		return re.HTTPStatusCode()
	}
	// smithy's own type, for errors built without the AWS wrapper.
	var se *smithyhttp.ResponseError
	if errors.As(err, &se) && se.Response != nil && se.Response.Response != nil {
		return se.HTTPStatusCode()
	}
	return 0
}

// mayHaveLanded ends an Ambiguous reason: what the caller must do next.
func mayHaveLanded(op Op) string {
	switch op {
	case OpGet, OpDelete:
		return ": try again"
	}
	return ": the write may have landed, read it back"
}

func transportReason(op Op, err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer before the deadline" + mayHaveLanded(op)
	case errors.Is(err, context.Canceled):
		return "canceled before the answer" + mayHaveLanded(op)
	}
	return "no answer (connection failed or lost)" + mayHaveLanded(op)
}

func classifyStatus(op Op, bucket string, status int, code string) (Class, string) {
	conditional := op == OpCreate || op == OpSwap
	switch {
	case status >= 200 && status < 300:
		// A success whose answer could not be read: it landed, but
		// what the store holds now is unknown.
		return Ambiguous, "the store answered success but the answer could not be read: read the object back"
	case status >= 300 && status < 400:
		return Refused, "the store redirects the request: check the witness endpoint and region"
	case status == 412:
		return Conflict, "the object is not the version this write expected: not ours now, re-read"
	case status == 409:
		return Conflict, "a concurrent write to the object conflicted: not ours now, re-read"
	case status == 404:
		if code == "NoSuchBucket" {
			return Refused, fmt.Sprintf("bucket %s does not exist", quoteBucket(bucket))
		}
		switch op {
		case OpSwap:
			return Conflict, "the object is gone (If-Match on a missing key): not ours now, re-read"
		case OpCreate:
			// A create-only PUT has no key to miss: only the bucket can.
			return Refused, fmt.Sprintf("a create in bucket %s answered 404: does the bucket exist?", quoteBucket(bucket))
		}
		return Absent, "the object does not exist"
	case status == 408 || status == 429:
		return Ambiguous, "the store is overloaded or timed out" + mayHaveLanded(op)
	case status == 400 && code == "RequestTimeout":
		return Ambiguous, "the store timed out reading the request" + mayHaveLanded(op)
	case status == 501:
		if conditional {
			return Refused, "the store does not support conditional writes (If-None-Match/If-Match): it cannot be a witness"
		}
		return Refused, "the store does not implement this request"
	case status >= 500:
		return Ambiguous, "the store failed (5xx)" + mayHaveLanded(op)
	case status == 401 || status == 403:
		return Refused, authReason(code)
	case status == 400:
		if code == "AuthorizationHeaderMalformed" {
			return Refused, "the store refused the signature's region: check the witness region"
		}
		return Refused, "the store refused the request as malformed (400): check the witness endpoint, bucket and prefix"
	}
	return Refused, fmt.Sprintf("the store refused the request (%d)", status)
}

// authReason words a 401/403 for the operator; every one starts "access
// denied" so that a log search finds them all.
func authReason(code string) string {
	switch code {
	case "InvalidAccessKeyId":
		return "access denied: the store does not know the access key, check WITNESS_CREDENTIALS"
	case "SignatureDoesNotMatch":
		return "access denied: the secret key does not match the access key, check WITNESS_CREDENTIALS"
	case "RequestTimeTooSkewed":
		return "access denied: this host's clock is too far from the store's, fix the clock (NTP)"
	case "ExpiredToken", "InvalidToken":
		return "access denied: the credentials expired, check WITNESS_CREDENTIALS"
	}
	return "access denied: check WITNESS_CREDENTIALS and the bucket policy (get and put under the witness prefix)"
}

func quoteBucket(b string) string {
	if b == "" {
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", b)
}
