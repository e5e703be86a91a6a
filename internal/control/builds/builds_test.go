package builds_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control/agents"
	"github.com/nebulactrl/nebula/internal/control/builds"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/testutil"
	"github.com/nebulactrl/nebula/internal/webhook"
)

// The rules of builds from Git, tested on the embedded store without the
// API: what a Git source and a deploy of a commit may be given, who may
// manage hooks and build, that a hook's secret is shown once, what a
// delivery becomes (refusals recorded, replays building nothing), and that
// a build is handed to its cluster's agent and stops with its deployment.

const (
	repository = "https://github.com/nebula-samples/shop-api.git"
	commitA    = "9f2c4b7e1a3d5c8e0b6f4a2d9c7e5b3a1f8d6c4e"
	commitB    = "3b8e1d4f6a2c9e7b5d0f1a3c8e6b4d2f9a7c5e1b"
)

// gitService makes a service of the shop's project built from repo's main
// branch, deploying pushes to deployOnPush.
func gitService(t *testing.T, s *controltest.Shop, name, repo string, g func(*delivery.GitInput), deployOnPush ...model.EnvironmentID) *model.Service {
	t.Helper()
	image := "registry.nebula-build.svc:5000/shop/" + name
	in := &delivery.GitInput{Repository: repo, Branch: "main", DeployOnPush: deployOnPush}
	if g != nil {
		g(in)
	}
	svc, err := s.P.Delivery.CreateService(s.Admin, s.Project.ID, delivery.ServiceInput{Name: name, Image: &image,
		Processes: []model.Process{{Name: "web", Command: []string{"/api"}, Replicas: 1}}, Git: in})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Git == nil {
		t.Fatalf("service %s was made without its Git source", name)
	}
	return svc
}

