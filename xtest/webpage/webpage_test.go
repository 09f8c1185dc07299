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
	// The daemons, built from the main module two levels up (under the
	// race detector with MFS_RACE=1), only once a browser is there to
	// drive the page.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := cluster.Build(bin, root); err != nil {
		t.Fatal(err)
	}
	c, lead := clustertest.Start(t, bin, nil)
	shots := artifacts(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1200, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTime()

	// Console errors, uncaught exceptions, and the browser's own log
	// (failed requests: expected once a master is killed, not before).
	var mu sync.Mutex
	var consoleErrs, exceptions, netErrs []string
	if err := chromedp.Do(ctx); err != nil { // start the browser and open the tab
		t.Fatalf("starting %s: %v", exe, err)
	}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			mu.Lock()
			switch {
			case m.Type == chromedp.ConsoleException:
				exceptions = append(exceptions, m.Text)
			case m.Type == chromedp.ConsoleError && strings.Contains(m.Text, "net::ERR"):
				netErrs = append(netErrs, m.Text+" "+m.URL)
			case m.Type == chromedp.ConsoleError:
				consoleErrs = append(consoleErrs, m.Text)
			}
			mu.Unlock()
		}
	}()
	text := func(sel string) string { return pageText(ctx, sel) }
	shot := func(name string) { screenshot(t, ctx, shots, name) }
	noLostValue := func(when string) {
		if body := text("main"); strings.Contains(body, "null") || strings.Contains(body, "undefined") || strings.Contains(body, "NaN") {
			t.Errorf("%s, the page shows a value the script lost:\n%s", when, body)
		}
	}
	leaderShown := func(ip string) func() error {
		return func() error {
			if s := text("#summary"); !strings.Contains(s, "LEADER "+ip) {
				return fmt.Errorf("summary %q", s)
			}
			return nil
		}
	}

	url := "http://" + cluster.MasterHTTP(c.Masters[lead].Addr).String() + "/"
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible("#masters")); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	clustertest.Eventually(t, 10*time.Second, 100*time.Millisecond, "the page showing the LEADER", leaderShown(c.Masters[lead].Addr.String()))
	noLostValue("loaded")
	if m := text("#masters"); strings.Count(m, "FOLLOWER") != 2 {
		t.Errorf("the masters table does not show two FOLLOWERs:\n%s", m)
	}
	mu.Lock()
	if len(consoleErrs)+len(exceptions)+len(netErrs) > 0 {
		t.Errorf("the page logged errors while loading: console %q, exceptions %q, network %q", consoleErrs, exceptions, netErrs)
	}
	mu.Unlock()
	shot("1-leader.png")
	// On a phone-sized screen nothing but the tables' own scrolling is
	// wider than the screen.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 5*time.Second, 100*time.Millisecond, "the page fitting a phone's width", func() error {
		w, err := chromedp.Run(ctx, chromedp.Evaluate[int]("document.documentElement.scrollWidth - window.innerWidth"))
		if err != nil || w > 0 {
			return fmt.Errorf("%d px wider than the screen (%v)", w, err)
		}
		return nil
	})
	shot("1-leader-phone.png")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1200, 1000)); err != nil {
		t.Fatal(err)
	}

	// kill -9 of the LEADER the page came from.
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
	clustertest.Eventually(t, 2*time.Second, 50*time.Millisecond, "the page showing the new LEADER within 2 s of its election", leaderShown(c.Masters[next].Addr.String()))
	t.Logf("the page showed the new LEADER %v after the cluster had it", time.Since(elected).Round(time.Millisecond))
	if s := text("#masters"); !strings.Contains(s, "UNREACHABLE") {
		t.Errorf("the killed master is not shown UNREACHABLE:\n%s", s)
	}
	// The new LEADER writes its record with its first entry; once that is
	// committed the next poll shows it: a row whose cells (tab-separated
	// in innerText) are the new LEADER, "... -> LEADER" and, as deposed,
	// the master killed.
	killedIP, newIP := c.Masters[lead].Addr.String(), c.Masters[next].Addr.String()
	clustertest.Eventually(t, 5*time.Second, 100*time.Millisecond, "the page's history showing the new LEADER deposing the killed one", func() error {
		h := text("#history")
		for _, row := range strings.Split(h, "\n") {
			if cells := strings.Split(row, "\t"); len(cells) == 8 && cells[1] == newIP && strings.HasSuffix(cells[2], "-> LEADER") && cells[6] == killedIP {
				return nil
			}
		}
		return fmt.Errorf("no record of %s becoming LEADER after %s:\n%s", newIP, killedIP, h)
	})
	noLostValue("with the new LEADER and its record")
	shot("2-new-leader.png")

	// A location cut off: both of dc1's chunkservers gone.
	for _, p := range c.CS {
		if c.Spec.Locations["dc1"].Contains(p.Addr) {
			p.Kill()
		}
	}
	clustertest.Eventually(t, 15*time.Second, 100*time.Millisecond, "the verdict naming the location cut off, and its alarm", func() error {
		if v := text("#verdict"); !strings.Contains(v, "location dc1") {
			return fmt.Errorf("verdict %q", v)
		}
		if a := text(`[data-kind="location_loss"]`); !strings.Contains(a, "would leave no quorum") {
			return fmt.Errorf("no location_loss alarm shown: %q", text("#warnings"))
		}
		return nil
	})
	shot("3-location-cut.png")
	mu.Lock()
	defer mu.Unlock()
	if len(exceptions) > 0 {
		t.Errorf("the page's script threw: %q", exceptions)
	}
}
