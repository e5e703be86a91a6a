package core

import (
	"context"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// TenantTargets are every cluster and namespace target of a tenant: what
// environments are placed on.
func (p *Plane) TenantTargets(ctx context.Context, q store.Querier, tenant model.TenantID) ([]*model.Cluster, []*model.NamespaceTarget, error) {
	clusters, err := store.AllClustersOf(ctx, q, tenant)
	if err != nil {
		return nil, nil, err
	}
	targets, err := store.AllNamespaceTargetsOf(ctx, q, tenant)
	return clusters, targets, err
}

// PlaceEnv applies an environment's selectors to the tenant's clusters and
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
