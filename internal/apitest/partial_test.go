package apitest

import (
	"slices"
	"strings"
	"testing"
)

// A shared dashboard query with fields only a tenant admin may read,
// asked by a member: each such field is null with one FORBIDDEN error at
// its own path, and every other field of the response stands.
func TestForbiddenFieldsArePartial(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		const dashboard = `query($c: ID!) {
			viewer { tenants(first: 5) { edges { node { id name viewerRole
				projects(first: 5) { edges { node { id name } } }
				clusters(first: 5) { edges { node { id name } } }
				invitations { id }
				webhookEndpoints { id }
				auditEvents(first: 5) { edges { node { id action } } } } } } }
			cluster: node(id: $c) { ... on Cluster { id name connectTokens { id } desiredState
				events { hasMore } drift { kind } } } }`
		vars := map[string]any{"c": f.ClusterID}
		admin := env.MustDo(t, f.Owner.Token, dashboard, vars)
		if n := len(admin.List("viewer.tenants.edges.0.node.auditEvents.edges")); n == 0 {
			t.Fatalf("the tenant admin sees no audit events: %v", admin.Data)
		}
		gated := []string{
			"viewer.tenants.edges.0.node.invitations",
			"viewer.tenants.edges.0.node.webhookEndpoints",
			"viewer.tenants.edges.0.node.auditEvents",
			"cluster.connectTokens", "cluster.desiredState", "cluster.events", "cluster.drift",
		}
		for _, r := range []Role{Member, Viewer, Editor, ProjectManager} {
			t.Run(r.slug(), func(t *testing.T) {
				res := f.Users[r].Do(t, env, dashboard, vars)
				if res.Data == nil {
					t.Fatalf("data: null for the whole response: %s", res.errorList())
				}
				if got := res.Str("viewer.tenants.edges.0.node.name"); got == "" {
					t.Errorf("the tenant's name is gone: %v", res.Data)
				}
				if got := res.List("viewer.tenants.edges.0.node.projects.edges"); len(got) == 0 && r != Member {
					t.Errorf("the tenant's projects are gone: %v", res.Data)
				}
				if got := res.Str("cluster.name"); got == "" {
					t.Errorf("the cluster's name is gone: %v", res.Data)
				}
				var paths []string
				for _, e := range res.Errors {
					if e.Code() != "FORBIDDEN" {
						t.Errorf("error %q at %s: code %s, want FORBIDDEN", e.Message, e.PathString(), e.Code())
					}
					paths = append(paths, e.PathString())
				}
				for _, g := range gated {
					if v := res.Get(g); v != nil {
						t.Errorf("%s: got %v, want null", g, v)
					}
					if !slices.Contains(paths, strings.ReplaceAll(g, ".", "/")) && !slices.Contains(paths, g) {
						t.Errorf("no error at %s; errors at %v", g, paths)
					}
				}
				if len(res.Errors) != len(gated) {
					t.Errorf("got %d errors (%v), want one per gated field (%d)", len(res.Errors), paths, len(gated))
				}
			})
		}
	})
}
