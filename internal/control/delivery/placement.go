package delivery

import (
	"context"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Eligible returns the clusters an environment's cluster selector picks and
// the namespace targets on them its namespace selector picks.
func (p *Delivery) Eligible(ctx context.Context, env *model.Environment) ([]*model.Cluster, []*model.NamespaceTarget, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.EnvironmentRead, env.Scope()); err != nil {
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

// Placement is where an environment lands, or why it lands nowhere.
type Placement struct {
	Cluster   *model.Cluster
	Namespace *string
	Problem   *string
}

// Place tells where the environment's selectors put it: exactly one cluster
// and namespace, or the reason, naming the candidates.
func (p *Delivery) Place(ctx context.Context, env *model.Environment) (*Placement, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.EnvironmentRead, env.Scope()); err != nil {
		return nil, err
	}
	clusters, targets, err := p.TenantTargets(ctx, p.Querier(ctx), env.TenantID)
	if err != nil {
		return nil, err
	}
	pl := core.PlaceEnv(env, clusters, targets)
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

// LabelKeys are the label keys the items carry.
func labelKeys[T any](items []*T, labels func(*T) model.Labels) map[string]bool {
	out := map[string]bool{}
	for _, it := range items {
		for _, l := range labels(it) {
			out[l.Key] = true
		}
	}
	return out
}
