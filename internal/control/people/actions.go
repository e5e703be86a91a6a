package people

import "github.com/nebulactrl/nebula/internal/control/core"

// The actions this domain's changes are audited as (what each does beyond
// its rows: core.Action).
var (
	ActTenantUpdate            = core.Action{Name: "tenant.update", KeepsState: true}
	ActTenantSetPlan           = core.Action{Name: "tenant.set_plan", KeepsState: true}
	ActMemberAdd               = core.Action{Name: "member.add", KeepsState: true, Access: true}
	ActMemberUpdateRole        = core.Action{Name: "member.update_role", KeepsState: true, Access: true}
	ActMemberRemove            = core.Action{Name: "member.remove", KeepsState: true, Access: true}
	ActProjectMemberAdd        = core.Action{Name: "project_member.add", KeepsState: true, Access: true}
	ActProjectMemberUpdateRole = core.Action{Name: "project_member.update_role", KeepsState: true, Access: true}
	ActProjectMemberRemove     = core.Action{Name: "project_member.remove", KeepsState: true, Access: true}
	ActTokenCreate             = core.Action{Name: "api_token.create", KeepsState: true}
	ActTokenRevoke             = core.Action{Name: "api_token.revoke", KeepsState: true, Access: true}
	// Written outside Plane.change, each noting what it must itself:
	// founding a tenant (no tenant to lock yet), the first start's
	// bootstrap and token recovery.
	ActTenantCreate    = core.Action{Name: "tenant.create"}
	ActTenantBootstrap = core.Action{Name: "tenant.bootstrap"}
	ActTokenRecover    = core.Action{Name: "api_token.recover"}
)
