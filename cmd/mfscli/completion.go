package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// Shell completion: `mfscli --completion bash` (or zsh) prints a script
// built from mfscli's own flags, admin commands and namespace commands, so
// that it never lists what mfscli does not take. `make install` writes both
// where bash-completion and zsh look for them.

// completionWord is one word a completion offers, with what it does.
type completionWord struct {
	word, what string
	value      bool // a flag that takes a value: nothing is offered after it
}

// completionWords lists every flag (MooseFS style: one dash for the short
// and the upper-case ones, two for the long lower-case ones), every admin
// command and every namespace command.
func completionWords(app *cli.App) []completionWord {
	var out []completionWord
	for _, f := range app.Flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		name := f.Names()[0]
		dash := "-"
		if len(name) > 1 && strings.ToLower(name) == name {
			dash = "--"
		}
		what := ""
		if d, ok := f.(cli.DocGenerationFlag); ok {
			what = d.GetUsage()
		}
		_, isBool := f.(*cli.BoolFlag)
		out = append(out, completionWord{word: dash + name, what: what, value: !isBool})
	}
	for _, a := range adminCommands {
		out = append(out, completionWord{word: "-C" + a.form, what: a.what})
	}
	verbs := make([]string, 0, len(kvUsage))
	for v := range kvUsage {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	for _, v := range verbs {
		out = append(out, completionWord{word: v, what: kvUsage[v]})
	}
	return out
}

// writeCompletion prints the completion script for shell.
func writeCompletion(w io.Writer, shell string) error {
	words := completionWords(newApp())
	switch shell {
	case "bash":
		var all, values []string
		for _, c := range words {
			all = append(all, c.word)
			if c.value {
				values = append(values, c.word)
			}
		}
		fmt.Fprintf(w, `# bash completion for mfscli (written by mfscli --completion bash)
_mfscli() {
	local cur prev
	COMPREPLY=()
	cur="${COMP_WORDS[COMP_CWORD]}"
	prev="${COMP_WORDS[COMP_CWORD-1]}"
	case "$prev" in
	%s) return 0 ;;
	esac
	COMPREPLY=($(compgen -W %q -- "$cur"))
	# An admin command's arguments follow a slash: no space after it.
	if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == -C*/* ]]; then
		COMPREPLY=("${COMPREPLY[0]%%%%/*}/")
		compopt -o nospace 2>/dev/null
	fi
}
complete -F _mfscli mfscli
`, strings.Join(values, "|"), strings.Join(all, " "))
		return nil
	case "zsh":
		fmt.Fprint(w, "#compdef mfscli\n# zsh completion for mfscli (written by mfscli --completion zsh)\nlocal -a words\nwords=(\n")
		for _, c := range words {
			what := c.what
			if c.value {
				what += " (takes a value)"
			}
			// _describe splits on the first unescaped colon.
			fmt.Fprintf(w, "\t%s\n", zshQuote(strings.ReplaceAll(c.word, ":", `\:`)+":"+what))
		}
		fmt.Fprint(w, ")\n_describe 'mfscli' words\n")
		return nil
	}
	return fmt.Errorf("--completion %q: bash or zsh", shell)
}

// zshQuote single-quotes s for zsh.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
