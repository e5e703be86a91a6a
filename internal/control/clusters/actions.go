package clusters

import "github.com/nebulactrl/nebula/internal/control/core"

// The actions this domain's changes are audited as (what each does beyond
// its rows: core.Action).
var (
	ActClusterRegister        = core.Action{Name: "cluster.register"}
	ActClusterSetLabels       = core.Action{Name: "cluster.set_labels"}
	ActClusterDelete          = core.Action{Name: "cluster.delete"}
	ActClusterQueueCommand    = core.Action{Name: "cluster.queue_command", KeepsState: true}
	ActConnectTokenRegenerate = core.Action{Name: "cluster.regenerate_connect_token", KeepsState: true}
	ActConnectTokenRevoke     = core.Action{Name: "cluster.revoke_connect_token", KeepsState: true}
	ActTargetCreate           = core.Action{Name: "namespace_target.create"}
	ActTargetSetLabels        = core.Action{Name: "namespace_target.set_labels"}
	ActTargetDelete           = core.Action{Name: "namespace_target.delete"}
)
