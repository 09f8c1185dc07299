// Command mutate is a mutation test of the pure core's guard clauses: it
// drops one guard at a time and runs the tests against the result, to find
// the guards that no test notices the loss of.
//
//	go run ./internal/mutate [-files a.go,b.go] [-pkgs ./pkg/...] [-run RE]
//	    [-timeout 5m] [-j 1] [-out report.md] [-list] [-only file:line] [-go go]
//
// A guard, and its mutant, is one of:
//
//   - an if statement with no else branch whose body ends in a return,
//     continue or break and does not call panic: the condition is replaced
//     by false (an init statement, as in `if x := f(); cond {`, is kept);
//   - a case clause of a tagless expression switch (`switch {`, with or
//     without an init statement) whose body does not call panic: its
//     expression list is replaced by false. default clauses, the clauses
//     of a switch with a tag and those of a type switch are not mutated.
//
// Guards are looked for in the bodies of function declarations only (a
// function literal counts as part of the declaration around it; package
// level variable initialisers are not looked at). Functions that only
// format are skipped whole: those whose name starts with "String" (which
// includes every String method) and methods named Error, GoString or
// Format. Nothing else is filtered, so a few mutants are irrelevant (an
// early return that only saves work, say) and survive by design.
//
// Each mutant is written to a temporary directory and `go test -count=1
// -overlay=F -timeout=T [-run RE] PKGS` is run with F mapping the original
// file's absolute path to the mutated copy: the tree is never written. The
// replaced text becomes false preceded by as many newlines as it spanned,
// so every line keeps its number. A mutant is KILLED when go test fails
// (named by its first top-level "--- FAIL:" line, or the test running at a
// timeout), INVALID when the mutant does not build (a variable or import
// used only in the dropped condition, for instance: "declared and not
// used"), SURVIVED when go test passes. Before the mutants the unmutated
// tree is tested once; if that fails nothing is run.
//
// One line is printed per mutant as it finishes, then the counts. -out
// writes a Markdown report: counts per file, the survivors (file:line,
// guard, enclosing function), the invalid mutants and every killed one
// with the test that killed it. -list prints the mutants without running
// anything; -only file:line runs just the mutants at that line (the file
// may be given by any path suffix, e.g. voter.go:210).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// defaultFiles is the pure core, relative to the module root.
var defaultFiles = []string{
	"pkg/roles/voter/voter.go",
	"pkg/roles/voter/voter_choice.go",
	"pkg/roles/master/master.go",
	"pkg/roles/master/election.go",
	"pkg/roles/master/heartbeats.go",
	"pkg/roles/master/peers.go",
	"pkg/roles/master/replicator.go",
	"pkg/roles/master/handover.go",
	"pkg/roles/master/sessions.go",
	"pkg/roles/master/admin.go",
	"pkg/roles/master/registration.go",
	"pkg/roles/master/views.go",
	"pkg/roles/master/snapshot.go",
	"pkg/roles/master/trust.go",
	"pkg/roles/candidate.go",
	"pkg/roles/master/keep.go",
	"pkg/roles/master/tempremove.go",
	"pkg/roles/master/forced.go",
	"pkg/roles/master/config.go",
	"pkg/roles/voter/voterconfig.go",
	"pkg/roles/client.go",
	"pkg/roles/master/fence.go",
	"pkg/roles/table.go",
	"pkg/roles/memstore.go",
	"pkg/roles/batch.go",
	"pkg/registry/registry.go",
	"pkg/registry/leaveout.go",
	"pkg/changelog/changelog.go",
	"pkg/changelog/ack.go",
	"pkg/namespace/namespace.go",
	"pkg/quorum/quorum.go",
	"pkg/locations/map.go",
}

// Mutant is one guard and how to drop it.
type Mutant struct {
	File string // the path as given
	Line int    // of the condition or expression list
	Col  int
	Kind string // "if" or "case"
	Orig string // the replaced source, on one line
	Func string // the enclosing function declaration, e.g. (*Voter).Step

	start, end int // byte offsets of the replaced text in the file
}

// Guard is the guard as written: "if cond" or "case a, b".
func (m Mutant) Guard() string { return m.Kind + " " + m.Orig }

// Pos is file:line.
func (m Mutant) Pos() string { return m.File + ":" + strconv.Itoa(m.Line) }

