package changesets

import "github.com/nebulactrl/nebula/internal/control/core"

// The actions this domain's changes are audited as (what each does beyond
// its rows: core.Action). Only applying a set changes what clusters run.
var (
	ActChangeSetOpen    = core.Action{Name: "change_set.open", KeepsState: true}
	ActChangeSetDirect  = core.Action{Name: "change_set.direct", KeepsState: true}
	ActChangeSetAdd     = core.Action{Name: "change_set.add_change", KeepsState: true}
	ActChangeSetRemove  = core.Action{Name: "change_set.remove_change", KeepsState: true}
	ActChangeSetSubmit  = core.Action{Name: "change_set.submit", KeepsState: true}
	ActChangeSetApprove = core.Action{Name: "change_set.approve", KeepsState: true}
	// Approving a direct change's set applies it.
	ActChangeSetApproveApply = core.Action{Name: "change_set.approve"}
	ActChangeSetReject       = core.Action{Name: "change_set.reject", KeepsState: true}
	ActChangeSetApply        = core.Action{Name: "change_set.apply"}
	ActChangeSetComment      = core.Action{Name: "change_set.comment", KeepsState: true}
	ActChangeSetClose        = core.Action{Name: "change_set.close", KeepsState: true}
	ActChangeSetRebase       = core.Action{Name: "change_set.rebase", KeepsState: true}
	ActChangeSetExpired      = core.Action{Name: "change_set.expired", KeepsState: true}
)
