package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// UpdateDeploymentStage writes a deployment's stage, blocker, message,
// event number and approval deadline.
func UpdateDeploymentStage(ctx context.Context, q Querier, d *model.Deployment) error {
	return execOne(ctx, q, "updating deployment", `UPDATE deployments SET stage = $2, blocker = $3, message = $4,
		last_seq = $5, approval_expires_at = $6, updated_at = $7, delivered_at = $8 WHERE id = $1`,
		string(d.ID), string(d.Stage), d.Blocker, d.Message, d.LastSeq, d.ApprovalExpiresAt, d.UpdatedAt, d.DeliveredAt)
}

// InsertDeploymentEvent records one stage of a deployment.
func InsertDeploymentEvent(ctx context.Context, q Querier, e *model.DeploymentEvent) error {
	_, err := q.Exec(ctx, `INSERT INTO deployment_events (deployment_id, seq, tenant_id, stage, blocker, message, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		string(e.DeploymentID), e.Seq, string(e.TenantID), string(e.Stage), e.Blocker, e.Message, e.CreatedAt)
	if err != nil {
		return fmt.Errorf("recording deployment event: %w", err)
	}
	return nil
}

// DeploymentEventsAfter reads a deployment's events numbered above after,
// in order, at most limit.
func DeploymentEventsAfter(ctx context.Context, q Querier, d model.DeploymentID, after int64, limit int) ([]*model.DeploymentEvent, error) {
	return deploymentEvents(ctx, q, "deployment_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", string(d), after, limit)
}

// DeploymentEventsPage reads one page of a deployment's events, in order
// (oldest first): pg's cursors are event numbers.
func DeploymentEventsPage(ctx context.Context, q Querier, d model.DeploymentID, pg PageArgs) (Page[model.DeploymentEvent], error) {
	args := []any{string(d)}
	conds, more, err := pg.numbered("seq", "ASC", len(args))
	if err != nil {
		return Page[model.DeploymentEvent]{}, err
	}
	args = append(append(args, more...), pg.limit())
	evs, err := deploymentEvents(ctx, q, fmt.Sprintf("%s ORDER BY seq %s LIMIT $%d",
		strings.Join(append([]string{"deployment_id = $1"}, conds...), " AND "), pg.readOrder("ASC"), len(args)), args...)
	if err != nil {
		return Page[model.DeploymentEvent]{}, err
	}
	return pageOf(evs, pg), nil
}

// deploymentEvents reads the events where (with its order and limit)
// selects.
func deploymentEvents(ctx context.Context, q Querier, where string, args ...any) ([]*model.DeploymentEvent, error) {
	rows, err := q.Query(ctx, `SELECT deployment_id, seq, tenant_id, stage, blocker, message, created_at
		FROM deployment_events WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("reading deployment events: %w", err)
	}
	defer rows.Close()
	var out []*model.DeploymentEvent
	for rows.Next() {
		var e model.DeploymentEvent
		if err := rows.Scan(&e.DeploymentID, &e.Seq, &e.TenantID, &e.Stage, &e.Blocker, &e.Message, &e.CreatedAt); err != nil {
			return nil, fmt.Errorf("reading deployment events: %w", err)
		}
		out = append(out, &e)
	}
	return out, rows.Err()
}

