package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// BuildJob is a build as the agent runs it: what to clone, how to build,
// where to push. Credential is the repository's read credential, opened:
// it leaves the control plane only in this, over the agent's channel.
type BuildJob struct {
	ID         model.BuildID
	Repository string
	Commit     string
	ContextDir string
	Dockerfile string
	// Image is the repository the image is pushed to (the service's,
	// which for a Git service names the cluster's registry).
	Image      string
	Credential string
	Builder    string
	// Deadline is when the control plane stops waiting for it.
	Deadline time.Time
	// LogFrom is the number of log lines stored already: the agent sends
	// the lines after it.
	LogFrom int64
}

// Builds is the set of builds the cluster's agent should be running now:
// it starts those it does not run and stops (deletes) the Jobs of any
// other build.
func (a *AgentSide) Builds(ctx context.Context) ([]BuildJob, error) {
	ctx = a.as(ctx)
	bs, err := store.RunningBuildsOn(ctx, a.q(ctx), a.cluster)
	if err != nil {
		return nil, err
	}
	out := make([]BuildJob, 0, len(bs))
	for _, b := range bs {
		svc, err := store.Services.Get(ctx, a.q(ctx), b.ServiceID)
		if err != nil {
			return nil, err
		}
		j := BuildJob{ID: b.ID, Repository: b.Repository, Commit: b.Commit, Image: svc.Image,
			ContextDir: ".", Dockerfile: "Dockerfile", Builder: a.p.Settings.Builds.Builder, LogFrom: b.LogLines}
		if svc.Git != nil {
			j.ContextDir, j.Dockerfile = svc.Git.ContextDir, svc.Git.Dockerfile
			if j.Credential, err = a.p.GitCredential(svc, b.Repository); err != nil {
				return nil, err
			}
		}
		j.Deadline = b.Deadline(a.p.Settings.Builds.Timeout)
		out = append(out, j)
	}
	return out, nil
}

// BuildReport is what an agent says of one of its builds: lines of its log
// (numbered from From+1), and where it stands.
type BuildReport struct {
	ID model.BuildID
	// From is the number of the line before Lines; lines the control
	// plane has stored already are skipped, a gap is refused.
	From  int64
	Lines []LogLine
	// Running, or the end: Succeeded with Digest, or Failed with Message.
	Running   bool
	Succeeded bool
	Failed    bool
	Digest    string
	Message   string
}

// LogLine is one line of a log with when the agent read it.
type LogLine struct {
	At   time.Time
	Text string
}

// ErrBuildLogGap: a report's lines start after the last line stored; the
// agent sends again from where the control plane stands.
var ErrBuildLogGap = errors.New("the log lines do not follow the ones stored")

