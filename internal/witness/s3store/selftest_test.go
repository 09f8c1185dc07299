package s3store

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestSelfTestAcceptsAtomicStore(t *testing.T) {
	st, srv := newStub(t, stubAtomic)
	s := stubStore(t, st, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := SelfTest(ctx, s, SelfTestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Rounds != 5 || rep.Writers != 16 || !strings.HasPrefix(rep.Dir, "mfs/test/selftest/") {
		t.Errorf("report %+v", rep)
	}
	for _, p := range phaseOrder {
		l, ok := rep.Phase(p)
		if !ok || l.N == 0 || l.Median > l.Max {
			t.Errorf("phase %s: %+v %v", p, l, ok)
		}
	}
	if l, _ := rep.Phase(PhaseRaceCreate); l.N != 5*16 {
		t.Errorf("race-create timed %d calls, want 80", l.N)
	}
	if n := st.objectCount(); n != 0 {
		t.Errorf("%d probe objects left behind", n)
	}
}

// The point of the races: a store that checks then writes without a lock
// passes every sequential check and must still be refused.
func TestSelfTestRefusesNonAtomicStore(t *testing.T) {
	st, srv := newStub(t, stubRacy)
	s := stubStore(t, st, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := SelfTest(ctx, s, SelfTestOptions{Rounds: 3, Writers: 8})
	if err == nil {
		t.Fatalf("a non-atomic store passed: %v", rep)
	}
	t.Log(err)
	for _, want := range []string{"round ", " of 8 concurrent ", " won: the store does not serialise conditional writes, it cannot be a witness"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if n := st.objectCount(); n != 0 {
		t.Errorf("%d probe objects left behind", n)
	}
}

func TestSelfTestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode stubMode
		edit func(*Config)
		want string
	}{
		{"ignores the headers", stubIgnore, nil, "it ignores If-None-Match, it cannot be a witness"},
		{"501", stubNoConditional, nil, "501 NotImplemented: refused: the store does not support conditional writes (If-None-Match/If-Match): it cannot be a witness"},
		{"no bucket", stubAtomic, func(c *Config) { c.Bucket = "other" }, `bucket "other" does not exist`},
		{"wrong access key", stubAtomic, func(c *Config) { c.AccessKey = "WRONG" }, "access denied"},
		{"overloaded", stubFail, nil, "no clear answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, srv := newStub(t, tc.mode)
			st.failStatus, st.failCode = 503, "SlowDown"
			s := stubStore(t, st, srv, tc.edit)
			_, err := SelfTest(context.Background(), s, SelfTestOptions{Rounds: 1, Writers: 2})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SelfTest = %v, want it to say %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}

func TestSelfTestOptions(t *testing.T) {
	st, srv := newStub(t, stubAtomic)
	s := stubStore(t, st, srv, nil)
	for _, opt := range []SelfTestOptions{{Writers: 1}, {Rounds: -1}, {Rounds: maxRounds + 1}, {Writers: maxWriters + 1}} {
		if _, err := SelfTest(context.Background(), s, opt); err == nil {
			t.Errorf("%+v accepted", opt)
		}
	}
	// A done context stops it at once, with the reason.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Now()
	if _, err := SelfTest(ctx, s, SelfTestOptions{}); err == nil {
		t.Error("a canceled self-test passed")
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("a canceled self-test took %v", d)
	}
}
