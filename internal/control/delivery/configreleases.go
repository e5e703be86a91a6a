package delivery

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// A release carries its configuration (desired.Freeze), so a change of a
// service's processes or domains, or of a variable at any scope, reaches a
// cluster only as a new release, through the same path as a deploy: for
// each environment where it changes what a service runs, a release of the
// service (the image it runs, the configuration in force after the
// change) and its deployment, with the usual stages, readiness probes and
// rollback. In a protected environment the deployment waits for an
// approval like any deploy, and nothing reaches the cluster before it. A
// change that alters no service's configuration in force makes no release.

// releaseConfig makes, in the transaction of a configuration change of
// project by a, the releases and deployments the change calls for (see
// above); what says what changed ("variable FEATURE_FLAG set"). It lists
// the deployments in the change's audit event.
//
// A change that would change what a protected environment runs is refused
// with core.NeedsApproval, unless the transaction applies an approved
// change (core.Txn.Approve): it goes through a change set instead.
func (p *Delivery) releaseConfig(ctx context.Context, q *core.Txn, a *authz.Actor, ev *core.Audit, project model.ProjectID,
	what string) error {
	_, err := p.release(ctx, q, a, ev, project, what, nil)
	return err
}

// svcEnv is a service in an environment.
type svcEnv struct {
	svc model.ServiceID
	env model.EnvironmentID
}

// released is one release a change made, with the one it replaces (nil
// for a service's first in its environment) and its deployment.
type released struct {
	Release, Prev *model.Release
	Deployment    *model.Deployment
}

// release is releaseConfig with image deploys: deploys gives the image
// digest to release for a service in an environment (a change set's
// deploys), which makes a release there even where the configuration is
// the same. It returns what it made, in service then environment name
// order.
func (p *Delivery) release(ctx context.Context, q *core.Txn, a *authz.Actor, ev *core.Audit, project model.ProjectID,
	what string, deploys map[svcEnv]string) ([]released, error) {
	base, err := p.releasesInForce(ctx, q, project)
	if err != nil || len(base) == 0 && len(deploys) == 0 {
		return nil, err
	}
	services, err := store.ServicesOfProject(ctx, q, project)
	if err != nil {
		return nil, err
	}
	vars, err := store.VariablesOfProject(ctx, q, project)
	if err != nil {
		return nil, err
	}
	prevOf := map[svcEnv]*model.Release{}
	envIDs := make([]model.EnvironmentID, 0, len(base)+len(deploys))
	for _, r := range base {
		prevOf[svcEnv{r.ServiceID, r.EnvironmentID}] = r
		envIDs = append(envIDs, r.EnvironmentID)
	}
	for k := range deploys {
		envIDs = append(envIDs, k.env)
	}
	envs, err := store.Environments.ByIDs(ctx, q, envIDs)
	if err != nil {
		return nil, err
	}
	if len(base) > 0 {
		// An environment placed nowhere now runs nothing to change: its
		// next deploy freezes what is in force then (a deploy there is
		// refused by StartDeployment).
		clusters, targets, err := p.TenantTargets(ctx, q, base[0].TenantID)
		if err != nil {
			return nil, err
		}
		for id, env := range envs {
			if core.PlaceEnv(env, clusters, targets).Cluster == nil && !deployedTo(deploys, id) {
				delete(envs, id)
			}
		}
	}
	slices.SortFunc(services, func(a, b *model.Service) int { return cmp.Compare(a.Name, b.Name) })
	envOrder := make([]*model.Environment, 0, len(envs))
	for _, e := range envs {
		envOrder = append(envOrder, e)
	}
	slices.SortFunc(envOrder, func(a, b *model.Environment) int { return cmp.Compare(a.Name, b.Name) })
	var out []released
	var started []string
	var protected []string
	var numbers map[[2]string]int // read once, when the first release is made
	for _, svc := range services {
		for _, env := range envOrder {
			k := svcEnv{svc.ID, env.ID}
			prev, digest := prevOf[k], deploys[k]
			if prev == nil && digest == "" {
				continue
			}
			next := &model.Release{ID: core.NewID[model.ReleaseID](), TenantID: svc.TenantID, ProjectID: project,
				ServiceID: svc.ID, EnvironmentID: env.ID, Image: svc.Image, ImageDigest: digest,
				ServiceConfig: svc.ServiceConfig, Variables: desired.Freeze(vars, svc.ID, env.ID),
				CreatedBy: &a.User.ID, CreatedAt: p.Now()}
			if digest == "" {
				next.Image, next.ImageDigest = prev.Image, prev.ImageDigest
				if desired.SameConfig(prev, next) {
					continue
				}
			}
			if env.Protected && !q.Approved() {
				if !slices.Contains(protected, env.Name) {
					protected = append(protected, env.Name)
				}
				continue
			}
			if numbers == nil {
				if numbers, err = store.ReleaseNumbers(ctx, q, project); err != nil {
					return nil, err
				}
			}
			nk := [2]string{string(svc.ID), string(env.ID)}
			numbers[nk]++
			next.Number = numbers[nk]
			if err := store.Releases.Insert(ctx, q, next); err != nil {
				return nil, err
			}
			// The change's own event is the one audited; the deployment's
			// is recorded in its details.
			scratch := p.NewAuditEvent(a, svc.TenantID)
			why := "release %d: " + strings.ReplaceAll(what, "%", "%%") + " by %s"
			d, err := p.StartDeployment(ctx, q, scratch, a, core.ActDeploymentCreate, next, env, why)
			if err != nil {
				return nil, err
			}
			q.Previewed(next, prev, d.ClusterID)
			out = append(out, released{Release: next, Prev: prev, Deployment: d})
			started = append(started, string(d.ID))
		}
	}
	if len(protected) > 0 {
		return nil, &core.NeedsApproval{Environments: protected}
	}
	if len(started) > 0 {
		ev.Details["deployments"] = started
	}
	return out, nil
}

