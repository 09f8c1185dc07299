package webpage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mfs-election/mfs-election/internal/cluster"
	"github.com/mfs-election/mfs-election/internal/cluster/clustertest"
	"github.com/mfs-election/mfs-election/internal/webui/webuitest"
)

// pageText is the text of the first element sel selects ("" when there is
// none, or the page cannot be asked).
func pageText(ctx context.Context, sel string) string {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+"`"+sel+"`"+`) || {}).innerText || ""`))
	if err != nil {
		return ""
	}
	return s
}

// screenshot keeps the whole page as dir/name.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// artifacts is where the page test keeps its screenshots: MFS_ARTIFACTS,
// else a directory under the system's temporary one (kept after the test).
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MFS_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "mfs-election-artifacts")
	}
	dir = filepath.Join(dir, "webui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startBrowser starts headless Chromium (exe, 1200x1000) and opens a
// tab; the context it returns ends after within, and with t.
func startBrowser(t *testing.T, exe string, within time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1200, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelTime := context.WithTimeout(ctx, within)
	t.Cleanup(cancelTime)
	if err := chromedp.Do(ctx); err != nil { // start the browser and open the tab
		t.Fatalf("starting %s: %v", exe, err)
	}
	return ctx
}

// TestWebPage drives the page a master serves at / in headless Chromium
// against a real cluster: it loads with no console error and shows the
// LEADER; after kill -9 of that LEADER (the master the page was loaded
// from) it shows the new LEADER within 2 s of the election, without a
// reload, by asking the other masters, and its election history shows
// the new LEADER's record naming the killed master as the one it
// deposed; a location whose chunkservers are all gone is named in the
// verdict. A screenshot of each state is kept.
func TestWebPage(t *testing.T) {
	exe := webuitest.Browser()
	if exe == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome): the browser test of the web page is skipped; `apt-get install chromium` (make test does) runs it")
	}
	p := startWebPage(t, exe)
	p.loadFromLeader(t)
	p.fitsPhone(t)
	next := p.killLeader(t)
	p.historyDeposed(t, next)
	p.cutLocation(t)
	p.noExceptions(t)
}

// webPage is TestWebPage's fixture: the cluster and its first LEADER, the
// browser's tab, where screenshots go, and what the page logged.
type webPage struct {
	c     *cluster.Cluster
	lead  int
	ctx   context.Context
	shots string

	// Console errors, uncaught exceptions, and the browser's own log
	// (failed requests: expected once a master is killed, not before).
	mu                               sync.Mutex
	consoleErrs, exceptions, netErrs []string
}

// startWebPage builds the daemons from the main module two levels up
// (under the race detector with MFS_RACE=1), only once a browser is there
// to drive the page, starts the cluster and the browser (for at most 2
// minutes), and records what the page logs.
func startWebPage(t *testing.T, exe string) *webPage {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := cluster.Build(bin, root); err != nil {
		t.Fatal(err)
	}
	p := &webPage{}
	p.c, p.lead = clustertest.Start(t, bin, nil)
	p.shots = artifacts(t)
	p.ctx = startBrowser(t, exe, 2*time.Minute)
	go func() {
		for m, err := range chromedp.Console(p.ctx) {
			if err != nil {
				return
			}
			p.mu.Lock()
			switch {
			case m.Type == chromedp.ConsoleException:
				p.exceptions = append(p.exceptions, m.Text)
			case m.Type == chromedp.ConsoleError && strings.Contains(m.Text, "net::ERR"):
				p.netErrs = append(p.netErrs, m.Text+" "+m.URL)
			case m.Type == chromedp.ConsoleError:
				p.consoleErrs = append(p.consoleErrs, m.Text)
			}
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *webPage) text(sel string) string { return pageText(p.ctx, sel) }

func (p *webPage) shot(t *testing.T, name string) {
	t.Helper()
	screenshot(t, p.ctx, p.shots, name)
}

// noLostValue: the page shows no value its script lost.
func (p *webPage) noLostValue(t *testing.T, when string) {
	t.Helper()
	if body := p.text("main"); strings.Contains(body, "null") || strings.Contains(body, "undefined") || strings.Contains(body, "NaN") {
		t.Errorf("%s, the page shows a value the script lost:\n%s", when, body)
	}
}

// leaderShown checks that the page's summary names ip as LEADER.
func (p *webPage) leaderShown(ip string) func() error {
	return func() error {
		if s := p.text("#summary"); !strings.Contains(s, "LEADER "+ip) {
			return fmt.Errorf("summary %q", s)
		}
		return nil
	}
}

// loadFromLeader loads the page from the LEADER: it shows the LEADER and
// two FOLLOWERs, and logs no error.
func (p *webPage) loadFromLeader(t *testing.T) {
	t.Helper()
	c, lead := p.c, p.lead
	url := "http://" + cluster.MasterHTTP(c.Masters[lead].Addr).String() + "/"
	if err := chromedp.Do(p.ctx, chromedp.Navigate(url), chromedp.WaitVisible("#masters")); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	clustertest.Eventually(t, 10*time.Second, 100*time.Millisecond, "the page showing the LEADER", p.leaderShown(c.Masters[lead].Addr.String()))
	p.noLostValue(t, "loaded")
	if m := p.text("#masters"); strings.Count(m, "FOLLOWER") != 2 {
		t.Errorf("the masters table does not show two FOLLOWERs:\n%s", m)
	}
	p.mu.Lock()
	if len(p.consoleErrs)+len(p.exceptions)+len(p.netErrs) > 0 {
		t.Errorf("the page logged errors while loading: console %q, exceptions %q, network %q", p.consoleErrs, p.exceptions, p.netErrs)
	}
	p.mu.Unlock()
	p.shot(t, "1-leader.png")
}

// fitsPhone: on a phone-sized screen nothing but the tables' own
// scrolling is wider than the screen.
func (p *webPage) fitsPhone(t *testing.T) {
	t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 5*time.Second, 100*time.Millisecond, "the page fitting a phone's width", func() error {
		w, err := chromedp.Run(p.ctx, chromedp.Evaluate[int]("document.documentElement.scrollWidth - window.innerWidth"))
		if err != nil || w > 0 {
			return fmt.Errorf("%d px wider than the screen (%v)", w, err)
		}
		return nil
	})
	p.shot(t, "1-leader-phone.png")
	if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(1200, 1000)); err != nil {
		t.Fatal(err)
	}
}

