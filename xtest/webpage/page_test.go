package webpage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mfs-election/mfs-election/internal/cluster/clustertest"
	"github.com/mfs-election/mfs-election/internal/clusterview"
	"github.com/mfs-election/mfs-election/internal/clusterview/fixture"
	"github.com/mfs-election/mfs-election/internal/webui"
	"github.com/mfs-election/mfs-election/internal/webui/webuitest"
	"github.com/mfs-election/mfs-election/pkg/client"
)

// witnessDocument is /api/v1/status for fixture.WitnessHeld(epoch) with
// 127.0.0.13 unreachable, or, without the witness, for the same masters
// with no witness section and its history's witness parts dropped.
func witnessDocument(epoch uint64, witness bool) []byte {
	var as []clusterview.Answer
	for _, st := range fixture.WitnessHeld(epoch) {
		if !witness {
			st.Witness = nil
			for i := range st.Tallies {
				st.Tallies[i].Witness, st.Tallies[i].WitnessHeld = false, false
			}
			for i := range st.History {
				st.History[i].Witness, st.History[i].LeaseEpoch = "", 0
			}
		}
		as = append(as, clusterview.Answer{Addr: fixture.At(st.Addr.String()), St: st})
	}
	as = append(as, clusterview.Answer{Addr: fixture.At("127.0.0.13"), Err: fmt.Errorf("%w: dial tcp 127.0.0.13:9421: i/o timeout", client.ErrUnreachable)})
	ds := clusterview.Build(as, "mfsmaster", fixture.T0)
	b, err := json.Marshal(clusterview.NewDocument(ds, clusterview.AnswerErrors(as), clusterview.AllParts, "0.3.0", fixture.T0))
	if err != nil {
		panic(err)
	}
	return b
}

// TestWitnessPanel drives the page in headless Chromium against a fixture
// document (fixture.WitnessHeld: the witness held by 127.0.0.11 at
// lease_epoch 9 after a site was lost): the witness section names the
// witness, its store, who holds the lease at which lease_epoch, the age of
// the last write and the latency of the last call, and each master's side
// (self-test, record); the holder carries a "witness lease" tag in the
// masters table; the history shows the LEADER's record with "+ witness
// lease_epoch 9" and the old LEADER's step-down on half without the
// lease; on a phone the page is no wider than the screen and the witness
// rows are labelled blocks; with no witness configured the section is
// gone. Screenshots are kept under MFS_ARTIFACTS (else the temporary
// directory).
func TestWitnessPanel(t *testing.T) {
	exe := webuitest.Browser()
	if exe == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome): the browser test of the witness panel is skipped; `apt-get install chromium` (make test does) runs it")
	}
	p := openWitnessPanel(t, exe)
	p.witnessSection(t)
	p.witnessRows(t)
	p.holderTagged(t)
	p.historyWithLease(t)
	p.noLostValue(t)
	p.shot(t, "witness.png")
	p.onPhone(t)
	p.withoutWitness(t)
	p.noPageErrors(t)
}

// panelEpoch is the lease_epoch of TestWitnessPanel's fixture document.
const panelEpoch = 9

// witnessPanel is TestWitnessPanel's fixture: the page, served with the
// fixture document (with the witness or without it, as witness says), in
// a browser's tab, where screenshots go, and what the page logged.
type witnessPanel struct {
	witness atomic.Bool
	ctx     context.Context
	shots   string

	mu   sync.Mutex
	errs []string // console errors and uncaught exceptions
}

// openWitnessPanel serves the page with the witness's document, starts
// the browser (for at most a minute), records the page's errors and loads
// the page.
func openWitnessPanel(t *testing.T, exe string) *witnessPanel {
	t.Helper()
	p := &witnessPanel{}
	p.witness.Store(true)
	mux := http.NewServeMux()
	mux.Handle("/", webui.Handler())
	mux.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(witnessDocument(panelEpoch, p.witness.Load()))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	p.shots = artifacts(t)
	p.ctx = startBrowser(t, exe, time.Minute)
	go func() {
		for m, err := range chromedp.Console(p.ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleError {
				p.mu.Lock()
				p.errs = append(p.errs, m.Text)
				p.mu.Unlock()
			}
		}
	}()
	if err := chromedp.Do(p.ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#masters")); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	return p
}

func (p *witnessPanel) text(sel string) string { return pageText(p.ctx, sel) }

func (p *witnessPanel) eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	clustertest.Eventually(t, 10*time.Second, 100*time.Millisecond, what, cond)
}

