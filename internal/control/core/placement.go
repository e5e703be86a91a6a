package core

import (
	"context"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// TenantTargets are every cluster and namespace target of a tenant: what
// environments are placed on.
//
// A transaction reads them once: a change that starts a deployment per
// service (a change set, a project's variable) places each on what the
// first read; no change that starts deployments writes clusters or
// namespace targets.
func (p *Plane) TenantTargets(ctx context.Context, q store.Querier, tenant model.TenantID) ([]*model.Cluster, []*model.NamespaceTarget, error) {
	t, _ := q.(*Txn)
	if t != nil && t.placed[tenant] != nil {
		return t.placed[tenant].clusters, t.placed[tenant].targets, nil
	}
	clusters, err := store.AllClustersOf(ctx, q, tenant)
	if err != nil {
		return nil, nil, err
	}
	targets, err := store.AllNamespaceTargetsOf(ctx, q, tenant)
	if err == nil && t != nil {
		if t.placed == nil {
			t.placed = map[model.TenantID]*placedOn{}
		}
		t.placed[tenant] = &placedOn{clusters, targets}
	}
	return clusters, targets, err
}

// cluster reads a cluster of tenant, from what the transaction read of the
// tenant's clusters if it did.
func (t *Txn) cluster(ctx context.Context, tenant model.TenantID, id model.ClusterID) (*model.Cluster, error) {
	if on := t.placed[tenant]; on != nil {
		for _, c := range on.clusters {
			if c.ID == id {
				return c, nil
			}
		}
	}
	return store.Clusters.Get(ctx, t, id)
}

// placedOn is what a transaction read of a tenant's clusters and namespace
// targets (TenantTargets).
type placedOn struct {
	clusters []*model.Cluster
	targets  []*model.NamespaceTarget
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
