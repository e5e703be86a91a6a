package clusters

import (
	"context"
	"errors"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func (p *Clusters) Cluster(ctx context.Context, id model.ClusterID) (*model.Cluster, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Clusters, id, authz.ClusterRead)
}

func (p *Clusters) ClustersByIDs(ctx context.Context, ids []model.ClusterID) (map[model.ClusterID]*model.Cluster, error) {
	return core.ByIDs(ctx, p.Plane, store.Clusters, ids, authz.ClusterRead)
}

func (p *Clusters) Clusters(ctx context.Context, tenant model.TenantID, pg store.PageArgs) (store.Page[model.Cluster], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ClusterRead, model.Scope{Tenant: tenant}); err != nil {
		return store.Page[model.Cluster]{}, err
	}
	return store.ClustersOf(ctx, p.Querier(ctx), tenant, pg)
}

// ClusterStatus derives a cluster's status on the plane's clock.
func (p *Clusters) ClusterStatus(c *model.Cluster) model.ClusterStatus {
	return c.Status(p.Now(), p.Settings.DisconnectedAfter)
}

// RegisterCluster registers a cluster; it stays PENDING until its agent
// connects. Tenant admins only, within the plan.
func (p *Clusters) RegisterCluster(ctx context.Context, tenant model.TenantID, name string, labels []model.Label) (*model.Cluster, string, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ClusterManage, model.Scope{Tenant: tenant}); err != nil {
		return nil, "", err
	}
	var c core.Checks
	c.Name(name, "cluster name", "input", "name")
	ls := c.Labels(labels, "input", "labels")
	if err := c.Err(); err != nil {
		return nil, "", err
	}
	cl := &model.Cluster{ID: core.NewID[model.ClusterID](), TenantID: tenant, Name: name, Labels: ls, CreatedAt: p.Now()}
	var secret string
	err := p.Change(ctx, tenant, func(q *core.Txn, t *model.Tenant, ev *core.Audit) error {
		if err := p.EnsureRoom(ctx, q, t, model.LimitClusters, 1); err != nil {
			return err
		}
		if err := store.Clusters.Insert(ctx, q, cl); err != nil {
			return core.ConflictOn(err, "name", "a cluster named "+name+" already exists in this tenant")
		}
		tok, s, err := p.insertConnectToken(ctx, q, cl)
		if err != nil {
			return err
		}
		secret = s
		core.Target(ev, ActClusterRegister, "Cluster", string(cl.ID))
		ev.Details["name"], ev.Details["labels"], ev.Details["tokenPrefix"] = name, ls, tok.Prefix
		return nil
	})
	cl, err = p.reread(ctx, cl, err)
	if err != nil {
		return nil, "", err
	}
	return cl, secret, nil
}

func (p *Clusters) SetClusterLabels(ctx context.Context, id model.ClusterID, labels []model.Label) (*model.Cluster, error) {
	return setLabels(ctx, p, store.Clusters, id, authz.ClusterManage, ActClusterSetLabels, "Cluster", labels, store.SetClusterLabels)
}

// labelled is a cluster or a namespace target.
type labelled[T any] interface {
	core.Scoped[T]
	LabelSet() model.Labels
}

// setLabels replaces the labels of a cluster or a namespace target, checked,
// audited with what they were and became; it returns the object as
// committed (a cluster's change may give it a new desired revision).
func setLabels[K ~string, T any, PT labelled[T]](ctx context.Context, p *Clusters, t *store.Table[K, T], id K, perm authz.Perm,
	act core.Action, kind string, labels []model.Label, write func(context.Context, store.Querier, K, model.Labels) error) (*T, error) {
	v, err := core.Get[K, T, PT](ctx, p.Plane, p.Querier(ctx), t, id, perm)
	if err != nil {
		return nil, err
	}
	var c core.Checks
	ls := c.Labels(labels, "input", "labels")
	if err := c.Err(); err != nil {
		return nil, err
	}
	err = p.Change(ctx, PT(v).Scope().Tenant, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if v, err = t.Get(ctx, q, id); err != nil {
			return err
		}
		core.Target(ev, act, kind, string(id))
		ev.Details["labels"] = map[string]any{"from": PT(v).LabelSet(), "to": ls}
		return write(ctx, q, id, ls)
	})
	if err != nil {
		return nil, err
	}
	return t.Get(ctx, p.Querier(ctx), id)
}

