package apitest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
)

// The sample pushes of internal/webhook/testdata: a push of commit
// SampleCommit to main of nebula-samples/shop-api, on each provider.
const (
	SampleCommit     = "9f2c4b7e1a3d5c8e0b6f4a2d9c7e5b3a1f8d6c4e"
	GitHubRepository = "https://github.com/nebula-samples/shop-api.git"
	GitLabRepository = "git@gitlab.example.com:nebula-samples/shop-api.git"
	GiteaRepository  = "https://git.example.com/nebula-samples/shop-api"
)

// SamplePush reads a sample payload of internal/webhook/testdata.
func SamplePush(t testing.TB, name string) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "webhook", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// EditJSON sets top-level fields of a JSON object.
func EditJSON(t testing.TB, body []byte, set map[string]any) []byte {
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

// Delivery is what a provider sends: its event, delivery id and body,
// signed with secret by its own scheme.
type Delivery struct {
	Provider   string // GITHUB, GITLAB, GITEA
	Event      string
	DeliveryID string
	Body       []byte
	Secret     string
}

// Header is the delivery's headers as its provider sends them.
func (d Delivery) Header() http.Header {
	mac := hmac.New(sha256.New, []byte(d.Secret))
	mac.Write(d.Body)
	sig := hex.EncodeToString(mac.Sum(nil))
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"test-provider"}}
	switch d.Provider {
	case "GITHUB":
		h.Set("X-GitHub-Event", d.Event)
		h.Set("X-GitHub-Delivery", d.DeliveryID)
		h.Set("X-Hub-Signature-256", "sha256="+sig)
	case "GITLAB":
		h.Set("X-Gitlab-Event", d.Event)
		h.Set("X-Gitlab-Event-UUID", d.DeliveryID)
		h.Set("X-Gitlab-Token", d.Secret)
	case "GITEA":
		h.Set("X-Gitea-Event", d.Event)
		h.Set("X-Gitea-Delivery", d.DeliveryID)
		h.Set("X-Gitea-Signature", sig)
	}
	return h
}

// HookAnswer is the control plane's answer to a delivery; the ids in it
// (GraphQL ids on the wire) are decoded to the store's.
type HookAnswer struct {
	Status   int
	Delivery string   `json:"delivery"`
	Outcome  string   `json:"outcome"`
	Reason   string   `json:"reason"`
	Builds   []string `json:"builds"`
	Error    string   `json:"error"`
}

// Deliver posts a delivery to a hook's URL (from Webhook.url).
func (e *Env) Deliver(t testing.TB, url string, d Delivery) HookAnswer {
	t.Helper()
	return e.Post(t, url, d.Header(), d.Body)
}

// Post posts a body with headers to url and reads the hook's answer.
func (e *Env) Post(t testing.TB, url string, h http.Header, body []byte) HookAnswer {
	t.Helper()
	// The hook's URL names the public URL; the test server listens
	// elsewhere.
	path := url[strings.Index(url, "/hooks/"):]
	req, err := http.NewRequest(http.MethodPost, e.Server.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	client := e.Server.Client()
	if client == nil { // a server of another process: only its URL is known
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := HookAnswer{Status: resp.StatusCode}
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("the hook answered %d %q: %v", resp.StatusCode, raw, err)
	}
	if a.Delivery != "" {
		if a.Delivery, err = gid.Decode[string](gid.WebhookDelivery, a.Delivery); err != nil {
			t.Fatalf("the hook's answer %s: %v", raw, err)
		}
	}
	for i, b := range a.Builds {
		if a.Builds[i], err = gid.Decode[string](gid.Build, b); err != nil {
			t.Fatalf("the hook's answer %s: %v", raw, err)
		}
	}
	return a
}

// NewGitService creates a service built from repository's main branch,
// deploying pushes to the environments given.
func (f *Fixture) NewGitService(t testing.TB, name, repository string, deployOnPush ...string) string {
	t.Helper()
	if deployOnPush == nil {
		deployOnPush = []string{}
	}
	r := f.MustDo(t, `mutation($p: ID!, $name: String!, $repo: String!, $envs: [ID!]) {
		createService(input: {projectId: $p, name: $name, image: "registry.nebula-build.svc:5000/shop/api",
			processes: [{name: "web", command: ["./api"], port: 8080}],
			git: {repository: $repo, branch: "main", deployOnPush: $envs}}) { service { id } userErrors { field message code } }
	}`, map[string]any{"p": f.ProjectID, "name": name, "repo": repository, "envs": deployOnPush})
	return r.Str("createService.service.id")
}

// NewWebhook creates a hook for a service ("" for the project's) and
// returns its id, URL and secret.
func (f *Fixture) NewWebhook(t testing.TB, serviceID string) (id, url, secret string) {
	t.Helper()
	vars := map[string]any{"p": f.ProjectID}
	if serviceID != "" {
		vars["s"] = serviceID
	}
	r := f.MustDo(t, `mutation($p: ID!, $s: ID) { createWebhook(input: {projectId: $p, serviceId: $s}) {
		webhook { id url } secret userErrors { field message code } } }`, vars)
	secret = r.Str("createWebhook.secret")
	f.addSecret(secret)
	return r.Str("createWebhook.webhook.id"), r.Str("createWebhook.webhook.url"), secret
}

// HookID is the raw id a hook's URL carries.
func HookID(t testing.TB, globalID string) string {
	t.Helper()
	id, err := gid.Decode[model.WebhookID](gid.Webhook, globalID)
	if err != nil {
		t.Fatal(err)
	}
	return string(id)
}
