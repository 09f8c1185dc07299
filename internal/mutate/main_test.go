package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `package p

import "fmt"

type T struct{ n int }

func (t *T) Step(x int) int {
	if x < 0 {
		return -1
	}
	if x == 0 {
		panic("zero")
	}
	if x == 1 {
		t.n++
	}
	if x == 2 {
		return 2
	} else {
		t.n--
	}
	if y := x * 2; y > 10 {
		return y
	}
	for i := 0; i < x; i++ {
		if i%2 == 0 {
			continue
		}
		if i > 5 {
			break
		}
	}
	switch {
	case x > 100, x < -100:
		t.n = 0
	case x == 50:
		panic("fifty")
	default:
		return 0
	}
	switch x {
	case 7:
		return 7
	}
	var v any = x
	switch v.(type) {
	case int:
		return 1
	}
	if x > 3 &&
		x < 9 {
		return 3
	}
	return x
}

func (t T) String() string {
	if t.n == 0 {
		return "zero"
	}
	return fmt.Sprint(t.n)
}

func Stringify(t T) string {
	switch {
	case t.n > 0:
		return "+"
	}
	return ""
}
`

func TestFind(t *testing.T) {
	src := []byte(sample)
	ms, err := Find("p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	// Each mutant: where it is, what it replaces, and the mutated lines
	// from its first line on (every other line must be unchanged).
	want := []struct {
		line       int
		kind, orig string
		mutated    []string
	}{
		{8, "if", "x < 0", []string{"\tif false {"}},
		{22, "if", "y > 10", []string{"\tif y := x * 2; false {"}}, // init kept
		{26, "if", "i%2 == 0", []string{"\t\tif false {"}},         // continue
		{29, "if", "i > 5", []string{"\t\tif false {"}},            // break
		{34, "case", "x > 100, x < -100", []string{"\tcase false:"}},
		// A condition over two lines: false on the second, line numbers kept.
		{50, "if", "x > 3 && x < 9", []string{"\tif ", "false {"}},
	}
	// Not found: the panic guards (x == 0, case x == 50), the if without a
	// return (x == 1), the if with an else (x == 2), default, the tagged
	// and the type switch, and everything in String and Stringify.
	if len(ms) != len(want) {
		for _, m := range ms {
			t.Logf("found %s: %s", m.Pos(), m.Guard())
		}
		t.Fatalf("found %d mutants, want %d", len(ms), len(want))
	}
	lines := strings.Split(sample, "\n")
	for i, w := range want {
		m := ms[i]
		if m.File != "p.go" || m.Line != w.line || m.Kind != w.kind || m.Orig != w.orig || m.Func != "(*T).Step" {
			t.Errorf("mutant %d = %s %s %q in %s, want p.go:%d %s %q in (*T).Step", i, m.Pos(), m.Kind, m.Orig, m.Func, w.line, w.kind, w.orig)
			continue
		}
		out := m.Apply(src)
		if _, err := parser.ParseFile(token.NewFileSet(), "p.go", out, 0); err != nil {
			t.Errorf("%s: mutated source does not parse: %v", m.Pos(), err)
		}
		got := strings.Split(string(out), "\n")
		if len(got) != len(lines) {
			t.Errorf("%s: mutated source has %d lines, want %d", m.Pos(), len(got), len(lines))
			continue
		}
		for j := range lines {
			wantLine := lines[j]
			if k := j - (w.line - 1); k >= 0 && k < len(w.mutated) {
				wantLine = w.mutated[k]
			}
			if got[j] != wantLine {
				t.Errorf("%s: line %d of the mutant is %q, want %q", m.Pos(), j+1, got[j], wantLine)
			}
		}
	}
}

func TestFindSkipsBadSource(t *testing.T) {
	if _, err := Find("bad.go", []byte("package p\nfunc {")); err == nil {
		t.Error("Find accepted source that does not parse")
	}
}

func TestFirstFailure(t *testing.T) {
	out := "=== RUN   TestA\n    --- FAIL: TestA/sub (0.00s)\n--- FAIL: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\texample.com/p\t0.01s\n"
	if got := firstFailure([]byte(out)); got != "TestA" {
		t.Errorf("firstFailure = %q, want TestA", got)
	}
	timeout := "panic: test timed out after 5m0s\n\trunning tests:\n\t\tTestSlow (5m0s)\n\ngoroutine 1 [running]:\nFAIL\texample.com/p\t300.1s\n"
	if got := firstFailure([]byte(timeout)); got != "timeout in TestSlow" {
		t.Errorf("firstFailure = %q, want timeout in TestSlow", got)
	}
	build := "# example.com/p\n/tmp/mutate-1/p.go:12:2: declared and not used: ok\nFAIL\texample.com/p [build failed]\n"
	if !buildFailed([]byte(build)) {
		t.Error("a build failure not recognised")
	}
	if got := buildError([]byte(build), "/tmp/mutate-1/p.go", "pkg/p/p.go"); got != "pkg/p/p.go:12:2: declared and not used: ok" {
		t.Errorf("buildError = %q", got)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	mutated := filepath.Join(filepath.Dir(wd), "mutate-2", "p.go")
	rel := "# example.com/p\n../mutate-2/p.go:3:1: declared and not used: x\nFAIL\texample.com/p [build failed]\n"
	if got := buildError([]byte(rel), mutated, "pkg/p/p.go"); got != "pkg/p/p.go:3:1: declared and not used: x" {
		t.Errorf("buildError of a relative path = %q", got)
	}
	if buildFailed([]byte(out)) {
		t.Error("a test failure taken for a build failure")
	}
}
