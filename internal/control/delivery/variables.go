package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
)

// SetVariableInput sets a variable at a scope: the project, one of its
// environments, or one of its services.
type SetVariableInput struct {
	Project     model.ProjectID
	Environment *model.EnvironmentID
	Service     *model.ServiceID
	VariableInput
}

// VariableStatus says whether a variable's value can be used.
type VariableStatus string

const (
	VariableSet        VariableStatus = "SET"
	VariableUnreadable VariableStatus = "UNREADABLE"
)

// scopePerm is the capability to change variables at a scope: services'
// are the editors', the project's and environments' the project managers'.
func scopePerm(v *model.Variable) authz.Perm {
	switch v.Kind() {
	case model.VariableService:
		return authz.ServiceManage
	case model.VariableEnvironment:
		return authz.EnvironmentManage
	default:
		return authz.ProjectUpdate
	}
}

// SetVariable creates or replaces a variable. A secret is sealed bound to
// its row before it is stored; its value never leaves in a response, a log
// line, an audit event or an error.
func (p *Delivery) SetVariable(ctx context.Context, in SetVariableInput) (*model.Variable, error) {
	return p.setVariable(ctx, nil, in)
}

// setVariable is SetVariable, or its dry run when dry is set.
func (p *Delivery) setVariable(ctx context.Context, dry *core.Previewing, in SetVariableInput) (*model.Variable, error) {
	proj, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Projects, in.Project, authz.ProjectRead)
	if err != nil {
		return nil, err
	}
	if in.Environment != nil && in.Service != nil {
		return nil, core.Invalid("give environmentId or serviceId, not both: a variable has one scope", "input", "serviceId")
	}
	v := &model.Variable{TenantID: proj.TenantID, ProjectID: in.Project, EnvironmentID: in.Environment, ServiceID: in.Service}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.Authorizer().Check(ctx, a, scopePerm(v), proj.Scope()); err != nil {
		return nil, err
	}
	var c core.Checks
	checkVariable(&c, in.VariableInput, "input")
	if err := c.Err(); err != nil {
		return nil, err
	}
	err = p.ChangeOr(ctx, dry, proj.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if err := p.secretsMayChange(ctx, q, proj.TenantID); err != nil {
			return err
		}
		if err := p.checkScopeParent(ctx, q, v); err != nil {
			return err
		}
		saved, created, err := p.putVariable(ctx, q, v, in.VariableInput)
		if err != nil {
			return err
		}
		v = saved
		core.Target(ev, ActVariableSet, "Variable", string(v.ID))
		ev.Details["name"], ev.Details["scope"], ev.Details["secret"], ev.Details["created"] = v.Name, string(v.Kind()), v.Secret, created
		err = p.releaseConfig(ctx, q, a, ev, v.ProjectID, "variable "+v.Name+" set")
		return err
	})
	return core.Committed(v, err)
}

// checkScopeParent makes sure the environment or service of a variable
// belongs to its project.
func (p *Delivery) checkScopeParent(ctx context.Context, q store.Querier, v *model.Variable) error {
	var project model.ProjectID
	var err error
	fieldName, what := "", ""
	switch {
	case v.EnvironmentID != nil:
		fieldName, what = "environmentId", "environment"
		var e *model.Environment
		if e, err = store.Environments.Get(ctx, q, *v.EnvironmentID); err == nil {
			project = e.ProjectID
		}
	case v.ServiceID != nil:
		fieldName, what = "serviceId", "service"
		var s *model.Service
		if s, err = store.Services.Get(ctx, q, *v.ServiceID); err == nil {
			project = s.ProjectID
		}
	default:
		return nil
	}
	if err == nil && project != v.ProjectID {
		err = store.ErrNotFound
	}
	return core.NotFoundOn(err, fieldName, "no such "+what+" in this project")
}

