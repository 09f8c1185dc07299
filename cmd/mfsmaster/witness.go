package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mfs-election/mfs-election/internal/witness/s3store"
)

// witnessKeys are the WITNESS_* keys that say where the witness's store is
// and how to sign in to it. The lease's timing keys (WITNESS_LEASE,
// WITNESS_RENEW, WITNESS_CALL_TIMEOUT, WITNESS_DELAY) set the core's
// Node.Core.Witness. A reload changes none of them: restart to change.
type witnessKeys struct {
	Endpoint    string // "" = no witness store on this master
	Bucket      string
	Prefix      string
	Region      string
	Credentials string // a file; "" = AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
}

// witnessDefaults: one prefix, "mfs", for a bucket of one cluster; the
// region most S3-compatible stores expect.
func witnessDefaults() witnessKeys {
	return witnessKeys{Prefix: "mfs", Region: s3store.DefaultRegion}
}

// The environment variables read for the store's keys when
// WITNESS_CREDENTIALS is empty: the AWS tools' own names.
const (
	envAccessKey = "AWS_ACCESS_KEY_ID"
	envSecretKey = "AWS_SECRET_ACCESS_KEY"
)

// maxCredentialsFile bounds what is read of WITNESS_CREDENTIALS: two keys
// are well under a hundred bytes.
const maxCredentialsFile = 4096

// witnessStore turns the WITNESS_* keys into the driver's store config:
// nil without WITNESS_ENDPOINT. Each bad value is an error naming its key
// (the lease's timing is checked with or without a store). What only the
// store can tell (a missing bucket, keys it refuses, a store that is
// down) is no start error: the master's self-test reports it, logged and
// in the listings, and tries again. getenv reads the environment.
func witnessStore(cfg config, getenv func(string) string) (*s3store.Config, error) {
	if err := witnessTiming(cfg); err != nil {
		return nil, err
	}
	k := cfg.Witness
	if k.Endpoint == "" {
		return nil, nil
	}
	sc := &s3store.Config{Endpoint: k.Endpoint, Bucket: k.Bucket, Prefix: k.Prefix, Region: k.Region,
		CallTimeout: cfg.Node.Core.Witness.Lease.CallTimeout}
	var errs []error
	if k.Bucket == "" {
		errs = append(errs, errors.New("WITNESS_BUCKET is empty: WITNESS_ENDPOINT is set, so give the bucket that holds the lease object"))
	}
	var err error
	if sc.AccessKey, sc.SecretKey, err = witnessCredentials(k.Credentials, getenv); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		for _, e := range unjoin(sc.Validate()) {
			errs = append(errs, errors.New(keyed(e.Error())))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return sc, nil
}

// s3store's field names and the keys that set them, as its Validate words
// its problems ("witness Endpoint ...").
var witnessFieldKeys = []struct{ field, key string }{
	{"witness Endpoint", "WITNESS_ENDPOINT"},
	{"witness Bucket", "WITNESS_BUCKET"},
	{"witness Prefix", "WITNESS_PREFIX"},
	{"witness Region", "WITNESS_REGION"},
	{"witness AccessKey", "WITNESS_CREDENTIALS: the access key"},
	{"witness SecretKey", "WITNESS_CREDENTIALS: the secret key"},
	{"witness CallTimeout", "WITNESS_CALL_TIMEOUT"},
}

// keyed names the key in one of s3store's problems.
func keyed(msg string) string {
	for _, f := range witnessFieldKeys {
		if rest, ok := strings.CutPrefix(msg, f.field); ok {
			return f.key + rest
		}
	}
	return "WITNESS_*: " + msg
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// witnessTiming checks the lease's timing as the core will (each key's own
// range is checked by the key table): the renewal rule names the keys.
func witnessTiming(cfg config) error {
	l := cfg.Node.Core.Witness.Lease
	l.Drift = cfg.Node.Core.MaxClockDrift
	err := l.Validate()
	if err == nil {
		return nil
	}
	if l.RenewEvery+2*l.CallTimeout >= l.Counted() {
		return fmt.Errorf("WITNESS_RENEW (%v) + 2 x WITNESS_CALL_TIMEOUT (%v) must stay below the lease a holder counts from a write (%v for WITNESS_LEASE %v at MAX_CLOCK_DRIFT %v): a renewal must land before the count ends; lower them or raise WITNESS_LEASE",
			l.RenewEvery, l.CallTimeout, l.Counted(), l.Lease, l.Drift)
	}
	return fmt.Errorf("WITNESS_LEASE, WITNESS_RENEW, WITNESS_CALL_TIMEOUT: %w", err)
}

// witnessCredentials reads the store's access key and secret key: from
// the file WITNESS_CREDENTIALS names, else from the environment. The
// secret never appears in an error.
func witnessCredentials(path string, getenv func(string) string) (access, secret string, err error) {
	if path != "" {
		return readCredentials(path)
	}
	access, secret = getenv(envAccessKey), getenv(envSecretKey)
	switch {
	case access == "" && secret == "":
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS is empty and neither %s nor %s is set: give the store's keys in a file (WITNESS_CREDENTIALS, mode 0600) or in those two variables of the daemon's environment", envAccessKey, envSecretKey)
	case access == "":
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS is empty and %s is set without %s", envSecretKey, envAccessKey)
	case secret == "":
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS is empty and %s is set without %s", envAccessKey, envSecretKey)
	}
	return access, secret, nil
}

// readCredentials reads a WITNESS_CREDENTIALS file: the access key and the
// secret key, separated by spaces or newlines; empty lines and lines
// starting with # are skipped. A file that others than its owner may read
// or write is refused, as ssh refuses a private key: anyone who can read
// the keys can write the lease object.
func readCredentials(path string) (access, secret string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS: %w", err)
	}
	switch perm := fi.Mode().Perm(); {
	case !fi.Mode().IsRegular():
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS %s is not a regular file", path)
	case perm&0o077 != 0:
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS %s is open to others than its owner (mode %04o): the store's keys must be readable by this daemon's user only; chmod 600 %s",
			path, perm, path)
	}
	var words []string
	sc := bufio.NewScanner(io.LimitReader(f, maxCredentialsFile+1))
	n := 0
	for sc.Scan() {
		n += len(sc.Bytes()) + 1
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words = append(words, strings.Fields(line)...)
	}
	switch {
	case sc.Err() != nil:
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS %s: %w", path, sc.Err())
	case n > maxCredentialsFile:
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS %s is longer than %d bytes: it should hold two keys", path, maxCredentialsFile)
	case len(words) != 2:
		// Never the words themselves: one of them is the secret.
		return "", "", fmt.Errorf("WITNESS_CREDENTIALS %s holds %d words: want the access key and the secret key, separated by a space or a newline", path, len(words))
	}
	return words[0], words[1], nil
}
