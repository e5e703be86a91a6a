package authz

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/nebulactrl/nebula/internal/model"
)

var allPerms = []Perm{
	TenantRead, TenantUpdate, PlanUpdate, MemberRead, MemberManage, ClusterRead, ClusterManage,
	NamespaceTargetManage, AuditRead, TokenManageIntegrate, ProjectCreate, ProjectDelete,
	ProjectRead, ProjectUpdate, ProjectMemberRead, ProjectMemberManage, EnvironmentRead, EnvironmentManage,
	ServiceRead, ServiceManage, ReleaseRead, DeploymentRead, DeploymentCreate, DeploymentProtected, DeploymentApprove,
}

func newAuthorizer(t *testing.T, g *model.Grants) *Authorizer {
	t.Helper()
	z, err := New(func(context.Context, model.UserID) (*model.Grants, error) { return g, nil })
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func TestEveryCapabilityIsInThePolicy(t *testing.T) {
	z := newAuthorizer(t, nil)
	for _, p := range allPerms {
		if !z.Known(p) {
			t.Errorf("%s is checked by the code but absent from policy.csv", p)
		}
	}
}

// The role ladder: each role holds what the one below holds, and the
// capabilities that define it.
func TestPolicyLadder(t *testing.T) {
	z := newAuthorizer(t, nil)
	cases := []struct {
		subject string
		allow   []Perm
		deny    []Perm
	}{
		{SubjectViewer, []Perm{ProjectRead, ServiceRead, DeploymentRead}, []Perm{ServiceManage, DeploymentCreate, EnvironmentManage, ProjectUpdate}},
		{SubjectEditor, []Perm{ProjectRead, ServiceManage, DeploymentCreate}, []Perm{DeploymentProtected, EnvironmentManage, DeploymentApprove, ProjectMemberManage}},
		{SubjectProjectManager, []Perm{ServiceManage, EnvironmentManage, DeploymentProtected, DeploymentApprove, ProjectMemberManage, ProjectUpdate}, []Perm{ProjectDelete, ClusterManage, AuditRead}},
		{SubjectTenantMember, []Perm{TenantRead, ClusterRead, MemberRead}, []Perm{ClusterManage, MemberManage, AuditRead, PlanUpdate, ProjectCreate, ProjectRead}},
		{SubjectTenantAdmin, allPerms, nil},
	}
	for _, c := range cases {
		for _, p := range c.allow {
			if !z.Allows(c.subject, p) {
				t.Errorf("%s may not %s, want allowed", c.subject, p)
			}
		}
		for _, p := range c.deny {
			if z.Allows(c.subject, p) {
				t.Errorf("%s may %s, want denied", c.subject, p)
			}
		}
	}
}

func TestCheckScopes(t *testing.T) {
	g := &model.Grants{
		Tenants:  map[model.TenantID]model.TenantRole{"t1": model.TenantMember, "t2": model.TenantAdmin},
		Projects: map[model.ProjectID]model.ProjectRole{"p1": model.ProjectEditor},
	}
	cases := []struct {
		name  string
		token model.TenantID
		perm  Perm
		scope model.Scope
		want  error
	}{
		{"editor edits a service", "t1", ServiceManage, model.Scope{Tenant: "t1", Project: "p1"}, nil},
		{"editor cannot manage environments", "t1", EnvironmentManage, model.Scope{Tenant: "t1", Project: "p1"}, ErrForbidden},
		{"project without a role is invisible", "t1", ProjectRead, model.Scope{Tenant: "t1", Project: "p2"}, ErrNotVisible},
		{"member reads clusters", "t1", ClusterRead, model.Scope{Tenant: "t1"}, nil},
		{"member cannot read audit", "t1", AuditRead, model.Scope{Tenant: "t1"}, ErrForbidden},
		{"other tenant is invisible", "t1", TenantRead, model.Scope{Tenant: "t3"}, ErrNotVisible},
		// The user is admin of t2, but this token acts in t1 only.
		{"token's tenant only", "t1", TenantRead, model.Scope{Tenant: "t2"}, ErrNotVisible},
		{"admin through a t2 token", "t2", ProjectDelete, model.Scope{Tenant: "t2", Project: "px"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			z := newAuthorizer(t, &model.Grants{Tenants: clone(g.Tenants), Projects: g.Projects})
			a := &Actor{User: &model.User{ID: "u"}, Token: &model.APIToken{TenantID: c.token}}
			err := z.Check(context.Background(), a, c.perm, c.scope)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("Check(%s, %+v) = %v, want %v", c.perm, c.scope, err, c.want)
			}
		})
	}
}

