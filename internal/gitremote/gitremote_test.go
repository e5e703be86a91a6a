package gitremote

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/testutil"
)

func TestHead(t *testing.T) {
	srv, root := testutil.GitServer(t, "ghp_token")
	main := testutil.GitRepo(t, root, "shop-api.git")
	testutil.GitRepo(t, root, "private.git")
	r := New(5*time.Second, true)
	ctx := context.Background()

	got, err := r.Head(ctx, srv.URL+"/shop-api.git", "main", "")
	if err != nil || got != main {
		t.Fatalf("Head of main = %q, %v; want %s", got, err, main)
	}
	if f, err := r.Head(ctx, srv.URL+"/shop-api.git/", "feature", ""); err != nil || f == main || len(f) != 40 {
		t.Errorf("Head of feature = %q, %v", f, err)
	}
	if _, err := r.Head(ctx, srv.URL+"/private.git", "main", "ghp_token"); err != nil {
		t.Errorf("a private repository with its token: %v", err)
	}

	bad := []struct {
		name, repo, branch, token, want string
	}{
		{"no such branch", srv.URL + "/shop-api.git", "release", "", `no branch "release"`},
		{"no credential", srv.URL + "/private.git", "main", "", "check the service's Git credential"},
		{"a wrong credential", srv.URL + "/private.git", "main", "ghp_wrong", "check the service's Git credential"},
		{"no such repository", srv.URL + "/gone.git", "main", "", "was not found"},
		{"a redirect", srv.URL + "/moved.git", "main", "", "redirect"},
		{"ssh", "git@github.com:nebula-samples/shop-api.git", "main", "", "only an http(s) repository"},
		{"not Git", srv.URL + "/web", "main", "", "does not speak Git's smart HTTP"},
	}
	for _, c := range bad {
		_, err := r.Head(ctx, c.repo, c.branch, c.token)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if err != nil && c.token != "" && strings.Contains(err.Error(), c.token) {
			t.Errorf("%s: the error shows the credential: %v", c.name, err)
		}
	}

	// By default the control plane may not be pointed at its own network.
	_, err = New(5*time.Second, false).Head(ctx, srv.URL+"/shop-api.git", "main", "")
	if !errors.Is(err, ErrPrivateAddress) {
		t.Errorf("a loopback repository without allowing private addresses: %v", err)
	}
}
