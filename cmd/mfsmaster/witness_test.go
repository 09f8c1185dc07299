package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/pkg/witness"
)

const testSecret = "s3cr3t-Wx9-never-printed"

// resolveWitness resolves a cfg file of lines and builds the store config
// with env as the environment.
func resolveWitness(t *testing.T, env map[string]string, lines ...string) (config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mfsmaster.cfg")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := spec.Resolve(path, true, nil)
	if err != nil {
		return cfg, err
	}
	_, err = witnessStore(cfg, func(k string) string { return env[k] })
	return cfg, err
}

func credFile(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "witness.keys")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWitnessKeysDefaults: without WITNESS_ENDPOINT there is no store and
// nothing else is asked for; the lease's defaults are witness.DefaultConfig
// and roles' delay, and the prefix is "mfs".
func TestWitnessKeysDefaults(t *testing.T) {
	cfg, _, err := spec.Resolve("", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := witnessStore(cfg, func(string) string { return "" })
	if err != nil || sc != nil {
		t.Fatalf("no endpoint: %v, %v", sc, err)
	}
	w, def := cfg.Node.Core.Witness, witness.DefaultConfig()
	if w.Lease.Lease != def.Lease || w.Lease.RenewEvery != def.RenewEvery || w.Lease.CallTimeout != def.CallTimeout || w.Delay != 300*time.Millisecond {
		t.Errorf("lease defaults %+v, delay %v", w.Lease, w.Delay)
	}
	if cfg.Witness.Prefix != "mfs" || cfg.Witness.Region != "us-east-1" {
		t.Errorf("keys %+v", cfg.Witness)
	}
}

// TestWitnessKeysStore: the keys fill the store's config, the call timeout
// is WITNESS_CALL_TIMEOUT, the keys come from the file; the secret is in
// the config and in no printing of it.
func TestWitnessKeysStore(t *testing.T) {
	keys := credFile(t, "# the witness bucket's keys\nAKWITNESS\n"+testSecret+"\n", 0o600)
	cfg, err := resolveWitness(t, nil, "WITNESS_ENDPOINT = http://10.0.3.5:7070", "WITNESS_BUCKET = mfs-witness",
		"WITNESS_PREFIX = mfs/c1", "WITNESS_CREDENTIALS = "+keys, "WITNESS_CALL_TIMEOUT = 700ms", "WITNESS_LEASE = 20s", "WITNESS_DELAY = 1s")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := witnessStore(cfg, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if sc.Endpoint != "http://10.0.3.5:7070" || sc.Bucket != "mfs-witness" || sc.Prefix != "mfs/c1" || sc.Region != "us-east-1" ||
		sc.AccessKey != "AKWITNESS" || sc.SecretKey != testSecret || sc.CallTimeout != 700*time.Millisecond {
		t.Errorf("store config %v", sc)
	}
	if cfg.Node.Core.Witness.Lease.Lease != 20*time.Second || cfg.Node.Core.Witness.Delay != time.Second {
		t.Errorf("core witness %+v", cfg.Node.Core.Witness)
	}
	for _, s := range []string{fmt.Sprint(sc), fmt.Sprintf("%+v", sc), fmt.Sprintf("%#v", *sc)} {
		if strings.Contains(s, testSecret) {
			t.Errorf("the secret is printed: %s", s)
		}
	}
	// One line, and the environment when the key is empty.
	one := credFile(t, "AKONE "+testSecret, 0o400)
	if _, err := resolveWitness(t, nil, "WITNESS_ENDPOINT = https://s3.example.com", "WITNESS_BUCKET = b-1", "WITNESS_CREDENTIALS = "+one); err != nil {
		t.Error(err)
	}
	env := map[string]string{envAccessKey: "AKENV", envSecretKey: testSecret}
	if _, err := resolveWitness(t, env, "WITNESS_ENDPOINT = https://s3.example.com", "WITNESS_BUCKET = b-1"); err != nil {
		t.Error(err)
	}
}

// TestWitnessKeysRefused: each bad value is a start error naming its key,
// all of them at once, and no error shows the secret.
func TestWitnessKeysRefused(t *testing.T) {
	good := credFile(t, "AK "+testSecret+"\n", 0o600)
	env := map[string]string{envAccessKey: "AKENV", envSecretKey: testSecret}
	for _, c := range []struct {
		name  string
		env   map[string]string
		lines []string
		want  []string
	}{
		{"scheme", env, []string{"WITNESS_ENDPOINT = ftp://10.0.3.5", "WITNESS_BUCKET = b-1"}, []string{"WITNESS_ENDPOINT", "http://"}},
		{"no bucket", env, []string{"WITNESS_ENDPOINT = http://10.0.3.5:7070"}, []string{"WITNESS_BUCKET is empty"}},
		{"bucket and prefix", env, []string{"WITNESS_ENDPOINT = http://10.0.3.5:7070", "WITNESS_BUCKET = x", "WITNESS_PREFIX = /abs"},
			[]string{"WITNESS_BUCKET", "WITNESS_PREFIX"}},
		{"region", env, []string{"WITNESS_ENDPOINT = http://10.0.3.5:7070", "WITNESS_BUCKET = b-1", "WITNESS_REGION = eu west"}, []string{"WITNESS_REGION"}},
		{"no credentials", nil, []string{"WITNESS_ENDPOINT = http://10.0.3.5:7070", "WITNESS_BUCKET = b-1"},
			[]string{"WITNESS_CREDENTIALS is empty", envAccessKey, envSecretKey}},
		{"half the environment", map[string]string{envSecretKey: testSecret}, []string{"WITNESS_ENDPOINT = http://10.0.3.5:7070", "WITNESS_BUCKET = b-1"},
			[]string{envSecretKey + " is set without " + envAccessKey}},
		{"missing file", nil, []string{"WITNESS_ENDPOINT = http://10.0.3.5:7070", "WITNESS_BUCKET = b-1", "WITNESS_CREDENTIALS = /nonexistent/keys"},
			[]string{"WITNESS_CREDENTIALS", "no such file"}},
		{"lease range", nil, []string{"WITNESS_LEASE = 500ms"}, []string{"WITNESS_LEASE"}},
		{"renewal rule", nil, []string{"WITNESS_RENEW = 8s"}, []string{"WITNESS_RENEW (8s) + 2 x WITNESS_CALL_TIMEOUT (1s)", "WITNESS_LEASE 10s"}},
		{"call timeout rule", nil, []string{"WITNESS_CALL_TIMEOUT = 5s"}, []string{"WITNESS_CALL_TIMEOUT (5s)"}},
		{"delay range", nil, []string{"WITNESS_DELAY = 2m"}, []string{"WITNESS_DELAY"}},
		{"good file, bad endpoint", nil, []string{"WITNESS_ENDPOINT = http://user:pw@10.0.3.5", "WITNESS_BUCKET = b-1", "WITNESS_CREDENTIALS = " + good},
			[]string{"WITNESS_ENDPOINT", "holds credentials"}},
	} {
		_, err := resolveWitness(t, c.env, c.lines...)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q not in %v", c.name, w, err)
			}
		}
		if strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: a secret in the error: %v", c.name, err)
		}
	}
}

