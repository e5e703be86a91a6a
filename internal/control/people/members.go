package people

import (
	"context"
	"strings"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func (p *People) Member(ctx context.Context, id model.MemberID) (*model.Member, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Members, id, authz.MemberRead)
}

func (p *People) Members(ctx context.Context, tenant model.TenantID, pg store.PageArgs) (store.Page[model.Member], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.MemberRead, model.Scope{Tenant: tenant}); err != nil {
		return store.Page[model.Member]{}, err
	}
	return store.MembersOf(ctx, p.Querier(ctx), tenant, pg)
}

// UserIn names a user as one tenant knows them: the tenant of the object
// that refers to the user.
type UserIn struct {
	Tenant model.TenantID
	User   model.UserID
}

// UsersIn reads users for a dataloader, each as the tenant of its key
// knows them (that tenant's id, name and kind for them). A user is visible
// to callers who act in that tenant while the user is a member there, and
// to themselves (a person who makes a tenant reads their token there).
func (p *People) UsersIn(ctx context.Context, keys []UserIn) (map[UserIn]*model.User, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	byTenant := map[model.TenantID][]model.UserID{}
	for _, k := range keys {
		byTenant[k.Tenant] = append(byTenant[k.Tenant], k.User)
	}
	out := make(map[UserIn]*model.User, len(keys))
	q := p.Querier(ctx)
	for tenant, ids := range byTenant {
		visible := map[model.UserID]bool{a.User.ID: true}
		if a.ActsIn(tenant) {
			members, err := store.MembersByUsers(ctx, q, tenant, ids)
			if err != nil {
				return nil, err
			}
			for _, m := range members {
				visible[m.UserID] = true
			}
		}
		users, err := store.UsersAsKnownIn(ctx, q, tenant, ids)
		if err != nil {
			return nil, err
		}
		for id, u := range users {
			if visible[id] {
				out[UserIn{Tenant: tenant, User: id}] = u
			}
		}
	}
	return out, nil
}

// AuditActor reads the user who made an audit event, for readers of the
// audit history, as the event's tenant knows them: the actor stays known
// after they leave the tenant.
func (p *People) AuditActor(ctx context.Context, ev *model.AuditEvent) (*model.User, error) {
	if ev.ActorID == nil {
		return nil, nil
	}
	if err := p.Authorizer().CheckCtx(ctx, authz.AuditRead, ev.Scope()); err != nil {
		return nil, err
	}
	return store.UserAsKnownIn(ctx, p.Querier(ctx), ev.TenantID, *ev.ActorID)
}

// User reads one user visible to the caller by the id the caller's tenant
// knows them by: another tenant's id for the same person names nobody.
func (p *People) User(ctx context.Context, id model.LocalUserID) (*model.User, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	user, err := store.UserOfLocalID(ctx, p.Querier(ctx), a.Home(), id)
	if err != nil {
		return nil, err
	}
	key := UserIn{Tenant: a.Home(), User: user}
	m, err := p.UsersIn(ctx, []UserIn{key})
	if err != nil {
		return nil, err
	}
	if u := m[key]; u != nil {
		return u, nil
	}
	return nil, store.ErrNotFound
}

// AddMemberInput adds a person or integration to a tenant.
type AddMemberInput struct {
	Tenant model.TenantID
	Email  string
	Name   string
	Role   model.TenantRole
	Kind   model.UserKind
}

