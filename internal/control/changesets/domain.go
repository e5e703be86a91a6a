// Package changesets holds change sets: several changes to one project —
// variables, secrets, processes, domains, image deploys, across services
// and environments — grouped into one reviewable unit, as a pull request
// is for code. A set is opened, changed, previewed as a whole, submitted,
// approved or rejected by another project manager (never one of its
// authors), and applied in one transaction: one desired revision per
// cluster. What a change does to the project's rows and releases is the
// delivery domain's (Changer); the set's life is this package's.
package changesets

import (
	"context"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Changer is what a change set asks of the domain its changes belong to
// (delivery): checking a change as its direct mutation would, taking what
// the changes replace afresh, applying them, and naming one.
type Changer interface {
	ProposeChange(ctx context.Context, set *model.ChangeSet, ch *model.Change) error
	RebaseChanges(ctx context.Context, q store.Querier, set *model.ChangeSet) error
	ApplyChanges(ctx context.Context, q *core.Txn, a *authz.Actor, ev *core.Audit, set *model.ChangeSet) (*model.AppliedChanges, error)
	DescribeChange(ctx context.Context, ch *model.Change) (string, error)
}

// ChangeSets is the domain of change sets, over the core.
type ChangeSets struct {
	*core.Plane
	changer Changer
}

// New is the change sets' domain over c, applying changes with changer;
// its job ends the sets whose submission or approval lapsed.
func New(c *core.Plane, changer Changer) *ChangeSets {
	s := &ChangeSets{Plane: c, changer: changer}
	c.AddJob(core.Job{Name: "expire-change-sets", Run: core.Counted(s.expire),
		Count: func(r *core.JobReport) *int { return &r.ChangeSets }})
	return s
}
