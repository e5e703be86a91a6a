// Package webhook reads the push webhooks of GitHub, GitLab and
// Gitea/Forgejo: which provider sent a delivery, whether it is signed with
// the hook's secret by that provider's own scheme, and what the push says.
// It knows nothing of services or builds; control decides what a push
// starts.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Provider is who sent a delivery.
type Provider string

const (
	GitHub Provider = "GITHUB"
	GitLab Provider = "GITLAB"
	// Gitea stands for Forgejo too: Forgejo sends Gitea's headers beside
	// its own, with the same payloads.
	Gitea Provider = "GITEA"
)

// MaxBody is the largest delivery read. GitHub caps its payloads at
// 25 MB but a push of a few commits is a few kilobytes; a larger body is
// refused before it is read whole.
const MaxBody = 1 << 20

var (
	// ErrUnknownProvider: the request carries no provider's event header.
	ErrUnknownProvider = errors.New("not a webhook of GitHub, GitLab, Gitea or Forgejo: no event header")
	// ErrNoDeliveryID: the provider's delivery id header is missing.
	ErrNoDeliveryID = errors.New("the delivery has no delivery id header")
	// ErrBadSignature: the signature or token does not match the hook's
	// secret, or is missing.
	ErrBadSignature = errors.New("the signature does not match the hook's secret")
)

// Delivery is what the headers of a delivery say, before its body is
// trusted.
type Delivery struct {
	Provider Provider
	// ID is the provider's delivery id: the same on the provider's own
	// retries and redeliveries, so a second one is a replay.
	ID string
	// Event is the provider's event name as sent ("push", "Push Hook").
	Event string
}

// Identify reads which provider sent a delivery, its id and its event.
func Identify(h http.Header) (Delivery, error) {
	var d Delivery
	switch {
	case h.Get("X-GitHub-Event") != "":
		d = Delivery{GitHub, h.Get("X-GitHub-Delivery"), h.Get("X-GitHub-Event")}
	case h.Get("X-Gitlab-Event") != "":
		// Idempotency-Key (GitLab 17.4 and later) stays the same when GitLab
		// retries; the event UUID identifies the event on older versions.
		id := h.Get("Idempotency-Key")
		if id == "" {
			id = h.Get("X-Gitlab-Event-UUID")
		}
		d = Delivery{GitLab, id, h.Get("X-Gitlab-Event")}
	case h.Get("X-Gitea-Event") != "":
		d = Delivery{Gitea, h.Get("X-Gitea-Delivery"), h.Get("X-Gitea-Event")}
	case h.Get("X-Forgejo-Event") != "":
		d = Delivery{Gitea, h.Get("X-Forgejo-Delivery"), h.Get("X-Forgejo-Event")}
	default:
		return d, ErrUnknownProvider
	}
	if d.ID == "" {
		return d, ErrNoDeliveryID
	}
	if len(d.ID) > 200 || len(d.Event) > 100 {
		return d, errors.New("the delivery id or event header is too long")
	}
	return d, nil
}

// Verify checks a delivery's body against the hook's secret by its
// provider's scheme, in constant time: GitHub's and Gitea's HMAC-SHA256 of
// the raw body (GitHub's `X-Hub-Signature-256: sha256=<hex>`, Gitea's and
// Forgejo's bare hex in `X-Gitea-Signature`/`X-Forgejo-Signature`, or the
// GitHub-style header they also send), GitLab's secret token as sent in
// `X-Gitlab-Token`.
func Verify(d Delivery, h http.Header, body, secret []byte) error {
	if len(secret) == 0 {
		return ErrBadSignature
	}
	switch d.Provider {
	case GitLab:
		tok := h.Get("X-Gitlab-Token")
		// The lengths are compared in constant time too: both are hashed
		// first, so only whether they are equal leaks.
		a, b := sha256.Sum256([]byte(tok)), sha256.Sum256(secret)
		if tok == "" || subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
			return ErrBadSignature
		}
		return nil
	case GitHub, Gitea:
		var given string
		if s, ok := strings.CutPrefix(h.Get("X-Hub-Signature-256"), "sha256="); ok {
			given = s
		} else if d.Provider == Gitea {
			given = h.Get("X-Gitea-Signature")
			if given == "" {
				given = h.Get("X-Forgejo-Signature")
			}
		}
		sig, err := hex.DecodeString(given)
		if given == "" || err != nil {
			return ErrBadSignature
		}
		want, _ := hex.DecodeString(sign(secret, body))
		if !hmac.Equal(sig, want) {
			return ErrBadSignature
		}
		return nil
	}
	return ErrUnknownProvider
}

// sign is the hex HMAC-SHA256 of body with secret: GitHub's signature
// after its "sha256=", Gitea's and Forgejo's whole.
func sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Push is what a push delivery says.
type Push struct {
	// Ref is the full ref pushed ("refs/heads/main", "refs/tags/v1").
	Ref string
	// Commit is the ref's commit after the push (40 hex digits); the zero
	// commit when the push deleted the ref.
	Commit string
	// Message is the head commit's message, its first line.
	Message string
	// Repository names the repository pushed to, in the forms the provider
	// gives (clone URLs, the web URL).
	Repository []string
	// Pusher is who pushed, as the provider names them.
	Pusher  string
	deleted bool
}

// zeroCommit is the commit a deleted ref points at.
const zeroCommit = "0000000000000000000000000000000000000000"

