// Package s3store is the S3 client of the witness: a handful of small
// objects in one bucket, read with GET and written only with conditional
// PUTs (If-None-Match: * to create, If-Match: <etag> to swap), so that two
// masters can never both believe they wrote the lease.
//
// Every error of a Store operation is an *OpError that carries its Class;
// Classify(err) is the one switch callers need. SelfTest checks, before a
// store is trusted, that it really serialises conditional writes: many S3
// emulators accept the headers and still let two racers win.
//
// Contract:
//   - every call is bounded by Config.CallTimeout (inside the method) and by
//     the caller's context; the SDK never retries (an SDK retry of a create
//     that won answers 412, which would read as a loss);
//   - ETags are returned without quotes and sent quoted in If-Match;
//   - Conflict means "not ours now: re-read"; Ambiguous means "the write may
//     have landed: read back before acting"; Refused is a configuration
//     problem whose message says what to fix;
//   - the secret key is never printed (Config masks it in String, GoString,
//     LogValue and JSON; Store does not hold it in a field).
package s3store