// DeploymentAndEventsAfter reads a deployment and its events after seq
// after (at most limit, in order): on PostgreSQL in one statement, for the
// subscribers that read both on every note. ErrNotFound if there is no
// such deployment.
func DeploymentAndEventsAfter(ctx context.Context, q Querier, id model.DeploymentID, after int64, limit int) (*model.Deployment, []*model.DeploymentEvent, error) {
	if q.Dialect().Name != "postgres" {
		d, err := Deployments.Get(ctx, q, id)
		if err != nil {
			return nil, nil, err
		}
		evs, err := DeploymentEventsAfter(ctx, q, id, after, limit)
		return d, evs, err
	}
	rows, err := q.Query(ctx, `SELECT `+qualified("d", Deployments.Columns)+`, e.seq, e.tenant_id, e.stage, e.blocker, e.message, e.created_at
		FROM deployments d LEFT JOIN LATERAL (SELECT seq, tenant_id, stage, blocker, message, created_at FROM deployment_events
			WHERE deployment_id = d.id AND seq > $2 ORDER BY seq LIMIT $3) e ON true
		WHERE d.id = $1 ORDER BY e.seq`, string(id), after, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("reading deployment and events: %w", err)
	}
	defer rows.Close()
	total := len(Deployments.Columns) + 6
	own := newColumnsAt(rows, 0, total, skipping(q))
	theirs := newColumnsAt(rows, len(Deployments.Columns), total, skipping(q))
	var d *model.Deployment
	var evs []*model.DeploymentEvent
	for rows.Next() {
		if d == nil { // every row repeats it
			if d, err = Deployments.scan(own); err != nil {
				return nil, nil, fmt.Errorf("reading deployment: %w", err)
			}
		}
		var seq *int64
		var e model.DeploymentEvent
		var tenant, stage, message *string
		var at *time.Time
		if err := theirs.Scan(&seq, &tenant, &stage, &e.Blocker, &message, &at); err != nil {
			return nil, nil, fmt.Errorf("reading deployment events: %w", err)
		}
		if seq == nil { // no event after seq: the join's one empty row
			continue
		}
		e.DeploymentID, e.Seq, e.TenantID, e.Stage, e.Message, e.CreatedAt = id, *seq, model.TenantID(*tenant),
			model.DeploymentStage(*stage), *message, *at
		evs = append(evs, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading deployment and events: %w", err)
	}
	if d == nil {
		return nil, nil, ErrNotFound
	}
	return d, evs, nil
}

// OpenDeployments lists the deployments of a service to an environment
// that have not ended, oldest first.
func OpenDeployments(ctx context.Context, q Querier, svc model.ServiceID, env model.EnvironmentID) ([]*model.Deployment, error) {
	in, stages := inList(model.TerminalStages(), 2)
	return Deployments.all(ctx, q, `service_id = $1 AND environment_id = $2 AND stage NOT IN (`+in+`)`,
		append([]any{string(svc), string(env)}, stages...)...)
}

// AwaitingApproval reads one page of a tenant's deployments waiting for
// an approval, oldest first: of every project when all, else of projects.
func AwaitingApproval(ctx context.Context, q Querier, tenant model.TenantID, all bool, projects []model.ProjectID, pg PageArgs) (Page[model.Deployment], error) {
	where, args := inProjects(tenant, all, projects)
	args = append(args, string(model.StageAwaitingApproval))
	return Deployments.list(ctx, q, pg, fmt.Sprintf("%s AND stage = $%d", where, len(args)), args...)
}

// UnderWay reads one page of a tenant's deployments that have not ended,
// newest first: of every project when all, else of projects.
func UnderWay(ctx context.Context, q Querier, tenant model.TenantID, all bool, projects []model.ProjectID, pg PageArgs) (Page[model.Deployment], error) {
	where, args := inProjects(tenant, all, projects)
	in, stages := inList(model.TerminalStages(), len(args))
	return Deployments.newest(ctx, q, pg, where+" AND stage NOT IN ("+in+")", append(args, stages...)...)
}

// inProjects is the condition on a tenant's rows of every project (all)
// or of projects, with its arguments ($1 on).
func inProjects(tenant model.TenantID, all bool, projects []model.ProjectID) (string, []any) {
	if all {
		return "tenant_id = $1", []any{string(tenant)}
	}
	if len(projects) == 0 {
		return "tenant_id = $1 AND 1 = 0", []any{string(tenant)}
	}
	in, args := inList(projects, 1)
	return "tenant_id = $1 AND project_id IN (" + in + ")", append([]any{string(tenant)}, args...)
}

// ExpiredApprovals lists deployments whose approval window closed before
// now, across tenants.
func ExpiredApprovals(ctx context.Context, q Querier, now time.Time) ([]*model.Deployment, error) {
	return Deployments.all(ctx, q, `stage = $1 AND approval_expires_at < $2`, string(model.StageAwaitingApproval), now)
}

// WaitingOfProject reads a project's deployments queued or awaiting
// approval: requests not yet released, which a newer request of the same
// service and environment replaces.
func WaitingOfProject(ctx context.Context, q Querier, project model.ProjectID) ([]*model.Deployment, error) {
	return Deployments.all(ctx, q, `project_id = $1 AND stage IN ($2, $3)`,
		string(project), string(model.StageQueued), string(model.StageAwaitingApproval))
}

// ServicesOfProject reads every service of a project.
func ServicesOfProject(ctx context.Context, q Querier, project model.ProjectID) ([]*model.Service, error) {
	return Services.all(ctx, q, "project_id = $1", string(project))
}
