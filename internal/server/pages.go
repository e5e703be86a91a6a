package server

import (
	"io/fs"
	"net/http"
	"strings"

	"github.com/nebulactrl/nebula/web"
)

// pageCSP is the pages' Content-Security-Policy: everything from the
// control plane itself (GraphiQL works offline and loads nothing from
// elsewhere), the API and its websocket on the same origin, no framing.
const pageCSP = "default-src 'self'; connect-src 'self'; img-src 'self' data:; font-src 'self' data:; " +
	"style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// pages serves the embedded web pages (package web): the console at /,
// GraphiQL at /graphiql, signing in at /signin and /invitation, and their content-hashed assets under /assets/, cached for
// good (a new build has new names).
func pages(mux *http.ServeMux) {
	dist := web.Dist()
	read := func(name string) []byte {
		b, err := fs.ReadFile(dist, name)
		if err != nil {
			panic("web: " + name + " is not in the embedded build: run make web") // caught by the tests
		}
		return b
	}
	graphiql, console := read("graphiql.html"), read("console.html")
	page := func(body []byte) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			h.Set("Content-Security-Policy", pageCSP)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "no-referrer")
			_, _ = w.Write(body)
		})
	}
	mux.Handle("GET /{$}", page(console))
	mux.Handle("GET /graphiql", page(graphiql))
	mux.Handle("GET /signin", page(read("signin.html")))
	mux.Handle("GET /invitation", page(read("invitation.html")))
	files := http.FileServerFS(dist)
	mux.Handle("GET /assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	}))
}
