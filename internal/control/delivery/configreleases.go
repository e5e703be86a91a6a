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
// above); what says what changed ("variable FEATURE_FLAG set"). It returns
// the deployments, in service then environment name order, and lists them
// in the change's audit event.
func (p *Delivery) releaseConfig(ctx context.Context, q *core.Txn, a *authz.Actor, ev *core.Audit, project model.ProjectID,
	what string) ([]*model.Deployment, error) {
	base, err := p.releasesInForce(ctx, q, project)
	if err != nil || len(base) == 0 {
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
	envIDs := make([]model.EnvironmentID, 0, len(base))
	for _, r := range base {
		envIDs = append(envIDs, r.EnvironmentID)
	}
	envs, err := store.Environments.ByIDs(ctx, q, envIDs)
	if err != nil {
		return nil, err
	}
	// An environment placed nowhere now runs nothing to change: its next
	// deploy freezes what is in force then.
	clusters, targets, err := p.TenantTargets(ctx, q, base[0].TenantID)
	if err != nil {
		return nil, err
	}
	for id, env := range envs {
		if core.PlaceEnv(env, clusters, targets).Cluster == nil {
			delete(envs, id)
		}
	}
	slices.SortFunc(services, func(a, b *model.Service) int { return cmp.Compare(a.Name, b.Name) })
	var out []*model.Deployment
	var started []string
	for _, svc := range services {
		var rels []*model.Release
		for _, r := range base {
			if r.ServiceID == svc.ID && envs[r.EnvironmentID] != nil {
				rels = append(rels, r)
			}
		}
		slices.SortFunc(rels, func(a, b *model.Release) int {
			return cmp.Compare(envs[a.EnvironmentID].Name, envs[b.EnvironmentID].Name)
		})
		for _, prev := range rels {
			next := &model.Release{ID: core.NewID[model.ReleaseID](), TenantID: svc.TenantID, ProjectID: project,
				ServiceID: svc.ID, EnvironmentID: prev.EnvironmentID, Image: prev.Image, ImageDigest: prev.ImageDigest,
				ServiceConfig: svc.ServiceConfig, Variables: desired.Freeze(vars, svc.ID, prev.EnvironmentID),
				CreatedBy: &a.User.ID, CreatedAt: p.Now()}
			if desired.SameConfig(prev, next) {
				continue
			}
			if next.Number, err = store.NextReleaseNumber(ctx, q, svc.ID, prev.EnvironmentID); err != nil {
				return nil, err
			}
			if err := store.Releases.Insert(ctx, q, next); err != nil {
				return nil, err
			}
			// The change's own event is the one audited; the deployment's
			// is recorded in its details.
			scratch := p.NewAuditEvent(a, svc.TenantID)
			why := "release %d: " + strings.ReplaceAll(what, "%", "%%") + " by %s"
			d, err := p.StartDeployment(ctx, q, scratch, a, core.ActDeploymentCreate, next, envs[prev.EnvironmentID], why)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
			started = append(started, string(d.ID))
		}
	}
	if len(started) > 0 {
		ev.Details["deployments"] = started
	}
	return out, nil
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
