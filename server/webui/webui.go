// Package webui is the browser interface of flrh serve: hand-written HTML,
// CSS and JavaScript modules embedded in the binary, so `go build` alone
// produces a server that carries its UI and works offline.
//
// The pages read and act only through the JSON API under /v1/ (the same
// calls, tokens and roles as any other client); this package serves static
// files and nothing else. Every answer carries a Content-Security-Policy
// that admits only the server's own scripts, styles and connections: no
// inline script, no third-party origin.
package webui

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var files embed.FS

// Prefix is the path the UI is served under.
const Prefix = "/ui/"

// CSP is the Content-Security-Policy of every UI answer. connect-src 'self'
// lets the pages call the API and read event streams on the same origin;
// frame-ancestors 'none' keeps the approval buttons out of other sites'
// frames.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Static returns the embedded files, rooted at the UI's top directory
// (index.html, app.css, js/…).
func Static() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil { // the embed pattern guarantees the directory
		panic(err)
	}
	return sub
}

// Handler serves the UI under Prefix: GET and HEAD only, with security
// headers on every answer. Unknown files are 404; a directory other than
// the top one is not listed.
func Handler() http.Handler {
	root := Static()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		// The UI is small and changes with the binary: revalidate always
		// (the file server answers If-Modified-Since cheaply).
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		if name == "" {
			name = "index.html"
		}
		if strings.HasSuffix(name, "/") || !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		if fi, err := fs.Stat(root, name); err != nil || fi.IsDir() {
			http.NotFound(w, r)
			return
		}
		// ServeFileFS redirects a path ending in /index.html; the page is
		// served as the top of the UI instead.
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + strings.TrimSuffix(name, "index.html")
		http.ServeFileFS(w, r2, root, name)
	})
}
