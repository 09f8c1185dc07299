// Package secret holds what the daemons do with their shared secrets
// (AUTH_CODE, ADMIN_PASSWORD, the passwords of mfsexports.cfg): the rules a
// secret must meet, a generator for new ones, and the slow derivation of
// the keys their proofs are made with.
//
// No secret keys a MAC directly. Each is first stretched with PBKDF2
// (HMAC-SHA256, Iterations rounds) salted with the cluster id, so that one
// captured proof cannot be turned into fast offline guesses, and a guess
// made for one cluster is no use against another. The slow part is done
// once per secret and cluster and kept (Key caches it); every proof after
// that costs one HMAC.
package secret

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
)

// MinLen is the shortest secret accepted, in bytes: 16 random characters
// are out of reach of guessing even at GPU speed, and the generator makes
// 32 hex digits (128 bits).
const MinLen = 16

// Iterations of PBKDF2-HMAC-SHA256: about 60 ms on one core of a machine
// with SHA extensions (go test -bench Derive ./pkg/secret), paid once
// per secret and cluster id by each daemon, and by every offline guess.
const Iterations = 300_000

// Purposes: each proof uses its own key, derived from the stretched
// secret under its label, so that no proof made for one purpose (a
// chunkserver's, whose nonce a fake master may choose) can pass for
// another (a master's).
const (
	Chunkserver = "mfs-chunkserver" // AUTH_CODE, a chunkserver on 9420
	Master      = "mfs-master"      // AUTH_CODE, a master on 9419
	Admin       = "mfs-admin"       // ADMIN_PASSWORD, mfscli admin commands on 9421
	Client      = "mfs-client"      // an mfsexports.cfg password, a client on 9421
)

// Check refuses a secret shorter than MinLen. An empty one is not checked:
// whether a secret is required is the caller's question. name says where
// it came from (a config key, file:line).
func Check(name, s string) error {
	if s != "" && len(s) < MinLen {
		return fmt.Errorf("%s is %d characters long, at least %d are needed: use a random one (mfsmaster init prints one, e.g. AUTH_CODE = %s)",
			name, len(s), MinLen, example())
	}
	return nil
}

func example() string {
	s, err := Generate()
	if err != nil {
		return "<32 random hex digits>"
	}
	return s
}

// Generate returns a new random secret: 128 bits as 32 hex digits (no
// character a cfg file would take for a comment).
func Generate() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Stretch is the slow part: PBKDF2-HMAC-SHA256 of s, salted with
// "mfs-election", a zero byte and the cluster id, Iterations rounds, 32
// bytes. It is not cached; Key is.
func Stretch(s, cluster string) []byte {
	k, err := pbkdf2.Key(sha256.New, s, []byte("mfs-election\x00"+cluster), Iterations, 32)
	if err != nil {
		// Only for parameters out of range (FIPS mode, a key length
		// beyond what SHA-256 can give): ours are fixed and valid.
		panic(fmt.Sprintf("secret: pbkdf2: %v", err))
	}
	return k
}

// Key is the key for purpose (one of the labels above) derived from
// secret s for cluster: HMAC-SHA256(Stretch(s, cluster), purpose ‖ 0).
// The stretched secret is kept, so only the first call for a secret and
// cluster is slow; concurrent first calls wait for one derivation.
func Key(s, cluster, purpose string) []byte {
	h := hmac.New(sha256.New, stretched(s, cluster))
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	return h.Sum(nil)
}

// Warm derives the stretched secret for cluster now, so that the first
// proof does not wait for it (a daemon calls it in the background at
// start and when it learns its cluster id).
func Warm(s, cluster string) {
	if s != "" {
		stretched(s, cluster)
	}
}

// The cache of stretched secrets, by a hash of the secret and the cluster
// id. A daemon has a few secrets and, over its life, one or two cluster
// ids (none, then the one it syncs); the bound only guards against a
// caller that derives for many.
const cacheMax = 256

type cacheKey struct {
	sum     [32]byte
	cluster string
}

type cacheEntry struct {
	once sync.Once
	key  []byte
}

var cache = struct {
	sync.Mutex
	m map[cacheKey]*cacheEntry
}{m: map[cacheKey]*cacheEntry{}}

func stretched(s, cluster string) []byte {
	k := cacheKey{sum: sha256.Sum256([]byte(s)), cluster: cluster}
	cache.Lock()
	e := cache.m[k]
	if e == nil {
		if len(cache.m) >= cacheMax {
			clear(cache.m)
		}
		e = &cacheEntry{}
		cache.m[k] = e
	}
	cache.Unlock()
	e.once.Do(func() { e.key = Stretch(s, cluster) })
	return e.key
}
