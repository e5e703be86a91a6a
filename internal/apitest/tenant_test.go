package apitest

import (
	"slices"
	"testing"
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
		if got := res.Str("createTenant.apiToken.user.id"); got != env.BootstrapUserID {
			t.Errorf("token user: got %q, want the founder %q", got, env.BootstrapUserID)
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
			if got := r.List("node.members.nodes"); len(got) != 1 || dig(got[0], "role") != "ADMIN" || dig(got[0], "user.id") != env.BootstrapUserID {
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
