package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The changes of a change set (package changesets) are the inputs of the
// direct mutations — setVariable, deleteVariable, updateService's
// processes and domains, deploy of an image digest — kept until the set is
// applied. Delivery checks each as its mutation would when it is added
// (ProposeChange) and applies a whole set in one transaction (ApplyChanges): every
// change's rows, then the releases and deployments they call for, so that
// each cluster gets one desired revision.

// ProposeChange checks change ch of set as its direct mutation would, the
// caller's capabilities included, and completes it: what it replaces now
// (Base), and a secret's value sealed to the set. Nothing is stored.
func (p *Delivery) ProposeChange(ctx context.Context, set *model.ChangeSet, ch *model.Change) error {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return err
	}
	q := p.Querier(ctx)
	scope := model.Scope{Tenant: set.TenantID, Project: set.ProjectID}
	var c core.Checks
	switch ch.Kind {
	case model.ChangeSetVariable, model.ChangeDeleteVariable:
		if ch.ServiceID != nil && ch.EnvironmentID != nil {
			return core.Invalid("give environmentId or serviceId, not both: a variable has one scope", "input", "serviceId")
		}
		v := changeVariable(set, ch)
		if err := p.Authorizer().Check(ctx, a, scopePerm(v), scope); err != nil {
			return err
		}
		if err := p.checkScopeParent(ctx, q, v); err != nil {
			return err
		}
		if ch.Kind == model.ChangeSetVariable {
			checkVariable(&c, VariableInput{Name: ch.Name, Value: ch.Value, Secret: ch.Secret}, "input")
		} else if !envVarName.MatchString(ch.Name) {
			c.Add(core.Invalid(fmt.Sprintf("no variable %q at this scope", ch.Name), "input", "name"))
		}
	case model.ChangeUpdateService:
		svc, err := p.changeService(ctx, q, set, ch)
		if err != nil {
			return err
		}
		if err := p.Authorizer().Check(ctx, a, authz.ServiceManage, svc.Scope()); err != nil {
			return err
		}
		if ch.Processes == nil && ch.Domains == nil {
			c.Add(core.Invalid("a change of a service in a change set gives its processes, its domains or both", "input"))
		}
		cfg := svc.ServiceConfig
		applyServiceChange(&cfg, ch)
		checkConfig(&c, nil, &cfg)
	case model.ChangeDeploy:
		svc, err := p.changeService(ctx, q, set, ch)
		if err != nil {
			return err
		}
		if ch.EnvironmentID == nil {
			return core.Invalid("a deploy names its environment", "input", "environmentId")
		}
		env, err := core.Get(ctx, p.Plane, q, store.Environments, *ch.EnvironmentID, authz.EnvironmentRead)
		if err != nil || env.ProjectID != set.ProjectID {
			return core.NotFoundOn(orNotFound(err), "environmentId", "no such environment in this project")
		}
		// The set's approval stands for a protected environment's.
		if err := p.Authorizer().Check(ctx, a, authz.DeploymentCreate, svc.Scope()); err != nil {
			return err
		}
		if !core.ImageDigest.MatchString(ch.ImageDigest) {
			c.Add(core.Invalid(fmt.Sprintf("image digest %q must be sha256: followed by 64 lowercase hex digits", ch.ImageDigest), "input", "imageDigest"))
		}
	default:
		return core.Invalid(fmt.Sprintf("unknown kind of change %q", ch.Kind), "input", "kind")
	}
	if err := c.Err(); err != nil {
		return err
	}
	if ch.Base, err = p.changeBase(ctx, q, set, ch, &inForce{}); err != nil {
		return err
	}
	if ch.Kind == model.ChangeDeleteVariable && ch.Base == "" {
		return core.Invalid(fmt.Sprintf("no variable %s at this scope", ch.Name), "input", "name")
	}
	if ch.Secret {
		sealed, err := p.Box().Seal([]byte(ch.Value), set.SealBinding(ch))
		if err != nil {
			return core.Invalid("secrets cannot be stored: this control plane has no master key (the operator sets NEBULA_MASTER_KEY)", "input", "secret")
		}
		ch.Value = sealed
	}
	return nil
}

