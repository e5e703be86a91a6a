package delivery_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The rules of delivery, tested on the embedded store without the API.

func releases(t *testing.T, s *controltest.Shop) int {
	t.Helper()
	page, err := s.P.Delivery.Releases(s.Admin, s.Svc, nil, store.PageArgs{First: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Items)
}

func TestBadInputChangesNothing(t *testing.T) {
	s := controltest.New(t)
	bad := func(what string, err error) {
		t.Helper()
		if _, ok := core.AsProblems(err); !ok {
			t.Errorf("%s: %v, want a problem with the input", what, err)
		}
	}
	_, err := s.P.Delivery.CreateProject(s.Admin, s.Boot.Tenant.ID, "", "")
	bad("a project without a name", err)
	_, err = s.P.Delivery.CreateProject(s.Admin, s.Boot.Tenant.ID, "shop", "")
	bad("a second project named shop", err)
	empty, long := "", strings.Repeat("e", 300)
	_, err = s.P.Delivery.CreateEnvironment(s.Admin, s.Project.ID, delivery.EnvironmentInput{Name: &empty})
	bad("an environment without a name", err)
	_, err = s.P.Delivery.CreateEnvironment(s.Admin, s.Project.ID, delivery.EnvironmentInput{Name: &long})
	bad("an environment with a 300-character name", err)
	_, err = s.P.Delivery.CreateService(s.Admin, s.Project.ID, delivery.ServiceInput{Name: "worker",
		Processes: []model.Process{{Name: "run", Replicas: -1}}})
	bad("a service with -1 replicas", err)
	_, _, err = s.P.Delivery.Deploy(s.Admin, s.Svc.ID, s.Env.ID, "latest")
	bad("a deploy of a tag, not a digest", err)
	_, err = s.P.Delivery.SetVariable(s.Admin, delivery.SetVariableInput{Project: s.Project.ID,
		VariableInput: delivery.VariableInput{Name: "1 not a name", Value: "x"}})
	bad("a variable with a bad name", err)

	if n := releases(t, s); n != 0 {
		t.Fatalf("refused inputs made %d releases", n)
	}
	vars, err := s.P.Delivery.Variables(s.Admin, s.Project.Scope(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) != 0 {
		t.Fatalf("a refused variable was stored: %+v", vars)
	}
}

// A deploy to a protected environment waits for an approval by someone
// other than who asked; a rejection ends it; the viewer of the project
// decides nothing.
func TestProtectedEnvironmentWaitsForAnotherApprover(t *testing.T) {
	s := controltest.New(t)
	prot, name := true, "prod-eu"
	env, err := s.P.Delivery.CreateEnvironment(s.Admin, s.Project.ID, delivery.EnvironmentInput{Name: &name, Protected: &prot})
	if err != nil {
		t.Fatal(err)
	}
	_, d, err := s.P.Delivery.Deploy(s.Admin, s.Svc.ID, env.ID, controltest.Digest(1))
	if err != nil {
		t.Fatal(err)
	}
	if d.Stage != model.StageAwaitingApproval {
		t.Fatalf("a deploy to a protected environment is %s, want %s", d.Stage, model.StageAwaitingApproval)
	}
	if _, err := s.P.Delivery.Decide(s.Admin, d.ID, model.Approved, ""); err == nil {
		t.Fatal("the requester approved their own deployment")
	}
	member := s.Person(t, "dev@acme.test", model.TenantMember, "")
	if _, err := s.P.Delivery.Decide(member, d.ID, model.Approved, ""); err == nil {
		t.Fatal("a member with no role in the project approved a deployment")
	}
	if got, err := s.P.Delivery.Deployment(s.Admin, d.ID); err != nil || got.Stage != model.StageAwaitingApproval {
		t.Fatalf("after refused decisions the deployment is %+v (%v), want still awaiting approval", got, err)
	}
	other := s.Person(t, "lead@acme.test", model.TenantAdmin, "")
	got, err := s.P.Delivery.Decide(other, d.ID, model.Approved, "ok")
	if err != nil {
		t.Fatal(err)
	}
	if got.Stage == model.StageAwaitingApproval || got.Stage.Terminal() {
		t.Fatalf("an approved deployment is %s, want under way", got.Stage)
	}
}

// A secret variable's value is written sealed and never read back, in any
// form; the service's editors see that it is set.
func TestSecretVariableNeverShown(t *testing.T) {
	s := controltest.Sealed(t)
	const secret = "s3cr3t-database-password"
	v, err := s.P.Delivery.SetVariable(s.Admin, delivery.SetVariableInput{Project: s.Project.ID,
		VariableInput: delivery.VariableInput{Name: "DB_PASSWORD", Value: secret, Secret: true}})
	if err != nil {
		t.Fatal(err)
	}
	vars, err := s.P.Delivery.Variables(s.Admin, s.Project.Scope(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(append(vars, v))
	for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.RawURLEncoding.EncodeToString([]byte(secret)), hex.EncodeToString([]byte(secret))} {
		if strings.Contains(string(raw), form) {
			t.Fatalf("a secret variable read back holds its value (%q): %s", form, raw)
		}
	}
	if got, _ := s.P.Delivery.VariableStatus(v); got != delivery.VariableSet {
		t.Fatalf("the secret's status is %s, want %s", got, delivery.VariableSet)
	}
}

// A preview runs the deploy and rolls it back: it says what would change
// on the cluster, and nothing is stored.
func TestPreviewStoresNothing(t *testing.T) {
	s := controltest.New(t)
	changes, err := s.P.Delivery.PreviewDeploy(s.Admin, s.Svc.ID, s.Env.ID, controltest.Digest(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 {
		t.Fatal("a preview of the first deploy shows no change")
	}
	if n := releases(t, s); n != 0 {
		t.Fatalf("a preview stored %d releases", n)
	}
	if _, err := s.P.Delivery.PreviewDeploy(context.Background(), s.Svc.ID, s.Env.ID, controltest.Digest(1)); !errors.Is(err, authz.ErrUnauthenticated) {
		t.Fatalf("a preview without a caller: %v, want unauthenticated", err)
	}
	// The deploy itself does what the preview said.
	s.Deploy(t, 1)
	if n := releases(t, s); n != 1 {
		t.Fatalf("%d releases after one deploy, want 1", n)
	}
}

// Where the tenant admin defined namespace targets on a cluster, an
// environment placed there takes one of them: a project manager cannot
// step around them by leaving out or clearing the namespace selector.
// A cluster without targets still gives the default namespace.
func TestNamespaceTargetsHold(t *testing.T) {
	s := controltest.New(t)
	pm := s.Person(t, "pm@acme.test", model.TenantMember, model.ProjectManager)
	tier := []model.Label{{Key: "tier", Value: "prod"}}
	if _, err := s.P.Clusters.CreateNamespaceTarget(s.Admin, s.Cluster.ID, "team-a", tier); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error) {
		t.Helper()
		ps, ok := core.AsProblems(err)
		if !ok || len(ps) != 1 || strings.Join(ps[0].Field, ".") != "input.namespaceSelector" ||
			!strings.Contains(ps[0].Message, "cluster eu-1") || !strings.Contains(ps[0].Message, "team-a") {
			t.Fatalf("%s: %v, want the namespace selector refused, naming cluster eu-1 and its target team-a", what, err)
		}
	}
	name := "staging"
	_, err := s.P.Delivery.CreateEnvironment(pm, s.Project.ID, delivery.EnvironmentInput{Name: &name})
	refused("an environment without a namespace selector on a cluster with targets", err)

	env, err := s.P.Delivery.UpdateEnvironment(pm, s.Env.ID, delivery.EnvironmentInput{NamespaceSelector: tier})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.P.Delivery.UpdateEnvironment(pm, s.Env.ID, delivery.EnvironmentInput{NamespaceSelector: []model.Label{}})
	refused("clearing the namespace selector", err)
	pl, err := s.P.Delivery.Place(s.Admin, env)
	if err != nil || pl.Namespace == nil || *pl.Namespace != "team-a" {
		t.Fatalf("after the refusals the environment places in %v (%v), want team-a", pl, err)
	}
	if env, err = s.P.Delivery.Environment(s.Admin, s.Env.ID); err != nil || len(env.NamespaceSelector) != 1 {
		t.Fatalf("the refused update changed the stored selector: %+v (%v)", env, err)
	}
	envs, err := s.P.Delivery.EnvironmentsOf(s.Admin, []model.Scope{s.Project.Scope()}, store.PageArgs{First: 10})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pg := range envs {
		n += len(pg.Items)
	}
	if n != 1 {
		t.Fatalf("the refused environment was stored: %d environments", n)
	}

	// A cluster the admin gave no targets: the default namespace.
	us := []model.Label{{Key: "region", Value: "us"}}
	if _, _, err := s.P.Clusters.RegisterCluster(s.Admin, s.Boot.Tenant.ID, "us-1", us); err != nil {
		t.Fatal(err)
	}
	env, err = s.P.Delivery.CreateEnvironment(pm, s.Project.ID, delivery.EnvironmentInput{Name: &name, ClusterSelector: us})
	if err != nil {
		t.Fatal(err)
	}
	if pl, err = s.P.Delivery.Place(pm, env); err != nil || pl.Namespace == nil || *pl.Namespace != "shop-staging" {
		t.Fatalf("on a cluster without targets the environment places in %v (%v), want shop-staging", pl, err)
	}
}