// AddMember adds a person or integration to a tenant by email. Users are
// global, but whether the email is new or already another tenant's user
// does not show: the answer is the same either way, and the tenant knows
// the user by the name and kind it gave, since now (a member profile),
// never by what another tenant said. (An invitation the person accepts is
// for a later change.)
func (p *People) AddMember(ctx context.Context, in AddMemberInput) (*model.Member, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.MemberManage, model.Scope{Tenant: in.Tenant}); err != nil {
		return nil, err
	}
	in.Email = strings.ToLower(strings.TrimSpace(in.Email))
	in.Name = strings.TrimSpace(in.Name)
	var c core.Checks
	c.Email(in.Email, "input", "email")
	c.Text(in.Name, "name", 100, true, "input", "name")
	if err := c.Err(); err != nil {
		return nil, err
	}
	var m *model.Member
	err := p.Change(ctx, in.Tenant, func(q *core.Txn, t *model.Tenant, ev *core.Audit) error {
		if err := p.EnsureRoom(ctx, q, t, model.LimitMembers, 1); err != nil {
			return err
		}
		now := p.Now()
		// Users are global: another tenant may add the same email at the
		// same moment, so the insert tolerates losing that race.
		u, err := store.InsertUserIfAbsent(ctx, q, &model.User{ID: core.NewID[model.UserID](), Email: in.Email,
			Name: in.Name, Kind: in.Kind, CreatedAt: now})
		if err != nil {
			return err
		}
		m = &model.Member{ID: core.NewID[model.MemberID](), TenantID: in.Tenant, UserID: u.ID, Role: in.Role, CreatedAt: now}
		if err := store.Members.Insert(ctx, q, m); err != nil {
			return core.ConflictOn(err, "email", in.Email+" is already a member of this tenant")
		}
		known := &model.User{ID: u.ID, Email: in.Email, Name: in.Name, Kind: in.Kind, CreatedAt: now}
		if err := store.PutMemberProfile(ctx, q, in.Tenant, known); err != nil {
			return err
		}
		core.Target(ev, ActMemberAdd, "Member", string(m.ID))
		ev.Details["userId"], ev.Details["email"], ev.Details["role"], ev.Details["kind"] = string(u.ID), in.Email, string(in.Role), string(in.Kind)
		return nil
	})
	return core.Committed(m, err)
}

// UpdateMemberRole changes a tenant role; the last admin cannot be demoted.
func (p *People) UpdateMemberRole(ctx context.Context, id model.MemberID, role model.TenantRole) (*model.Member, error) {
	m, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Members, id, authz.MemberManage)
	if err != nil {
		return nil, err
	}
	err = p.Change(ctx, m.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if m, err = store.Members.Get(ctx, q, id); err != nil {
			return err
		}
		if m.Role == model.TenantAdmin && role != model.TenantAdmin {
			if err := lastAdminGuard(ctx, q, m.TenantID, "demote"); err != nil {
				return err
			}
		}
		core.Target(ev, ActMemberUpdateRole, "Member", string(id))
		ev.Details["userId"] = string(m.UserID)
		ev.Details["role"] = map[string]any{"from": string(m.Role), "to": string(role)}
		m.Role = role
		return store.UpdateMemberRole(ctx, q, id, role)
	})
	return core.Committed(m, err)
}

// RemoveMember removes someone from a tenant, with their project roles and
// tokens there; the last admin cannot be removed.
func (p *People) RemoveMember(ctx context.Context, id model.MemberID) error {
	m, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Members, id, authz.MemberManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, m.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if m, err = store.Members.Get(ctx, q, id); err != nil {
			return err
		}
		if m.Role == model.TenantAdmin {
			if err := lastAdminGuard(ctx, q, m.TenantID, "remove"); err != nil {
				return err
			}
		}
		if err := store.DeleteProjectGrantsInTenant(ctx, q, m.TenantID, m.UserID); err != nil {
			return err
		}
		now := p.Now()
		if err := store.RevokeUserTokens(ctx, q, m.TenantID, m.UserID, now); err != nil {
			return err
		}
		// Their sign-in here ends: sessions acting in the tenant, the
		// passphrase for it and open invitations.
		if _, err := store.RevokeTenantSessions(ctx, q, m.TenantID, m.UserID, now); err != nil {
			return err
		}
		if err := store.DeletePassphrase(ctx, q, m.UserID, m.TenantID); err != nil {
			return err
		}
		if _, err := store.RevokeInvitations(ctx, q, m.TenantID, m.UserID, now); err != nil {
			return err
		}
		core.Target(ev, ActMemberRemove, "Member", string(id))
		ev.Details["userId"], ev.Details["role"] = string(m.UserID), string(m.Role)
		return store.Members.Delete(ctx, q, id)
	})
}