func clone[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestActorFromEmptyContext(t *testing.T) {
	if _, err := ActorFrom(context.Background()); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("got %v, want ErrUnauthenticated", err)
	}
}

// Checks read the grants from the loader every time: a change reaches an
// actor that lives on (a websocket connection's) at its next check.
func TestChecksSeeGrantsChange(t *testing.T) {
	var mu sync.Mutex
	g := &model.Grants{Tenants: map[model.TenantID]model.TenantRole{"t1": model.TenantAdmin}}
	z, err := New(func(context.Context, model.UserID) (*model.Grants, error) {
		mu.Lock()
		defer mu.Unlock()
		return g, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a := &Actor{User: &model.User{ID: "u"}, Token: &model.APIToken{TenantID: "t1"}}
	if err := z.Check(context.Background(), a, PlanUpdate, model.Scope{Tenant: "t1"}); err != nil {
		t.Fatalf("as an admin: %v", err)
	}
	mu.Lock()
	g = &model.Grants{Tenants: map[model.TenantID]model.TenantRole{"t1": model.TenantMember}}
	mu.Unlock()
	if err := z.Check(context.Background(), a, PlanUpdate, model.Scope{Tenant: "t1"}); !errors.Is(err, ErrForbidden) {
		t.Errorf("after the demotion: got %v, want ErrForbidden", err)
	}
}

// A tenant founded in a request is readable by the rest of it while other
// goroutines of the request check their own scopes (run with -race).
func TestFoundedWhileChecking(t *testing.T) {
	z := newAuthorizer(t, &model.Grants{Tenants: map[model.TenantID]model.TenantRole{"t1": model.TenantMember, "new": model.TenantAdmin}})
	a := &Actor{User: &model.User{ID: "u"}, Token: &model.APIToken{TenantID: "t1"}}
	if err := z.Check(context.Background(), a, TenantRead, model.Scope{Tenant: "new"}); !errors.Is(err, ErrNotVisible) {
		t.Fatalf("before founding: got %v, want ErrNotVisible", err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_ = z.Check(context.Background(), a, TenantRead, model.Scope{Tenant: "new"})
				_, _ = a.Grants(context.Background(), z.load)
			}
		})
	}
	a.Founded("new")
	wg.Wait()
	if err := z.Check(context.Background(), a, TenantRead, model.Scope{Tenant: "new"}); err != nil {
		t.Errorf("after founding: %v", err)
	}
}

// Within names exactly the tenants Covers accepts: a token's tenant, a
// session's tenants, and those founded since; an actor with neither acts
// in every tenant.
func TestWithin(t *testing.T) {
	for _, c := range []struct {
		name  string
		actor *Actor
		want  []model.TenantID
		every bool
	}{
		{"a token", &Actor{Token: &model.APIToken{TenantID: "t1"}}, []model.TenantID{"t1"}, false},
		{"a session", &Actor{Session: &model.Session{Tenants: []model.TenantID{"t1", "t2"}}}, []model.TenantID{"t1", "t2"}, false},
		{"neither", &Actor{}, nil, true},
	} {
		got, every := c.actor.Within()
		if every != c.every || !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, %v; want %v, %v", c.name, got, every, c.want, c.every)
		}
		for _, tenant := range got {
			if !c.actor.Covers([]model.TenantID{tenant}) {
				t.Errorf("%s: within %v, yet does not cover it", c.name, tenant)
			}
		}
	}
	s := &Actor{Session: &model.Session{Tenants: []model.TenantID{"t1"}}}
	got, _ := s.Within()
	got[0] = "changed"
	s.Founded("new")
	if again, _ := s.Within(); !slices.Equal(again, []model.TenantID{"t1", "new"}) || s.Session.Tenants[0] != "t1" {
		t.Errorf("after a change to the result and a founding: within %v, the session's tenants %v", again, s.Session.Tenants)
	}
}