func (p *witnessPanel) shot(t *testing.T, name string) {
	t.Helper()
	screenshot(t, p.ctx, p.shots, name)
}

// witnessSection: the section names the witness, its store, who holds
// the lease at which lease_epoch, the last write and call, and the store
// log.
func (p *witnessPanel) witnessSection(t *testing.T) {
	t.Helper()
	p.eventually(t, "the witness section", func() error {
		w := p.text("#witness")
		for _, want := range []string{
			"Witness " + fixture.WitnessID + " · s3 http://10.0.3.5:7070 mfs-witness/mfs",
			fmt.Sprintf("lease held by 127.0.0.11 · lease_epoch %d", panelEpoch),
			"last write 1 s ago by 127.0.0.11", "last call 12 ms", "store usable by 2 of 2 masters",
			"store log: a snapshot at 1400 and 3 object(s), 3.0 MiB, changes 1401..1532, oldest 40 s",
		} {
			if !strings.Contains(w, want) {
				return fmt.Errorf("%q missing:\n%s", want, w)
			}
		}
		return nil
	})
}

// witnessRows: each master's side (self-test, record), a row each, cells
// tab-separated in innerText; none for the unreachable master.
func (p *witnessPanel) witnessRows(t *testing.T) {
	t.Helper()
	const epoch = panelEpoch
	rows := map[string][]string{}
	for _, row := range strings.Split(p.text("#witnesstable tbody"), "\n") {
		cells := strings.Split(row, "\t")
		rows[strings.Fields(cells[0])[0]] = cells
	}
	if r := rows["127.0.0.11"]; len(r) != 9 || r[2] != "passed" || r[3] != "held" || r[4] != fmt.Sprintf("held lease_epoch %d by 127.0.0.11", epoch) ||
		r[5] != "swap ok" || r[6] != "12 ms" || r[7] != "1 s ago" || r[8] != "-" {
		t.Errorf("the holder's row %q", r)
	}
	if r := rows["127.0.0.12"]; len(r) != 9 || r[3] != "not held" || r[4] != fmt.Sprintf("free lease_epoch %d", epoch-1) || r[7] != "-" {
		t.Errorf("the FOLLOWER's row %q", r)
	}
	if r := rows["127.0.0.13"]; r != nil {
		t.Errorf("a row for the unreachable master, which reported nothing: %q", r)
	}
}

// holderTagged: the holder is tagged in the masters table, and only it.
func (p *witnessPanel) holderTagged(t *testing.T) {
	t.Helper()
	if m := p.text("#masters"); strings.Count(m, "witness lease") != 1 || !strings.Contains(m, "127.0.0.11\tLEADERwitness lease") {
		t.Errorf("the masters table does not tag the holder alone:\n%s", m)
	}
}

// historyWithLease: the LEADER's record relied on the lease; the one
// before it left on half without it.
func (p *witnessPanel) historyWithLease(t *testing.T) {
	t.Helper()
	var relied, left bool
	for _, row := range strings.Split(p.text("#history"), "\n") {
		cells := strings.Split(row, "\t")
		if len(cells) != 8 {
			continue
		}
		relied = relied || cells[1] == "127.0.0.11" && strings.HasSuffix(cells[2], "-> LEADER") &&
			cells[5] == fmt.Sprintf("dc1 2/2 dc2 0/2 + witness lease_epoch %d", panelEpoch)
		left = left || cells[1] == "127.0.0.13" && cells[4] == "quorum-lost §3.8: half, no witness lease" && cells[5] == "dc1 0/2 dc2 2/2 + no witness lease"
	}
	if !relied || !left {
		t.Errorf("the history lacks the witness's part (relied %v, left without the lease %v):\n%s", relied, left, p.text("#history"))
	}
}

