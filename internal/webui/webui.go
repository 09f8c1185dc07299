// Package webui is the page a master serves at GET / on its HTTP port
// (9425): the cluster as mfscli -SIM -SCS -SLQ shows it, and the newest
// of the election history (-SLH), in MooseFS's state colours, updated
// once a second from /api/v1/status without a reload, and still drawn
// while the master it was loaded from is down (it asks the others). Everything it needs is in the binary (embed): no CDN, no
// fonts from elsewhere. It is read-only.
package webui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Handler serves the page: "/" is index.html, "/static/NAME" the rest.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		files.ServeHTTP(w, r)
	})))
	return mux
}

// secure: the page runs only its own script and styles, talks only to
// the masters' HTTP ports (any of them, for the failover), and may not be
// framed by another site.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; connect-src *; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
}
