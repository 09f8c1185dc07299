package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletion: both scripts offer every visible flag, every admin
// command and every namespace command; the bash script completes what it
// should when bash runs it, and zsh (where there is one) parses its own.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh"} {
		var b strings.Builder
		if err := writeCompletion(&b, shell); err != nil {
			t.Fatal(err)
		}
		script := b.String()
		for _, w := range completionWords(newApp()) {
			if !strings.Contains(script, w.word) {
				t.Errorf("%s: %q missing", shell, w.word)
			}
		}
		for _, want := range []string{"-SIM", "-SLH", "-CRC/ip/port", "-CLS", "--completion", "cas"} {
			if !strings.Contains(script, want) {
				t.Errorf("%s: %q missing", shell, want)
			}
		}
		if strings.Contains(script, "--admin") {
			t.Errorf("%s: the hidden --admin is offered", shell)
		}
		path := filepath.Join(t.TempDir(), "mfscli."+shell)
		if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		sh, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s not found: its script is checked for its words only", shell)
			continue
		}
		if out, err := exec.Command(sh, "-n", path).CombinedOutput(); err != nil {
			t.Fatalf("%s -n: %v: %s", shell, err, out)
		}
		if shell != "bash" {
			continue
		}
		for _, c := range []struct{ words, want string }{
			{`mfscli -SC`, "-SCS"},
			{`mfscli -SL`, "-SLQ -SLH"},
			{`mfscli -CMA`, "-CMAP/"},
			{`mfscli -H ''`, ""},
			{`mfscli de`, "delete"},
		} {
			prog := `source ` + path + `; COMP_WORDS=(` + c.words + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _mfscli; echo "${COMPREPLY[*]}"`
			out, err := exec.Command(sh, "-c", prog).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v: %s", c.words, err, out)
			}
			if got := strings.TrimSpace(string(out)); got != c.want {
				t.Errorf("completing %s: %q, want %q", c.words, got, c.want)
			}
		}
	}
	if err := writeCompletion(&strings.Builder{}, "fish"); err == nil {
		t.Error("an unknown shell was accepted")
	}
}
