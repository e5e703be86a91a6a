package store

import (
	"context"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// ChangeSets are the change sets of projects (model.ChangeSet); a set's
// changes, comments and deployments are JSON lists in its row.
var ChangeSets = &Table[model.ChangeSetID, model.ChangeSet]{
	Name: "change_sets",
	Columns: []string{"id", "tenant_id", "project_id", "number", "title", "state", "direct", "created_by",
		"created_at", "updated_at", "submitted_at", "expires_at", "decided_by", "decided_at", "applied_by",
		"applied_at", "changes", "comments", "deployments"},
	keys: []string{"id", "tenant_id", "project_id"},
	scan: func(s Scanner) (*model.ChangeSet, error) {
		var c model.ChangeSet
		var lists [3]string
		if err := s.Scan(&c.ID, &c.TenantID, &c.ProjectID, &c.Number, &c.Title, &c.State, &c.Direct, &c.CreatedBy,
			&c.CreatedAt, &c.UpdatedAt, &c.SubmittedAt, &c.ExpiresAt, &c.DecidedBy, &c.DecidedAt, &c.AppliedBy,
			&c.AppliedAt, &lists[0], &lists[1], &lists[2]); err != nil {
			return nil, err
		}
		return &c, decodeJSON(&c.Changes, lists[0], &c.Comments, lists[1], &c.Deployments, lists[2])
	},
	values: func(c *model.ChangeSet) []any {
		return []any{string(c.ID), string(c.TenantID), string(c.ProjectID), c.Number, c.Title, string(c.State),
			c.Direct, nullable(c.CreatedBy), c.CreatedAt, c.UpdatedAt, c.SubmittedAt, c.ExpiresAt,
			nullable(c.DecidedBy), c.DecidedAt, nullable(c.AppliedBy), c.AppliedAt, encodeJSON(orEmpty(c.Changes)),
			encodeJSON(orEmpty(c.Comments)), encodeJSON(orEmpty(c.Deployments))}
	},
	id: func(c *model.ChangeSet) model.ChangeSetID { return c.ID },
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// NextChangeSetNumber is the number the project's next change set takes.
func NextChangeSetNumber(ctx context.Context, q Querier, project model.ProjectID) (int, error) {
	n, err := count(ctx, q, `SELECT COALESCE(MAX(number), 0) FROM change_sets WHERE project_id = $1`, string(project))
	return n + 1, err
}

// UpdateChangeSet writes a change set's state, its times and its lists.
func UpdateChangeSet(ctx context.Context, q Querier, c *model.ChangeSet) error {
	return execOne(ctx, q, "updating change set", `UPDATE change_sets SET title = $2, state = $3, updated_at = $4,
		submitted_at = $5, expires_at = $6, decided_by = $7, decided_at = $8, applied_by = $9, applied_at = $10,
		changes = $11, comments = $12, deployments = $13 WHERE id = $1`,
		string(c.ID), c.Title, string(c.State), c.UpdatedAt, c.SubmittedAt, c.ExpiresAt, nullable(c.DecidedBy),
		c.DecidedAt, nullable(c.AppliedBy), c.AppliedAt, encodeJSON(orEmpty(c.Changes)),
		encodeJSON(orEmpty(c.Comments)), encodeJSON(orEmpty(c.Deployments)))
}

// ChangeSetsOfProject lists one page of a project's change sets, newest
// first; of the given states only when states is not empty.
func ChangeSetsOfProject(ctx context.Context, q Querier, project model.ProjectID, states []model.ChangeSetState, pg PageArgs) (Page[model.ChangeSet], error) {
	where, args := "project_id = $1", []any{string(project)}
	if len(states) > 0 {
		in, vals := inList(states, 1)
		where, args = where+" AND state IN ("+in+")", append(args, vals...)
	}
	return ChangeSets.newest(ctx, q, pg, where, args...)
}

// ChangeSetsUpdatedSince reads a project's change sets changed after
// since, oldest change first: what a subscriber has not seen.
func ChangeSetsUpdatedSince(ctx context.Context, q Querier, project model.ProjectID, since time.Time) ([]*model.ChangeSet, error) {
	return ChangeSets.query(ctx, q, `SELECT `+ChangeSets.cols()+` FROM change_sets
		WHERE project_id = $1 AND updated_at > $2 ORDER BY updated_at, id`, string(project), since)
}

// LapsedChangeSets lists, across tenants, up to limit change sets whose
// submission or approval lapsed before now.
func LapsedChangeSets(ctx context.Context, q Querier, now time.Time, limit int) ([]*model.ChangeSet, error) {
	return ChangeSets.query(ctx, q, `SELECT `+ChangeSets.cols()+` FROM change_sets
		WHERE state IN ($1, $2) AND expires_at < $3 ORDER BY expires_at, id LIMIT $4`,
		string(model.ChangeSetSubmitted), string(model.ChangeSetApproved), now, limit)
}
