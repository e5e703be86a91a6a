package control

import (
	"context"
	"errors"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// ClusterChange is what a previewed change would do to one cluster.
type ClusterChange struct {
	Cluster      *model.Cluster
	FromRevision int64
	desired.Diff
}

// previewing collects the result of a change run for a preview.
type previewing struct{ changes []ClusterChange }

type previewKey struct{}

// errPreviewed rolls a previewed change back once its effect is known.
var errPreviewed = errors.New("preview: rolled back")

// preview runs a mutation's own code — its validation, authorization and
// plan checks included — inside a transaction that is always rolled back,
// and reports what the change would do to each cluster of the tenant.
// Nothing is stored, audited or published.
func (p *Plane) preview(ctx context.Context, do func(context.Context) error) ([]ClusterChange, error) {
	pv := &previewing{}
	err := do(context.WithValue(ctx, previewKey{}, pv))
	if errors.Is(err, errPreviewed) {
		return pv.changes, nil
	}
	if err != nil {
		return nil, err
	}
	return []ClusterChange{}, nil
}

// compileAll compiles every cluster of a tenant.
func (p *Plane) compileAll(ctx context.Context, q store.Querier, tenant model.TenantID) (map[model.ClusterID]desired.State, []*model.Cluster, error) {
	rows, err := store.LoadTenantRows(ctx, q, tenant)
	if err != nil {
		return nil, nil, err
	}
	out := map[model.ClusterID]desired.State{}
	in := tenantInput(p.box, rows)
	for _, c := range rows.Clusters {
		out[c.ID] = desired.Compile(forCluster(in, c))
	}
	return out, rows.Clusters, nil
}

// finishPreview compares the states before and after a previewed change.
func (p *Plane) finishPreview(ctx context.Context, q store.Querier, tenant model.TenantID, pv *previewing, before map[model.ClusterID]desired.State) error {
	after, clusters, err := p.compileAll(ctx, q, tenant)
	if err != nil {
		return err
	}
	pv.changes = []ClusterChange{}
	for _, c := range clusters {
		d := desired.Compare(before[c.ID], after[c.ID])
		if d.Empty() {
			continue
		}
		pv.changes = append(pv.changes, ClusterChange{Cluster: c, FromRevision: c.DesiredRevision, Diff: d})
	}
	return errPreviewed
}

// PreviewDeploy shows what Deploy would change.
func (p *Plane) PreviewDeploy(ctx context.Context, svc model.ServiceID, env model.EnvironmentID, digest string) ([]ClusterChange, error) {
	return p.preview(ctx, func(ctx context.Context) error {
		_, _, err := p.Deploy(ctx, svc, env, digest)
		return err
	})
}

// PreviewUpdateService shows what UpdateService would change.
func (p *Plane) PreviewUpdateService(ctx context.Context, id model.ServiceID, in ServiceInput) ([]ClusterChange, error) {
	return p.preview(ctx, func(ctx context.Context) error {
		_, err := p.UpdateService(ctx, id, in)
		return err
	})
}

// PreviewSetVariable shows what SetVariable would change.
func (p *Plane) PreviewSetVariable(ctx context.Context, in SetVariableInput) ([]ClusterChange, error) {
	return p.preview(ctx, func(ctx context.Context) error {
		_, err := p.SetVariable(ctx, in)
		return err
	})
}

// PreviewUpdateEnvironment shows what UpdateEnvironment would change: new
// selectors move an environment between clusters and namespaces.
func (p *Plane) PreviewUpdateEnvironment(ctx context.Context, id model.EnvironmentID, in EnvironmentInput) ([]ClusterChange, error) {
	return p.preview(ctx, func(ctx context.Context) error {
		_, err := p.UpdateEnvironment(ctx, id, in)
		return err
	})
}
