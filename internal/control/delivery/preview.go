package delivery

import (
	"context"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/internal/model"
)

// PreviewDeploy shows what Deploy would change.
func (p *Delivery) PreviewDeploy(ctx context.Context, svc model.ServiceID, env model.EnvironmentID, digest string) ([]core.ClusterChange, error) {
	return p.Preview(ctx, func(dry *core.Previewing) error {
		_, _, err := p.deploy(ctx, dry, svc, env, deployTarget{digest: digest})
		return err
	})
}

// PreviewDeployCommit shows what DeployCommit would change: nothing on a
// cluster until the build succeeds, but every check runs.
func (p *Delivery) PreviewDeployCommit(ctx context.Context, svc model.ServiceID, env model.EnvironmentID, commit string) ([]core.ClusterChange, error) {
	return p.Preview(ctx, func(dry *core.Previewing) error {
		_, _, err := p.deploy(ctx, dry, svc, env, deployTarget{commit: commit})
		return err
	})
}

// PreviewDeployBranchHead shows what DeployBranchHead would change; it
// reads the branch's head too.
func (p *Delivery) PreviewDeployBranchHead(ctx context.Context, svc model.ServiceID, env model.EnvironmentID) ([]core.ClusterChange, error) {
	return p.Preview(ctx, func(dry *core.Previewing) error {
		_, _, err := p.deploy(ctx, dry, svc, env, deployTarget{head: true})
		return err
	})
}

// PreviewUpdateService shows what UpdateService would change.
func (p *Delivery) PreviewUpdateService(ctx context.Context, id model.ServiceID, in ServiceInput) ([]core.ClusterChange, error) {
	return p.Preview(ctx, func(dry *core.Previewing) error {
		_, err := p.updateService(ctx, dry, id, in)
		return err
	})
}

// PreviewSetVariable shows what SetVariable would change.
func (p *Delivery) PreviewSetVariable(ctx context.Context, in SetVariableInput) ([]core.ClusterChange, error) {
	return p.Preview(ctx, func(dry *core.Previewing) error {
		_, err := p.setVariable(ctx, dry, in)
		return err
	})
}

// PreviewUpdateEnvironment shows what UpdateEnvironment would change: new
// selectors move an environment between clusters and namespaces.
func (p *Delivery) PreviewUpdateEnvironment(ctx context.Context, id model.EnvironmentID, in EnvironmentInput) ([]core.ClusterChange, error) {
	return p.Preview(ctx, func(dry *core.Previewing) error {
		_, err := p.updateEnvironment(ctx, dry, id, in)
		return err
	})
}
