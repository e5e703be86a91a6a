// Package gitremote reads what a branch of a remote Git repository points
// at, as `git ls-remote` does: the reference advertisement of
// git-upload-pack over smart HTTP (gitprotocol-http), decoded by go-git.
// Nothing is cloned.
//
// The repository's URL is a user's input and the request leaves from the
// control plane, so by default it may not reach loopback, private or
// link-local addresses (checked when dialling, so a name that resolves
// there is refused too), never follows a redirect and reads a bounded
// answer. A credential goes as HTTP basic auth and never into an error.
package gitremote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"

	"github.com/nebulactrl/nebula/internal/egress"
)

// maxAdvertisement bounds the answer read: a repository with very many
// branches and tags advertises a few MiB.
const maxAdvertisement = 16 << 20

// ErrPrivateAddress is a repository address the resolver may not reach.
var ErrPrivateAddress = egress.ErrPrivateAddress

// Resolver reads branch heads.
type Resolver struct {
	client *http.Client
}

// New makes a resolver whose requests end after timeout; allowPrivate lets
// it reach loopback, private and link-local addresses (a Git server on the
// same network, and tests). Its requests go through internal/egress.
func New(timeout time.Duration, allowPrivate bool) *Resolver {
	return &Resolver{client: egress.Client(timeout, allowPrivate)}
}

// Head is the commit branch points at in the repository, 40 lowercase hex
// digits. token, when not empty, is the repository's read credential.
func (r *Resolver) Head(ctx context.Context, repository, branch, token string) (string, error) {
	u, err := url.Parse(repository)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("only an http(s) repository URL can be read from the control plane; deploy a commit instead")
	}
	u.User, u.Fragment = nil, ""
	u.Path = strings.TrimSuffix(u.Path, "/") + "/info/refs"
	u.RawQuery = "service=git-upload-pack"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", "git/2.0 (nebulactrl)")
	if token != "" {
		// GitHub's and Gitea's form; GitLab takes any user name with a token.
		req.SetBasicAuth("x-access-token", token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrPrivateAddress) {
			return "", fmt.Errorf("the repository's host %s: %w", u.Hostname(), ErrPrivateAddress)
		}
		return "", fmt.Errorf("reaching the repository: %w", clean(err, token))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", fmt.Errorf("the repository refused to be read (%s): check the service's Git credential", resp.Status)
	case resp.StatusCode == http.StatusNotFound:
		return "", fmt.Errorf("the repository was not found (%s)", resp.Status)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return "", fmt.Errorf("the repository answered with a redirect (%s), which is not followed: give its URL as it is now", resp.Status)
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("the repository answered %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-git-upload-pack-advertisement" {
		return "", fmt.Errorf("the repository does not speak Git's smart HTTP protocol (Content-Type %q)", ct)
	}
	adv := packp.NewAdvRefs()
	if err := adv.Decode(io.LimitReader(resp.Body, maxAdvertisement)); err != nil {
		return "", fmt.Errorf("reading the repository's references: %w", err)
	}
	h, ok := adv.References["refs/heads/"+branch]
	if !ok {
		return "", fmt.Errorf("the repository has no branch %q", branch)
	}
	return h.String(), nil
}

// clean keeps a credential out of an error's text (a URL in it may carry
// one).
func clean(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[credential]"))
}
