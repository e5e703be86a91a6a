package core

import (
	"context"
	"strings"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func (p *Plane) TenantTargets(ctx context.Context, q store.Querier, tenant model.TenantID) ([]*model.Cluster, []*model.NamespaceTarget, error) {
	clusters, err := store.AllClustersOf(ctx, q, tenant)
	if err != nil {
		return nil, nil, err
	}
	targets, err := store.AllNamespaceTargetsOf(ctx, q, tenant)
	return clusters, targets, err
}

func LabelKeys[T any](items []*T, labels func(*T) model.Labels) map[string]bool {
	out := map[string]bool{}
	for _, it := range items {
		for _, l := range labels(it) {
			out[l.Key] = true
		}
	}
	return out
}

// Eligible returns the clusters an environment's cluster selector picks and
// the namespace targets on them its namespace selector picks.
func (p *Plane) Eligible(ctx context.Context, env *model.Environment) ([]*model.Cluster, []*model.NamespaceTarget, error) {
	if err := p.authz.CheckCtx(ctx, authz.EnvironmentRead, env.Scope()); err != nil {
		return nil, nil, err
	}
	clusters, targets, err := p.TenantTargets(ctx, p.Querier(ctx), env.TenantID)
	if err != nil {
		return nil, nil, err
	}
	cs, ns := eligible(env, clusters, targets)
	return cs, ns, nil
}

func eligible(env *model.Environment, clusters []*model.Cluster, targets []*model.NamespaceTarget) ([]*model.Cluster, []*model.NamespaceTarget) {
	var cs []*model.Cluster
	picked := map[model.ClusterID]bool{}
	for _, c := range clusters {
		if c.Labels.Matches(env.ClusterSelector) {
			cs = append(cs, c)
			picked[c.ID] = true
		}
	}
	var ns []*model.NamespaceTarget
	for _, n := range targets {
		if picked[n.ClusterID] && n.Labels.Matches(env.NamespaceSelector) {
			ns = append(ns, n)
		}
	}
	return cs, ns
}

func names[T any](items []*T, name func(*T) string) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return strings.Join(out, ", ")
}

// place applies an environment's selectors to the tenant's clusters and
// namespace targets (see desired.Place).
func PlaceEnv(env *model.Environment, clusters []*model.Cluster, targets []*model.NamespaceTarget) desired.Placement {
	cs := make([]model.Cluster, len(clusters))
	for i, c := range clusters {
		cs[i] = *c
	}
	ts := make([]model.NamespaceTarget, len(targets))
	for i, t := range targets {
		ts[i] = *t
	}
	return desired.Place(*env, cs, ts)
}

// Placement is where an environment lands, or why it lands nowhere.
type Placement struct {
	Cluster   *model.Cluster
	Namespace *string
	Problem   *string
}

// Place tells where the environment's selectors put it: exactly one cluster
// and namespace, or the reason, naming the candidates.
func (p *Plane) Place(ctx context.Context, env *model.Environment) (*Placement, error) {
	if err := p.authz.CheckCtx(ctx, authz.EnvironmentRead, env.Scope()); err != nil {
		return nil, err
	}
	clusters, targets, err := p.TenantTargets(ctx, p.Querier(ctx), env.TenantID)
	if err != nil {
		return nil, err
	}
	pl := PlaceEnv(env, clusters, targets)
	if pl.Cluster == nil {
		return &Placement{Problem: &pl.Reason}, nil
	}
	ns := pl.Namespace
	if ns == "" {
		proj, err := store.Projects.Get(ctx, p.Querier(ctx), env.ProjectID)
		if err != nil {
			return nil, err
		}
		ns = desired.DefaultNamespace(proj.Name, env.Name)
	}
	return &Placement{Cluster: pl.Cluster, Namespace: &ns}, nil
}