// Apply returns src with the guard dropped. src must be the file the
// mutant was found in.
func (m Mutant) Apply(src []byte) []byte {
	repl := strings.Repeat("\n", bytes.Count(src[m.start:m.end], []byte("\n"))) + "false"
	out := make([]byte, 0, len(src)+len(repl))
	out = append(out, src[:m.start]...)
	out = append(out, repl...)
	return append(out, src[m.end:]...)
}

// Find parses src as the file named filename and returns its mutants in
// source order.
func Find(filename string, src []byte) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []Mutant
	add := func(kind, fn string, from, to token.Pos) {
		p := fset.Position(from)
		s, e := fset.File(from).Offset(from), fset.File(to).Offset(to)
		out = append(out, Mutant{
			File: filename, Line: p.Line, Col: p.Column, Kind: kind,
			Orig: strings.Join(strings.Fields(string(src[s:e])), " "),
			Func: fn, start: s, end: e,
		})
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil || formatting(fd) {
			continue
		}
		fn := funcName(fd)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.IfStmt:
				if s.Else == nil && endsInExit(s.Body.List) && !callsPanic(s.Body) {
					add("if", fn, s.Cond.Pos(), s.Cond.End())
				}
			case *ast.SwitchStmt:
				if s.Tag != nil {
					return true
				}
				for _, c := range s.Body.List {
					cc := c.(*ast.CaseClause)
					if len(cc.List) == 0 || callsPanic(cc) {
						continue
					}
					add("case", fn, cc.List[0].Pos(), cc.List[len(cc.List)-1].End())
				}
			}
			return true
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, nil
}

// formatting reports whether fd only renders a value as text.
func formatting(fd *ast.FuncDecl) bool {
	name := fd.Name.Name
	if strings.HasPrefix(name, "String") {
		return true
	}
	return fd.Recv != nil && (name == "Error" || name == "GoString" || name == "Format")
}

// funcName is F, T.M or (*T).M.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	star := false
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = true, s.X
	}
	switch x := t.(type) { // generic receivers: T[K] -> T
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	name := "?"
	if id, ok := t.(*ast.Ident); ok {
		name = id.Name
	}
	if star {
		return "(*" + name + ")." + fd.Name.Name
	}
	return name + "." + fd.Name.Name
}

// endsInExit reports whether the last statement of list is a return,
// continue or break.
func endsInExit(list []ast.Stmt) bool {
	if len(list) == 0 {
		return false
	}
	switch s := list[len(list)-1].(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.BranchStmt:
		return s.Tok == token.CONTINUE || s.Tok == token.BREAK
	}
	return false
}

// callsPanic reports whether n calls the builtin panic anywhere inside.
func callsPanic(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "panic" {
				found = true
			}
		}
		return !found
	})
	return found
}

// Outcome of running one mutant.
type Outcome int

const (
	Survived Outcome = iota
	Killed
	Invalid
)

// Result is a mutant and what became of it.
type Result struct {
	Mutant
	Outcome Outcome
	Detail  string // the killing test, or the first build error
	Elapsed time.Duration
}

func (r Result) line() string {
	s := fmt.Sprintf("%s: %s -> ", r.Pos(), r.Guard())
	switch r.Outcome {
	case Killed:
		return s + "KILLED by " + r.Detail
	case Invalid:
		return s + "INVALID (" + r.Detail + ")"
	}
	return s + "SURVIVED"
}

type runner struct {
	goCmd   string
	pkgs    []string
	run     string
	timeout time.Duration
}

// args is the go test command line, without -overlay.
func (r runner) args() []string {
	a := []string{"test", "-count=1", "-timeout=" + r.timeout.String()}
	if r.run != "" {
		a = append(a, "-run="+r.run)
	}
	return a
}

// goTest runs go test with the extra arguments, in its own process group
// so that a cancel stops the test binaries too.
func (r runner) goTest(ctx context.Context, extra ...string) ([]byte, error) {
	args := append(r.args(), extra...)
	args = append(args, r.pkgs...)
	cmd := exec.CommandContext(ctx, r.goCmd, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd.CombinedOutput()
}

// one runs mutant m of the file whose contents are src.
func (r runner) one(ctx context.Context, m Mutant, src []byte) (Result, error) {
	res := Result{Mutant: m}
	abs, err := filepath.Abs(m.File)
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	mutated := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(mutated, m.Apply(src), 0o644); err != nil {
		return res, err
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: mutated}})
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		return res, err
	}
	start := time.Now()
	out, err := r.goTest(ctx, "-overlay="+overlay)
	res.Elapsed = time.Since(start)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		res.Outcome = Survived
	case !errors.As(err, &exit):
		return res, err
	case buildFailed(out):
		res.Outcome, res.Detail = Invalid, buildError(out, mutated, m.File)
	default:
		res.Outcome, res.Detail = Killed, firstFailure(out)
	}
	return res, nil
}

