package delivery

import "github.com/nebulactrl/nebula/internal/control/core"

// The actions this domain's changes are audited as (what each does beyond
// its rows: core.Action).
var (
	ActProjectCreate      = core.Action{Name: "project.create"}
	ActProjectUpdate      = core.Action{Name: "project.update"}
	ActProjectDelete      = core.Action{Name: "project.delete"}
	ActEnvironmentCreate  = core.Action{Name: "environment.create"}
	ActEnvironmentUpdate  = core.Action{Name: "environment.update"}
	ActEnvironmentDelete  = core.Action{Name: "environment.delete"}
	ActServiceCreate      = core.Action{Name: "service.create"}
	ActServiceUpdate      = core.Action{Name: "service.update"}
	ActServiceDelete      = core.Action{Name: "service.delete"}
	ActVariableSet        = core.Action{Name: "variable.set"}
	ActVariableDelete     = core.Action{Name: "variable.delete"}
	ActDeploymentApprove  = core.Action{Name: "deployment.approve"}
	ActDeploymentReject   = core.Action{Name: "deployment.reject"}
	ActDeploymentCancel   = core.Action{Name: "deployment.cancel"}
	ActDeploymentRollback = core.Action{Name: "deployment.rollback"}
	ActDeploymentRedeploy = core.Action{Name: "deployment.redeploy"}
	// The control plane's own changes: an approval waited too long, the
	// secrets resealed under a new key.
	ActApprovalExpired = core.Action{Name: "deployment.approval_expired"}
	ActSecretsReseal   = core.Action{Name: "secrets.reseal"}
)
