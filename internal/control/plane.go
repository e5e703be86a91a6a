// Package control is the control plane's domain layer as its callers see
// it: one Plane, whose core (package core: the door to the store,
// transactions and their outbox, audit, the deployment state machine) every
// domain package builds on, and one field per domain.
package control

import (
	"log/slog"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control/agents"
	"github.com/nebulactrl/nebula/internal/control/builds"
	"github.com/nebulactrl/nebula/internal/control/changesets"
	"github.com/nebulactrl/nebula/internal/control/clusters"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/control/documents"
	"github.com/nebulactrl/nebula/internal/control/idempotency"
	"github.com/nebulactrl/nebula/internal/control/outbound"
	"github.com/nebulactrl/nebula/internal/control/people"
	"github.com/nebulactrl/nebula/internal/store"
)

// Plane is the control plane: the core's methods, and the domains'.
type Plane struct {
	*core.Plane
	// People: tenants, members, tokens, invitations, sign-in, sessions,
	// single sign-on, the CLI's sign-in.
	People *people.People
	// Outbound: webhook endpoints, their messages and the sender.
	Outbound *outbound.Outbound
	// Clusters: clusters, namespace targets, connect tokens, commands.
	Clusters *clusters.Clusters
	// Builds: Git hooks and their deliveries, builds, their runs and logs.
	Builds *builds.Builds
	// Agents: the agents' side (AgentSide), and their logs, events and
	// drift read back.
	Agents *agents.Agents
	// Delivery: projects, environments, services, variables, releases,
	// deployments and approvals, revisions, previews.
	Delivery *delivery.Delivery
	// Idempotency: the keys of mutations sent with an Idempotency-Key.
	Idempotency *idempotency.Idempotency
	// ChangeSets: changes to a project grouped for review, approved by
	// another project manager and applied at once (by Delivery).
	ChangeSets *changesets.ChangeSets
	// Documents: the GraphQL documents clients persisted by their hash.
	Documents *documents.Documents
}

// New wires the control plane over a migrated store.
func New(st *store.Store, log *slog.Logger, opts ...core.Option) (*Plane, error) {
	c, err := core.New(st, log, opts...)
	if err != nil {
		return nil, err
	}
	d := delivery.New(c)
	return &Plane{Plane: c, People: people.New(c), Outbound: outbound.New(c), Clusters: clusters.New(c), Builds: builds.New(c),
		Agents: agents.New(c), Delivery: d, Idempotency: idempotency.New(c), ChangeSets: changesets.New(c, d),
		Documents: documents.New(c)}, nil
}

// Bus is what subscribers follow (nil without a plane).
func (p *Plane) Bus() *bus.Bus {
	if p == nil {
		return nil
	}
	return p.Plane.Bus()
}