// BuildReport records what the agent says of a build of its cluster. A
// report of a build that is not running on this cluster is refused (nil
// error, logged); lines stored already are skipped, so a report sent again
// after a reconnect stores nothing twice. A success makes the release's
// image the digest and starts the deployment (approval or delivery); a
// failure ends it FAILED with the end of the log.
func (a *AgentSide) BuildReport(ctx context.Context, r BuildReport) (stored int64, err error) {
	ctx = a.as(ctx)
	p := a.p
	b, err := store.Builds.Get(ctx, a.q(ctx), r.ID)
	if errors.Is(err, store.ErrNotFound) || err == nil && (b.ClusterID == nil || *b.ClusterID != a.cluster) {
		p.Log().Warn("refused an agent's build report", "cluster", a.cluster, "build", r.ID, "reason", "not this cluster's build")
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if r.Succeeded && !core.ImageDigest.MatchString(r.Digest) {
		r.Succeeded, r.Failed = false, true
		r.Message = fmt.Sprintf("the build reported %q, not an image digest (sha256: and 64 hex digits)", core.ClipText(r.Digest, 100))
	}
	// A build's log is redacted as the cluster's container logs are: a
	// step that prints a secret, or the Git credential, stores neither.
	redact, err := a.redactor(ctx)
	if err != nil {
		return 0, err
	}
	err = p.SystemChange(ctx, b.TenantID, r.Succeeded, func(q *core.Txn) error {
		if b, err = store.Builds.Get(ctx, q, r.ID); err != nil {
			return err
		}
		if b.Status != model.BuildRunning {
			stored = b.LogLines
			return nil // ended (cancelled, timed out) or handed out again: what it says is late
		}
		if r.From > b.LogLines {
			return fmt.Errorf("%w: %d stored, the report starts after %d", ErrBuildLogGap, b.LogLines, r.From)
		}
		if err := p.storeLines(ctx, q, b, r, redact); err != nil {
			return err
		}
		stored = b.LogLines
		now := p.Now()
		b.HeartbeatAt = &now
		if b.StartedAt == nil {
			b.StartedAt = &now
		}
		switch {
		case r.Succeeded:
			return p.buildSucceeded(ctx, q, b, r.Digest)
		case r.Failed:
			if err := p.Builder().EndBuild(ctx, q, b, model.BuildFailed, core.OrNone(r.Message)); err != nil {
				return err
			}
			return p.Builder().FailBuildDeployment(ctx, q, b)
		default:
			if r.Message != "" {
				b.Message = core.ClipText(r.Message, 2000)
			}
			if err := store.UpdateBuild(ctx, q, b); err != nil {
				return err
			}
			return p.Note(ctx, q, bus.Build(string(b.ID)))
		}
	})
	return stored, err
}

// storeLines stores the report's lines the build has not stored yet, up to
// the log's bounds; the first line past them is a marker saying the log
// was cut.
func (p *Agents) storeLines(ctx context.Context, q *core.Txn, b *model.Build, r BuildReport, redact *strings.Replacer) error {
	skip := b.LogLines - r.From
	if skip >= int64(len(r.Lines)) || b.LogTruncated {
		return nil
	}
	var out []model.BuildLogLine
	for _, l := range r.Lines[skip:] {
		text := p.cutLine(redact.Replace(storable(l.Text)))
		if b.LogLines+1 >= p.Settings.Builds.MaxLogLines || b.LogBytes+int64(len(text)) > p.Settings.Builds.MaxLogBytes {
			b.LogLines++
			b.LogTruncated = true
			out = append(out, model.BuildLogLine{BuildID: b.ID, Seq: b.LogLines, TenantID: b.TenantID, At: l.At.UTC(),
				Line: fmt.Sprintf("[nebula: the log is cut here: a build keeps at most %d lines and %d bytes]",
					p.Settings.Builds.MaxLogLines, p.Settings.Builds.MaxLogBytes)})
			break
		}
		b.LogLines++
		b.LogBytes += int64(len(text))
		out = append(out, model.BuildLogLine{BuildID: b.ID, Seq: b.LogLines, TenantID: b.TenantID, At: l.At.UTC(), Line: text})
	}
	return store.AppendBuildLog(ctx, q, out)
}

// buildSucceeded ends a build with its image: the release gets the digest
// and the deployment moves on from BUILDING as any new one would.
func (p *Agents) buildSucceeded(ctx context.Context, q *core.Txn, b *model.Build, digest string) error {
	now := p.Now()
	b.ImageDigest = digest
	if err := p.Builder().EndBuild(ctx, q, b, model.BuildSucceeded, "pushed "+digest); err != nil {
		return err
	}
	if b.DeploymentID == nil || b.ReleaseID == nil {
		return nil
	}
	if err := store.SetReleaseDigest(ctx, q, *b.ReleaseID, digest); err != nil {
		return err
	}
	ev := &core.Audit{AuditEvent: &model.AuditEvent{TenantID: b.TenantID, ClientAddress: "build runner", CreatedAt: now,
		Details: map[string]any{"imageDigest": digest, "releaseId": string(*b.ReleaseID), "deploymentId": string(*b.DeploymentID)}}}
	core.Target(ev, ActBuildSucceeded, "Build", string(b.ID))
	if err := q.Audited(ctx, ev.AuditEvent); err != nil {
		return err
	}
	d, err := store.Deployments.Get(ctx, q, *b.DeploymentID)
	if err != nil || d.Stage != model.StageBuilding {
		return err // superseded or cancelled meanwhile: the image stays on its release
	}
	rel, err := store.Releases.Get(ctx, q, *b.ReleaseID)
	if err != nil {
		return err
	}
	env, err := store.Environments.Get(ctx, q, d.EnvironmentID)
	if err != nil {
		return err
	}
	return p.Proceed(ctx, q, d, env, rel)
}
