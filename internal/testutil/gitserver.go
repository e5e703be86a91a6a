package testutil

import (
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitServer serves the repositories under a directory with git's own
// smart HTTP server (git http-backend), as a Git host does; "private.git"
// needs the token.
func GitServer(t testing.TB, token string) (*httptest.Server, string) {
	t.Helper()
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	root := t.TempDir()
	h := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}, Stderr: io.Discard}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/private.git/") {
			if _, pass, ok := r.BasicAuth(); !ok || pass != token {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if r.URL.Path == "/web/info/refs" { // a web page, not a Git server
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>sign in</html>"))
			return
		}
		if r.URL.Path == "/moved.git/info/refs" {
			http.Redirect(w, r, "/shop-api.git/info/refs", http.StatusMovedPermanently)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, root
}

// GitRepo makes a bare repository with a commit on main and one on feature,
// and returns main's.
func GitRepo(t testing.TB, root, name string) string {
	t.Helper()
	work := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+work)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "first")
	head := git("rev-parse", "HEAD")
	git("checkout", "-q", "-b", "feature")
	git("commit", "-q", "--allow-empty", "-m", "second")
	git("clone", "-q", "--bare", work, filepath.Join(root, name))
	return head
}
