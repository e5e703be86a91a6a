package builds

import "github.com/nebulactrl/nebula/internal/control/core"

// The actions this domain's changes are audited as (what each does beyond
// its rows: core.Action).
var (
	ActWebhookCreate    = core.Action{Name: "webhook.create", KeepsState: true}
	ActWebhookRotate    = core.Action{Name: "webhook.rotate_secret", KeepsState: true}
	ActWebhookDelete    = core.Action{Name: "webhook.delete", KeepsState: true}
	ActWebhookRedeliver = core.Action{Name: "webhook.redeliver", KeepsState: true}
	// A push a webhook received queued a build: the webhook is the actor.
	ActBuildQueue = core.Action{Name: "build.queue", KeepsState: true}
)
