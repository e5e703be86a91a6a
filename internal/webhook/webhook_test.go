package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
)

const (
	secret     = "whsec-Correct-Horse"
	repository = "https://github.com/nebula-samples/shop-api"
	commit     = "9f2c4b7e1a3d5c8e0b6f4a2d9c7e5b3a1f8d6c4e"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hexMAC(key string, body []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// headers are what each provider sends with a push signed with key.
func headers(p Provider, event, id, key string, body []byte) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	switch p {
	case GitHub:
		h.Set("X-GitHub-Event", event)
		h.Set("X-GitHub-Delivery", id)
		h.Set("X-GitHub-Hook-ID", "421337")
		h.Set("X-Hub-Signature-256", "sha256="+hexMAC(key, body))
	case GitLab:
		h.Set("X-Gitlab-Event", event)
		h.Set("X-Gitlab-Event-UUID", id)
		h.Set("X-Gitlab-Token", key)
	case Gitea:
		h.Set("X-Gitea-Event", event)
		h.Set("X-Gitea-Delivery", id)
		h.Set("X-Gitea-Signature", hexMAC(key, body))
	}
	return h
}

// edit changes fields of a JSON payload.
func edit(t *testing.T, body []byte, set map[string]any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		m[k] = v
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPushes(t *testing.T) {
	type sample struct {
		provider Provider
		event    string
		file     string
		repo     string
		pusher   string
	}
	samples := []sample{
		{GitHub, "push", "github-push.json", "https://github.com/nebula-samples/shop-api", "ada-dev"},
		{GitLab, "Push Hook", "gitlab-push.json", "git@gitlab.example.com:nebula-samples/shop-api.git", "ada-dev"},
		{Gitea, "push", "gitea-push.json", "https://git.example.com/nebula-samples/shop-api", "ada"},
	}
	for _, s := range samples {
		t.Run(string(s.provider), func(t *testing.T) {
			body := fixture(t, s.file)
			h := headers(s.provider, s.event, "d-1", secret, body)
			d, err := Identify(h)
			if err != nil {
				t.Fatal(err)
			}
			if d.Provider != s.provider || d.ID != "d-1" || !d.IsPush() {
				t.Fatalf("Identify = %+v", d)
			}
			if err := Verify(d, h, body, []byte(secret)); err != nil {
				t.Fatalf("a correctly signed delivery: %v", err)
			}
			p, err := Parse(d, body)
			if err != nil {
				t.Fatal(err)
			}
			if p.Ref != "refs/heads/main" || p.Branch() != "main" || p.Commit != commit ||
				p.Message != "Serve /healthz" || p.Pusher != s.pusher {
				t.Errorf("Parse = %+v", p)
			}
			if why := p.Ignored(s.repo, "main"); why != "" {
				t.Errorf("a push to the tracked branch is ignored: %s", why)
			}
			for _, c := range []struct{ repo, branch, want string }{
				{s.repo, "release", "a push to branch main, not the tracked branch release"},
				{"https://github.com/someone-else/shop-api", "main", "a push to another repository"},
			} {
				if why := p.Ignored(c.repo, c.branch); !strings.HasPrefix(why, c.want) {
					t.Errorf("Ignored(%s, %s) = %q, want %q", c.repo, c.branch, why, c.want)
				}
			}

			// The signature is over the raw body: one byte changed, a
			// wrong secret, no signature at all.
			tampered := append([]byte{}, body...)
			tampered[len(tampered)-2] = ' '
			if s.provider != GitLab { // GitLab signs nothing but sends the token
				if err := Verify(d, h, tampered, []byte(secret)); !errors.Is(err, ErrBadSignature) {
					t.Errorf("a changed body: %v", err)
				}
			}
			if err := Verify(d, headers(s.provider, s.event, "d-1", "another secret", body), body, []byte(secret)); !errors.Is(err, ErrBadSignature) {
				t.Errorf("another secret: %v", err)
			}
			bare := h.Clone()
			for _, k := range []string{"X-Hub-Signature-256", "X-Gitlab-Token", "X-Gitea-Signature"} {
				bare.Del(k)
			}
			if err := Verify(d, bare, body, []byte(secret)); !errors.Is(err, ErrBadSignature) {
				t.Errorf("no signature: %v", err)
			}
			if err := Verify(d, h, body, nil); !errors.Is(err, ErrBadSignature) {
				t.Errorf("a hook without a secret accepted a delivery: %v", err)
			}
		})
	}
}

func TestIgnoredPushes(t *testing.T) {
	gh := fixture(t, "github-push.json")
	gl := fixture(t, "gitlab-push.json")
	gt := fixture(t, "gitea-push.json")
	zero := "0000000000000000000000000000000000000000"
	cases := []struct {
		name     string
		provider Provider
		event    string
		body     []byte
		repo     string
		want     string
	}{
		{"github tag", GitHub, "push", edit(t, gh, map[string]any{"ref": "refs/tags/v1.4.0", "created": true}),
			repository, "a tag push (v1.4.0)"},
		{"github deletion", GitHub, "push", edit(t, gh, map[string]any{"after": zero, "deleted": true, "head_commit": nil}),
			repository, "the push deleted refs/heads/main"},
		{"gitlab tag", GitLab, "Tag Push Hook", fixture(t, "gitlab-tag-push.json"),
			"https://gitlab.example.com/nebula-samples/shop-api", "a tag push (v1.4.0)"},
		{"gitlab deletion", GitLab, "Push Hook", edit(t, gl, map[string]any{"after": zero, "checkout_sha": nil, "commits": []any{}}),
			"https://gitlab.example.com/nebula-samples/shop-api", "the push deleted refs/heads/main"},
		{"gitea tag", Gitea, "push", edit(t, gt, map[string]any{"ref": "refs/tags/v1.4.0"}),
			"https://git.example.com/nebula-samples/shop-api", "a tag push (v1.4.0)"},
		{"gitea deletion", Gitea, "push", edit(t, gt, map[string]any{"after": zero}),
			"https://git.example.com/nebula-samples/shop-api", "the push deleted refs/heads/main"},
		{"a note ref", GitHub, "push", edit(t, gh, map[string]any{"ref": "refs/notes/commits"}),
			repository, "a push to refs/notes/commits, not a branch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := headers(c.provider, c.event, "d", secret, c.body)
			d, err := Identify(h)
			if err != nil || !d.IsPush() {
				t.Fatalf("Identify = %+v, %v", d, err)
			}
			if err := Verify(d, h, c.body, []byte(secret)); err != nil {
				t.Fatal(err)
			}
			p, err := Parse(d, c.body)
			if err != nil {
				t.Fatal(err)
			}
			if why := p.Ignored(c.repo, "main"); !strings.HasPrefix(why, c.want) {
				t.Errorf("Ignored = %q, want %q", why, c.want)
			}
		})
	}
}

func TestNotPushes(t *testing.T) {
	for _, c := range []struct {
		provider Provider
		event    string
	}{{GitHub, "ping"}, {GitHub, "pull_request"}, {GitLab, "Merge Request Hook"}, {Gitea, "delete"}, {Gitea, "create"}} {
		d, err := Identify(headers(c.provider, c.event, "d", secret, []byte("{}")))
		if err != nil {
			t.Fatal(err)
		}
		if d.IsPush() {
			t.Errorf("%s %q read as a push", c.provider, c.event)
		}
	}
}

func TestIdentify(t *testing.T) {
	h := http.Header{}
	if _, err := Identify(h); !errors.Is(err, ErrUnknownProvider) {
		t.Errorf("no headers: %v", err)
	}
	h = headers(GitHub, "push", "", secret, nil)
	if _, err := Identify(h); !errors.Is(err, ErrNoDeliveryID) {
		t.Errorf("no delivery id: %v", err)
	}
	// GitLab 17.4 and later: the idempotency key, the same on a retry.
	h = headers(GitLab, "Push Hook", "event-uuid", secret, nil)
	h.Set("Idempotency-Key", "idem-1")
	if d, _ := Identify(h); d.ID != "idem-1" {
		t.Errorf("GitLab's delivery id = %q, want the Idempotency-Key", d.ID)
	}
	// Forgejo: its own headers, and the GitHub-style signature.
	body := fixture(t, "gitea-push.json")
	h = http.Header{}
	h.Set("X-Forgejo-Event", "push")
	h.Set("X-Forgejo-Delivery", "f-1")
	h.Set("X-Forgejo-Signature", hexMAC(secret, body))
	d, err := Identify(h)
	if err != nil || d.Provider != Gitea || d.ID != "f-1" {
		t.Fatalf("Forgejo: %+v, %v", d, err)
	}
	if err := Verify(d, h, body, []byte(secret)); err != nil {
		t.Errorf("Forgejo's signature: %v", err)
	}
	h.Del("X-Forgejo-Signature")
	h.Set("X-Hub-Signature-256", "sha256="+hexMAC(secret, body))
	if err := Verify(d, h, body, []byte(secret)); err != nil {
		t.Errorf("Forgejo's GitHub-style signature: %v", err)
	}
}

func TestMalformedPushes(t *testing.T) {
	d := Delivery{GitHub, "d", "push"}
	for _, body := range []string{`not json`, `{"ref":"main","after":"` + commit + `"}`, `{"ref":"refs/heads/main","after":"abc"}`, `[]`} {
		if _, err := Parse(d, []byte(body)); err == nil {
			t.Errorf("Parse(%s) accepted", body)
		}
	}
}

func TestRepositoryKey(t *testing.T) {
	want := "github.com/acme/shop"
	for _, s := range []string{"https://github.com/Acme/Shop.git", "https://github.com/acme/shop", "https://github.com/acme/shop/",
		"git@github.com:acme/shop.git", "ssh://git@github.com/acme/shop.git", "http://github.com:443/acme/shop"} {
		if got := RepositoryKey(s); got != want {
			t.Errorf("RepositoryKey(%q) = %q, want %q", s, got, want)
		}
	}
	for _, s := range []string{"", "shop", "https://github.com", "/srv/git/shop"} {
		if got := RepositoryKey(s); got != "" {
			t.Errorf("RepositoryKey(%q) = %q, want none", s, got)
		}
	}
}