// RebaseChanges takes what each change of set replaces afresh (the author has
// seen the project as it is now, e.g. in a new preview).
func (p *Delivery) RebaseChanges(ctx context.Context, q store.Querier, set *model.ChangeSet) error {
	var memo inForce
	for i := range set.Changes {
		ch := &set.Changes[i]
		base, err := p.changeBase(ctx, q, set, ch, &memo)
		if err != nil {
			return err
		}
		if ch.Kind == model.ChangeDeleteVariable && base == "" {
			return core.Problem{Code: core.CodeConflict, Field: []string{"input", "changeSetId"},
				Message: fmt.Sprintf("change %d deletes variable %s, which no longer exists: remove the change", ch.Seq, ch.Name)}
		}
		ch.Base = base
	}
	return nil
}

// ApplyChanges applies every change of set in q, a transaction of the set's
// tenant: it refuses with a CONFLICT naming them if what a change replaces
// moved since it was added, writes the variables and services, then makes
// the releases and deployments they call for (those of a protected
// environment only when the transaction carries an approval, core.Txn.Approve).
func (p *Delivery) ApplyChanges(ctx context.Context, q *core.Txn, a *authz.Actor, ev *core.Audit, set *model.ChangeSet) (*model.AppliedChanges, error) {
	var conflicts []string
	var memo inForce
	for i := range set.Changes {
		ch := &set.Changes[i]
		now, err := p.changeBase(ctx, q, set, ch, &memo)
		if err != nil {
			return nil, err
		}
		if now != ch.Base {
			what, err := p.describe(ctx, q, ch)
			if err != nil {
				return nil, err
			}
			conflicts = append(conflicts, fmt.Sprintf("change %d (%s) was made against what has changed since", ch.Seq, what))
		}
	}
	if len(conflicts) > 0 {
		return nil, core.Problem{Code: core.CodeConflict, Field: []string{"input", "changeSetId"},
			Message: "the project changed under the change set: " + strings.Join(conflicts, "; ") +
				"; preview it again and rebase it (rebaseChangeSet) to apply it as it is now"}
	}
	deploys := map[svcEnv]string{}
	for i := range set.Changes {
		ch := &set.Changes[i]
		switch ch.Kind {
		case model.ChangeSetVariable:
			in := VariableInput{Name: ch.Name, Value: ch.Value, Secret: ch.Secret}
			if ch.Secret {
				pt, err := p.Box().Open(ch.Value, set.SealBinding(ch))
				if err != nil {
					return nil, fmt.Errorf("opening change %d's secret: %w", ch.Seq, err)
				}
				in.Value = string(pt)
			}
			if _, _, err := p.putVariable(ctx, q, changeVariable(set, ch), in); err != nil {
				return nil, err
			}
		case model.ChangeDeleteVariable:
			v := changeVariable(set, ch)
			cur, err := store.VariableIn(ctx, q, set.ProjectID, v.ScopeKey(), ch.Name)
			if err != nil {
				return nil, err
			}
			if err := store.Variables.Delete(ctx, q, cur.ID); err != nil {
				return nil, err
			}
		case model.ChangeUpdateService:
			svc, err := store.Services.Get(ctx, q, *ch.ServiceID)
			if err != nil {
				return nil, err
			}
			applyServiceChange(&svc.ServiceConfig, ch)
			svc.UpdatedAt = p.Now()
			if err := store.UpdateService(ctx, q, svc); err != nil {
				return nil, err
			}
		case model.ChangeDeploy:
			deploys[svcEnv{*ch.ServiceID, *ch.EnvironmentID}] = ch.ImageDigest
		}
	}
	if err := p.secretsMayChange(ctx, q, set.TenantID); err != nil {
		return nil, err
	}
	rels, err := p.release(ctx, q, a, ev, set.ProjectID, fmt.Sprintf("change set #%d (%s)", set.Number, set.Title), deploys)
	if err != nil {
		return nil, err
	}
	out := &model.AppliedChanges{}
	for _, r := range rels {
		out.Releases = append(out.Releases, r.Release)
		out.Previous = append(out.Previous, r.Prev)
		out.Deployments = append(out.Deployments, r.Deployment)
	}
	return out, nil
}