// putVariable upserts the variable named in at the scope of v. An
// unchanged plain value keeps its row untouched, so it changes no revision.
// A secret is never compared with the one stored — the answer (a revision,
// a preview's diff, updatedAt) would tell whether a guess was right — so
// setting one always stores a new version.
func (p *Delivery) putVariable(ctx context.Context, q store.Querier, v *model.Variable, in VariableInput) (*model.Variable, bool, error) {
	cur, err := store.VariableIn(ctx, q, v.ProjectID, v.ScopeKey(), in.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		nv := *v
		nv.ID, nv.Name, nv.CreatedAt, nv.UpdatedAt = core.NewID[model.VariableID](), in.Name, p.Now(), p.Now()
		if err := p.setValue(&nv, in); err != nil {
			return nil, false, err
		}
		if err := store.Variables.Insert(ctx, q, &nv); err != nil {
			return nil, false, err
		}
		return &nv, true, keepVersion(ctx, q, &nv)
	case err != nil:
		return nil, false, err
	}
	if !cur.Secret && !in.Secret && cur.Value == in.Value {
		return cur, false, nil
	}
	// The version is the id and this time: it must move even within the
	// clock's microsecond.
	now := p.Now()
	if !now.After(cur.UpdatedAt) {
		now = cur.UpdatedAt.Add(time.Microsecond)
	}
	cur.UpdatedAt = now
	if err := p.setValue(cur, in); err != nil {
		return nil, false, err
	}
	if err := store.UpdateVariable(ctx, q, cur); err != nil {
		return nil, false, err
	}
	return cur, false, keepVersion(ctx, q, cur)
}

// keepVersion keeps the value a secret variable holds now as a version,
// for the releases that will freeze it.
func keepVersion(ctx context.Context, q store.Querier, v *model.Variable) error {
	if !v.Secret {
		return nil
	}
	return store.KeepSecretVersion(ctx, q, v)
}

func (p *Delivery) setValue(v *model.Variable, in VariableInput) error {
	v.Secret, v.Value = in.Secret, in.Value
	if !in.Secret {
		return nil
	}
	sealed, err := p.Box().Seal([]byte(in.Value), v.Binding())
	if errors.Is(err, seal.ErrNoKey) {
		return core.Invalid("secrets cannot be stored: this control plane has no master key (the operator sets NEBULA_MASTER_KEY)", "input", "secret")
	}
	if err != nil {
		return fmt.Errorf("sealing %s: %w", v.Name, err)
	}
	v.Value = sealed
	return nil
}

// replaceServiceVariables makes the service-scope variables exactly vars.
func (p *Delivery) replaceServiceVariables(ctx context.Context, q store.Querier, svc *model.Service, vars []VariableInput) error {
	cur, err := store.VariablesOfService(ctx, q, svc.ID)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, in := range vars {
		keep[in.Name] = true
		id := svc.ID
		v := &model.Variable{TenantID: svc.TenantID, ProjectID: svc.ProjectID, ServiceID: &id}
		if _, _, err := p.putVariable(ctx, q, v, in); err != nil {
			return err
		}
	}
	for _, v := range cur {
		if !keep[v.Name] {
			if err := store.Variables.Delete(ctx, q, v.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteVariable removes a variable.
func (p *Delivery) DeleteVariable(ctx context.Context, id model.VariableID) error {
	v, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Variables, id, authz.ProjectRead)
	if err != nil {
		return err
	}
	if err := p.Authorizer().CheckCtx(ctx, scopePerm(v), v.Scope()); err != nil {
		return err
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return err
	}
	return p.Change(ctx, v.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActVariableDelete, "Variable", string(id))
		ev.Details["name"], ev.Details["scope"], ev.Details["secret"] = v.Name, string(v.Kind()), v.Secret
		if err := store.Variables.Delete(ctx, q, id); err != nil {
			return err
		}
		err := p.releaseConfig(ctx, q, a, ev, v.ProjectID, "variable "+v.Name+" deleted")
		return err
	})
}

func (p *Delivery) Variable(ctx context.Context, id model.VariableID) (*model.Variable, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Variables, id, authz.ProjectRead)
}

// Variables lists the variables set exactly at a scope: the project's
// (environment and service nil), an environment's or a service's.
func (p *Delivery) Variables(ctx context.Context, scope model.Scope, env *model.EnvironmentID, svc *model.ServiceID) ([]*model.Variable, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ProjectRead, scope); err != nil {
		return nil, err
	}
	v := model.Variable{ProjectID: scope.Project, EnvironmentID: env, ServiceID: svc}
	return store.VariablesInScope(ctx, p.Querier(ctx), scope.Project, v.ScopeKey())
}

// PlainValue is a variable's value as shown: nil for a secret, always.
func PlainValue(v *model.Variable) *string {
	if v.Secret {
		return nil
	}
	s := v.Value
	return &s
}