// IsPush tells whether the delivery's event is a push of a branch or a
// tag (what Parse reads); every other event is ignored.
func (d Delivery) IsPush() bool {
	switch d.Provider {
	case GitHub, Gitea:
		return d.Event == "push"
	case GitLab:
		return d.Event == "Push Hook" || d.Event == "Tag Push Hook"
	}
	return false
}

// Parse reads the body of a push delivery (IsPush).
func Parse(d Delivery, body []byte) (*Push, error) {
	var p struct {
		Ref     string `json:"ref"`
		After   string `json:"after"`
		Deleted bool   `json:"deleted"`
		// GitHub and Gitea
		HeadCommit *struct {
			Message string `json:"message"`
		} `json:"head_commit"`
		Repository struct {
			CloneURL   string `json:"clone_url"`
			SSHURL     string `json:"ssh_url"`
			HTMLURL    string `json:"html_url"`
			GitHTTPURL string `json:"git_http_url"`
			GitSSHURL  string `json:"git_ssh_url"`
			Homepage   string `json:"homepage"`
		} `json:"repository"`
		Pusher struct {
			Name     string `json:"name"`
			Login    string `json:"login"`
			Username string `json:"username"`
		} `json:"pusher"`
		// GitLab
		CheckoutSHA *string `json:"checkout_sha"`
		UserName    string  `json:"user_username"`
		Project     struct {
			GitHTTPURL string `json:"git_http_url"`
			GitSSHURL  string `json:"git_ssh_url"`
			WebURL     string `json:"web_url"`
		} `json:"project"`
		Commits []struct {
			ID      string `json:"id"`
			Message string `json:"message"`
		} `json:"commits"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("the push body is not JSON a push is made of: %w", err)
	}
	if !strings.HasPrefix(p.Ref, "refs/") {
		return nil, fmt.Errorf("the push names no ref (%q)", clip(p.Ref, 100))
	}
	out := &Push{Ref: p.Ref, Commit: strings.ToLower(p.After)}
	if !isCommit(out.Commit) {
		return nil, fmt.Errorf("the push's commit %q is not 40 hex digits", clip(p.After, 100))
	}
	out.deleted = p.Deleted || out.Commit == zeroCommit
	switch d.Provider {
	case GitHub, Gitea:
		if p.HeadCommit != nil {
			out.Message = p.HeadCommit.Message
		}
		r := p.Repository
		out.Repository = nonEmpty(r.CloneURL, r.SSHURL, r.HTMLURL)
		out.Pusher = firstOf(p.Pusher.Name, p.Pusher.Login, p.Pusher.Username)
	case GitLab:
		if p.CheckoutSHA == nil && out.Commit == zeroCommit {
			out.deleted = true
		}
		for _, c := range p.Commits {
			if strings.EqualFold(c.ID, out.Commit) {
				out.Message = c.Message
			}
		}
		out.Repository = nonEmpty(p.Project.GitHTTPURL, p.Project.GitSSHURL, p.Project.WebURL,
			p.Repository.GitHTTPURL, p.Repository.GitSSHURL, p.Repository.Homepage)
		out.Pusher = p.UserName
	}
	out.Message, _, _ = strings.Cut(out.Message, "\n")
	out.Message = clip(out.Message, 200)
	out.Pusher = clip(out.Pusher, 100)
	return out, nil
}

// Branch is the branch pushed, "" for a tag or another ref.
func (p *Push) Branch() string {
	b, _ := strings.CutPrefix(p.Ref, "refs/heads/")
	if b == p.Ref {
		return ""
	}
	return b
}

// Ignored says why a push does not build a service that tracks branch of
// repository, or "" when it does.
func (p *Push) Ignored(repository, branch string) string {
	switch {
	case strings.HasPrefix(p.Ref, "refs/tags/"):
		return "a tag push (" + strings.TrimPrefix(p.Ref, "refs/tags/") + "): only pushes to the tracked branch build"
	case p.deleted:
		return "the push deleted " + p.Ref
	case p.Branch() == "":
		return "a push to " + p.Ref + ", not a branch"
	case p.Branch() != branch:
		return "a push to branch " + p.Branch() + ", not the tracked branch " + branch
	case !p.Of(repository):
		return "a push to another repository (" + strings.Join(p.Repository, ", ") + ")"
	}
	return ""
}

// Of tells whether the push is to the repository a service names, in any
// of the forms it might be written: https or ssh, with or without `.git`,
// in any case.
func (p *Push) Of(repository string) bool {
	want := RepositoryKey(repository)
	for _, r := range p.Repository {
		if want != "" && RepositoryKey(r) == want {
			return true
		}
	}
	return false
}

// RepositoryKey reduces a repository's URL to host and path, lower case:
// `https://github.com/Acme/Shop.git`, `git@github.com:acme/shop` and
// `ssh://git@github.com/acme/shop.git` are all `github.com/acme/shop`.
// "" when it is not a repository URL.
func RepositoryKey(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	var host, path string
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		host, path = u.Hostname(), u.Path
	} else if at, rest, ok := strings.Cut(s, "@"); ok && !strings.Contains(at, "/") {
		// scp-like: git@host:owner/repo
		h, pth, ok := strings.Cut(rest, ":")
		if !ok {
			return ""
		}
		host, path = h, pth
	} else {
		return ""
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	if host == "" || path == "" {
		return ""
	}
	return strings.ToLower(host + "/" + path)
}

func isCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// IsCommit tells whether s is a full commit id (40 hex digits).
func IsCommit(s string) bool { return isCommit(strings.ToLower(s)) }

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