// noLostValue: the page shows no value its script lost.
func (p *witnessPanel) noLostValue(t *testing.T) {
	t.Helper()
	if body := p.text("main"); strings.Contains(body, "null") || strings.Contains(body, "undefined") || strings.Contains(body, "NaN") {
		t.Errorf("the page shows a value the script lost:\n%s", body)
	}
}

// onPhone: on a phone nothing is wider than the screen and each witness
// row is a block whose cells say what they are (phoneRows).
func (p *witnessPanel) onPhone(t *testing.T) {
	t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	p.eventually(t, "the page fitting a phone's width", func() error {
		w, err := chromedp.Run(p.ctx, chromedp.Evaluate[int]("document.documentElement.scrollWidth - window.innerWidth"))
		if err != nil || w > 0 {
			return fmt.Errorf("%d px wider than the screen (%v)", w, err)
		}
		block, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#witnesstable tbody tr")).display`))
		if err != nil || block != "block" {
			return fmt.Errorf("a witness row is shown as %q (%v)", block, err)
		}
		return nil
	})
	p.phoneRows(t)
	p.shot(t, "witness-phone.png")
	if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(1200, 1000)); err != nil {
		t.Fatal(err)
	}
}

// phoneRows: what a phone shows of the holder's and the FOLLOWER's rows:
// each cell after the master with its column's name (data-label, drawn
// before it), "-" cells left out.
func (p *witnessPanel) phoneRows(t *testing.T) {
	t.Helper()
	const epoch = panelEpoch
	shown, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#witnesstable tbody tr:first-child td")]
		.filter(td => getComputedStyle(td).display !== "none").map(td => (td.dataset.label || "") + "=" + td.innerText).join("|")`))
	if want := "=127.0.0.11 LEADER|store=s3 http://10.0.3.5:7070 mfs-witness/mfs|self-test=passed|lease=held|" +
		fmt.Sprintf("record=held lease_epoch %d by 127.0.0.11|last call=swap ok|latency=12 ms|last write=1 s ago", epoch); err != nil || shown != want {
		t.Errorf("the holder's row on a phone: %q (%v), want %q", shown, err, want)
	}
	shown, err = chromedp.Run(p.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#witnesstable tbody tr:nth-child(2) td")]
		.filter(td => getComputedStyle(td).display !== "none").map(td => (td.dataset.label || "") + "=" + td.innerText).join("|")`))
	if want := "=127.0.0.12 FOLLOWER|store=s3 http://10.0.3.5:7070 mfs-witness/mfs|self-test=passed|lease=not held|" +
		fmt.Sprintf("record=free lease_epoch %d", epoch-1); err != nil || shown != want {
		t.Errorf("the FOLLOWER's row on a phone: %q (%v), want %q", shown, err, want)
	}
}

// withoutWitness: no witness configured, the section goes, and neither
// the masters table nor the history names the witness.
func (p *witnessPanel) withoutWitness(t *testing.T) {
	t.Helper()
	p.witness.Store(false)
	p.eventually(t, "the witness section hidden without a witness", func() error {
		hidden, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](`document.getElementById("witness").hidden`))
		if err != nil || !hidden {
			return fmt.Errorf("shown: %q (%v)", p.text("#witness"), err)
		}
		if m := p.text("#masters"); strings.Contains(m, "witness") {
			return fmt.Errorf("the masters table still names the witness:\n%s", m)
		}
		if h := p.text("#history"); strings.Contains(h, "witness") {
			return fmt.Errorf("the history still names the witness:\n%s", h)
		}
		return nil
	})
}

// noPageErrors: the page logged no console error or exception all along.
func (p *witnessPanel) noPageErrors(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) > 0 {
		t.Errorf("the page logged errors: %q", p.errs)
	}
}