func deployedTo(deploys map[svcEnv]string, env model.EnvironmentID) bool {
	for k := range deploys {
		if k.env == env {
			return true
		}
	}
	return false
}

// releasesInForce are, for each service of project and environment where
// it has one, the release a configuration change builds on: that of the
// newest request still waiting (queued or awaiting approval: the new one
// replaces it, and keeps its image), else the one that runs.
func (p *Delivery) releasesInForce(ctx context.Context, q store.Querier, project model.ProjectID) ([]*model.Release, error) {
	live, err := store.LiveOfProject(ctx, q, project)
	if err != nil {
		return nil, err
	}
	waiting, err := store.WaitingOfProject(ctx, q, project)
	if err != nil {
		return nil, err
	}
	type pair struct {
		svc model.ServiceID
		env model.EnvironmentID
	}
	newest := map[pair]*model.Deployment{}
	for _, d := range append(live, waiting...) {
		k := pair{d.ServiceID, d.EnvironmentID}
		if o := newest[k]; o == nil || d.ID > o.ID {
			newest[k] = d
		}
	}
	ids := make([]model.ReleaseID, 0, len(newest))
	for _, d := range newest {
		ids = append(ids, d.ReleaseID)
	}
	byID, err := p.ReleaseCache().ByIDs(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*model.Release, 0, len(byID))
	for _, id := range ids {
		if r := byID[id]; r != nil && r.ImageDigest != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

// FreezeReport counts what FreezeReleases did.
type FreezeReport struct {
	// Versions are the secret versions kept for secrets set before
	// their values were kept; Releases the releases frozen.
	Versions, Releases int
}

// freezeBatch bounds the rows one round of FreezeReleases reads.
const freezeBatch = 500

// FreezeReleases gives the releases made before releases froze their
// configuration the configuration in force (what they run now: the
// service's domains and the variables in force, secrets by the version of
// their value), first keeping that version of every secret set before
// versions were kept. Nothing running changes: a release compiles the same
// before and after. It runs at each start of the control plane, after the
// migrations, as the operator, and does nothing once every release is
// frozen; replicas starting at once each freeze a release at most once
// (store.FreezeRelease is conditional).
func (p *Delivery) FreezeReleases(ctx context.Context) (FreezeReport, error) {
	ctx = core.As(ctx, core.SystemOperator)
	var rep FreezeReport
	for {
		vars, err := store.SecretsWithoutVersion(ctx, p.Querier(ctx), freezeBatch)
		if err != nil || len(vars) == 0 {
			if err != nil {
				return rep, err
			}
			break
		}
		for _, v := range vars {
			if err := store.KeepSecretVersion(ctx, p.Querier(ctx), v); err != nil {
				return rep, err
			}
			rep.Versions++
		}
	}
	for {
		rels, err := store.UnfrozenReleases(ctx, p.Querier(ctx), freezeBatch)
		if err != nil || len(rels) == 0 {
			return rep, err
		}
		for _, r := range rels {
			err := p.SystemChange(ctx, r.TenantID, false, func(q *core.Txn) error {
				svc, err := store.Services.Get(ctx, q, r.ServiceID)
				if err != nil {
					return err
				}
				r.Domains = svc.Domains // what runs: domains were live
				if err := p.FreezeVariables(ctx, q, r); err != nil {
					return err
				}
				ok, err := store.FreezeRelease(ctx, q, r)
				if ok {
					rep.Releases++
				}
				return err
			})
			if err != nil {
				return rep, err
			}
		}
	}
}

// ReleaseDiff is what changed from release against to rel, another
// release of the same service (model.DiffReleases).
func (p *Delivery) ReleaseDiff(ctx context.Context, rel *model.Release, against model.ReleaseID) (*model.ReleaseDiff, error) {
	from, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Releases, against, authz.ReleaseRead)
	if core.IsNotFound(err) {
		return nil, core.Invalid("no such release", "against")
	}
	if err != nil {
		return nil, err
	}
	if from.ServiceID != rel.ServiceID {
		return nil, core.Invalid("the release to compare with is of another service: releases of one service compare", "against")
	}
	d := model.DiffReleases(from, rel)
	return &d, nil
}
