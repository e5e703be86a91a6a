package apitest

import (
	"slices"
	"testing"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
)

// A person founds a tenant: they are its admin, on the FREE plan, with a
// token that acts in it (and only in it).
func TestCreateTenant(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		before := bootstrapTenant(t, env)
		res := env.Do(t, env.BootstrapToken, `mutation { createTenant(input: {name: "Globex"}) {
			tenant { id name } apiToken { id prefix user { id } } secret `+ue+` } }`, nil)
		if len(res.Errors) > 0 || len(res.UserErrors("createTenant")) > 0 {
			t.Fatalf("createTenant: got %s %+v", res.errorList(), res.UserErrors("createTenant"))
		}
		id, secret := res.Str("createTenant.tenant.id"), res.Str("createTenant.secret")
		if got := res.Str("createTenant.tenant.name"); got != "Globex" {
			t.Errorf("name: got %q, want Globex", got)
		}
		// The new tenant knows its founder by an id of its own.
		founder := UserGID(t, env.Store, decodeTenant(t, id), env.BootstrapUser)
		if founder == env.BootstrapUserID {
			t.Errorf("the new tenant knows its founder by the bootstrap tenant's id %s", founder)
		}
		if got := res.Str("createTenant.apiToken.user.id"); got != founder {
			t.Errorf("token user: got %q, want the founder %q", got, founder)
		}

		t.Run("new token acts in the new tenant only", func(t *testing.T) {
			r := env.MustDo(t, secret, `query($id: ID!) { viewer { tenants { nodes { id } } }
				node(id: $id) { ... on Tenant { viewerRole plan { name limits { resource limit used } } members { nodes { role user { id } } } } } }`,
				map[string]any{"id": id})
			if got := r.IDs("viewer.tenants.nodes"); !slices.Equal(got, []string{id}) {
				t.Errorf("tenants: got %v, want [%s]", got, id)
			}
			if got := r.Str("node.viewerRole"); got != "ADMIN" {
				t.Errorf("viewerRole: got %q, want ADMIN", got)
			}
			if got := r.Str("node.plan.name"); got != "FREE" {
				t.Errorf("plan: got %q, want FREE", got)
			}
			if got := r.List("node.members.nodes"); len(got) != 1 || dig(got[0], "role") != "ADMIN" || dig(got[0], "user.id") != founder {
				t.Errorf("members: got %v, want the founder as the only admin", got)
			}
			r = env.MustDo(t, env.BootstrapToken, `{ viewer { tenants { nodes { id } } } }`, nil)
			if got := r.IDs("viewer.tenants.nodes"); !slices.Equal(got, []string{before}) {
				t.Errorf("the founder's old token sees tenants %v, want only its own %s", got, before)
			}
		})

		// The payload's tenant is the one the caller just founded and
		// administers; its fields must be readable in the same response
		// (the secret in it is shown only once, so a client must not be
		// handed errors beside it).
		t.Run("payload is readable", func(t *testing.T) {
			r := env.Do(t, env.BootstrapToken, `mutation { createTenant(input: {name: "Initech"}) {
				tenant { id name viewerRole plan { name } } secret `+ue+` } }`, nil)
			if len(r.Errors) > 0 {
				t.Errorf("createTenant payload: got errors %s, want tenant.viewerRole ADMIN and tenant.plan FREE", r.errorList())
			}
			if got := r.Str("createTenant.tenant.viewerRole"); got != "ADMIN" {
				t.Errorf("tenant.viewerRole: got %q, want ADMIN", got)
			}
			if r.Str("createTenant.secret") == "" {
				t.Errorf("secret: got none")
			}
		})
	})
}

// node(id:) of a tenant reads the tenant's row only for a selection that
// reads its columns; without them it is answered from the caller's grants.
// Either way it answers only a member, and the same as with the row.
func TestTenantNodeWithoutItsRow(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		const lists = `query($id: ID!) { node(id: $id) { id ... on Tenant { projects { nodes { id } } } } }`
		const row = `query($id: ID!) { node(id: $id) { id ... on Node { ... on Tenant { name projects { nodes { id } } } } } }`
		for _, q := range []string{lists, row} {
			res := f.MustDo(t, q, map[string]any{"id": f.TenantID})
			if got := res.Str("node.id"); got != f.TenantID {
				t.Errorf("%s: node.id = %q, want %q", q, got, f.TenantID)
			}
			if got := res.IDs("node.projects.nodes"); !slices.Contains(got, f.ProjectID) {
				t.Errorf("%s: projects %v, want them to hold %s", q, got, f.ProjectID)
			}
		}
		if got := f.MustDo(t, row, map[string]any{"id": f.TenantID}).Str("node.name"); got == "" {
			t.Error("a selection with name got no name")
		}

		missing := gid.Encode(gid.Tenant, "0190f1c2-aaaa-7bbb-8ccc-0123456789ab")
		stranger := env.NewFixture(t)
		for _, c := range []struct{ name, token, id string }{
			{"a tenant that does not exist", f.Owner.Token, missing},
			{"another tenant's member", stranger.Users[Admin].Token, f.TenantID},
		} {
			for _, q := range []string{lists, row} {
				res := env.Do(t, c.token, q, map[string]any{"id": c.id})
				if res.Get("node") != nil || len(res.Errors) != 1 || res.Errors[0].Code() != "NOT_FOUND" {
					t.Errorf("%s, %s: got %v and errors %s, want null and one NOT_FOUND", c.name, q, res.Get("node"), res.errorList())
				}
			}
		}
	})
}

func decodeTenant(t *testing.T, id string) model.TenantID {
	t.Helper()
	tenant, err := gid.Decode[model.TenantID](gid.Tenant, id)
	if err != nil {
		t.Fatalf("tenant id %q: %v", id, err)
	}
	return tenant
}