// reread returns the cluster as committed: the change may have given it a
// new desired revision after fn returned.
func (p *Clusters) reread(ctx context.Context, cl *model.Cluster, err error) (*model.Cluster, error) {
	if err != nil {
		return nil, err
	}
	return store.Clusters.Get(ctx, p.Querier(ctx), cl.ID)
}

// DeleteCluster deletes a cluster and its namespace targets; a cluster that
// deployments went to keeps its history and cannot be deleted.
func (p *Clusters) DeleteCluster(ctx context.Context, id model.ClusterID) error {
	cl, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Clusters, id, authz.ClusterManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, cl.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActClusterDelete, "Cluster", string(id))
		ev.Details["name"] = cl.Name
		err := store.Clusters.Delete(ctx, q, id)
		var ce *store.ConflictError
		if errors.As(err, &ce) && ce.Reference {
			return core.Problem{Field: []string{"input", "clusterId"}, Code: core.CodeConflict,
				Message: "deployments went to cluster " + cl.Name + "; it keeps their history and cannot be deleted"}
		}
		return err
	})
}

func (p *Clusters) NamespaceTarget(ctx context.Context, id model.NamespaceTargetID) (*model.NamespaceTarget, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.NamespaceTargets, id, authz.ClusterRead)
}

func (p *Clusters) NamespaceTargets(ctx context.Context, cl *model.Cluster, pg store.PageArgs) (store.Page[model.NamespaceTarget], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ClusterRead, cl.Scope()); err != nil {
		return store.Page[model.NamespaceTarget]{}, err
	}
	return store.NamespaceTargetsOf(ctx, p.Querier(ctx), cl.ID, pg)
}

func (p *Clusters) CreateNamespaceTarget(ctx context.Context, cluster model.ClusterID, namespace string, labels []model.Label) (*model.NamespaceTarget, error) {
	cl, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Clusters, cluster, authz.NamespaceTargetManage)
	if err != nil {
		return nil, err
	}
	var c core.Checks
	c.Name(namespace, "namespace", "input", "namespace")
	ls := c.Labels(labels, "input", "labels")
	if err := c.Err(); err != nil {
		return nil, err
	}
	nt := &model.NamespaceTarget{ID: core.NewID[model.NamespaceTargetID](), TenantID: cl.TenantID, ClusterID: cluster,
		Namespace: namespace, Labels: ls, CreatedAt: p.Now()}
	err = p.Change(ctx, cl.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if err := store.NamespaceTargets.Insert(ctx, q, nt); err != nil {
			return core.ConflictOn(err, "namespace", "cluster "+cl.Name+" already has a namespace target "+namespace)
		}
		core.Target(ev, ActTargetCreate, "NamespaceTarget", string(nt.ID))
		ev.Details["clusterId"], ev.Details["namespace"], ev.Details["labels"] = string(cluster), namespace, ls
		return nil
	})
	return core.Committed(nt, err)
}

func (p *Clusters) SetNamespaceTargetLabels(ctx context.Context, id model.NamespaceTargetID, labels []model.Label) (*model.NamespaceTarget, error) {
	return setLabels(ctx, p, store.NamespaceTargets, id, authz.NamespaceTargetManage, ActTargetSetLabels, "NamespaceTarget",
		labels, store.SetNamespaceTargetLabels)
}

func (p *Clusters) DeleteNamespaceTarget(ctx context.Context, id model.NamespaceTargetID) error {
	nt, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.NamespaceTargets, id, authz.NamespaceTargetManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, nt.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActTargetDelete, "NamespaceTarget", string(id))
		ev.Details["clusterId"], ev.Details["namespace"] = string(nt.ClusterID), nt.Namespace
		return store.NamespaceTargets.Delete(ctx, q, id)
	})
}