// changeVariable is the variable a variable change sets or deletes, at its
// scope.
func changeVariable(set *model.ChangeSet, ch *model.Change) *model.Variable {
	return &model.Variable{TenantID: set.TenantID, ProjectID: set.ProjectID, EnvironmentID: ch.EnvironmentID,
		ServiceID: ch.ServiceID, Name: ch.Name}
}

// changeService reads the service a change names, of the set's project.
func (p *Delivery) changeService(ctx context.Context, q store.Querier, set *model.ChangeSet, ch *model.Change) (*model.Service, error) {
	if ch.ServiceID == nil {
		return nil, core.Invalid("the change names no service", "input", "serviceId")
	}
	svc, err := core.Get(ctx, p.Plane, q, store.Services, *ch.ServiceID, authz.ServiceRead)
	if err != nil || svc.ProjectID != set.ProjectID {
		return nil, core.NotFoundOn(orNotFound(err), "serviceId", "no such service in this project")
	}
	return svc, nil
}

func orNotFound(err error) error {
	if err == nil {
		return store.ErrNotFound
	}
	return err
}

func applyServiceChange(cfg *model.ServiceConfig, ch *model.Change) {
	if ch.Processes != nil {
		cfg.Processes = slices.Clone(ch.Processes)
	}
	if ch.Domains != nil {
		cfg.Domains = slices.Clone(ch.Domains)
	}
}

// changeBase fingerprints what ch replaces as it is in q now: a variable's
// version ("" for none), the processes or domains of a service, the image
// in force of a deploy's service in its environment ("" for none).
func (p *Delivery) changeBase(ctx context.Context, q store.Querier, set *model.ChangeSet, ch *model.Change, memo *inForce) (string, error) {
	switch ch.Kind {
	case model.ChangeSetVariable, model.ChangeDeleteVariable:
		cur, err := store.VariableIn(ctx, q, set.ProjectID, changeVariable(set, ch).ScopeKey(), ch.Name)
		if errors.Is(err, store.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		return string(cur.Version()), nil
	case model.ChangeUpdateService:
		svc, err := store.Services.Get(ctx, q, *ch.ServiceID)
		if err != nil {
			return "", err
		}
		// By value (JSON), not by %v: a process's port and probe are
		// pointers.
		var parts []any
		if ch.Processes != nil {
			parts = append(parts, "processes", svc.Processes)
		}
		if ch.Domains != nil {
			parts = append(parts, "domains", svc.Domains)
		}
		b, err := json.Marshal(parts)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:12]), nil
	default:
		if !memo.read {
			var err error
			if memo.rels, err = p.releasesInForce(ctx, q, set.ProjectID); err != nil {
				return "", err
			}
			memo.read = true
		}
		for _, r := range memo.rels {
			if r.ServiceID == *ch.ServiceID && r.EnvironmentID == *ch.EnvironmentID {
				return r.ImageDigest, nil
			}
		}
		return "", nil
	}
}

// inForce is the project's releases in force, read once for all the
// deploys of a set (changeBase).
type inForce struct {
	rels []*model.Release
	read bool
}

// describe says what ch changes, by name ("variable FLAG of service web").
func (p *Delivery) describe(ctx context.Context, q store.Querier, ch *model.Change) (string, error) {
	var service, env string
	if ch.ServiceID != nil {
		svc, err := store.Services.Get(ctx, q, *ch.ServiceID)
		if err != nil {
			return "", err
		}
		service = svc.Name
	}
	if ch.EnvironmentID != nil {
		e, err := store.Environments.Get(ctx, q, *ch.EnvironmentID)
		if err != nil {
			return "", err
		}
		env = e.Name
	}
	return ch.Summary(service, env), nil
}

// DescribeChange says what ch changes, by name, as the console and the CLI show
// it.
func (p *Delivery) DescribeChange(ctx context.Context, ch *model.Change) (string, error) {
	return p.describe(ctx, p.Querier(ctx), ch)
}