// pushBody is a GitHub push of commit to ref of the sample repository.
func pushBody(t *testing.T, ref, commit string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"ref": ref, "before": strings.Repeat("1", 40), "after": commit,
		"head_commit": map[string]any{"id": commit, "message": "Ship the cart\n\nwith its tests"},
		"repository": map[string]any{"clone_url": repository, "ssh_url": "git@github.com:nebula-samples/shop-api.git",
			"html_url": "https://github.com/nebula-samples/shop-api"},
		"pusher": map[string]any{"name": "ada-dev", "email": "ada@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// github is a delivery as GitHub sends it, signed with secret.
func github(event, id, secret string, body []byte) builds.Inbound {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", id)
	h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return builds.Inbound{Header: h, Body: body}
}

// receive takes a delivery to hook and fails the test on an error.
func receive(t *testing.T, s *controltest.Shop, hook model.WebhookID, in builds.Inbound) (*model.WebhookDelivery, builds.Refusal) {
	t.Helper()
	d, why, err := s.P.Builds.ReceiveWebhook(context.Background(), hook, in)
	if err != nil {
		t.Fatal(err)
	}
	return d, why
}

func buildsOf(t *testing.T, s *controltest.Shop, svc *model.Service) []*model.Build {
	t.Helper()
	page, err := s.P.Builds.Builds(s.Admin, svc, nil, store.PageArgs{First: store.MaxPage})
	if err != nil {
		t.Fatal(err)
	}
	return page.Items
}

func build(t *testing.T, s *controltest.Shop, id model.BuildID) *model.Build {
	t.Helper()
	b, err := s.P.Builds.Build(s.Admin, id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func deployment(t *testing.T, s *controltest.Shop, id model.DeploymentID) *model.Deployment {
	t.Helper()
	d, err := s.P.Delivery.Deployment(s.Admin, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// deliveries lists a hook's deliveries, newest first.
func deliveries(t *testing.T, s *controltest.Shop, hook model.WebhookID) []*model.WebhookDelivery {
	t.Helper()
	w, err := s.P.Builds.Webhook(s.Admin, hook)
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.P.Builds.WebhookDeliveries(s.Admin, w, store.PageArgs{First: store.MaxPage})
	if err != nil {
		t.Fatal(err)
	}
	return page.Items
}

// audit lists the tenant's audit events, newest first.
func audit(t *testing.T, s *controltest.Shop) []*model.AuditEvent {
	t.Helper()
	page, err := s.P.AuditEvents(s.Admin, s.Boot.Tenant.ID, store.AuditFilter{}, store.PageArgs{First: store.MaxPage})
	if err != nil {
		t.Fatal(err)
	}
	if page.HasNext {
		t.Fatal("more audit events than a page: the counts below would not see a change")
	}
	return page.Items
}

// releaseCount counts a service's releases.
func releaseCount(t *testing.T, s *controltest.Shop, svc *model.Service) int {
	t.Helper()
	page, err := s.P.Delivery.Releases(s.Admin, svc, nil, store.PageArgs{First: store.MaxPage})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Items)
}

// agentOf plays the agent of the shop's cluster: it reports once, so the
// cluster counts as connected.
func agentOf(t *testing.T, s *controltest.Shop) *agents.AgentSide {
	t.Helper()
	side, err := s.P.Agents.AgentSideOf(context.Background(), s.Cluster.ID)
	if err != nil {
		t.Fatal(err)
	}
	heartbeat(t, side)
	return side
}

func heartbeat(t *testing.T, side *agents.AgentSide) {
	t.Helper()
	if err := side.Report(context.Background(), []byte(`{}`), 0, ""); err != nil {
		t.Fatal(err)
	}
}

// running is the ids of the builds the agent should be running now.
func running(t *testing.T, side *agents.AgentSide) []model.BuildID {
	t.Helper()
	jobs, err := side.Builds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := []model.BuildID{}
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	slices.Sort(ids)
	return ids
}

func jobs(t *testing.T, s *controltest.Shop) core.JobReport {
	t.Helper()
	rep, err := s.P.RunJobsOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// wait waits for a wake of sub: what the hub waits on before it sends an
// agent its builds again.
func wait(t *testing.T, sub *bus.Sub, what string) {
	t.Helper()
	select {
	case <-sub.C:
	case <-time.After(10 * time.Second):
		t.Fatalf("no note in 10s: %s", what)
	}
}

func field(p core.Problem) string { return strings.Join(p.Field, ".") }

// problem is the first problem err carries, failing the test when it
// carries none.
func problem(t *testing.T, what string, err error) core.Problem {
	t.Helper()
	ps, ok := core.AsProblems(err)
	if !ok || len(ps) == 0 {
		t.Fatalf("%s: %v, want a problem with the input", what, err)
	}
	return ps[0]
}

// A Git source that is not one is refused on the field it concerns, on a
// new service and on a change, and stores nothing; a valid one gets the
// defaults and clean paths.
func TestGitSourceBadInputChangesNothing(t *testing.T) {
	s := controltest.Sealed(t)
	other, err := s.P.Delivery.CreateProject(s.Admin, s.Boot.Tenant.ID, "back-office", "")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := "elsewhere"
	otherEnv, err := s.P.Delivery.CreateEnvironment(s.Admin, other.ID, delivery.EnvironmentInput{Name: &elsewhere})
	if err != nil {
		t.Fatal(err)
	}
	nul := "ghp_token\x00"
	cases := []struct {
		name  string
		git   delivery.GitInput
		field string
	}{
		{"not a URL", delivery.GitInput{Repository: "shop-api", Branch: "main"}, "repository"},
		{"an empty repository", delivery.GitInput{Repository: "", Branch: "main"}, "repository"},
		{"credentials in the URL", delivery.GitInput{Repository: "https://bot:hunter2@github.com/acme/shop", Branch: "main"}, "repository"},
		{"a long repository", delivery.GitInput{Repository: "https://github.com/acme/" + strings.Repeat("r", 600), Branch: "main"}, "repository"},
		{"an empty branch", delivery.GitInput{Repository: repository, Branch: ""}, "branch"},
		{"a branch with a space", delivery.GitInput{Repository: repository, Branch: "my branch"}, "branch"},
		{"a branch with ..", delivery.GitInput{Repository: repository, Branch: "a..b"}, "branch"},
		{"a branch ending in /", delivery.GitInput{Repository: repository, Branch: "release/"}, "branch"},
		{"a branch ending in .lock", delivery.GitInput{Repository: repository, Branch: "main.lock"}, "branch"},
		{"a branch starting with -", delivery.GitInput{Repository: repository, Branch: "-f"}, "branch"},
		{"a context outside", delivery.GitInput{Repository: repository, Branch: "main", ContextDir: "../etc"}, "contextDir"},
		{"a context that climbs out", delivery.GitInput{Repository: repository, Branch: "main", ContextDir: "api/../../etc"}, "contextDir"},
		{"an absolute Dockerfile", delivery.GitInput{Repository: repository, Branch: "main", Dockerfile: "/Dockerfile"}, "dockerfile"},
		{"a Dockerfile with a backslash", delivery.GitInput{Repository: repository, Branch: "main", Dockerfile: `..\Dockerfile`}, "dockerfile"},
		{"another project's environment", delivery.GitInput{Repository: repository, Branch: "main",
			DeployOnPush: []model.EnvironmentID{s.Env.ID, otherEnv.ID}}, "deployOnPush.1"},
		{"a credential with a NUL", delivery.GitInput{Repository: repository, Branch: "main", Credential: &nul}, "credential"},
	}
	image := "registry.nebula-build.svc:5000/shop/api"
	before := len(audit(t, s))
	for i, c := range cases {
		g := c.git
		svc, err := s.P.Delivery.CreateService(s.Admin, s.Project.ID, delivery.ServiceInput{Name: fmt.Sprintf("git-%d", i),
			Image: &image, Processes: []model.Process{{Name: "web", Replicas: 1}}, Git: &g})
		ps, ok := core.AsProblems(err)
		if !ok || len(ps) == 0 {
			t.Errorf("%s: %v, want a problem with the input", c.name, err)
			continue
		}
		if want := "input.git." + c.field; field(ps[0]) != want || ps[0].Code != core.CodeInvalid {
			t.Errorf("%s: problem %q on %s (%s), want %s on %s", c.name, ps[0].Message, field(ps[0]), ps[0].Code, core.CodeInvalid, want)
		}
		if svc != nil {
			t.Errorf("%s: a refused service was returned: %+v", c.name, svc)
		}
		if strings.Contains(ps.Error(), "hunter2") || strings.Contains(ps.Error(), "ghp_token") {
			t.Errorf("%s: the problem quotes a credential: %s", c.name, ps.Error())
		}
	}
	page, err := s.P.Delivery.ServicesOf(s.Admin, []model.Scope{s.Project.Scope()}, store.PageArgs{First: store.MaxPage})
	if err != nil {
		t.Fatal(err)
	}
	if got := page[string(s.Project.ID)].Items; len(got) != 1 || got[0].ID != s.Svc.ID {
		t.Fatalf("the project's services after refused Git sources: %d, want only %s", len(got), s.Svc.Name)
	}
	if n := len(audit(t, s)); n != before {
		t.Fatalf("refused Git sources wrote %d audit events", n-before)
	}

	// A valid source gets the defaults and clean paths; a bad change to it
	// changes nothing.
	svc := gitService(t, s, "cart", "git@github.com:Nebula-Samples/Cart", func(g *delivery.GitInput) {
		g.ContextDir, g.Dockerfile = "./services/cart/", "build//Dockerfile"
	}, s.Env.ID, s.Env.ID)
	if g := svc.Git; g.ContextDir != "services/cart" || g.Dockerfile != "build/Dockerfile" || !slices.Equal(g.DeployOnPush, []model.EnvironmentID{s.Env.ID}) {
		t.Errorf("the Git source as stored: %+v, want clean paths and the environment once", g)
	}
	plain := gitService(t, s, "plain", repository, nil)
	if plain.Git.ContextDir != "." || plain.Git.Dockerfile != "Dockerfile" || plain.Git.DeployOnPush == nil {
		t.Errorf("the defaults: %+v, want context . and Dockerfile, deploying nowhere", plain.Git)
	}
	before = len(audit(t, s))
	_, err = s.P.Delivery.UpdateService(s.Admin, svc.ID, delivery.ServiceInput{Git: &delivery.GitInput{Repository: repository, Branch: "a b"}})
	if p := problem(t, "a change to a bad branch", err); field(p) != "input.git.branch" {
		t.Errorf("a change to a bad branch: problem on %s", field(p))
	}
	_, err = s.P.Delivery.UpdateService(s.Admin, svc.ID, delivery.ServiceInput{Git: &delivery.GitInput{Repository: repository, Branch: "main"},
		RemoveGit: true})
	if p := problem(t, "a source given and removed", err); field(p) != "input.removeGit" {
		t.Errorf("a source given and removed: problem on %s", field(p))
	}
	got, err := s.P.Delivery.Service(s.Admin, svc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Git == nil || got.Git.Repository != "git@github.com:Nebula-Samples/Cart" || got.Git.Branch != "main" {
		t.Errorf("after refused changes the source is %+v", got.Git)
	}
	if n := len(audit(t, s)); n != before {
		t.Errorf("refused changes wrote %d audit events", n-before)
	}

	// Without a master key nothing sealed can be made: a credential, a hook.
	bare := controltest.New(t)
	token := "ghp_NoKeyToSealThis0123456789"
	_, err = bare.P.Delivery.CreateService(bare.Admin, bare.Project.ID, delivery.ServiceInput{Name: "sealed", Image: &image,
		Processes: []model.Process{{Name: "web", Replicas: 1}}, Git: &delivery.GitInput{Repository: repository, Branch: "main", Credential: &token}})
	if p := problem(t, "a credential without a master key", err); field(p) != "input.git.credential" || !strings.Contains(p.Message, "master key") {
		t.Errorf("a credential without a master key: %q on %s", p.Message, field(p))
	}
	w, secret, err := bare.P.Builds.CreateWebhook(bare.Admin, bare.Project.ID, nil)
	if p := problem(t, "a hook without a master key", err); !strings.Contains(p.Message, "master key") || w != nil || secret != "" {
		t.Errorf("a hook without a master key: %q, %v, secret %q", p.Message, w, secret)
	}
}

// A deploy of a commit takes a full commit of a Git service to an
// environment of its project that one cluster builds on; anything else is
// a problem on its field that changes nothing. A commit being built is a
// conflict.
func TestDeployCommitBadInputChangesNothing(t *testing.T) {
	s := controltest.Sealed(t)
	svc := gitService(t, s, "cart", repository, nil)
	other, err := s.P.Delivery.CreateProject(s.Admin, s.Boot.Tenant.ID, "back-office", "")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := "elsewhere"
	otherEnv, err := s.P.Delivery.CreateEnvironment(s.Admin, other.ID, delivery.EnvironmentInput{Name: &elsewhere})
	if err != nil {
		t.Fatal(err)
	}
	before := len(audit(t, s))
	for _, c := range []struct {
		name   string
		svc    model.ServiceID
		env    model.EnvironmentID
		commit string
		field  string
		says   string
	}{
		{"a short commit", svc.ID, s.Env.ID, "9f2c4b7", "input.commit", "full commit id"},
		{"a commit of 41 digits", svc.ID, s.Env.ID, commitA + "0", "input.commit", "full commit id"},
		{"a commit that is not hex", svc.ID, s.Env.ID, strings.Repeat("g", 40), "input.commit", "full commit id"},
		{"a branch name", svc.ID, s.Env.ID, "main", "input.commit", "full commit id"},
		{"an image service", s.Svc.ID, s.Env.ID, commitA, "input.commit", "not built from Git"},
		{"another project's environment", svc.ID, otherEnv.ID, commitA, "input.environmentId", "another project"},
	} {
		rel, dep, err := s.P.Delivery.DeployCommit(s.Admin, c.svc, c.env, c.commit)
		ps, ok := core.AsProblems(err)
		if !ok || len(ps) != 1 || field(ps[0]) != c.field || !strings.Contains(ps[0].Message, c.says) {
			t.Errorf("%s: %v (%+v), want one problem on %s saying %q", c.name, err, ps, c.field, c.says)
		}
		if rel != nil || dep != nil {
			t.Errorf("%s: a refused deploy returned %v, %v", c.name, rel, dep)
		}
	}
	_, _, err = s.P.Delivery.DeployBranchHead(s.Admin, s.Svc.ID, s.Env.ID)
	if p := problem(t, "the branch head of an image service", err); field(p) != "input.branchHead" || !strings.Contains(p.Message, "not built from Git") {
		t.Errorf("the branch head of an image service: %q on %s", p.Message, field(p))
	}
	if n := len(buildsOf(t, s, svc)) + len(buildsOf(t, s, s.Svc)); n != 0 {
		t.Fatalf("refused deploys made %d builds", n)
	}
	if n := releaseCount(t, s, svc) + releaseCount(t, s, s.Svc); n != 0 {
		t.Fatalf("refused deploys made %d releases", n)
	}
	if n := len(audit(t, s)); n != before {
		t.Fatalf("refused deploys wrote %d audit events", n-before)
	}

	// Upper case is the same commit; while it builds, deploying it again
	// is a conflict.
	rel, dep, err := s.P.Delivery.DeployCommit(s.Admin, svc.ID, s.Env.ID, strings.ToUpper(commitA))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.P.Builds.BuildOf(s.Admin, dep)
	if err != nil || b == nil {
		t.Fatalf("the deployment's build: %v, %v", b, err)
	}
	if b.Commit != commitA || rel.ImageDigest != "" || dep.Stage != model.StageBuilding {
		t.Errorf("deploy of the commit: build of %q, release digest %q, deployment %s", b.Commit, rel.ImageDigest, dep.Stage)
	}
	before = len(audit(t, s))
	_, _, err = s.P.Delivery.DeployCommit(s.Admin, svc.ID, s.Env.ID, commitA)
	if p := problem(t, "the commit again while it builds", err); p.Code != core.CodeConflict || field(p) != "input.commit" {
		t.Errorf("the commit again while it builds: %s on %s (%q), want a conflict", p.Code, field(p), p.Message)
	}
	if n := len(buildsOf(t, s, svc)); n != 1 {
		t.Errorf("the conflicting deploy left %d builds, want 1", n)
	}
	if n := len(audit(t, s)); n != before {
		t.Errorf("the conflicting deploy wrote %d audit events", n-before)
	}

	// An environment that lands on two clusters has no cluster to build on.
	if _, _, err := s.P.Clusters.RegisterCluster(s.Admin, s.Boot.Tenant.ID, "eu-2", nil); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.P.Delivery.DeployCommit(s.Admin, svc.ID, s.Env.ID, commitB)
	if p := problem(t, "a build with two clusters to choose from", err); field(p) != "input.environmentId" ||
		!strings.Contains(p.Message, "no single cluster to build on") {
		t.Errorf("a build with two clusters to choose from: %q on %s", p.Message, field(p))
	}
	if n := len(buildsOf(t, s, svc)); n != 1 {
		t.Errorf("the unplaceable deploy left %d builds, want 1", n)
	}
}

// Hooks are managed by project managers, redelivered by tenant admins,
// read by viewers; commits are deployed by editors. Another tenant sees
// none of it.
func TestLowerRolesAndOtherTenantsRefused(t *testing.T) {
	s := controltest.Sealed(t)
	svc := gitService(t, s, "cart", repository, nil, s.Env.ID)
	w, secret, err := s.P.Builds.CreateWebhook(s.Admin, s.Project.ID, &svc.ID)
	if err != nil {
		t.Fatal(err)
	}
	d, why := receive(t, s, w.ID, github("push", "d-1", secret, pushBody(t, "refs/heads/main", commitA)))
	if why != builds.NotRefused || len(d.Builds) != 1 {
		t.Fatalf("the push: %v %s %q", why, d.Outcome, d.Reason)
	}
	viewer := s.Person(t, "viewer@acme.test", model.TenantMember, model.ProjectViewer)
	editor := s.Person(t, "editor@acme.test", model.TenantMember, model.ProjectEditor)
	manager := s.Person(t, "pm@acme.test", model.TenantMember, model.ProjectManager)
	outsider := s.Person(t, "outsider@acme.test", model.TenantMember, "")
	foreign := s.OtherAdmin(t)
	before := len(audit(t, s))

	forbidden := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, authz.ErrForbidden) {
			t.Errorf("%s: %v, want forbidden", what, err)
		}
	}
	hidden := func(what string, err error) {
		t.Helper()
		if !core.IsNotFound(err) {
			t.Errorf("%s: %v, want not found", what, err)
		}
	}
	for role, ctx := range map[string]context.Context{"a viewer": viewer, "an editor": editor} {
		_, _, err := s.P.Builds.CreateWebhook(ctx, s.Project.ID, &svc.ID)
		forbidden(role+" made a hook", err)
		_, _, err = s.P.Builds.RotateWebhookSecret(ctx, w.ID)
		forbidden(role+" rotated a hook's secret", err)
		forbidden(role+" deleted a hook", s.P.Builds.DeleteWebhook(ctx, w.ID))
		// Reading is a viewer's right.
		if got, err := s.P.Builds.Webhook(ctx, w.ID); err != nil || got.ID != w.ID {
			t.Errorf("%s reads the hook: %v", role, err)
		}
		if got, err := s.P.Builds.Build(ctx, d.Builds[0]); err != nil || got.ID != d.Builds[0] {
			t.Errorf("%s reads the build: %v", role, err)
		}
	}
	_, _, err = s.P.Delivery.DeployCommit(viewer, svc.ID, s.Env.ID, commitB)
	forbidden("a viewer deployed a commit", err)
	_, err = s.P.Builds.Redeliver(manager, d.ID)
	forbidden("a project manager redelivered", err)
	_, err = s.P.Builds.Redeliver(editor, d.ID)
	forbidden("an editor redelivered", err)

	// A member with no role in the project reads nothing of it.
	_, err = s.P.Builds.Webhook(outsider, w.ID)
	hidden("a member outside the project read the hook", err)
	_, err = s.P.Builds.Build(outsider, d.Builds[0])
	hidden("a member outside the project read the build", err)

	// Another tenant's admin does not even see them.
	_, err = s.P.Builds.Webhook(foreign, w.ID)
	hidden("another tenant read the hook", err)
	_, err = s.P.Builds.WebhookDelivery(foreign, d.ID)
	hidden("another tenant read the delivery", err)
	_, err = s.P.Builds.Build(foreign, d.Builds[0])
	hidden("another tenant read the build", err)
	_, _, err = s.P.Builds.CreateWebhook(foreign, s.Project.ID, nil)
	hidden("another tenant made a hook in the project", err)
	_, _, err = s.P.Builds.RotateWebhookSecret(foreign, w.ID)
	hidden("another tenant rotated the hook's secret", err)
	hidden("another tenant deleted the hook", s.P.Builds.DeleteWebhook(foreign, w.ID))
	_, err = s.P.Builds.Redeliver(foreign, d.ID)
	hidden("another tenant redelivered", err)
	_, _, err = s.P.Delivery.DeployCommit(foreign, svc.ID, s.Env.ID, commitB)
	hidden("another tenant deployed a commit", err)
	if m, err := s.P.Builds.BuildsByIDs(foreign, d.Builds); err != nil || len(m) != 0 {
		t.Errorf("another tenant's dataloader read %d builds (%v)", len(m), err)
	}
	if m, err := s.P.Builds.WebhooksByIDs(foreign, []model.WebhookID{w.ID}); err != nil || len(m) != 0 {
		t.Errorf("another tenant's dataloader read %d hooks (%v)", len(m), err)
	}
	_, err = s.P.Builds.WebhookDeliveries(foreign, w, store.PageArgs{First: 10})
	if err == nil {
		t.Error("another tenant listed the hook's deliveries")
	}
	_, err = s.P.Builds.Builds(foreign, svc, nil, store.PageArgs{First: 10})
	if err == nil {
		t.Error("another tenant listed the service's builds")
	}

	if n := len(audit(t, s)); n != before {
		t.Fatalf("refused calls wrote %d audit events", n-before)
	}
	if n := len(buildsOf(t, s, svc)); n != 1 {
		t.Fatalf("refused calls left %d builds, want 1", n)
	}
	// The hook is there with its secret: the refused rotations and
	// deletions did nothing.
	if d, why := receive(t, s, w.ID, github("ping", "ping-1", secret, []byte(`{"zen":"Keep it logically awesome."}`))); why != builds.NotRefused ||
		d.Outcome != model.DeliveryIgnored || !strings.Contains(d.Reason, "a ping") {
		t.Errorf("a ping with the first secret after refused rotations: %v %s %q", why, d.Outcome, d.Reason)
	}

	// What each role may do, it does: an editor deploys a commit, a
	// project manager makes a hook of the project.
	if _, dep, err := s.P.Delivery.DeployCommit(editor, svc.ID, s.Env.ID, commitB); err != nil || dep.Stage != model.StageBuilding {
		t.Errorf("an editor's deploy of a commit: %v", err)
	}
	if pw, ps, err := s.P.Builds.CreateWebhook(manager, s.Project.ID, nil); err != nil || pw.ServiceID != nil || ps == "" {
		t.Errorf("a project manager's project hook: %v", err)
	}
}

// A hook's secret is the answer to the call that made (or rotated) it, and
// afterwards is in nothing: not in the hook read back by any way, not in
// the audit history or the deliveries, not in any row of the database,
// plain, base64 or hex. A rotation stops the old one at once.
func TestWebhookSecretShownOnce(t *testing.T) {
	s := controltest.Sealed(t)
	svc := gitService(t, s, "cart", repository, nil, s.Env.ID)
	w, secret, err := s.P.Builds.CreateWebhook(s.Admin, s.Project.ID, &svc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "nbwh_") || len(secret) != len("nbwh_")+43 {
		t.Fatalf("the hook's secret is %q, want nbwh_ and 43 characters", secret)
	}
	if w.Secret == "" || strings.Contains(w.Secret, secret) {
		t.Fatalf("the hook holds its secret unsealed (or none): %q", w.Secret)
	}
	// The hook works with it, in GitHub's scheme and GitLab's (the token
	// sent as is).
	if d, why := receive(t, s, w.ID, github("push", "gh-1", secret, pushBody(t, "refs/heads/main", commitA))); why != builds.NotRefused ||
		d.Outcome != model.DeliveryBuildQueued {
		t.Fatalf("a push signed with the secret: %v %s %q", why, d.Outcome, d.Reason)
	}
	gl := http.Header{}
	gl.Set("X-Gitlab-Event", "Pipeline Hook")
	gl.Set("X-Gitlab-Event-UUID", "gl-1")
	gl.Set("X-Gitlab-Token", secret)
	if d, why := receive(t, s, w.ID, builds.Inbound{Header: gl, Body: []byte(`{"object_kind":"pipeline"}`)}); why != builds.NotRefused ||
		d.Outcome != model.DeliveryIgnored {
		t.Fatalf("a GitLab event with the secret as its token: %v %s %q", why, d.Outcome, d.Reason)
	}

	rotated, fresh, err := s.P.Builds.RotateWebhookSecret(s.Admin, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fresh, "nbwh_") || fresh == secret || rotated.Secret == w.Secret {
		t.Fatalf("the rotation gave %q (sealed %q), want a new secret", fresh, rotated.Secret)
	}
	// The old secret stops at once; the new one works.
	if d, why := receive(t, s, w.ID, github("push", "gh-2", secret, pushBody(t, "refs/heads/main", commitB))); why != builds.RefusedSignature ||
		d.Outcome != model.DeliveryRefused || len(d.Builds) != 0 {
		t.Errorf("a push signed with the old secret: %v %s %q", why, d.Outcome, d.Reason)
	}
	if d, why := receive(t, s, w.ID, github("push", "gh-3", fresh, pushBody(t, "refs/heads/main", commitB))); why != builds.NotRefused ||
		d.Outcome != model.DeliveryBuildQueued {
		t.Errorf("a push signed with the new secret: %v %s %q", why, d.Outcome, d.Reason)
	}

	// Every way the hook is read back, and everything kept.
	var kept []any
	one, err := s.P.Builds.Webhook(s.Admin, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	of, err := s.P.Builds.WebhookOf(s.Admin, svc)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := s.P.Builds.WebhooksOf(s.Admin, s.Project)
	if err != nil {
		t.Fatal(err)
	}
	byID, err := s.P.Builds.WebhooksByIDs(s.Admin, []model.WebhookID{w.ID})
	if err != nil {
		t.Fatal(err)
	}
	if of == nil || of.ID != w.ID || len(proj) != 1 || byID[w.ID] == nil {
		t.Fatalf("the hook read back: of the service %v, of the project %d, by id %v", of, len(proj), byID)
	}
	kept = append(kept, rotated, one, of, proj, byID, deliveries(t, s, w.ID), audit(t, s))
	raw, err := json.Marshal(kept)
	if err != nil {
		t.Fatal(err)
	}
	everything := string(raw) + "\n" + dumpDatabase(t, s)
	for _, sec := range []string{secret, fresh} {
		for form, v := range secretForms(sec) {
			if strings.Contains(everything, v) {
				t.Errorf("the secret %s… is kept %s", sec[:9], form)
			}
		}
	}
	// The check can fail: the dump holds what it should.
	if !strings.Contains(everything, string(w.ID)) || !strings.Contains(everything, "gh-3") {
		t.Fatal("the dump of the database lacks the hook and its deliveries")
	}
}

// secretForms is a secret as it might be kept: whole and without its
// prefix, plain, in base64 and in hex.
func secretForms(secret string) map[string]string {
	out := map[string]string{}
	for name, v := range map[string]string{"whole": secret, "without its prefix": strings.TrimPrefix(secret, "nbwh_")} {
		b := []byte(v)
		out[name+", plain"] = v
		out[name+", base64"] = base64.StdEncoding.EncodeToString(b)
		out[name+", base64 unpadded"] = base64.RawStdEncoding.EncodeToString(b)
		out[name+", base64url"] = base64.RawURLEncoding.EncodeToString(b)
		out[name+", hex"] = hex.EncodeToString(b)
		out[name+", HEX"] = strings.ToUpper(hex.EncodeToString(b))
	}
	return out
}

// dumpDatabase is every value of every table of the shop's database, as
// text.
func dumpDatabase(t *testing.T, s *controltest.Shop) string {
	t.Helper()
	ctx := context.Background()
	q := s.St.Q()
	strs := func(sql string) []string {
		rows, err := q.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var b strings.Builder
	tables := strs(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if len(tables) < 10 {
		t.Fatalf("the database has tables %q", tables)
	}
	for _, table := range tables {
		cols := strs(`SELECT name FROM pragma_table_info('` + table + `')`)
		rows, err := q.Query(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if raw, ok := v.([]byte); ok {
					b.Write(raw)
				} else {
					fmt.Fprint(&b, v)
				}
				b.WriteByte('\t')
			}
			b.WriteByte('\n')
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// ReceiveWebhook: what is not trusted is refused and recorded without its
// body, a refused delivery id can still be used by the provider, a replay
// (same id, or the same push under a new id) builds nothing, and what a
// trusted push does not build is recorded with why.
func TestReceiveWebhook(t *testing.T) {
	s := controltest.Sealed(t)
	svc := gitService(t, s, "cart", repository, nil, s.Env.ID)
	w, secret, err := s.P.Builds.CreateWebhook(s.Admin, s.Project.ID, &svc.ID)
	if err != nil {
		t.Fatal(err)
	}
	body := pushBody(t, "refs/heads/main", commitA)

	// A hook that does not exist records nothing.
	if _, _, err := s.P.Builds.ReceiveWebhook(context.Background(), "01234567-89ab-7def-8123-456789abcdef",
		github("push", "d-1", secret, body)); !core.IsNotFound(err) {
		t.Errorf("a delivery to no hook: %v, want not found", err)
	}

	// Refused: a wrong signature, no signature, no provider, no delivery
	// id, an oversized body. Each is recorded, none keeps its body.
	unsigned := github("push", "d-1", secret, body)
	unsigned.Header.Del("X-Hub-Signature-256")
	noID := github("push", "", secret, body)
	big := github("push", "d-big", secret, body)
	big.Oversized = true
	refusals := []struct {
		what   string
		in     builds.Inbound
		why    builds.Refusal
		reason string
	}{
		{"a wrong signature", github("push", "d-1", "nbwh_not-the-secret", body), builds.RefusedSignature, webhook.ErrBadSignature.Error()},
		{"no signature", unsigned, builds.RefusedSignature, webhook.ErrBadSignature.Error()},
		{"a tampered body", builds.Inbound{Header: github("push", "d-1", secret, body).Header,
			Body: pushBody(t, "refs/heads/main", commitB)}, builds.RefusedSignature, webhook.ErrBadSignature.Error()},
		{"no provider", builds.Inbound{Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, builds.RefusedUnknown,
			webhook.ErrUnknownProvider.Error()},
		{"no delivery id", noID, builds.RefusedUnknown, webhook.ErrNoDeliveryID.Error()},
		{"an oversized body", big, builds.RefusedOversized, "the body is over 1048576 bytes"},
	}
	for _, c := range refusals {
		d, why := receive(t, s, w.ID, c.in)
		if why != c.why || d.Outcome != model.DeliveryRefused || !strings.HasPrefix(d.Reason, c.reason) || d.Body != nil || len(d.Builds) != 0 {
			t.Errorf("%s: %v %s %q (body kept: %v), want refusal %v saying %q", c.what, why, d.Outcome, d.Reason, d.Body != nil, c.why, c.reason)
		}
	}
	ds := deliveries(t, s, w.ID)
	if len(ds) != len(refusals) {
		t.Fatalf("%d deliveries recorded after %d refusals", len(ds), len(refusals))
	}
	for _, d := range ds {
		if d.Outcome != model.DeliveryRefused || d.Body != nil || d.WebhookID != w.ID {
			t.Errorf("a refusal recorded as %s (body kept: %v)", d.Outcome, d.Body != nil)
		}
	}
	if got := ds[len(ds)-1]; got.Provider != string(webhook.GitHub) || got.DeliveryID != "d-1" || got.Event != "push" ||
		!strings.Contains(got.Reason, "rotate it") {
		t.Errorf("the refused signature as recorded: %+v", got)
	}
	if n := len(buildsOf(t, s, svc)); n != 0 {
		t.Fatalf("refused deliveries made %d builds", n)
	}

	// The provider's own delivery d-1, signed: a refused delivery id did
	// not burn it. It builds the commit for the environment.
	d, why := receive(t, s, w.ID, github("push", "d-1", secret, body))
	if why != builds.NotRefused || d.Outcome != model.DeliveryBuildQueued || len(d.Builds) != 1 || d.Ref != "refs/heads/main" ||
		d.Commit != commitA || d.Body == nil {
		t.Fatalf("the signed push: %v %s %q %+v", why, d.Outcome, d.Reason, d)
	}
	b := build(t, s, d.Builds[0])
	if b.Status != model.BuildQueued || b.Commit != commitA || b.Repository != repository || b.Branch != "main" ||
		b.EnvironmentID != s.Env.ID || b.ClusterID == nil || *b.ClusterID != s.Cluster.ID || b.DeliveryID == nil || *b.DeliveryID != d.ID ||
		b.DeploymentID == nil || b.CreatedBy != nil {
		t.Errorf("the push's build: %+v", b)
	}
	if dep := deployment(t, s, *b.DeploymentID); dep.Stage != model.StageBuilding || dep.ClusterID != s.Cluster.ID {
		t.Errorf("the push's deployment: %s on %s, want BUILDING on %s", dep.Stage, dep.ClusterID, s.Cluster.ID)
	}
	var queued []*model.AuditEvent
	for _, ev := range audit(t, s) {
		if ev.Action == builds.ActBuildQueue.Name {
			queued = append(queued, ev)
		}
	}
	if len(queued) != 1 || queued[0].TargetID == nil || *queued[0].TargetID != string(b.ID) || queued[0].ActorID != nil ||
		queued[0].Details["actor"] != "webhook:"+string(w.ID) || queued[0].Details["pusher"] != "ada-dev" {
		t.Errorf("build.queue events: %+v, want one with the hook as its actor", queued)
	}

	// Replays build nothing: the same delivery again, and the same signed
	// push under a new delivery id.
	replays := []struct {
		what, id, says string
	}{
		{"the same delivery again", "d-1", "delivery d-1 was received already"},
		{"the same push under a new id", "d-2", "was pushed to refs/heads/main already"},
	}
	for _, c := range replays {
		d, why := receive(t, s, w.ID, github("push", c.id, secret, body))
		if why != builds.RefusedReplay || d.Outcome != model.DeliveryRefused || !strings.Contains(d.Reason, c.says) ||
			len(d.Builds) != 0 || d.Body != nil {
			t.Errorf("%s: %v %s %q, want a replay refused", c.what, why, d.Outcome, d.Reason)
		}
	}
	if got := buildsOf(t, s, svc); len(got) != 1 || got[0].ID != b.ID {
		t.Fatalf("after the replays the service has %d builds, want the one", len(got))
	}

	// Trusted, and building nothing, with why: a ping, another branch, a
	// tag, a deletion, not a push; a signed body that is no push is
	// refused.
	for _, c := range []struct {
		what    string
		in      builds.Inbound
		why     builds.Refusal
		outcome model.DeliveryOutcome
		reason  string
	}{
		{"a ping", github("ping", "p-1", secret, []byte(`{"zen":"Design for failure."}`)), builds.NotRefused, model.DeliveryIgnored, "a ping"},
		{"an issue", github("issues", "i-1", secret, []byte(`{"action":"opened"}`)), builds.NotRefused, model.DeliveryIgnored, `a "issues" event`},
		{"another branch", github("push", "b-1", secret, pushBody(t, "refs/heads/feature/cart", commitB)), builds.NotRefused,
			model.DeliveryIgnored, "a push to branch feature/cart, not the tracked branch main"},
		{"a tag", github("push", "t-1", secret, pushBody(t, "refs/tags/v1.4.0", commitB)), builds.NotRefused,
			model.DeliveryIgnored, "a tag push (v1.4.0)"},
		{"a deletion", github("push", "x-1", secret, pushBody(t, "refs/heads/main", strings.Repeat("0", 40))), builds.NotRefused,
			model.DeliveryIgnored, "the push deleted refs/heads/main"},
		{"a signed body that is no push", github("push", "m-1", secret, []byte(`{"ref":"main"}`)), builds.RefusedMalformed,
			model.DeliveryRefused, "the push names no ref"},
	} {
		d, why := receive(t, s, w.ID, c.in)
		if why != c.why || d.Outcome != c.outcome || !strings.HasPrefix(d.Reason, c.reason) || len(d.Builds) != 0 {
			t.Errorf("%s: %v %s %q, want %v %s %q", c.what, why, d.Outcome, d.Reason, c.why, c.outcome, c.reason)
		}
		// Trusted deliveries keep their body to be redelivered; refused
		// ones keep none.
		if kept := d.Body != nil; kept != (c.outcome != model.DeliveryRefused) {
			t.Errorf("%s: body kept: %v", c.what, kept)
		}
	}
	if n := len(buildsOf(t, s, svc)); n != 1 {
		t.Fatalf("deliveries that build nothing left %d builds, want 1", n)
	}

	// A tenant admin's redelivery skips the replay check only: the commit
	// is being built, so it is a duplicate. A refused delivery kept
	// nothing to redeliver.
	again, err := s.P.Builds.Redeliver(s.Admin, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Outcome != model.DeliveryDuplicate || again.RedeliveryOf == nil || *again.RedeliveryOf != d.ID || len(again.Builds) != 0 ||
		again.RedeliveredBy == nil {
		t.Errorf("the redelivery: %s %q %+v", again.Outcome, again.Reason, again)
	}
	all := deliveries(t, s, w.ID)
	refused := all[len(all)-1] // the oldest: the wrong signature
	if refused.Outcome != model.DeliveryRefused || refused.DeliveryID != "d-1" {
		t.Fatalf("the oldest delivery is %s %s, want the refused d-1", refused.Outcome, refused.DeliveryID)
	}
	if _, err := s.P.Builds.Redeliver(s.Admin, refused.ID); field(problem(t, "redelivering a refused delivery", err)) != "input.deliveryId" ||
		!strings.Contains(err.Error(), "kept no body") {
		t.Errorf("redelivering a refused delivery: %v", err)
	}
	if n := len(buildsOf(t, s, svc)); n != 1 {
		t.Fatalf("the redeliveries left %d builds, want 1", n)
	}

	// A hook of a service that is not built from Git takes pushes and
	// builds nothing, saying why.
	ih, isecret, err := s.P.Builds.CreateWebhook(s.Admin, s.Project.ID, &s.Svc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d, why := receive(t, s, ih.ID, github("push", "img-1", isecret, body)); why != builds.NotRefused || d.Outcome != model.DeliveryIgnored ||
		d.Reason != "service api is not built from Git" {
		t.Errorf("a push to an image service's hook: %v %s %q", why, d.Outcome, d.Reason)
	}
	if n := len(buildsOf(t, s, s.Svc)); n != 0 {
		t.Errorf("the image service has %d builds", n)
	}
	// A service has one hook; a service of another project has none here.
	if _, sec, err := s.P.Builds.CreateWebhook(s.Admin, s.Project.ID, &svc.ID); problem(t, "a second hook of a service", err).Code != core.CodeConflict || sec != "" {
		t.Errorf("a second hook of a service: %v", err)
	}
	other, err := s.P.Delivery.CreateProject(s.Admin, s.Boot.Tenant.ID, "back-office", "")
	if err != nil {
		t.Fatal(err)
	}
	lone := gitService(t, s, "lone", "https://github.com/nebula-samples/lone", nil)
	if _, sec, err := s.P.Builds.CreateWebhook(s.Admin, other.ID, &lone.ID); !strings.Contains(problem(t, "a hook of another project's service", err).Message,
		"not one of the project's") || sec != "" {
		t.Errorf("a hook of another project's service: %v", err)
	}
	if hooks, err := s.P.Builds.WebhooksOf(s.Admin, other); err != nil || len(hooks) != 0 {
		t.Errorf("the other project has hooks %d (%v)", len(hooks), err)
	}
}

// A project's hook builds each of its Git services whose repository the
// push names, however it is written, and the others not.
func TestProjectWebhookRoutesByRepository(t *testing.T) {
	s := controltest.Sealed(t)
	api := gitService(t, s, "api-git", "git@github.com:Nebula-Samples/Shop-API", nil, s.Env.ID)
	web := gitService(t, s, "web", "https://github.com/nebula-samples/shop-web", nil, s.Env.ID)
	w, secret, err := s.P.Builds.CreateWebhook(s.Admin, s.Project.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, why := receive(t, s, w.ID, github("push", "p-1", secret, pushBody(t, "refs/heads/main", commitA)))
	if why != builds.NotRefused || d.Outcome != model.DeliveryBuildQueued || len(d.Builds) != 1 {
		t.Fatalf("the push to the project's hook: %v %s %q", why, d.Outcome, d.Reason)
	}
	if got := buildsOf(t, s, api); len(got) != 1 || got[0].ID != d.Builds[0] {
		t.Errorf("the named repository's service has builds %d, want the push's", len(got))
	}
	if n := len(buildsOf(t, s, web)); n != 0 {
		t.Errorf("another repository's service has %d builds", n)
	}
}

// A deploy of a commit makes a build that waits until its cluster's agent
// is there; the jobs pass then hands it to that cluster (once), with what
// the agent needs to build. Cancelling the deployment cancels the build,
// tells the cluster, and takes it out of the agent's set.
func TestDeployCommitBuildsOnClusterAndCancelStopsIt(t *testing.T) {
	s := controltest.Sealed(t)
	const token = "ghp_TheDeployTokenOfCart0123456789"
	svc := gitService(t, s, "cart", repository, func(g *delivery.GitInput) {
		g.ContextDir, g.Credential = "services/cart", new(token)
	})
	rel, dep, err := s.P.Delivery.DeployCommit(s.Admin, svc.ID, s.Env.ID, commitA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.P.Builds.BuildOf(s.Admin, dep)
	if err != nil || b == nil {
		t.Fatalf("the deployment's build: %v, %v", b, err)
	}
	if b.Status != model.BuildQueued || b.ClusterID == nil || *b.ClusterID != s.Cluster.ID || b.ReleaseID == nil || *b.ReleaseID != rel.ID ||
		b.CreatedBy == nil || b.DeliveryID != nil || b.Attempts != 0 {
		t.Fatalf("the build as queued: %+v", b)
	}
	if dep.Stage != model.StageBuilding || rel.ImageDigest != "" || rel.Number != 1 {
		t.Fatalf("the deployment %s, release %d with digest %q", dep.Stage, rel.Number, rel.ImageDigest)
	}
	// An image deployment has no build.
	_, imageDep := s.Deploy(t, 1)
	if ib, err := s.P.Builds.BuildOf(s.Admin, imageDep); err != nil || ib != nil {
		t.Errorf("the build of an image deployment: %v, %v", ib, err)
	}

	// The cluster's agent has never connected: the pass hands nothing out.
	if rep := jobs(t, s); rep.Builds != 0 {
		t.Fatalf("the pass handed out %d builds to a cluster never connected", rep.Builds)
	}
	if got := build(t, s, b.ID); got.Status != model.BuildQueued || got.Attempts != 0 {
		t.Fatalf("before the agent is there the build is %s (%d attempts)", got.Status, got.Attempts)
	}

	agent := agentOf(t, s)
	if got := running(t, agent); len(got) != 0 {
		t.Fatalf("the agent runs %v before the pass", got)
	}
	if rep := jobs(t, s); rep.Builds != 1 {
		t.Fatalf("the pass with the agent there handed out %d builds, want 1", rep.Builds)
	}
	got := build(t, s, b.ID)
	if got.Status != model.BuildRunning || got.Attempts != 1 || got.HeartbeatAt == nil {
		t.Fatalf("after the pass the build is %s (%d attempts)", got.Status, got.Attempts)
	}
	js, err := agent.Builds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 1 {
		t.Fatalf("the agent's set holds %d builds, want 1", len(js))
	}
	if j := js[0]; j.ID != b.ID || j.Repository != repository || j.Commit != commitA || j.ContextDir != "services/cart" ||
		j.Dockerfile != "Dockerfile" || j.Credential != token || j.Image != svc.Image || j.LogFrom != 0 || j.Builder == "" {
		t.Errorf("the build as the agent gets it: %+v", j)
	}
	// Handed out once: the next pass does nothing.
	if rep := jobs(t, s); rep.Builds != 0 {
		t.Errorf("a second pass handed out %d builds", rep.Builds)
	}
	if got := build(t, s, b.ID); got.Attempts != 1 {
		t.Errorf("the build was handed out %d times", got.Attempts)
	}

	// The cancel: the cluster is told, and its set is empty.
	sub := s.P.Bus().Subscribe(bus.Builds(string(s.Cluster.ID)))
	defer sub.Close()
	cancelled, err := s.P.Delivery.Cancel(s.Admin, dep.ID, "wrong commit")
	if err != nil {
		t.Fatal(err)
	}
	wait(t, sub, "the cluster's builds after the cancel")
	if got := running(t, agent); len(got) != 0 {
		t.Errorf("after the cancel the agent runs %v", got)
	}
	got = build(t, s, b.ID)
	if cancelled.Stage != model.StageCancelled || got.Status != model.BuildCancelled || got.FinishedAt == nil ||
		!strings.Contains(got.Message, "its deployment was cancelled") {
		t.Errorf("after the cancel: deployment %s, build %s %q", cancelled.Stage, got.Status, got.Message)
	}
	if d := deployment(t, s, dep.ID); d.Stage != model.StageCancelled {
		t.Errorf("the deployment read back is %s", d.Stage)
	}
	_, err = s.P.Delivery.Cancel(s.Admin, dep.ID, "again")
	if p := problem(t, "a second cancel", err); p.Code != core.CodeConflict {
		t.Errorf("a second cancel: %s %q", p.Code, p.Message)
	}
	if rep := jobs(t, s); rep.Builds != 0 {
		t.Errorf("a pass after the cancel handed out %d builds", rep.Builds)
	}
	if got := build(t, s, b.ID); got.Status != model.BuildCancelled {
		t.Errorf("a pass after the cancel moved the build to %s", got.Status)
	}
	// A late report of the cancelled build changes nothing.
	if _, err := agent.BuildReport(context.Background(), agents.BuildReport{ID: b.ID, Succeeded: true,
		Digest: controltest.Digest(9)}); err != nil {
		t.Fatal(err)
	}
	if got := build(t, s, b.ID); got.Status != model.BuildCancelled || got.ImageDigest != "" {
		t.Errorf("a late success moved the cancelled build: %s %q", got.Status, got.ImageDigest)
	}

	// A cancelled commit can be deployed again: a new build.
	_, again, err := s.P.Delivery.DeployCommit(s.Admin, svc.ID, s.Env.ID, commitA)
	if err != nil {
		t.Fatalf("deploying the cancelled commit again: %v", err)
	}
	nb, err := s.P.Builds.BuildOf(s.Admin, again)
	if err != nil || nb == nil || nb.ID == b.ID || nb.Status != model.BuildQueued {
		t.Errorf("the new build of the commit: %+v, %v", nb, err)
	}
}

// A newer commit for the same environment wins: the older deployment still
// building is superseded and its build cancelled, also in the agent's set.
func TestNewerCommitSupersedesTheBuild(t *testing.T) {
	s := controltest.Sealed(t)
	svc := gitService(t, s, "cart", repository, nil)
	agent := agentOf(t, s)
	_, first, err := s.P.Delivery.DeployCommit(s.Admin, svc.ID, s.Env.ID, commitA)
	if err != nil {
		t.Fatal(err)
	}
	if rep := jobs(t, s); rep.Builds != 1 {
		t.Fatalf("the pass handed out %d builds, want 1", rep.Builds)
	}
	old, err := s.P.Builds.BuildOf(s.Admin, first)
	if err != nil {
		t.Fatal(err)
	}
	if got := running(t, agent); !slices.Equal(got, []model.BuildID{old.ID}) {
		t.Fatalf("the agent runs %v, want %s", got, old.ID)
	}
	sub := s.P.Bus().Subscribe(bus.Builds(string(s.Cluster.ID)))
	defer sub.Close()
	_, second, err := s.P.Delivery.DeployCommit(s.Admin, svc.ID, s.Env.ID, commitB)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, sub, "the cluster's builds after the newer commit")
	if got := running(t, agent); len(got) != 0 {
		t.Errorf("after the newer commit the agent still runs %v", got)
	}
	if d := deployment(t, s, first.ID); d.Stage != model.StageSuperseded {
		t.Errorf("the older deployment is %s, want SUPERSEDED", d.Stage)
	}
	if b := build(t, s, old.ID); b.Status != model.BuildCancelled || !strings.Contains(b.Message, "superseded by the build of release 2") {
		t.Errorf("the older build: %s %q", b.Status, b.Message)
	}
	if d := deployment(t, s, second.ID); d.Stage != model.StageBuilding {
		t.Errorf("the newer deployment is %s, want BUILDING", d.Stage)
	}
}

// oneSlotShop is a shop on a clock with settings, on TEAM (5 builds at
// once: a cluster's bound of one is the one that holds), whose Git service
// is deployed by commit to prod and, a second later, to staging: two
// builds, oldest first, and the agent of the cluster they build on.
func oneSlotShop(t *testing.T, settings core.BuildSettings) (*controltest.Shop, *controltest.Clock, *agents.AgentSide, *model.Deployment, *model.Deployment) {
	t.Helper()
	c := &controltest.Clock{At: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	s := controltest.Sealed(t, core.WithClock(c.Now), core.WithBuildSettings(settings))
	if _, err := s.P.People.SetTenantPlan(s.Admin, s.Boot.Tenant.ID, model.PlanTeam); err != nil {
		t.Fatal(err)
	}
	staging := "staging"
	env2, err := s.P.Delivery.CreateEnvironment(s.Admin, s.Project.ID, delivery.EnvironmentInput{Name: &staging})
	if err != nil {
		t.Fatal(err)
	}
	svc := gitService(t, s, "cart", repository, nil)
	agent := agentOf(t, s)
	_, prod, err := s.P.Delivery.DeployCommit(s.Admin, svc.ID, s.Env.ID, commitA)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	_, stg, err := s.P.Delivery.DeployCommit(s.Admin, svc.ID, env2.ID, commitB)
	if err != nil {
		t.Fatal(err)
	}
	return s, c, agent, prod, stg
}

// The scheduler runs at most PerCluster builds on a cluster, oldest first;
// a build past its timeout ends TIMED_OUT and its deployment FAILED with
// the end of its log; a build whose agent went silent and away is queued
// again and runs again when it is back, up to its attempts.
func TestSchedulerBoundsTimeoutsAndRetries(t *testing.T) {
	settings := core.DefaultBuildSettings
	settings.PerCluster, settings.Attempts = 1, 2
	s, c, agent, prod, stg := oneSlotShop(t, settings)
	first, err := s.P.Builds.BuildOf(s.Admin, prod)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.P.Builds.BuildOf(s.Admin, stg)
	if err != nil {
		t.Fatal(err)
	}

	// One slot: the oldest runs, the other waits.
	if rep := jobs(t, s); rep.Builds != 1 {
		t.Fatalf("the pass handed out %d builds with one slot", rep.Builds)
	}
	if a, b := build(t, s, first.ID), build(t, s, second.ID); a.Status != model.BuildRunning || b.Status != model.BuildQueued ||
		b.Message != "waiting for a build slot on cluster eu-1" {
		t.Fatalf("with one slot: %s and %s (%q), want the older running", a.Status, b.Status, b.Message)
	}

	// The first runs, writes its log, and runs past the timeout.
	if _, err := agent.BuildReport(context.Background(), agents.BuildReport{ID: first.ID, Running: true, Lines: []agents.LogLine{
		{At: c.Now(), Text: "#1 load build definition"}, {At: c.Now(), Text: "#2 RUN go test ./..."}}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(settings.Timeout + time.Minute)
	heartbeat(t, agent) // the agent is there all along
	if rep := jobs(t, s); rep.Builds != 2 {
		t.Fatalf("the pass after the timeout counted %d builds, want the timeout and the next handed out", rep.Builds)
	}
	timedOut := build(t, s, first.ID)
	if timedOut.Status != model.BuildTimedOut || !strings.Contains(timedOut.Message, "ran longer than 30m0s") {
		t.Errorf("the build past its timeout: %s %q", timedOut.Status, timedOut.Message)
	}
	d := deployment(t, s, prod.ID)
	if d.Stage != model.StageFailed {
		t.Errorf("its deployment is %s, want FAILED", d.Stage)
	}
	events, err := s.P.Delivery.DeploymentEvents(s.Admin, d, store.PageArgs{First: 50})
	if err != nil {
		t.Fatal(err)
	}
	last := events.Items[len(events.Items)-1]
	if last.Stage != model.StageFailed || !strings.Contains(last.Message, "timed out") ||
		!strings.Contains(last.Message, "last lines of its log:\n#1 load build definition\n#2 RUN go test ./...") {
		t.Errorf("the failure says %q", last.Message)
	}
	if got := running(t, agent); !slices.Equal(got, []model.BuildID{second.ID}) {
		t.Fatalf("after the timeout the agent runs %v, want %s", got, second.ID)
	}

	// The agent goes away and the build is silent: queued again.
	c.Advance(settings.Silence + model.DisconnectedAfter)
	if rep := jobs(t, s); rep.Builds != 1 {
		t.Fatalf("the pass after the agent went away counted %d builds, want 1 queued again", rep.Builds)
	}
	if b := build(t, s, second.ID); b.Status != model.BuildQueued || b.Attempts != 1 || !strings.Contains(b.Message, "went away during attempt 1") {
		t.Errorf("the silent build: %s after %d attempts, %q", b.Status, b.Attempts, b.Message)
	}
	if rep := jobs(t, s); rep.Builds != 0 {
		t.Errorf("with the agent away the pass handed out %d builds", rep.Builds)
	}
	// It is back: the build runs again.
	heartbeat(t, agent)
	if rep := jobs(t, s); rep.Builds != 1 {
		t.Fatalf("the pass with the agent back handed out %d builds", rep.Builds)
	}
	if b := build(t, s, second.ID); b.Status != model.BuildRunning || b.Attempts != 2 {
		t.Errorf("the build with the agent back: %s after %d attempts", b.Status, b.Attempts)
	}
	// Away again after its last attempt: it fails, and so does its
	// deployment.
	c.Advance(settings.Silence + model.DisconnectedAfter)
	if rep := jobs(t, s); rep.Builds != 1 {
		t.Fatalf("the pass after the last attempt counted %d builds", rep.Builds)
	}
	if b := build(t, s, second.ID); b.Status != model.BuildFailed || !strings.Contains(b.Message, "during each of 2 attempts") {
		t.Errorf("the build after its last attempt: %s %q", b.Status, b.Message)
	}
	if d := deployment(t, s, stg.ID); d.Stage != model.StageFailed {
		t.Errorf("its deployment is %s, want FAILED", d.Stage)
	}
}

// A tenant's plan bounds its builds at once, though the cluster has room:
// the next waits, saying why, and runs once the plan allows it.
func TestPlanBoundsBuildsAtOnce(t *testing.T) {
	s := controltest.Sealed(t)
	api := gitService(t, s, "cart", repository, nil)
	web := gitService(t, s, "web", "https://github.com/nebula-samples/shop-web", nil)
	agent := agentOf(t, s)
	_, d1, err := s.P.Delivery.DeployCommit(s.Admin, api.ID, s.Env.ID, commitA)
	if err != nil {
		t.Fatal(err)
	}
	_, d2, err := s.P.Delivery.DeployCommit(s.Admin, web.ID, s.Env.ID, commitB)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := s.P.Builds.BuildOf(s.Admin, d1)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := s.P.Builds.BuildOf(s.Admin, d2)
	if err != nil {
		t.Fatal(err)
	}
	if s.Boot.Tenant.PlanName != model.PlanFree || s.P.Settings.Builds.PerCluster < 2 {
		t.Fatalf("the shop is on %s with %d builds a cluster: the plan would not be what holds", s.Boot.Tenant.PlanName,
			s.P.Settings.Builds.PerCluster)
	}
	if rep := jobs(t, s); rep.Builds != 1 {
		t.Fatalf("on FREE the pass handed out %d builds, want 1", rep.Builds)
	}
	if got := running(t, agent); !slices.Equal(got, []model.BuildID{b1.ID}) {
		t.Fatalf("on FREE the agent runs %v, want the older build only", got)
	}
	if b := build(t, s, b2.ID); b.Status != model.BuildQueued || b.Message != "waiting: the FREE plan runs 1 build(s) at once" {
		t.Errorf("the build over the plan: %s %q", b.Status, b.Message)
	}
	if _, err := s.P.People.SetTenantPlan(s.Admin, s.Boot.Tenant.ID, model.PlanTeam); err != nil {
		t.Fatal(err)
	}
	if rep := jobs(t, s); rep.Builds != 1 {
		t.Fatalf("on TEAM the pass handed out %d builds, want the waiting one", rep.Builds)
	}
	want := []model.BuildID{b1.ID, b2.ID}
	slices.Sort(want)
	if got := running(t, agent); !slices.Equal(got, want) {
		t.Errorf("on TEAM the agent runs %v, want both", got)
	}
}

// A Git credential goes to its repository only (core's GitCredential): to
// the same repository however written, never to another; moving the
// service elsewhere is a tenant admin's decision and drops it.
func TestGitCredentialBoundToItsRepository(t *testing.T) {
	s := controltest.Sealed(t)
	const token = "ghp_CartReadToken0123456789abcdef"
	svc := gitService(t, s, "cart", "https://github.com/nebula-samples/cart.git", func(g *delivery.GitInput) { g.Credential = new(token) })
	if svc.GitCredential == "" || strings.Contains(svc.GitCredential, token) || svc.Git.CredentialRepository != "github.com/nebula-samples/cart" {
		t.Fatalf("the stored credential: %q for %q", svc.GitCredential, svc.Git.CredentialRepository)
	}
	for repo, want := range map[string]string{
		"https://github.com/nebula-samples/cart.git":       token,
		"git@github.com:Nebula-Samples/Cart":               token,
		"ssh://git@github.com/nebula-samples/cart.git":     token,
		"https://github.com/nebula-samples/cart-fork":      "",
		"https://gitlab.com/nebula-samples/cart.git":       "",
		"https://github.com.evil.test/nebula-samples/cart": "",
	} {
		got, err := s.P.GitCredential(svc, repo)
		if err != nil || got != want {
			t.Errorf("the credential for %s: %q (%v), want %q", repo, got, err, want)
		}
	}

	// An editor changes the branch (the credential stays) but may not
	// move the service to another repository.
	editor := s.Person(t, "editor@acme.test", model.TenantMember, model.ProjectEditor)
	before := len(audit(t, s))
	_, err := s.P.Delivery.UpdateService(editor, svc.ID, delivery.ServiceInput{Git: &delivery.GitInput{
		Repository: "https://evil.example.com/attacker/cart.git", Branch: "main"}})
	if p := problem(t, "an editor's move", err); p.Code != core.CodeForbidden || field(p) != "input.git.repository" ||
		!strings.Contains(p.Message, "tenant admin") {
		t.Errorf("an editor's move: %s on %s %q", p.Code, field(p), p.Message)
	}
	if n := len(audit(t, s)); n != before {
		t.Errorf("the refused move wrote %d audit events", n-before)
	}
	moved, err := s.P.Delivery.UpdateService(editor, svc.ID, delivery.ServiceInput{Git: &delivery.GitInput{
		Repository: "git@github.com:nebula-samples/cart", Branch: "release"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.P.GitCredential(moved, moved.Git.Repository); err != nil || got != token || moved.Git.Branch != "release" {
		t.Errorf("after the editor's branch change the credential is %q (%v)", got, err)
	}
	// The tenant admin moves it: the credential is dropped.
	moved, err = s.P.Delivery.UpdateService(s.Admin, svc.ID, delivery.ServiceInput{Git: &delivery.GitInput{
		Repository: "https://gitlab.com/nebula-samples/cart.git", Branch: "main"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.P.GitCredential(moved, moved.Git.Repository); err != nil || got != "" || moved.GitCredential != "" {
		t.Errorf("after the admin's move the credential is %q (%v)", got, err)
	}
	// The credential is in no audit detail.
	raw, err := json.Marshal(audit(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), token) || strings.Contains(string(raw), "CartReadToken") {
		t.Error("the Git credential is in the audit history")
	}
}

// A deploy of the branch head reads the branch's commit from a real Git
// server with the service's credential and builds it; what cannot be read
// is a problem that changes nothing; by default the control plane does not
// read from its own network.
func TestDeployBranchHead(t *testing.T) {
	const token = "ghp_headToken"
	srv, root := testutil.GitServer(t, token)
	head := testutil.GitRepo(t, root, "private.git")
	settings := core.DefaultBuildSettings
	settings.GitPrivate = true
	s := controltest.Sealed(t, core.WithBuildSettings(settings))
	svc := gitService(t, s, "cart", srv.URL+"/private.git", nil)

	before := len(audit(t, s))
	_, _, err := s.P.Delivery.DeployBranchHead(s.Admin, svc.ID, s.Env.ID)
	if p := problem(t, "the head without the credential", err); field(p) != "input.branchHead" || !strings.Contains(p.Message, "credential") {
		t.Errorf("the head without the credential: %q on %s", p.Message, field(p))
	}
	if n := len(audit(t, s)); n != before || len(buildsOf(t, s, svc)) != 0 {
		t.Fatalf("the refused deploy of the head changed something")
	}
	svc, err = s.P.Delivery.UpdateService(s.Admin, svc.ID, delivery.ServiceInput{Git: &delivery.GitInput{
		Repository: srv.URL + "/private.git", Branch: "main", Credential: new(token)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.P.Builds.BranchHead(s.Admin, svc); err != nil || got != head {
		t.Fatalf("the branch head: %q (%v), want %s", got, err, head)
	}
	_, dep, err := s.P.Delivery.DeployBranchHead(s.Admin, svc.ID, s.Env.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.P.Builds.BuildOf(s.Admin, dep); err != nil || b == nil || b.Commit != head || b.Status != model.BuildQueued {
		t.Errorf("the build of the head: %+v (%v), want a build of %s", b, err, head)
	}

	// A branch the repository does not have.
	svc, err = s.P.Delivery.UpdateService(s.Admin, svc.ID, delivery.ServiceInput{Git: &delivery.GitInput{
		Repository: srv.URL + "/private.git", Branch: "release"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.P.Delivery.DeployBranchHead(s.Admin, svc.ID, s.Env.ID)
	if p := problem(t, "a missing branch", err); !strings.Contains(p.Message, `no branch "release"`) {
		t.Errorf("a missing branch: %q", p.Message)
	}

	// By default the repository on loopback is not read.
	d := controltest.Sealed(t)
	dsvc := gitService(t, d, "cart", srv.URL+"/private.git", nil)
	_, _, err = d.P.Delivery.DeployBranchHead(d.Admin, dsvc.ID, d.Env.ID)
	if p := problem(t, "a loopback repository by default", err); !strings.Contains(p.Message, "loopback, private or link-local") {
		t.Errorf("a loopback repository by default: %q", p.Message)
	}
}

// A build handed out whose agent stays connected but never says it started
// (its pod never came up) ends TIMED_OUT at the deadline its agent was
// given, counted from the hand-out, and frees its slot; a build that waited
// for a slot longer than the timeout is not timed out for that wait.
func TestNeverStartedBuildTimesOut(t *testing.T) {
	settings := core.DefaultBuildSettings
	settings.PerCluster = 1
	s, c, agent, first, second := oneSlotShop(t, settings)
	heartbeat(t, agent)
	if rep := jobs(t, s); rep.Builds != 1 {
		t.Fatalf("the first pass handed out %d builds with one slot", rep.Builds)
	}
	handed, err := agent.Builds(context.Background())
	if err != nil || len(handed) != 1 {
		t.Fatalf("the agent was handed %d builds (%v), want 1", len(handed), err)
	}
	if want := c.Now().Add(settings.Timeout); !handed[0].Deadline.Equal(want) {
		t.Fatalf("the agent's deadline is %s, want %s (the hand-out plus the timeout)", handed[0].Deadline, want)
	}
	// The agent stays connected and never reports the build.
	c.Advance(settings.Timeout + time.Minute)
	heartbeat(t, agent)
	if rep := jobs(t, s); rep.Builds != 2 {
		t.Fatalf("the pass past the deadline counted %d builds, want the timeout and the next handed out", rep.Builds)
	}
	b, err := s.P.Builds.BuildOf(s.Admin, first)
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != model.BuildTimedOut || !strings.Contains(b.Message, "did not start within 30m0s") {
		t.Fatalf("the never-started build: %s %q, want TIMED_OUT saying it did not start", b.Status, b.Message)
	}
	if d := deployment(t, s, first.ID); d.Stage != model.StageFailed {
		t.Errorf("its deployment is %s, want FAILED", d.Stage)
	}
	// The second waited longer than the timeout for the slot: handed out
	// now, it runs, with a deadline from now.
	b2, err := s.P.Builds.BuildOf(s.Admin, second)
	if err != nil {
		t.Fatal(err)
	}
	if b2.Status != model.BuildRunning {
		t.Fatalf("the build that waited for the slot is %s, want RUNNING", b2.Status)
	}
	if rep := jobs(t, s); rep.Builds != 0 {
		t.Fatalf("the next pass counted %d builds: the build handed out just now was timed out", rep.Builds)
	}
}
