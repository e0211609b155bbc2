// Package ui serves chunklock's web pages from files embedded in the binary:
// the GraphQL playground (GraphiQL) at / and the dashboard at /ui, with
// their scripts and stylesheets under /assets/. Nothing is loaded from
// another host: the pages work on a machine with no network, and their
// Content-Security-Policy keeps it so.
//
// The scripts are built from web/ (TypeScript, bundled by esbuild) into
// dist/ by scripts/ui-build.sh; dist/ is committed, so building chunklock
// needs Go alone, and scripts/ui-check.sh (run by CI) fails when dist/ is
// not what the sources and lockfile build.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

//go:embed static/playground.html static/dashboard.html
var pages embed.FS

//go:embed dist
var dist embed.FS

// contentSecurityPolicy allows the page's own origin only (websockets to it
// included); inline styles are allowed because GraphiQL's editor sets them.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Register adds the pages and assets to mux: GET / (playground), GET /ui
// and /ui/ (dashboard), GET /assets/{file}.
func Register(mux *http.ServeMux) {
	mux.Handle("GET /{$}", page("static/playground.html"))
	mux.Handle("GET /ui", page("static/dashboard.html"))
	mux.Handle("GET /ui/{$}", page("static/dashboard.html"))
	assets, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(assets)
	mux.Handle("GET /assets/{file}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		if _, err := fs.Stat(assets, name); err != nil || name != path.Base(name) {
			http.NotFound(w, r)
			return
		}
		secure(w)
		// The file names do not change between releases: revalidate.
		w.Header().Set("Cache-Control", "no-cache")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	}))
}

func page(name string) http.Handler {
	body, err := pages.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(body)
	})
}

func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}