var (
	failLine    = regexp.MustCompile(`(?m)^--- FAIL: (\S+)`)
	timeoutLine = regexp.MustCompile(`(?m)^panic: test timed out after .*\n(?:.*\n)*?\s+running tests:\n\s+(\S+)`)
	pkgFailLine = regexp.MustCompile(`(?m)^FAIL\s+(\S+)`)
	buildLine   = regexp.MustCompile(`(?m)^FAIL\s+\S+ \[(build|setup) failed\]`)
	compileErr  = regexp.MustCompile(`(?m)^\S+\.go:\d+:\d+: .*$`)
)

func buildFailed(out []byte) bool { return buildLine.Match(out) }

// firstFailure names what failed first: the first top-level failing test,
// else the test running at a timeout, else the first failing package.
func firstFailure(out []byte) string {
	if m := failLine.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	if m := timeoutLine.FindSubmatch(out); m != nil {
		return "timeout in " + string(m[1])
	}
	if m := pkgFailLine.FindSubmatch(out); m != nil {
		return "package " + string(m[1]) + " (no failing test named)"
	}
	return "go test exit status (no failing test named)"
}

// buildError is the first compiler message, with the temporary path put
// back to the original file's. The go command prints the mutated copy's
// path absolute or relative to the working directory, whichever is
// shorter, so both forms are replaced.
func buildError(out []byte, mutated, orig string) string {
	s := string(compileErr.Find(out))
	if s == "" {
		if m := buildLine.Find(out); m != nil {
			return string(m)
		}
		return "build failed"
	}
	s = strings.ReplaceAll(s, mutated, orig)
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, mutated); err == nil {
			s = strings.ReplaceAll(s, rel, orig)
		}
	}
	return s
}

