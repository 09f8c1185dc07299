package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/pkg/roles"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// every listing, in the order they print.
var everyListing = map[listing]bool{listMasters: true, listChunkservers: true, listSummary: true, listLocations: true, listHistory: true}

// render prints a scenario's listings as mfscli does, with the clock,
// version and time zone frozen.
func render(t *testing.T, answers []clusterview.Answer, o options) string {
	t.Helper()
	cliVersion = "0.3.0"
	if o.zone == nil {
		o.zone = time.UTC
	}
	var b bytes.Buffer
	ds := dataset(answers, "mfsmaster", t0, o)
	if err := writeListings(&b, ds, clusterview.AnswerErrors(answers), o, t0); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/mfscli -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (go test ./cmd/mfscli -update rewrites it):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// goldenModes are the output modes of the goldens: a terminal with
// colours, plain lines, JSON.
var goldenModes = []struct {
	name string
	o    options
}{
	{"table", options{mode: modeTable, colour: true}},
	{"plain", options{mode: modePlain}},
	{"json", options{mode: modeJSON}},
}

// TestGolden prints every listing of every scenario in every mode.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios {
		for _, m := range goldenModes {
			t.Run(sc.name+"."+m.name, func(t *testing.T) {
				o := m.o
				o.show = everyListing
				golden(t, sc.name+"."+m.name, render(t, sc.answers(), o))
			})
		}
	}
}

// TestGoldenSorted: -SCS -o 4 -r (by location, reversed), -SIM -o 6 (by
// clock offset), -SLH -r (newest first) and -SLH -o 2 (by master, each
// master's changes in the order they came).
func TestGoldenSorted(t *testing.T) {
	o := options{mode: modePlain, show: map[listing]bool{listChunkservers: true}, sortCol: 4, reverse: true}
	golden(t, "cutoff.scs-o4-r.plain", render(t, cutOff(), o))
	o = options{mode: modeTable, show: map[listing]bool{listMasters: true}, sortCol: 6}
	golden(t, "election.sim-o6.table", render(t, election(), o))
	o = options{mode: modeTable, show: map[listing]bool{listHistory: true}, reverse: true}
	golden(t, "keep.slh-r.table", render(t, keep(), o))
	o = options{mode: modePlain, show: map[listing]bool{listHistory: true}, sortCol: 2}
	golden(t, "keep.slh-o2.plain", render(t, keep(), o))
}

var escape = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestColoursKeepAlignment: a coloured table, escape codes removed, is the
// uncoloured table: widths are counted on visible text.
func TestColoursKeepAlignment(t *testing.T) {
	for _, sc := range scenarios {
		on := render(t, sc.answers(), options{mode: modeTable, colour: true, show: everyListing})
		off := render(t, sc.answers(), options{mode: modeTable, show: everyListing})
		if !escape.MatchString(on) {
			t.Errorf("%s: no colour in the coloured table", sc.name)
		}
		if escape.MatchString(off) {
			t.Errorf("%s: colour in the uncoloured table", sc.name)
		}
		if stripped := escape.ReplaceAllString(on, ""); stripped != off {
			t.Errorf("%s: colours change the layout:\n%s\n%s", sc.name, stripped, off)
		}
		// Every line of a box is as wide as its rule.
		w := 0
		for _, line := range strings.Split(off, "\n") {
			switch {
			case strings.HasPrefix(line, "+"):
				w = len(line)
			case strings.HasPrefix(line, "|") && len([]rune(line)) != w:
				t.Errorf("%s: line %q is %d wide, its table %d", sc.name, line, len([]rune(line)), w)
			}
		}
	}
}

// TestJSONParses: -j prints one object of MooseFS's shape, even with
// masters that did not answer (they are in errors).
func TestJSONParses(t *testing.T) {
	for _, sc := range scenarios {
		out := render(t, sc.answers(), options{mode: modeJSON, show: everyListing})
		var v struct {
			Version   string `json:"version"`
			Timestamp int64  `json:"timestamp"`
			Dataset   struct {
				View         map[string]any   `json:"view"`
				TimeRef      string           `json:"time_reference"`
				Masters      []map[string]any `json:"masters"`
				Chunkservers []map[string]any `json:"chunkservers"`
				Clones       []map[string]any `json:"refused_clones"`
				Locations    []map[string]any `json:"locations"`
				Quorum       map[string]any   `json:"quorum"`
				Summary      map[string]any   `json:"summary"`
				Security     map[string]any   `json:"security"`
				Warnings     []map[string]any `json:"warnings"`
				History      []map[string]any `json:"election_history"`
				HistoryInfo  map[string]any   `json:"election_history_info"`
			} `json:"dataset"`
			Errors []string `json:"errors"`
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v\n%s", sc.name, err, out)
		}
		if dec.More() {
			t.Errorf("%s: more than one JSON value", sc.name)
		}
		d := v.Dataset
		if v.Version != "0.3.0" || v.Timestamp != t0.Unix() || len(d.Masters) == 0 || len(d.Chunkservers) == 0 ||
			len(d.Locations) == 0 || d.Quorum["verdict"] == "" || d.Summary["masters"] == nil {
			t.Errorf("%s: incomplete: %+v", sc.name, v)
		}
		for _, m := range d.Masters {
			for _, k := range []string{"ip", "state"} {
				if _, ok := m[k]; !ok {
					t.Errorf("%s: master without %q: %v", sc.name, k, m)
				}
			}
			if m["error"] == nil && (m["strver"] == nil || m["metadata_version"] == nil || m["metadata_delay"] == nil) {
				t.Errorf("%s: an answering master lacks MooseFS's keys: %v", sc.name, m)
			}
		}
		for _, c := range d.Chunkservers {
			if c["csid"] == nil || c["ip"] == nil || c["port"] == nil || c["connected"] == nil {
				t.Errorf("%s: chunkserver lacks MooseFS's keys: %v", sc.name, c)
			}
		}
		if d.History == nil || d.HistoryInfo["leader_changes"] == nil || d.HistoryInfo["unrecorded"] == nil {
			t.Errorf("%s: the election history is missing or null: %+v", sc.name, v)
		}
		for _, r := range d.History {
			for _, k := range []string{"time_ms", "ip", "from", "to", "epoch", "reason", "section", "votes", "deposed_ip", "why"} {
				if _, ok := r[k]; !ok {
					t.Errorf("%s: a history record lacks %q: %v", sc.name, k, r)
				}
			}
			if r["votes"] == nil {
				t.Errorf("%s: a history record's votes are null: %v", sc.name, r)
			}
		}
		if want := len(clusterview.AnswerErrors(sc.answers())); len(v.Errors) != want {
			t.Errorf("%s: %d errors, want %d: %v", sc.name, len(v.Errors), want, v.Errors)
		}
	}
}

