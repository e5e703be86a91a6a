package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// CancelBuildOf cancels the build a deployment waits for, if it has not
// ended: its cluster's agent deletes the Job.
func (p *Plane) CancelBuildOf(ctx context.Context, q *Txn, d *model.Deployment, why string) error {
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
func (p *Plane) EndBuild(ctx context.Context, q *Txn, b *model.Build, status model.BuildStatus, why string) error {
	now := p.now()
	b.Status, b.Message, b.FinishedAt = status, ClipText(why, 2000), &now
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
func (p *Plane) FailBuildDeployment(ctx context.Context, q *Txn, b *model.Build) error {
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
	return p.Advance(ctx, q, d, stage, "", ClipText(msg, 8000))
}

// LogTail is the last n lines of a build's log.
func (p *Plane) LogTail(ctx context.Context, q store.Querier, b *model.Build, n int64) (string, error) {
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

// CutLine cuts a storable line (after its redaction) at the longest a
// line is kept, saying so.
func (p *Plane) CutLine(s string) string {
	if int64(len(s)) > p.Settings.Builds.MaxLineBytes {
		n := int(p.Settings.Builds.MaxLineBytes)
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + " [line cut at " + fmt.Sprint(p.Settings.Builds.MaxLineBytes) + " bytes]"
	}
	return s
}

// NoteBuildSets tells every cluster of a tenant that its set of builds may
// have changed: a deletion took builds with it (their rows cascade), and
// their agents must stop the Jobs.
func (p *Plane) NoteBuildSets(ctx context.Context, q *Txn, tenant model.TenantID) error {
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

// Builder is what the core and the other domains need of the builds
// domain (package builds, set with SetBuilder when the plane is made): a
// deploy of a commit, or of a branch's head, builds it first.
type Builder interface {
	// BuildAndDeploy makes the release of commit and the deployment
	// that waits for its build, or with dry set previews them.
	BuildAndDeploy(ctx context.Context, dry *Previewing, a *authz.Actor, svc *model.Service, env *model.Environment,
		commit string) (*model.Release, *model.Deployment, error)
	// BranchHead reads the commit a Git service's branch points at.
	BranchHead(ctx context.Context, svc *model.Service) (string, error)
}

// SetBuilder sets the builds domain; the plane is made without one.
func (p *Plane) SetBuilder(b Builder) { p.builder = b }

// Builder is the builds domain; without one a deploy from Git is refused.
func (p *Plane) Builder() Builder {
	if p.builder == nil {
		return noBuilder{}
	}
	return p.builder
}

// noBuilder refuses what needs builds, on a plane made without them.
type noBuilder struct{}

func (noBuilder) BuildAndDeploy(context.Context, *Previewing, *authz.Actor, *model.Service, *model.Environment, string) (*model.Release, *model.Deployment, error) {
	return nil, nil, errors.New("this control plane runs no builds")
}

func (noBuilder) BranchHead(context.Context, *model.Service) (string, error) {
	return "", errors.New("this control plane runs no builds")
}