func main() {
	var (
		files   = flag.String("files", strings.Join(defaultFiles, ","), "comma-separated Go files to mutate, relative to the working directory")
		pkgs    = flag.String("pkgs", "./pkg/...", "comma-separated packages to test each mutant against")
		run     = flag.String("run", "", "passed to go test as -run when set")
		timeout = flag.Duration("timeout", 5*time.Minute, "passed to go test as -timeout, per mutant")
		jobs    = flag.Int("j", 1, "mutants run at once")
		outFile = flag.String("out", "", "write a Markdown report to this file")
		list    = flag.Bool("list", false, "list the mutants and exit")
		only    = flag.String("only", "", "run only the mutants at file:line (file may be a path suffix)")
		goCmd   = flag.String("go", "go", "the go command")
	)
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/mutate [flags]\n\nDrops one guard clause at a time and runs go test against each mutant.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || *jobs < 1 {
		flag.Usage()
		os.Exit(2)
	}

	srcs := map[string][]byte{}
	var fileList []string
	var all []Mutant
	for _, f := range strings.Split(*files, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if strings.HasSuffix(f, "_test.go") {
			fatal("%s: a _test.go file; only non-test files are mutated", f)
		}
		src, err := os.ReadFile(f)
		if err != nil {
			fatal("%v (run from the module root, or give -files)", err)
		}
		ms, err := Find(f, src)
		if err != nil {
			fatal("%v", err)
		}
		srcs[f] = src
		fileList = append(fileList, f)
		all = append(all, ms...)
	}
	if *only != "" {
		all = selectOnly(all, *only)
		if len(all) == 0 {
			fatal("-only %s: no mutant at that line (see -list)", *only)
		}
	}
	if *list {
		for _, m := range all {
			fmt.Printf("%s: %s    [%s]\n", m.Pos(), m.Guard(), m.Func)
		}
		fmt.Printf("%d mutants in %d files\n", len(all), len(fileList))
		return
	}

	r := runner{goCmd: *goCmd, pkgs: splitList(*pkgs), run: *run, timeout: *timeout}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()

	fmt.Printf("baseline: %s %s %s\n", r.goCmd, strings.Join(r.args(), " "), strings.Join(r.pkgs, " "))
	if out, err := r.goTest(ctx); err != nil {
		os.Stdout.Write(out)
		fatal("the unmutated tree fails its tests (%v); no mutant run", err)
	}
	fmt.Printf("baseline passes in %s; %d mutants, %d at once\n", time.Since(began).Round(time.Second), len(all), *jobs)

	results := make([]Result, len(all))
	var mu sync.Mutex
	var firstErr error
	idx := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < *jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				res, err := r.one(ctx, all[i], srcs[all[i].File])
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
				} else {
					results[i] = res
					fmt.Println(res.line())
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range all {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		select {
		case idx <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(idx)
	wg.Wait()
	if firstErr != nil {
		fatal("%v", firstErr)
	}

	elapsed := time.Since(began).Round(time.Second)
	c := count(results)
	fmt.Printf("mutants: %d  killed: %d  survived: %d  invalid: %d  (%s)\n", len(results), c[Killed], c[Survived], c[Invalid], elapsed)
	if *outFile != "" {
		cmdLine := "go run ./internal/mutate " + strings.Join(os.Args[1:], " ")
		if err := os.WriteFile(*outFile, []byte(report(results, fileList, r, cmdLine, elapsed)), 0o644); err != nil {
			fatal("%v", err)
		}
		fmt.Println("report:", *outFile)
	}
}

func selectOnly(all []Mutant, spec string) []Mutant {
	i := strings.LastIndex(spec, ":")
	if i < 0 {
		fatal("-only %q: want file:line", spec)
	}
	file, line := spec[:i], spec[i+1:]
	n, err := strconv.Atoi(line)
	if err != nil {
		fatal("-only %q: want file:line", spec)
	}
	file = filepath.ToSlash(filepath.Clean(file))
	var out []Mutant
	for _, m := range all {
		f := filepath.ToSlash(filepath.Clean(m.File))
		if m.Line == n && (f == file || strings.HasSuffix(f, "/"+file)) {
			out = append(out, m)
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func count(rs []Result) map[Outcome]int {
	c := map[Outcome]int{}
	for _, r := range rs {
		c[r.Outcome]++
	}
	return c
}

// report is the Markdown report of a run.
func report(rs []Result, files []string, r runner, cmdLine string, elapsed time.Duration) string {
	var b strings.Builder
	c := count(rs)
	fmt.Fprintf(&b, "# Mutation report: guard clauses\n\n")
	fmt.Fprintf(&b, "`%s`: each mutant tested with `%s %s -overlay=... %s`; %s in all.\n\n",
		cmdLine, r.goCmd, strings.Join(r.args(), " "), strings.Join(r.pkgs, " "), elapsed)
	fmt.Fprintf(&b, "%d mutants: %d killed, %d survived, %d invalid (did not build).\n\n", len(rs), c[Killed], c[Survived], c[Invalid])

	b.WriteString("## Per file\n\n| file | mutants | killed | survived | invalid |\n|---|---:|---:|---:|---:|\n")
	for _, f := range files {
		var fc [3]int
		n := 0
		for _, x := range rs {
			if x.File == f {
				fc[x.Outcome]++
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", f, n, fc[Killed], fc[Survived], fc[Invalid])
		}
	}

	section := func(title string, o Outcome, detail string) {
		fmt.Fprintf(&b, "\n## %s (%d)\n\n", title, c[o])
		if c[o] == 0 {
			b.WriteString("None.\n")
			return
		}
		if detail == "" {
			b.WriteString("| file:line | guard | function |\n|---|---|---|\n")
		} else {
			fmt.Fprintf(&b, "| file:line | guard | function | %s |\n|---|---|---|---|\n", detail)
		}
		for _, x := range rs {
			if x.Outcome != o {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | `%s` |", x.Pos(), code(x.Guard()), x.Func)
			if detail != "" {
				fmt.Fprintf(&b, " %s |", code(x.Detail))
			}
			b.WriteString("\n")
		}
	}
	section("Survivors", Survived, "")
	section("Invalid", Invalid, "build error")
	section("Killed", Killed, "killed by")
	return b.String()
}

// code is s as a Markdown code span fit for a table cell.
func code(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mutate: "+format+"\n", args...)
	os.Exit(1)
}