// TestJSONOnlyAskedFor: -j -SIM carries masters only.
func TestJSONOnlyAskedFor(t *testing.T) {
	out := render(t, healthy(), options{mode: modeJSON, show: map[listing]bool{listMasters: true}})
	var v struct {
		Dataset map[string]json.RawMessage `json:"dataset"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	for k := range v.Dataset {
		if k != "masters" && k != "view" && k != "time_reference" && k != "security" {
			t.Errorf("-j -SIM printed %q", k)
		}
	}
}

// TestSecurityAlarm (issue 10, H3): while any master runs without
// AUTH_CODE, ADMIN_PASSWORD or mfsexports.cfg, -SIM says so in one line
// naming what is open where (table and plain modes), and -j carries it in
// "security"; a cluster with all three says nothing.
func TestSecurityAlarm(t *testing.T) {
	sim := map[listing]bool{listMasters: true}
	table := render(t, open(), options{mode: modeTable, show: sim})
	plain := render(t, open(), options{mode: modePlain, show: sim})
	js := render(t, open(), options{mode: modeJSON, show: sim})
	for _, want := range []string{"WARNING", "no AUTH_CODE on every master", "no ADMIN_PASSWORD on 127.0.0.11, 127.0.0.12", "no mfsexports.cfg on every master"} {
		if !strings.Contains(table, want) {
			t.Errorf("table: %q missing:\n%s", want, table)
		}
	}
	if n := strings.Count(table, "WARNING"); n != 1 {
		t.Errorf("table: %d warning lines", n)
	}
	if !strings.Contains(plain, "Security warning:\t127.0.0.11,127.0.0.12,127.0.0.13\t127.0.0.11,127.0.0.12\t127.0.0.11,127.0.0.12,127.0.0.13\t") {
		t.Errorf("plain:\n%s", plain)
	}
	var v struct {
		Dataset struct {
			Security struct {
				NoAuthCode []string `json:"no_auth_code"`
				AdminOpen  []string `json:"admin_open"`
				Warning    string   `json:"warning"`
			} `json:"security"`
		} `json:"dataset"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil || len(v.Dataset.Security.NoAuthCode) != 3 || len(v.Dataset.Security.AdminOpen) != 2 ||
		!strings.Contains(v.Dataset.Security.Warning, "AUTH_CODE") {
		t.Errorf("json (%v):\n%s", err, js)
	}
	for _, sc := range scenarios {
		if sc.name == "open" {
			continue
		}
		for _, m := range []options{{mode: modeTable, show: sim}, {mode: modePlain, show: sim}, {mode: modeJSON, show: sim}} {
			if out := render(t, sc.answers(), m); strings.Contains(out, "ecurity") || strings.Contains(out, "unauthenticated") {
				t.Errorf("%s: a secured cluster warned:\n%s", sc.name, out)
			}
		}
	}
}

// TestHistoryEdges: -SLH prints "-" for a record's unknown time, the
// master's id when its address is not known, and under the table the
// masters whose role changes are not all in the history, lost ones too.
func TestHistoryEdges(t *testing.T) {
	as := election()
	e := &as[1].St
	r := change(0, "127.0.0.14", roles.Follower, roles.Elect, 8, roles.ReasonNominated, "§3.1")
	r.UnixMs, r.Master = 0, netip.Addr{}
	e.History = append(e.History, r)
	as[3].St.HistoryLost = 3
	slh := map[listing]bool{listHistory: true}
	table := render(t, as, options{mode: modeTable, show: slh})
	for _, want := range []string{"| -                       | id 2130706446 | FOLLOWER -> ELECT |",
		"NOTE: not in the history: 1 role change of 127.0.0.12, until a LEADER writes it; 3 role change(s) of 127.0.0.14, lost"} {
		if !strings.Contains(table, want) {
			t.Errorf("table: %q missing:\n%s", want, table)
		}
	}
	plain := render(t, as, options{mode: modePlain, show: slh})
	for _, want := range []string{"Election history:\t0\tid 2130706446\tFOLLOWER -> ELECT\t8\t",
		"Not in the history:\t127.0.0.12\t1\t0\n", "Not in the history:\t127.0.0.14\t0\t3\n"} {
		if !strings.Contains(plain, want) {
			t.Errorf("plain: %q missing:\n%s", want, plain)
		}
	}
}