// TestWitnessCredentialsFile: a file others may read or write is
// refused (chmod 600 named), so is one that does not hold exactly two
// words, and neither error shows what the file holds.
func TestWitnessCredentialsFile(t *testing.T) {
	for _, c := range []struct {
		name string
		text string
		mode os.FileMode
		want string
	}{
		{"group readable", "AK " + testSecret, 0o640, "chmod 600"},
		{"world readable", "AK " + testSecret, 0o604, "mode 0604"},
		{"group writable", "AK " + testSecret, 0o620, "open to others"},
		{"one word", testSecret, 0o600, "holds 1 words"},
		{"three words", "AK " + testSecret + " more", 0o600, "holds 3 words"},
		{"empty", "# nothing yet\n\n", 0o600, "holds 0 words"},
	} {
		_, _, err := readCredentials(credFile(t, c.text, c.mode))
		switch {
		case err == nil:
			t.Errorf("%s: accepted", c.name)
		case !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "WITNESS_CREDENTIALS"):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case strings.Contains(err.Error(), testSecret):
			t.Errorf("%s: the secret in the error: %v", c.name, err)
		}
	}
	if _, _, err := readCredentials(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	ak, sk, err := readCredentials(credFile(t, "  AK1\t\n\n# x\n  "+testSecret+"  \n", 0o600))
	if err != nil || ak != "AK1" || sk != testSecret {
		t.Errorf("two lines: %q %v", ak, err)
	}
}
