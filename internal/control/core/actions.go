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

// Each domain declares the actions of its changes beside them (people,
// clusters, delivery, builds, outbound, agents). A deployment is created
// by two: a deploy (delivery) and a push a Git webhook received (builds).
var ActDeploymentCreate = Action{Name: "deployment.create"}

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
