package outbound

import "github.com/nebulactrl/nebula/internal/control/core"

// The actions this domain's changes are audited as (what each does beyond
// its rows: core.Action).
var (
	ActEndpointCreate   = core.Action{Name: "webhook_endpoint.create", KeepsState: true}
	ActEndpointUpdate   = core.Action{Name: "webhook_endpoint.update", KeepsState: true}
	ActEndpointRotate   = core.Action{Name: "webhook_endpoint.rotate_secret", KeepsState: true}
	ActEndpointEnable   = core.Action{Name: "webhook_endpoint.enable", KeepsState: true}
	ActEndpointDisable  = core.Action{Name: "webhook_endpoint.disable", KeepsState: true}
	ActEndpointDelete   = core.Action{Name: "webhook_endpoint.delete", KeepsState: true}
	ActMessageRedeliver = core.Action{Name: "webhook_message.redeliver", KeepsState: true}
	// Every attempt of a message to an endpoint failed for the retry
	// window: the control plane disabled the endpoint.
	ActEndpointFailing = core.Action{Name: "webhook_endpoint.disabled_failing", KeepsState: true}
)
