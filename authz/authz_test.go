package authz

import (
	"context"
	"errors"
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
