package server

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// GraphiQL's page and its assets come from the binary: the page names only
// assets under /assets/, each served with its type and cached for good;
// the page itself is revalidated and carries a Content-Security-Policy
// that allows nothing from elsewhere.
func TestEmbeddedGraphiQL(t *testing.T) {
	e := setup(t, nil)
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	for path, title := range map[string]string{"/": "<title>NebulaCtrl</title>", "/graphiql": "NebulaCtrl GraphiQL",
		"/signin": "Sign in · NebulaCtrl", "/invitation": "Accept your invitation"} {
		resp, body := get(path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(body, title) {
			t.Fatalf("GET %s: %d %s\n%s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if resp.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache (the page names the build's assets)", path, resp.Header.Get("Cache-Control"))
		}
		if strings.Contains(body, "//cdn") || strings.Contains(body, "unpkg") || strings.Contains(body, "https://") {
			t.Errorf("GET %s names something beyond the control plane:\n%s", path, body)
		}
	}
	_, page := get("/graphiql")
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 2 {
		t.Fatalf("the page names %d assets:\n%s", len(refs), page)
	}
	types := map[string]string{".js": "text/javascript", ".css": "text/css"}
	for _, ref := range refs {
		path := ref[1]
		if !strings.HasPrefix(path, "/assets/") {
			t.Errorf("the page names %s, not an embedded asset", path)
			continue
		}
		resp, body := get(path)
		want := types[path[strings.LastIndex(path, "."):]]
		if resp.StatusCode != 200 || len(body) == 0 || !strings.HasPrefix(resp.Header.Get("Content-Type"), want) {
			t.Errorf("GET %s: %d, %s, %d bytes; want 200 %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body), want)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("GET %s: Cache-Control %q, want immutable", path, cc)
		}
	}
	for _, path := range []string{"/assets/", "/assets/nope.js"} {
		if resp, _ := get(path); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}