// VariableStatus tells whether a variable can be used: a secret sealed with
// a key this control plane lacks, or bound to another row, is unreadable,
// never silently empty.
func (p *Delivery) VariableStatus(v *model.Variable) (VariableStatus, *string) {
	if !v.Secret {
		return VariableSet, nil
	}
	if _, err := p.Box().Open(v.Value, v.Binding()); err != nil {
		reason := err.Error()
		return VariableUnreadable, &reason
	}
	return VariableSet, nil
}

// ResealReport counts what Reseal did.
type ResealReport struct {
	// Of the secret variables: resealed, already under the primary key,
	// opened by no key.
	Resealed   int
	Current    int
	Unreadable int
	// Versions counts the same of the secret versions releases froze.
	Versions ResealCount
}

// ResealCount counts what Reseal did to one kind of sealed value.
type ResealCount struct{ Resealed, Current, Unreadable int }

// Reseal rewrites every sealed value that is not under the primary key
// (the variables' and the secret versions releases froze), one row at a
// time, so the control plane keeps serving meanwhile. A value
// changed concurrently is left for its writer (who sealed it under the
// primary already). Values no key opens are counted, never touched.
func (p *Delivery) Reseal(ctx context.Context) (ResealReport, error) {
	ctx = core.As(ctx, core.SystemOperator)
	var rep ResealReport
	if p.Box().Primary() == "" {
		return rep, seal.ErrNoKey
	}
	vars, err := store.SecretVariables(ctx, p.Querier(ctx))
	if err != nil {
		return rep, err
	}
	versions, err := store.AllSecretVersions(ctx, p.Querier(ctx))
	if err != nil {
		return rep, err
	}
	// Per tenant: the variables and the versions resealed.
	perTenant := map[model.TenantID]*[2]int{}
	kind := 0
	// reseal reseals one sealed value bound to binding, with replace.
	var counts ResealCount
	reseal := func(tenant model.TenantID, value, binding string, replace func(sealed string) (bool, error)) error {
		pt, err := p.Box().Open(value, binding)
		switch {
		case err != nil:
			counts.Unreadable++
			return nil
		case !p.Box().NeedsReseal(value):
			counts.Current++
			return nil
		}
		sealed, err := p.Box().Seal(pt, binding)
		if err != nil {
			return err
		}
		ok, err := replace(sealed)
		if ok {
			counts.Resealed++
			if perTenant[tenant] == nil {
				perTenant[tenant] = &[2]int{}
			}
			perTenant[tenant][kind]++
		}
		return err
	}
	for _, v := range vars {
		if err := reseal(v.TenantID, v.Value, v.Binding(), func(sealed string) (bool, error) {
			return store.ReplaceSealed(ctx, p.Querier(ctx), v.ID, v.Value, sealed)
		}); err != nil {
			return rep, err
		}
	}
	rep.Resealed, rep.Current, rep.Unreadable = counts.Resealed, counts.Current, counts.Unreadable
	// The versions releases froze: a rolled-back release runs one.
	counts, kind = ResealCount{}, 1
	for _, sv := range versions {
		if err := reseal(sv.TenantID, sv.Sealed, sv.Binding(), func(sealed string) (bool, error) {
			return store.ReplaceSealedVersion(ctx, p.Querier(ctx), sv.ID, sv.Sealed, sealed)
		}); err != nil {
			return rep, err
		}
	}
	rep.Versions = counts
	for tenant, n := range perTenant {
		err := p.InTx(ctx, func(q *core.Txn) error {
			ev := p.NewAuditEvent(&authz.Actor{Origin: "local"}, tenant)
			core.Target(ev, ActSecretsReseal, "Tenant", string(tenant))
			ev.Details["resealed"], ev.Details["versionsResealed"], ev.Details["primaryKey"] = n[0], n[1], p.Box().Primary()
			return store.InsertAudit(ctx, q, ev.AuditEvent)
		})
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// secretsMayChange notes, in a change of a service or a variable, that the
// tenant's secrets may change: the agents' sessions of the tenant rebuild
// what they redact from logs (agents.logTargetsNow), though no desired
// revision may move.
func (p *Delivery) secretsMayChange(ctx context.Context, q *core.Txn, tenant model.TenantID) error {
	return p.Note(ctx, q, bus.Secrets(string(tenant)))
}
