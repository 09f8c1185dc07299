package logobj

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"sort"

	"github.com/mfs-election/mfs-election/pkg/witness"
)

// Bucket is an in-memory store for the role machine's calls: objects by
// key, each write atomic, the ETag the MD5 of the content (as most S3
// stores make it). The simulator and the core's scripted tests use it; a
// real store is internal/witness/s3store.
type Bucket struct {
	objs map[string]*object
	// Writes counts the writes that landed.
	Writes int
}

type object struct {
	body []byte
	etag string
}

func name(r witness.Request) string {
	if r.Key == "" {
		return witness.Key
	}
	return r.Key
}

// Check says what a conditional write would get on the bucket as it is.
func (b *Bucket) Check(r witness.Request) witness.Class {
	o := b.objs[name(r)]
	switch {
	case r.Op == witness.Create && o != nil, r.Op == witness.Swap && (o == nil || o.etag != r.ETag):
		return witness.Conflict
	}
	return witness.OK
}

// Encoded is the body a write request puts: a store log object's encoding
// (with its descriptor), or the request's body.
func Encoded(r witness.Request) ([]byte, *witness.LogObject) {
	if r.Batch == nil {
		return r.Body, nil
	}
	body, d := Encode(*r.Batch)
	d.Key = r.Key
	return body, &d
}

// Write stores body under the request's key, whatever its condition
// (Check first), and answers as the store would.
func (b *Bucket) Write(r witness.Request, body []byte, d *witness.LogObject) witness.Result {
	if b.objs == nil {
		b.objs = map[string]*object{}
	}
	res := witness.Result{Seq: r.Seq, Key: r.Key, Object: d}
	if r.Op == witness.Delete {
		delete(b.objs, name(r))
		return res
	}
	sum := md5.Sum(body)
	o := &object{body: bytes.Clone(body), etag: hex.EncodeToString(sum[:])}
	b.objs[name(r)] = o
	b.Writes++
	res.ETag = o.etag
	return res
}

// Read answers a Get, checking and decoding a store log object against
// the request's Want.
func (b *Bucket) Read(r witness.Request) witness.Result {
	res := witness.Result{Seq: r.Seq, Key: r.Key}
	o := b.objs[name(r)]
	if o == nil {
		res.Class = witness.Absent
		return res
	}
	res.ETag, res.Body = o.etag, bytes.Clone(o.body)
	Check(&res, r)
	return res
}

// Check fills a Get's answer for a store log object: the entries when the
// body is what r.Want names, else why not (the daemon's driver does the
// same with what the store returned).
func Check(res *witness.Result, r witness.Request) {
	if r.Want == nil || res.Class != witness.OK {
		return
	}
	b, err := Decode(res.Body, *r.Want)
	if err != nil {
		res.Err = err.Error()
		return
	}
	res.Batch, res.Body = &b, nil
}

// Apply carries out one request atomically.
func (b *Bucket) Apply(r witness.Request) witness.Result {
	if r.Op == witness.Get {
		return b.Read(r)
	}
	body, d := Encoded(r)
	if c := b.Check(r); c != witness.OK {
		return witness.Result{Seq: r.Seq, Key: r.Key, Class: c, Object: d}
	}
	return b.Write(r, body, d)
}

// Keys lists the objects, in order.
func (b *Bucket) Keys() []string {
	ks := make([]string, 0, len(b.objs))
	for k := range b.objs {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Exists reports whether key holds an object.
func (b *Bucket) Exists(key string) bool { return b.objs[key] != nil }