func lastAdminGuard(ctx context.Context, q store.Querier, tenant model.TenantID, verb string) error {
	n, err := store.CountMembersWithRole(ctx, q, tenant, model.TenantAdmin)
	if err != nil {
		return err
	}
	if n <= 1 {
		return core.Problem{Field: []string{"input", "memberId"}, Code: core.CodeConflict,
			Message: "cannot " + verb + " the last admin of the tenant; make someone else admin first"}
	}
	return nil
}

func (p *People) ProjectMember(ctx context.Context, id model.ProjectMemberID) (*model.ProjectMember, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.ProjectMembers, id, authz.ProjectMemberRead)
}

func (p *People) ProjectMembers(ctx context.Context, project model.Scope, pg store.PageArgs) (store.Page[model.ProjectMember], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ProjectMemberRead, project); err != nil {
		return store.Page[model.ProjectMember]{}, err
	}
	return store.ProjectMembersOf(ctx, p.Querier(ctx), project.Project, pg)
}

// AddProjectMember gives a tenant member a role in a project.
func (p *People) AddProjectMember(ctx context.Context, project model.ProjectID, local model.LocalUserID, role model.ProjectRole) (*model.ProjectMember, error) {
	proj, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Projects, project, authz.ProjectMemberManage)
	if err != nil {
		return nil, err
	}
	var pm *model.ProjectMember
	err = p.Change(ctx, proj.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		user, err := store.UserOfLocalID(ctx, q, proj.TenantID, local)
		if err == nil {
			_, err = store.MemberOf(ctx, q, proj.TenantID, user)
		}
		if err != nil {
			return core.NotFoundOn(err, "userId", "the user is not a member of this project's tenant; add them to the tenant first")
		}
		pm = &model.ProjectMember{ID: core.NewID[model.ProjectMemberID](), TenantID: proj.TenantID, ProjectID: project,
			UserID: user, Role: role, CreatedAt: p.Now()}
		if err := store.ProjectMembers.Insert(ctx, q, pm); err != nil {
			return core.ConflictOn(err, "userId", "the user already has a role in this project; update it instead")
		}
		core.Target(ev, ActProjectMemberAdd, "ProjectMember", string(pm.ID))
		ev.Details["projectId"], ev.Details["userId"], ev.Details["role"] = string(project), string(user), string(role)
		return nil
	})
	return core.Committed(pm, err)
}

func (p *People) UpdateProjectMemberRole(ctx context.Context, id model.ProjectMemberID, role model.ProjectRole) (*model.ProjectMember, error) {
	pm, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.ProjectMembers, id, authz.ProjectMemberManage)
	if err != nil {
		return nil, err
	}
	err = p.Change(ctx, pm.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActProjectMemberUpdateRole, "ProjectMember", string(id))
		ev.Details["projectId"], ev.Details["userId"] = string(pm.ProjectID), string(pm.UserID)
		ev.Details["role"] = map[string]any{"from": string(pm.Role), "to": string(role)}
		pm.Role = role
		return store.UpdateProjectMemberRole(ctx, q, id, role)
	})
	return core.Committed(pm, err)
}

func (p *People) RemoveProjectMember(ctx context.Context, id model.ProjectMemberID) error {
	pm, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.ProjectMembers, id, authz.ProjectMemberManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, pm.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActProjectMemberRemove, "ProjectMember", string(id))
		ev.Details["projectId"], ev.Details["userId"], ev.Details["role"] = string(pm.ProjectID), string(pm.UserID), string(pm.Role)
		return store.ProjectMembers.Delete(ctx, q, id)
	})
}
