package wire

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// docTable returns the rows of the first table under the heading
// section of a markdown document: the first two cells of each row (a
// number and a name), in the document's order.
func docTable(doc, section string) ([][2]string, error) {
	_, after, ok := strings.Cut(doc, "\n"+section+"\n")
	if !ok {
		return nil, fmt.Errorf("no heading %q", section)
	}
	var rows [][2]string
	inTable := false
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the first table ends
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 {
			return nil, fmt.Errorf("row %q has fewer than two cells", line)
		}
		first, second := strings.TrimSpace(cells[0]), strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, err := strconv.Atoi(first); err != nil {
			continue // the header and the |---| line
		}
		rows = append(rows, [2]string{first, second})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no table rows under %q", section)
	}
	return rows, nil
}

// typeDiff lists how the document's message-type rows differ from the
// table in types.go.
func typeDiff(rows [][2]string) []string {
	var want [][2]string
	for _, t := range Types() {
		want = append(want, [2]string{strconv.Itoa(int(t)), t.String()})
	}
	return rowDiff(rows, want)
}

func rowDiff(got, want [][2]string) []string {
	var out []string
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			out = append(out, fmt.Sprintf("docs/wire.md lacks the row %s %s", want[i][0], want[i][1]))
		case i >= len(want):
			out = append(out, fmt.Sprintf("docs/wire.md has the row %s %s, the code has no such number", got[i][0], got[i][1]))
		case got[i] != want[i]:
			out = append(out, fmt.Sprintf("docs/wire.md row %d is %s %s, the code says %s %s", i+1, got[i][0], got[i][1], want[i][0], want[i][1]))
		}
	}
	return out
}

func readWireDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "wire.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTypesMatchDoc: docs/wire.md's table of message types lists exactly
// the numbers and names of the table in types.go, in the same order.
func TestTypesMatchDoc(t *testing.T) {
	rows, err := docTable(readWireDoc(t), "## Message types")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range typeDiff(rows) {
		t.Error(d)
	}
}

// TestTypeDiffCatches: the comparison above fails on a renamed, a
// renumbered, a missing and an extra row (a doc test that could never
// fail would prove nothing).
func TestTypeDiffCatches(t *testing.T) {
	doc := readWireDoc(t)
	for name, edit := range map[string]func(string) string{
		"renamed":    func(s string) string { return strings.Replace(s, "| 14 | Heartbeat |", "| 14 | Beat |", 1) },
		"renumbered": func(s string) string { return strings.Replace(s, "| 45 | StatusReq |", "| 50 | StatusReq |", 1) },
		"missing": func(s string) string {
			i := strings.Index(s, "| 49 | ClientAuth |")
			j := i + strings.Index(s[i:], "\n") + 1
			return s[:i] + s[j:]
		},
		"extra": func(s string) string {
			return strings.Replace(s, "| 1 | Hello |", "| 1 | Hello | both | x |\n| 2 | Goodbye |", 1)
		},
	} {
		rows, err := docTable(edit(doc), "## Message types")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(typeDiff(rows)) == 0 {
			t.Errorf("%s: a doc table that differs from the code passed", name)
		}
	}
}

// TestTypeNames: every number prints as its message, an unknown one as
// its number.
func TestTypeNames(t *testing.T) {
	if s := TypeHeartbeatAck.String(); s != "HeartbeatAck" {
		t.Errorf("TypeHeartbeatAck prints %q", s)
	}
	if s := Type(9).String(); s != "type(9)" {
		t.Errorf("an unknown type prints %q", s)
	}
}

// TestCodesMatchDoc: docs/wire.md's table of refusal codes lists exactly
// the codes of code.go, in order.
func TestCodesMatchDoc(t *testing.T) {
	rows, err := docTable(readWireDoc(t), "## Refusal codes")
	if err != nil {
		t.Fatal(err)
	}
	var want [][2]string
	for _, c := range Codes() {
		want = append(want, [2]string{strconv.Itoa(int(c)), c.String()})
	}
	for _, d := range rowDiff(rows, want) {
		t.Error(d)
	}
	if s := Code(200).String(); s != "code(200)" {
		t.Errorf("an unknown code prints %q", s)
	}
}
