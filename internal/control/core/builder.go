package core

import (
	"context"
	"errors"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
)

// Builder is what the core and the other domains need of the builds
// domain (package builds, set with SetBuilder when the plane is made): a
// deploy of a commit, or of a branch's head, builds it first; a build
// ends, and a deployment cancelled or a project deleted ends its builds.
type Builder interface {
	// BuildAndDeploy makes the release of commit and the deployment
	// that waits for its build, or with dry set previews them.
	BuildAndDeploy(ctx context.Context, dry *Previewing, a *authz.Actor, svc *model.Service, env *model.Environment,
		commit string) (*model.Release, *model.Deployment, error)
	// BranchHead reads the commit a Git service's branch points at.
	BranchHead(ctx context.Context, svc *model.Service) (string, error)
	// EndBuild ends a build with a status and says so.
	EndBuild(ctx context.Context, q *Txn, b *model.Build, status model.BuildStatus, why string) error
	// FailBuildDeployment ends the deployment of a build that ended
	// without an image.
	FailBuildDeployment(ctx context.Context, q *Txn, b *model.Build) error
	// CancelBuildOf cancels the build a deployment waits for, if any.
	CancelBuildOf(ctx context.Context, q *Txn, d *model.Deployment, why string) error
	// NoteBuildSets tells a tenant's clusters their builds may have
	// changed (a deletion took some with it).
	NoteBuildSets(ctx context.Context, q *Txn, tenant model.TenantID) error
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

// noBuilder refuses what needs builds, on a plane made without them:
// there are no builds to end or cancel.
type noBuilder struct{}

var errNoBuilds = errors.New("this control plane runs no builds")

func (noBuilder) BuildAndDeploy(context.Context, *Previewing, *authz.Actor, *model.Service, *model.Environment, string) (*model.Release, *model.Deployment, error) {
	return nil, nil, errNoBuilds
}

func (noBuilder) BranchHead(context.Context, *model.Service) (string, error) { return "", errNoBuilds }

func (noBuilder) EndBuild(context.Context, *Txn, *model.Build, model.BuildStatus, string) error {
	return errNoBuilds
}

func (noBuilder) FailBuildDeployment(context.Context, *Txn, *model.Build) error { return errNoBuilds }

func (noBuilder) CancelBuildOf(context.Context, *Txn, *model.Deployment, string) error { return nil }

func (noBuilder) NoteBuildSets(context.Context, *Txn, model.TenantID) error { return nil }
