package builds

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// A build's end, which the agents' side (a build reported), deliveries (a
// deployment cancelled, a project deleted) and this domain's scheduler
// reach through core.Builder.

// CancelBuildOf cancels the build a deployment waits for, if it has not
// ended: its cluster's agent deletes the Job.
func (p *Builds) CancelBuildOf(ctx context.Context, q *core.Txn, d *model.Deployment, why string) error {
	b, err := store.BuildOfDeployment(ctx, q, d.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || b.Status.Ended() {
		return err
	}
	return p.EndBuild(ctx, q, b, model.BuildCancelled, why)
}

// EndBuild ends a build with a status and says so; a running one leaves
// its cluster's set, so the agent deletes its Job.
func (p *Builds) EndBuild(ctx context.Context, q *core.Txn, b *model.Build, status model.BuildStatus, why string) error {
	now := p.Now()
	b.Status, b.Message, b.FinishedAt = status, core.ClipText(why, 2000), &now
	if err := store.UpdateBuild(ctx, q, b); err != nil {
		return err
	}
	topics := []string{bus.Build(string(b.ID))}
	if b.ClusterID != nil {
		topics = append(topics, bus.Builds(string(*b.ClusterID)))
	}
	if err := p.Note(ctx, q, topics...); err != nil {
		return err
	}
	return p.EmitBuildEnded(ctx, q, b)
}

// FailBuildDeployment ends the deployment of a build that ended without an
// image, FAILED with the end of the build's log (CANCELLED when the build
// was).
func (p *Builds) FailBuildDeployment(ctx context.Context, q *core.Txn, b *model.Build) error {
	if b.DeploymentID == nil {
		return nil
	}
	d, err := store.Deployments.Get(ctx, q, *b.DeploymentID)
	if err != nil || d.Stage != model.StageBuilding {
		return err
	}
	msg := fmt.Sprintf("build %s %s: %s", b.ID, strings.ToLower(strings.ReplaceAll(string(b.Status), "_", " ")), b.Message)
	tail, err := p.LogTail(ctx, q, b, 20)
	if err != nil {
		return err
	}
	if tail != "" {
		msg += "\nlast lines of its log:\n" + tail
	}
	stage := model.StageFailed
	if b.Status == model.BuildCancelled {
		stage = model.StageCancelled
	}
	return p.Advance(ctx, q, d, stage, "", core.ClipText(msg, 8000))
}

// LogTail is the last n lines of a build's log.
func (p *Builds) LogTail(ctx context.Context, q store.Querier, b *model.Build, n int64) (string, error) {
	from := max(b.LogLines-n, 0)
	lines, err := store.BuildLogAfter(ctx, q, b.ID, from, int(n))
	if err != nil {
		return "", err
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Line
	}
	return strings.Join(out, "\n"), nil
}

// NoteBuildSets tells every cluster of a tenant that its set of builds may
// have changed: a deletion took builds with it (their rows cascade), and
// their agents must stop the Jobs.
func (p *Builds) NoteBuildSets(ctx context.Context, q *core.Txn, tenant model.TenantID) error {
	cs, err := store.AllClustersOf(ctx, q, tenant)
	if err != nil {
		return err
	}
	topics := make([]string, len(cs))
	for i, c := range cs {
		topics[i] = bus.Builds(string(c.ID))
	}
	return p.Note(ctx, q, topics...)
}
