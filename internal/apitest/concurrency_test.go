package apitest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// concurrently runs n calls at once (as nearly as a start barrier allows)
// and returns their responses in order.
func concurrently(n int, call func(i int) Response) []Response {
	out := make([]Response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = call(i)
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// Adding the same new person to several tenants at once must work: the
// user is created once and shared, and each tenant knows them by an id of
// its own. Two transactions in different tenants hold different tenant
// locks, so both may find the email unused.
func TestConcurrentAddMemberSameEmail(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		const tenants, rounds = 6, 6
		fs := make([]*Fixture, tenants)
		for i := range fs {
			fs[i] = env.NewFixture(t)
		}
		for round := range rounds {
			email := fmt.Sprintf("shared-%d@example.com", round)
			res := concurrently(tenants, func(i int) Response {
				return env.Do(t, fs[i].Owner.Token, `mutation($t: ID!, $e: String!) { addMember(input: {tenantId: $t, email: $e, name: "Shared", role: MEMBER}) {
					member { id user { id } } `+ue+` } }`, map[string]any{"t": fs[i].TenantID, "e": email})
			})
			users := map[string]bool{}
			for i, r := range res {
				if len(r.Errors) > 0 || len(r.UserErrors("addMember")) > 0 {
					t.Errorf("round %d, tenant %d: got %s %+v, want the member added", round, i, r.errorList(), r.UserErrors("addMember"))
					for _, e := range r.Errors {
						if strings.Contains(e.Message, "_key") || strings.Contains(e.Message, "duplicate") {
							t.Errorf("the error leaks a database constraint: %q", e.Message)
						}
					}
					continue
				}
				users[r.Str("addMember.member.user.id")] = true
			}
			if len(users) != tenants {
				t.Errorf("round %d: the %d tenants know %s by %d ids, want one each", round, tenants, email, len(users))
			}
			u, err := store.UserByEmail(t.Context(), env.Store.Q(), email)
			if err != nil {
				t.Fatalf("round %d: reading the user of %s: %v", round, email, err)
			}
			for _, f := range fs {
				tenant := rawID(t, gid.Tenant, f.TenantID)
				if _, err := store.MemberOf(t.Context(), env.Store.Q(), model.TenantID(tenant), u.ID); err != nil {
					t.Errorf("round %d: %s is no member of %s as the one user of the email: %v", round, email, f.Name, err)
				}
			}
		}
	})
}

// Invariants guarded by the tenant lock hold under concurrent requests.
func TestConcurrentLimits(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {

		t.Run("plan limit", func(t *testing.T) {
			// A FREE tenant with one cluster has room for one more.
			r := env.MustDo(t, env.BootstrapToken, `mutation { createTenant(input: {name: "racing"}) { tenant { id } secret `+ue+` } }`, nil)
			tenant, token := r.Str("createTenant.tenant.id"), r.Str("createTenant.secret")
			env.MustDo(t, token, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "first"}) { `+ue+` } }`, map[string]any{"t": tenant})
			res := concurrently(6, func(i int) Response {
				return env.Do(t, token, `mutation($t: ID!, $n: String!) { registerCluster(input: {tenantId: $t, name: $n}) { cluster { id } `+ue+` } }`,
					map[string]any{"t": tenant, "n": fmt.Sprintf("racer-%d", i)})
			})
			ok := 0
			for _, r := range res {
				ue := r.UserErrors("registerCluster")
				switch {
				case len(r.Errors) == 0 && len(ue) == 0:
					ok++
				case len(ue) == 1 && ue[0].Code == "ENTITLEMENT_REQUIRED":
				default:
					t.Errorf("got %s %+v, want success or ENTITLEMENT_REQUIRED", r.errorList(), ue)
				}
			}
			if ok != 1 {
				t.Errorf("%d concurrent registrations succeeded, want exactly 1 (FREE allows 2 clusters)", ok)
			}
			if n := env.AuditCount(t, tenant); n != 3 {
				t.Errorf("audit events: got %d, want 3 (create, first cluster, the one winner)", n)
			}
		})

		t.Run("last admin", func(t *testing.T) {
			// The owner and the admin caller are the fixture's two
			// admins; each demotes the other at once: one must stay.
			f := env.NewFixture(t)
			r := f.MustDo(t, `query($id: ID!) { node(id: $id) { ... on Tenant { members(first: 100) { nodes { id role user { id } } } } } }`,
				map[string]any{"id": f.TenantID})
			var ownerMember string
			for _, m := range r.List("node.members.nodes") {
				if dig(m, "user.id") == f.Owner.UserID {
					ownerMember = dig(m, "id").(string)
				}
			}
			members := []string{f.Users[Admin].MemberID, ownerMember}
			tokens := []string{f.Owner.Token, f.Users[Admin].Token}
			res := concurrently(2, func(i int) Response {
				return env.Do(t, tokens[i], `mutation($m: ID!) { updateMemberRole(input: {memberId: $m, role: MEMBER}) { member { id } `+ue+` } }`,
					map[string]any{"m": members[i]})
			})
			ok := 0
			for _, r := range res {
				if len(r.Errors) == 0 && len(r.UserErrors("updateMemberRole")) == 0 {
					ok++
				}
			}
			if ok != 1 {
				t.Errorf("%d of 2 concurrent demotions of the last two admins succeeded, want exactly 1", ok)
			}
			admins := 0
			for _, m := range members {
				if roleOf(t, env, f, m) == "ADMIN" {
					admins++
				}
			}
			if admins != 1 {
				t.Errorf("admins left: got %d, want 1", admins)
			}
		})
	})
}

// roleOf reads a member's role straight from the store: after a demotion
// race, no caller of the tenant may be an admin any more.
func roleOf(t *testing.T, env *Env, f *Fixture, memberID string) string {
	t.Helper()
	raw, err := gid.Decode[model.MemberID](gid.Member, memberID)
	if err != nil {
		t.Fatalf("decoding member id: %v", err)
	}
	m, err := store.Members.Get(context.Background(), env.Store.Q(), raw)
	if err != nil {
		t.Fatalf("reading member: %v", err)
	}
	return string(m.Role)
}