// killLeader is kill -9 of the LEADER the page came from: the page shows
// the new LEADER within 2 s of its election, and the killed master
// UNREACHABLE. It returns the new LEADER.
func (p *webPage) killLeader(t *testing.T) int {
	t.Helper()
	c, lead := p.c, p.lead
	c.Masters[lead].Kill()
	var next int
	clustertest.Eventually(t, 10*time.Second, 20*time.Millisecond, "a new LEADER", func() error {
		if ls := c.Leaders(); len(ls) == 1 && ls[0] != lead {
			next = ls[0]
			return nil
		}
		return fmt.Errorf("no new LEADER yet")
	})
	elected := time.Now()
	clustertest.Eventually(t, 2*time.Second, 50*time.Millisecond, "the page showing the new LEADER within 2 s of its election", p.leaderShown(c.Masters[next].Addr.String()))
	t.Logf("the page showed the new LEADER %v after the cluster had it", time.Since(elected).Round(time.Millisecond))
	if s := p.text("#masters"); !strings.Contains(s, "UNREACHABLE") {
		t.Errorf("the killed master is not shown UNREACHABLE:\n%s", s)
	}
	return next
}

// historyDeposed: the new LEADER next writes its record with its first
// entry; once that is committed the next poll shows it: a row whose cells
// (tab-separated in innerText) are the new LEADER, "... -> LEADER" and,
// as deposed, the master killed.
func (p *webPage) historyDeposed(t *testing.T, next int) {
	t.Helper()
	killedIP, newIP := p.c.Masters[p.lead].Addr.String(), p.c.Masters[next].Addr.String()
	clustertest.Eventually(t, 5*time.Second, 100*time.Millisecond, "the page's history showing the new LEADER deposing the killed one", func() error {
		h := p.text("#history")
		for _, row := range strings.Split(h, "\n") {
			if cells := strings.Split(row, "\t"); len(cells) == 8 && cells[1] == newIP && strings.HasSuffix(cells[2], "-> LEADER") && cells[6] == killedIP {
				return nil
			}
		}
		return fmt.Errorf("no record of %s becoming LEADER after %s:\n%s", newIP, killedIP, h)
	})
	p.noLostValue(t, "with the new LEADER and its record")
	p.shot(t, "2-new-leader.png")
}

// cutLocation: a location cut off, both of dc1's chunkservers gone, is
// named in the verdict and has its alarm.
func (p *webPage) cutLocation(t *testing.T) {
	t.Helper()
	c := p.c
	for _, cs := range c.CS {
		if c.Spec.Locations["dc1"].Contains(cs.Addr) {
			cs.Kill()
		}
	}
	clustertest.Eventually(t, 15*time.Second, 100*time.Millisecond, "the verdict naming the location cut off, and its alarm", func() error {
		if v := p.text("#verdict"); !strings.Contains(v, "location dc1") {
			return fmt.Errorf("verdict %q", v)
		}
		if a := p.text(`[data-kind="location_loss"]`); !strings.Contains(a, "would leave no quorum") {
			return fmt.Errorf("no location_loss alarm shown: %q", p.text("#warnings"))
		}
		return nil
	})
	p.shot(t, "3-location-cut.png")
}

// noExceptions: the page's script threw nothing all along.
func (p *webPage) noExceptions(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.exceptions) > 0 {
		t.Errorf("the page's script threw: %q", p.exceptions)
	}
}
