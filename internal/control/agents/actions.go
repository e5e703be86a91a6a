package agents

import "github.com/nebulactrl/nebula/internal/control/core"

// The actions this domain's changes are audited as (what each does beyond
// its rows: core.Action).
var (
	// An agent found an object changed outside NebulaCtrl (drift.v1).
	ActDriftDetected = core.Action{Name: "cluster.drift_detected", KeepsState: true}
	// An agent reported a rollout FAILED or ROLLED_BACK: its release
	// leaves the desired state.
	ActRolloutEnded = core.Action{Name: "deployment.rollout_ended"}
	// A build pushed its image: the release it was for can roll out.
	ActBuildSucceeded = core.Action{Name: "build.succeeded"}
)
