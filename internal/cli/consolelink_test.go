package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// consoleLink is the invitation link a command printed for the console.
var consoleLink = regexp.MustCompile(`(http://[^\s]+/invitation#nbi_[A-Za-z0-9_-]+)`)

// signInWith opens an invitation link as the invitation page does: sets a
// passphrase, gets the session cookie, and asks the API who it is. It
// returns the signed-in email, or why not.
func signInWith(t *testing.T, link string) (string, error) {
	t.Helper()
	base, secret, _ := strings.Cut(link, "/invitation#")
	body, _ := json.Marshal(map[string]string{"invitation": secret, "passphrase": "correct horse battery staple"})
	req, _ := http.NewRequest("POST", base+"/auth/invitation", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", base)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "nebula_session" {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusOK || cookie == nil {
		return "", fmt.Errorf("accepting the invitation: %s", resp.Status)
	}
	req, _ = http.NewRequest("POST", base+"/graphql", strings.NewReader(`{"query":"{ viewer { user { email } } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(cookie)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Viewer struct{ User struct{ Email string } }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	return out.Data.Viewer.User.Email, nil
}

// start runs a long-running command (serve, dev) on a free port until the
// test ends or stop is called, and waits for its output to match ready.
func start(t *testing.T, ready *regexp.Regexp, args ...string) (out, errs *lockedBuffer, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	t.Setenv("NEBULA_ADDR", addr)
	t.Setenv("NEBULA_LOG_LEVEL", "warn")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, args, &stdout, &stderr) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	testutil.Eventually(t, 30*time.Second, strings.Join(args, " ")+" starts", func() (bool, string) {
		return ready.MatchString(stdout.String()), fmt.Sprintf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	})
	return &stdout, &stderr, stop
}

// The first admin can open the console: the first start prints an
// invitation link for them (with the API token), and so does a recovery;
// each works once, and the recovery's replaces the first start's.
func TestFirstStartPrintsAConsoleLink(t *testing.T) {
	isolate(t)
	out, _, stop := start(t, consoleLink, "serve")
	first := consoleLink.FindString(out.String())
	if email, err := signInWith(t, first); err != nil || email != "admin@localhost.localdomain" {
		t.Fatalf("the first start's console link signs in %q, %v", email, err)
	}
	if email, err := signInWith(t, first); err == nil {
		t.Errorf("the link worked twice (as %s)", email)
	}
	stop()

	// Later starts print no link (the admin has a passphrase), a recovery does.
	out, _, stop = start(t, regexp.MustCompile(`is serving GraphQL`), "serve")
	if consoleLink.MatchString(out.String()) {
		t.Errorf("a later start prints a console link:\n%s", out.String())
	}
	stop()
	rec, err := run(t, "admin", "bootstrap", "--recover")
	if err != nil {
		t.Fatal(err)
	}
	link := consoleLink.FindString(rec)
	if link == "" || !strings.Contains(rec, "nbt_") {
		t.Fatalf("the recovery prints no console link or token:\n%s", rec)
	}
	_, _, stop = start(t, regexp.MustCompile(`is serving GraphQL`), "serve")
	// The recovery's link names the configured address; this start
	// listens on another free port.
	_, secret, _ := strings.Cut(link, "/invitation#")
	if email, err := signInWith(t, "http://"+os.Getenv("NEBULA_ADDR")+"/invitation#"+secret); err != nil || email != "admin@localhost.localdomain" {
		t.Errorf("the recovery's console link signs in %q, %v", email, err)
	}
	stop()
}

// Every start of `nebula dev` prints a console link that signs the dev
// admin in: the first start's, and a new one on a later start.
func TestDevPrintsAConsoleLink(t *testing.T) {
	isolate(t)
	t.Setenv("NEBULA_DATA_DIR", "nebula-dev")
	devReady := regexp.MustCompile(`subscription \{ buildLog`)
	for i, what := range []string{"the first start", "a later start"} {
		out, _, stop := start(t, devReady, "dev")
		links := consoleLink.FindAllString(out.String(), -1)
		if len(links) != 1 {
			t.Fatalf("%s prints %d console links:\n%s", what, len(links), out.String())
		}
		if email, err := signInWith(t, links[0]); err != nil || email != "admin@localhost.localdomain" {
			t.Errorf("%s (%d): its console link signs in %q, %v", what, i, email, err)
		}
		stop()
	}
}
