package core

import "github.com/nebulactrl/nebula/internal/model"

// An Action is what a change is audited as. Besides its name it carries
// what the change does beyond its own rows, so that Plane.change decides
// from the value the change chose, not from matching its name.
type Action struct {
	Name string
	// KeepsState: the change cannot alter any cluster's desired state
	// (people, roles, tokens, the tenant's name and plan), so it skips the
	// recompile. Everything else recompiles, so a change that may matter
	// is never missed.
	KeepsState bool
	// Access: the change alters the access of the user named in its
	// details' userId. Their grants are dropped from every replica's cache,
	// and their open connections check their token again.
	Access bool
}

// The actions of the changes people and integrations make.
var (
	ActTenantUpdate  = Action{Name: "tenant.update", KeepsState: true}
	ActTenantSetPlan = Action{Name: "tenant.set_plan", KeepsState: true}

	ActMemberAdd               = Action{Name: "member.add", KeepsState: true, Access: true}
	ActMemberUpdateRole        = Action{Name: "member.update_role", KeepsState: true, Access: true}
	ActMemberRemove            = Action{Name: "member.remove", KeepsState: true, Access: true}
	ActProjectMemberAdd        = Action{Name: "project_member.add", KeepsState: true, Access: true}
	ActProjectMemberUpdateRole = Action{Name: "project_member.update_role", KeepsState: true, Access: true}
	ActProjectMemberRemove     = Action{Name: "project_member.remove", KeepsState: true, Access: true}
	ActTokenCreate             = Action{Name: "api_token.create", KeepsState: true}
	ActTokenRevoke             = Action{Name: "api_token.revoke", KeepsState: true, Access: true}

	ActClusterRegister        = Action{Name: "cluster.register"}
	ActClusterSetLabels       = Action{Name: "cluster.set_labels"}
	ActClusterDelete          = Action{Name: "cluster.delete"}
	ActClusterQueueCommand    = Action{Name: "cluster.queue_command", KeepsState: true}
	ActConnectTokenRegenerate = Action{Name: "cluster.regenerate_connect_token", KeepsState: true}
	ActConnectTokenRevoke     = Action{Name: "cluster.revoke_connect_token", KeepsState: true}
	ActTargetCreate           = Action{Name: "namespace_target.create"}
	ActTargetSetLabels        = Action{Name: "namespace_target.set_labels"}
	ActTargetDelete           = Action{Name: "namespace_target.delete"}

	ActProjectCreate     = Action{Name: "project.create"}
	ActProjectUpdate     = Action{Name: "project.update"}
	ActProjectDelete     = Action{Name: "project.delete"}
	ActEnvironmentCreate = Action{Name: "environment.create"}
	ActEnvironmentUpdate = Action{Name: "environment.update"}
	ActEnvironmentDelete = Action{Name: "environment.delete"}
	ActServiceCreate     = Action{Name: "service.create"}
	ActServiceUpdate     = Action{Name: "service.update"}
	ActServiceDelete     = Action{Name: "service.delete"}
	ActVariableSet       = Action{Name: "variable.set"}
	ActVariableDelete    = Action{Name: "variable.delete"}

	ActDeploymentCreate  = Action{Name: "deployment.create"}
	ActDeploymentApprove = Action{Name: "deployment.approve"}
	ActDeploymentReject  = Action{Name: "deployment.reject"}
	ActDeploymentCancel  = Action{Name: "deployment.cancel"}

	ActWebhookCreate      = Action{Name: "webhook.create", KeepsState: true}
	ActWebhookRotate      = Action{Name: "webhook.rotate_secret", KeepsState: true}
	ActWebhookDelete      = Action{Name: "webhook.delete", KeepsState: true}
	ActWebhookRedeliver   = Action{Name: "webhook.redeliver", KeepsState: true}
	ActDeploymentRollback = Action{Name: "deployment.rollback"}

	ActEndpointCreate     = Action{Name: "webhook_endpoint.create", KeepsState: true}
	ActEndpointUpdate     = Action{Name: "webhook_endpoint.update", KeepsState: true}
	ActEndpointRotate     = Action{Name: "webhook_endpoint.rotate_secret", KeepsState: true}
	ActEndpointEnable     = Action{Name: "webhook_endpoint.enable", KeepsState: true}
	ActEndpointDisable    = Action{Name: "webhook_endpoint.disable", KeepsState: true}
	ActEndpointDelete     = Action{Name: "webhook_endpoint.delete", KeepsState: true}
	ActMessageRedeliver   = Action{Name: "webhook_message.redeliver", KeepsState: true}
	ActDeploymentRedeploy = Action{Name: "deployment.redeploy"}
)

// The actions of the changes written outside Plane.change: founding a
// tenant (no tenant to lock yet), the first start's bootstrap and token
// recovery, and the control plane's own changes. Each notes and recompiles
// what it must itself.
var (
	ActTenantCreate    = Action{Name: "tenant.create"}
	ActTenantBootstrap = Action{Name: "tenant.bootstrap"}
	ActTokenRecover    = Action{Name: "api_token.recover"}
	ActApprovalExpired = Action{Name: "deployment.approval_expired"}
	ActSecretsReseal   = Action{Name: "secrets.reseal"}
	// A push a webhook received queued a build: the webhook is the actor.
	ActBuildQueue = Action{Name: "build.queue", KeepsState: true}
	// An agent found an object changed outside NebulaCtrl (drift.v1).
	ActDriftDetected = Action{Name: "cluster.drift_detected", KeepsState: true}
	// An agent reported a rollout FAILED or ROLLED_BACK: its release
	// leaves the desired state.
	ActRolloutEnded = Action{Name: "deployment.rollout_ended"}
	// A build pushed its image: the release it was for can roll out.
	ActBuildSucceeded = Action{Name: "build.succeeded"}
	// Every attempt of a message to an endpoint failed for the retry
	// window: the control plane disabled the endpoint.
	ActEndpointFailing = Action{Name: "webhook_endpoint.disabled_failing", KeepsState: true}
)

// Audit is the event a change fills in, with the typed action it chose.
type Audit struct {
	*model.AuditEvent
	act Action
}

// Target names the change's action and what it acted on.
func Target(ev *Audit, act Action, typ, id string) {
	ev.act = act
	ev.Action, ev.TargetType, ev.TargetID = act.Name, typ, &id
}
