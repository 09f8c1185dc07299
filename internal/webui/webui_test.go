package webui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHandler: the page and its assets are served from the binary, with
// the headers that keep them to themselves; nothing else is.
func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, c := range []struct {
		path, want, ctype string
		code              int
	}{
		{"/", "<script src=\"static/app.js\">", "text/html", 200},
		{"/", `<section id="witness" hidden>`, "text/html", 200}, // drawn only while a witness is configured (TestWitnessPanel)
		{"/static/app.js", "/api/v1/status", "text/javascript", 200},
		{"/static/style.css", "--leader", "text/css", 200},
		{"/static/favicon.svg", "<svg", "image/svg+xml", 200},
		{"/static/missing.js", "", "", 404},
		{"/index.html/x", "", "", 404},
	} {
		r, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != c.code {
			t.Errorf("%s: %d, want %d", c.path, r.StatusCode, c.code)
			continue
		}
		if c.code != 200 {
			continue
		}
		if !strings.Contains(string(b), c.want) || !strings.HasPrefix(r.Header.Get("Content-Type"), c.ctype) {
			t.Errorf("%s: %q, body lacks %q", c.path, r.Header.Get("Content-Type"), c.want)
		}
		if !strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s: no content security policy", c.path)
		}
	}
	// Nothing the page loads comes from elsewhere.
	for _, name := range []string{"index.html", "app.js", "style.css"} { // the SVG names its XML namespace, fetched by nobody
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{"http://", "https://", "//fonts.", "@import"} {
			if strings.Contains(string(b), ext) {
				t.Errorf("%s refers to %q: the page must need nothing from outside the binary", name, ext)
			}
		}
	}
}
