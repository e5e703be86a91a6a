package people

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// ErrBootstrapped is returned by Bootstrap on a store that has a tenant.
var ErrBootstrapped = errors.New("the store already has a tenant; bootstrap runs only on an empty store")

// Bootstrapped is what the first start prints once: the admin's API token
// and the secret of an invitation link through which they set a
// passphrase and sign in to the console.
type Bootstrapped struct {
	Tenant     *model.Tenant
	User       *model.User
	Token      *model.APIToken
	Secret     string
	Invitation string
	// InvitationExpires is when the invitation link stops working.
	InvitationExpires time.Time
}

// Bootstrap creates the first tenant, its admin, an admin token and an
// invitation for the admin to the console, on an empty store only. The
// event is audited with the system as actor.
func (p *People) Bootstrap(ctx context.Context, tenantName, email string) (*Bootstrapped, error) {
	ctx = core.As(ctx, core.SystemOperator)
	var c core.Checks
	c.Text(tenantName, "tenant name", 100, true, "tenant")
	c.Email(email, "email")
	if err := c.Err(); err != nil {
		return nil, err
	}
	var out Bootstrapped
	err := p.InTx(ctx, func(q *core.Txn) error {
		n, err := store.CountTenants(ctx, q)
		if err != nil {
			return err
		}
		if n > 0 {
			return ErrBootstrapped
		}
		out.Tenant, out.User, err = p.insertTenant(ctx, q, tenantName, &model.User{
			ID: core.NewID[model.UserID](), Email: email, Name: "Administrator", Kind: model.UserHuman, CreatedAt: p.Now(),
		}, true)
		if err != nil {
			return err
		}
		out.Token, out.Secret, err = p.insertToken(ctx, q, out.Tenant.ID, out.User.ID, "bootstrap", nil, false)
		if err != nil {
			return err
		}
		inv, err := p.adminInvitation(ctx, q, &out)
		if err != nil {
			return err
		}
		ev := p.NewAuditEvent(&authz.Actor{Origin: "local"}, out.Tenant.ID)
		core.Target(ev, ActTenantBootstrap, "Tenant", string(out.Tenant.ID))
		ev.Details["name"], ev.Details["adminEmail"], ev.Details["tokenPrefix"] = tenantName, email, out.Token.Prefix
		ev.Details["invitationId"] = string(inv.ID)
		return store.InsertAudit(ctx, q, ev.AuditEvent)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// RecoverAdminToken mints a new admin token for the first admin of the
// oldest tenant: the way back in when the bootstrap token is lost. It is run
// from the host (nebula admin bootstrap --recover), never over the API.
func (p *People) RecoverAdminToken(ctx context.Context) (*Bootstrapped, error) {
	ctx = core.As(ctx, core.SystemOperator)
	var out Bootstrapped
	err := p.InTx(ctx, func(q *core.Txn) error {
		t, err := store.OldestTenant(ctx, q)
		if errors.Is(err, store.ErrNotFound) {
			return errors.New("the store is empty: run bootstrap without --recover")
		}
		if err != nil {
			return err
		}
		out.Tenant = t
		m, err := store.MembersWithRole(ctx, q, out.Tenant.ID, model.TenantAdmin)
		if err != nil || len(m) == 0 {
			return fmt.Errorf("finding an admin of tenant %s: %w", out.Tenant.Name, errors.Join(err, store.ErrNotFound))
		}
		if out.User, err = store.Users.Get(ctx, q, m[0].UserID); err != nil {
			return err
		}
		if out.Token, out.Secret, err = p.insertToken(ctx, q, out.Tenant.ID, out.User.ID, "recovery", nil, false); err != nil {
			return err
		}
		inv, err := p.adminInvitation(ctx, q, &out)
		if err != nil {
			return err
		}
		ev := p.NewAuditEvent(&authz.Actor{Origin: "local"}, out.Tenant.ID)
		core.Target(ev, ActTokenRecover, "ApiToken", string(out.Token.ID))
		ev.Details["userId"], ev.Details["prefix"] = string(out.User.ID), out.Token.Prefix
		ev.Details["invitationId"] = string(inv.ID)
		return store.InsertAudit(ctx, q, ev.AuditEvent)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// adminInvitation gives the admin of a first start or a recovery an
// invitation to set their passphrase for the console: without it the
// first admin would hold only an API token, which no browser page takes.
func (p *People) adminInvitation(ctx context.Context, q *core.Txn, b *Bootstrapped) (*model.Invitation, error) {
	inv, secret, err := p.openInvitation(ctx, q, b.Tenant.ID, b.User.ID, b.User.Email, b.User.ID)
	if err != nil {
		return nil, err
	}
	b.Invitation, b.InvitationExpires = secret, inv.ExpiresAt
	return inv, nil
}

// insertTenant creates a tenant on the FREE plan with user as its admin,
// creating the user when create is true.
func (p *People) insertTenant(ctx context.Context, q store.Querier, name string, user *model.User, create bool) (*model.Tenant, *model.User, error) {
	t := &model.Tenant{ID: core.NewID[model.TenantID](), Name: strings.TrimSpace(name), PlanName: model.PlanFree, CreatedAt: p.Now()}
	if err := store.Tenants.Insert(ctx, q, t); err != nil {
		return nil, nil, err
	}
	if create {
		if err := store.Users.Insert(ctx, q, user); err != nil {
			return nil, nil, err
		}
	}
	m := &model.Member{ID: core.NewID[model.MemberID](), TenantID: t.ID, UserID: user.ID, Role: model.TenantAdmin, CreatedAt: p.Now()}
	if err := store.Members.Insert(ctx, q, m); err != nil {
		return nil, nil, err
	}
	// The new tenant knows its founder by their name, since now, and by an
	// id of its own.
	return t, user, store.PutMemberProfile(ctx, q, t.ID, &model.User{ID: user.ID, Email: user.Email, Name: user.Name,
		Kind: user.Kind, CreatedAt: m.CreatedAt})
}

// CreateTenant creates a tenant with the caller as its admin and returns a
// token for it: tokens act in one tenant, so the caller's current token does
// not reach the new one.
func (p *People) CreateTenant(ctx context.Context, name string) (*model.Tenant, *model.APIToken, string, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	if a.User.Kind != model.UserHuman {
		// An integration acts for the tenant it was made in; it does not found new ones.
		return nil, nil, "", fmt.Errorf("%w: integrations cannot create tenants", authz.ErrForbidden)
	}
	var c core.Checks
	c.Text(name, "tenant name", 100, true, "input", "name")
	if err := c.Err(); err != nil {
		return nil, nil, "", err
	}
	var t *model.Tenant
	var tok *model.APIToken
	var secret string
	err = p.InTx(ctx, func(q *core.Txn) error {
		var err error
		if t, _, err = p.insertTenant(ctx, q, name, a.User, false); err != nil {
			return err
		}
		if tok, secret, err = p.insertToken(ctx, q, t.ID, a.User.ID, "tenant creator", nil, false); err != nil {
			return err
		}
		ev := p.NewAuditEvent(a, t.ID)
		core.Target(ev, ActTenantCreate, "Tenant", string(t.ID))
		ev.Details["name"], ev.Details["tokenPrefix"] = t.Name, tok.Prefix
		// The founder is now an admin of one more tenant.
		if err := p.Note(ctx, q, bus.User(string(a.User.ID))); err != nil {
			return err
		}
		return store.InsertAudit(ctx, q, ev.AuditEvent)
	})
	if err != nil {
		return nil, nil, "", err
	}
	a.Founded(t.ID)
	return t, tok, secret, nil
}

func (p *People) Tenant(ctx context.Context, id model.TenantID) (*model.Tenant, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Tenants, id, authz.TenantRead)
}

// TenantUnread is the tenant as its id alone, without reading its row,
// when the caller's grants make it visible: for a request that reads none
// of the row's columns (node(id:) asking only for the tenant's lists).
// Grants come only from memberships, which go with their tenant, and are
// at most GrantTTL old; so a tenant deleted a moment ago can be answered
// this way, with empty lists, for at most as long as any change of access
// takes to apply.
func (p *People) TenantUnread(ctx context.Context, id model.TenantID) (*model.Tenant, error) {
	t := &model.Tenant{ID: id}
	if err := p.Authorizer().CheckCtx(ctx, authz.TenantRead, t.Scope()); err != nil {
		return nil, err
	}
	return t, nil
}

func (p *People) TenantsByIDs(ctx context.Context, ids []model.TenantID) (map[model.TenantID]*model.Tenant, error) {
	return core.ByIDs(ctx, p.Plane, store.Tenants, ids, authz.TenantRead)
}

// Tenants lists the tenants the caller can see (with a token, its own).
func (p *People) Tenants(ctx context.Context, pg store.PageArgs) (store.Page[model.Tenant], error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return store.Page[model.Tenant]{}, err
	}
	g, err := p.GrantsOf(ctx, a)
	if err != nil {
		return store.Page[model.Tenant]{}, err
	}
	ids := make([]model.TenantID, 0, len(g.Tenants))
	for id := range g.Tenants {
		ids = append(ids, id)
	}
	return store.TenantsIn(ctx, p.Querier(ctx), ids, pg)
}

// TenantRole is the caller's role in a tenant they can see.
func (p *People) TenantRole(ctx context.Context, id model.TenantID) (model.TenantRole, error) {
	s, err := p.Subject(ctx, model.Scope{Tenant: id})
	if s == authz.SubjectTenantAdmin {
		return model.TenantAdmin, err
	}
	return model.TenantMember, err
}

// ProjectRole is the caller's effective role in a project they can see.
func (p *People) ProjectRole(ctx context.Context, scope model.Scope) (model.ProjectRole, error) {
	s, err := p.Subject(ctx, scope)
	switch s {
	case authz.SubjectTenantAdmin, authz.SubjectProjectManager:
		return model.ProjectManager, err
	case authz.SubjectEditor:
		return model.ProjectEditor, err
	default:
		return model.ProjectViewer, err
	}
}

// PlanLimits shows each limit of the tenant's plan beside its use.
func (p *People) PlanLimits(ctx context.Context, t *model.Tenant) ([]model.PlanLimit, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.TenantRead, t.Scope()); err != nil {
		return nil, err
	}
	use, err := store.Usage(ctx, p.Querier(ctx), t.ID)
	if err != nil {
		return nil, err
	}
	limits := t.PlanName.Limits()
	out := make([]model.PlanLimit, 0, len(limits))
	for _, r := range model.LimitedResources() {
		pl := model.PlanLimit{Resource: r, Used: use[r]}
		if l := limits[r]; l != model.Unlimited {
			pl.Limit = &l
		}
		out = append(out, pl)
	}
	return out, nil
}

func (p *People) UpdateTenant(ctx context.Context, id model.TenantID, name string) (*model.Tenant, error) {
	if _, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Tenants, id, authz.TenantUpdate); err != nil {
		return nil, err
	}
	var c core.Checks
	c.Text(name, "tenant name", 100, true, "input", "name")
	if err := c.Err(); err != nil {
		return nil, err
	}
	var out *model.Tenant
	err := p.Change(ctx, id, func(q *core.Txn, t *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActTenantUpdate, "Tenant", string(id))
		ev.Details["name"] = map[string]any{"from": t.Name, "to": strings.TrimSpace(name)}
		t.Name = strings.TrimSpace(name)
		out = t
		return store.UpdateTenant(ctx, q, t)
	})
	return core.Committed(out, err)
}

// SetTenantPlan changes the plan. A downgrade below what the tenant uses is
// refused, naming each resource over the new limit.
func (p *People) SetTenantPlan(ctx context.Context, id model.TenantID, plan model.PlanName) (*model.Tenant, error) {
	if _, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Tenants, id, authz.PlanUpdate); err != nil {
		return nil, err
	}
	var out *model.Tenant
	err := p.Change(ctx, id, func(q *core.Txn, t *model.Tenant, ev *core.Audit) error {
		use, err := store.Usage(ctx, q, id)
		if err != nil {
			return err
		}
		var over []string
		for _, r := range model.LimitedResources() {
			if r == model.LimitConcurrentBuilds {
				continue // builds running now finish; later ones wait for the new limit
			}
			if l := plan.Limits()[r]; l != model.Unlimited && use[r] > l {
				over = append(over, fmt.Sprintf("%d %s (allows %d)", use[r], core.HumanResource(r), l))
			}
		}
		if len(over) > 0 {
			return core.Problem{Field: []string{"input", "plan"}, Code: core.CodeEntitlement, Message: fmt.Sprintf(
				"the tenant uses more than the %s plan allows: %s", plan, strings.Join(over, ", "))}
		}
		core.Target(ev, ActTenantSetPlan, "Tenant", string(id))
		ev.Details["plan"] = map[string]any{"from": string(t.PlanName), "to": string(plan)}
		t.PlanName = plan
		out = t
		return store.UpdateTenant(ctx, q, t)
	})
	return core.Committed(out, err)
}
