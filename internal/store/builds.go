package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// gitColumn is a service's Git source as stored: JSON, "" for none.
func gitColumn(g *model.GitSource) string {
	if g == nil {
		return ""
	}
	return encodeJSON(g)
}

var (
	Webhooks = &Table[model.WebhookID, model.Webhook]{
		Name:    "webhooks",
		Columns: []string{"id", "tenant_id", "project_id", "service_id", "secret", "created_by", "created_at", "rotated_at"},
		scan: func(s Scanner) (*model.Webhook, error) {
			var w model.Webhook
			return &w, s.Scan(&w.ID, &w.TenantID, &w.ProjectID, &w.ServiceID, &w.Secret, &w.CreatedBy, &w.CreatedAt, &w.RotatedAt)
		},
		values: func(w *model.Webhook) []any {
			return []any{string(w.ID), string(w.TenantID), string(w.ProjectID), nullable(w.ServiceID), w.Secret,
				nullable(w.CreatedBy), w.CreatedAt, w.RotatedAt}
		},
		id: func(w *model.Webhook) model.WebhookID { return w.ID },
	}
	WebhookDeliveries = &Table[model.WebhookDeliveryID, model.WebhookDelivery]{
		Name: "webhook_deliveries",
		Columns: []string{"id", "tenant_id", "project_id", "webhook_id", "provider", "delivery_id", "event", "ref",
			"commit_sha", "outcome", "reason", "builds", "body", "redelivery_of", "redelivered_by", "received_at"},
		scan: func(s Scanner) (*model.WebhookDelivery, error) {
			var d model.WebhookDelivery
			var builds string
			if err := s.Scan(&d.ID, &d.TenantID, &d.ProjectID, &d.WebhookID, &d.Provider, &d.DeliveryID, &d.Event,
				&d.Ref, &d.Commit, &d.Outcome, &d.Reason, &builds, &d.Body, &d.RedeliveryOf, &d.RedeliveredBy,
				&d.ReceivedAt); err != nil {
				return nil, err
			}
			return &d, decodeJSON(&d.Builds, builds)
		},
		values: func(d *model.WebhookDelivery) []any {
			builds := d.Builds
			if builds == nil {
				builds = []model.BuildID{}
			}
			var body any
			if d.Body != nil {
				body = d.Body
			}
			return []any{string(d.ID), string(d.TenantID), string(d.ProjectID), string(d.WebhookID), d.Provider,
				d.DeliveryID, d.Event, d.Ref, d.Commit, string(d.Outcome), d.Reason, encodeJSON(builds), body,
				nullable(d.RedeliveryOf), nullable(d.RedeliveredBy), d.ReceivedAt}
		},
		id: func(d *model.WebhookDelivery) model.WebhookDeliveryID { return d.ID },
	}
	Builds = &Table[model.BuildID, model.Build]{
		Name: "builds",
		Columns: []string{"id", "tenant_id", "project_id", "service_id", "environment_id", "cluster_id", "repository",
			"branch", "commit_sha", "status", "message", "image_digest", "delivery_id", "created_by", "deployment_id",
			"release_id", "log_lines", "log_bytes", "log_truncated", "attempts", "heartbeat_at", "created_at",
			"started_at", "finished_at"},
		scan: func(s Scanner) (*model.Build, error) {
			var b model.Build
			return &b, s.Scan(&b.ID, &b.TenantID, &b.ProjectID, &b.ServiceID, &b.EnvironmentID, &b.ClusterID,
				&b.Repository, &b.Branch, &b.Commit, &b.Status, &b.Message, &b.ImageDigest, &b.DeliveryID, &b.CreatedBy,
				&b.DeploymentID, &b.ReleaseID, &b.LogLines, &b.LogBytes, &b.LogTruncated, &b.Attempts, &b.HeartbeatAt,
				&b.CreatedAt, &b.StartedAt, &b.FinishedAt)
		},
		values: func(b *model.Build) []any {
			return []any{string(b.ID), string(b.TenantID), string(b.ProjectID), string(b.ServiceID),
				string(b.EnvironmentID), nullable(b.ClusterID), b.Repository, b.Branch, b.Commit, string(b.Status),
				b.Message, b.ImageDigest, nullable(b.DeliveryID), nullable(b.CreatedBy), nullable(b.DeploymentID),
				nullable(b.ReleaseID), b.LogLines, b.LogBytes, b.LogTruncated, b.Attempts, b.HeartbeatAt, b.CreatedAt,
				b.StartedAt, b.FinishedAt}
		},
		id: func(b *model.Build) model.BuildID { return b.ID },
	}
)

// WebhookOfService is the hook of one service.
func WebhookOfService(ctx context.Context, q Querier, svc model.ServiceID) (*model.Webhook, error) {
	return Webhooks.one(ctx, q, "service_id = $1", string(svc))
}

// WebhooksOfProject lists a project's hooks, its services' included.
func WebhooksOfProject(ctx context.Context, q Querier, project model.ProjectID) ([]*model.Webhook, error) {
	return Webhooks.all(ctx, q, "project_id = $1", string(project))
}

// RotateWebhookSecret replaces a hook's sealed secret.
func RotateWebhookSecret(ctx context.Context, q Querier, w *model.Webhook) error {
	return execOne(ctx, q, "rotating a webhook secret", `UPDATE webhooks SET secret = $2, rotated_at = $3 WHERE id = $1`,
		string(w.ID), w.Secret, w.RotatedAt)
}

// DeliveriesOf lists one page of a hook's deliveries, newest first.
func DeliveriesOf(ctx context.Context, q Querier, hook model.WebhookID, pg PageArgs) (Page[model.WebhookDelivery], error) {
	return WebhookDeliveries.newest(ctx, q, pg, "webhook_id = $1", string(hook))
}

// AcceptedDelivery is the delivery a hook accepted under a provider's
// delivery id (not refused, not a redelivery), if any.
func AcceptedDelivery(ctx context.Context, q Querier, hook model.WebhookID, deliveryID string) (*model.WebhookDelivery, error) {
	return WebhookDeliveries.one(ctx, q, "webhook_id = $1 AND delivery_id = $2 AND outcome <> $3 AND redelivery_of IS NULL",
		string(hook), deliveryID, string(model.DeliveryRefused))
}

// AcceptedPush finds a push a hook accepted before (not a redelivery) of
// one commit to one ref from one provider: what its signature covers, so
// a replay under a new delivery id is found too.
func AcceptedPush(ctx context.Context, q Querier, hook model.WebhookID, provider, ref, commit string) (*model.WebhookDelivery, error) {
	return WebhookDeliveries.one(ctx, q, `webhook_id = $1 AND provider = $2 AND ref = $3 AND commit_sha = $4 AND outcome <> $5
		AND redelivery_of IS NULL`, string(hook), provider, ref, commit, string(model.DeliveryRefused))
}

// GitServicesOfProject lists a project's services built from Git.
func GitServicesOfProject(ctx context.Context, q Querier, project model.ProjectID) ([]*model.Service, error) {
	return Services.all(ctx, q, "project_id = $1 AND git <> ''", string(project))
}

// BuildsOf lists one page of a service's builds newest first, of one
// environment when env is not nil.
func BuildsOf(ctx context.Context, q Querier, svc model.ServiceID, env *model.EnvironmentID, pg PageArgs) (Page[model.Build], error) {
	where, args := "service_id = $1", []any{string(svc)}
	if env != nil {
		where, args = where+" AND environment_id = $2", append(args, string(*env))
	}
	return Builds.newest(ctx, q, pg, where, args...)
}

// BuildOfCommit is a build of a commit for a service and environment that
// did not end without an image (queued, running or succeeded), if any: a
// second push of the commit builds nothing new.
func BuildOfCommit(ctx context.Context, q Querier, svc model.ServiceID, env model.EnvironmentID, commit string) (*model.Build, error) {
	in, unbuilt := inList(model.UnbuiltStatuses(), 3)
	return Builds.one(ctx, q, "service_id = $1 AND environment_id = $2 AND commit_sha = $3 AND status NOT IN ("+in+")",
		append([]any{string(svc), string(env), commit}, unbuilt...)...)
}

// UpdateBuild writes where a build stands: its status, cluster, message,
// image, log counters, attempts and times.
func UpdateBuild(ctx context.Context, q Querier, b *model.Build) error {
	return execOne(ctx, q, "updating a build",
		`UPDATE builds SET status = $2, cluster_id = $3, message = $4, image_digest = $5, log_lines = $6, log_bytes = $7,
			log_truncated = $8, attempts = $9, heartbeat_at = $10, started_at = $11, finished_at = $12 WHERE id = $1`,
		string(b.ID), string(b.Status), nullable(b.ClusterID), b.Message, b.ImageDigest, b.LogLines, b.LogBytes,
		b.LogTruncated, b.Attempts, b.HeartbeatAt, b.StartedAt, b.FinishedAt)
}

// BuildsWithStatus lists the builds with a status, oldest first, at most
// limit: the scheduler's queue, and the running builds it watches.
func BuildsWithStatus(ctx context.Context, q Querier, status model.BuildStatus, limit int) ([]*model.Build, error) {
	return Builds.query(ctx, q, fmt.Sprintf("SELECT %s FROM builds WHERE status = $1 ORDER BY id LIMIT %d", Builds.cols(), limit),
		string(status))
}

// RunningBuildsOn lists the builds running on a cluster, oldest first.
func RunningBuildsOn(ctx context.Context, q Querier, cluster model.ClusterID) ([]*model.Build, error) {
	return Builds.all(ctx, q, "cluster_id = $1 AND status = $2", string(cluster), string(model.BuildRunning))
}

// BuildOfDeployment is the build a deployment waits for.
func BuildOfDeployment(ctx context.Context, q Querier, dep model.DeploymentID) (*model.Build, error) {
	return Builds.one(ctx, q, "deployment_id = $1", string(dep))
}

// logRowsPerInsert bounds one INSERT of log lines: five parameters a row
// stay far below both drivers' limits on parameters per statement.
const logRowsPerInsert = 500

// AppendBuildLog stores lines of a build's log, many to a statement.
func AppendBuildLog(ctx context.Context, q Querier, lines []model.BuildLogLine) error {
	for len(lines) > 0 {
		chunk := lines[:min(len(lines), logRowsPerInsert)]
		lines = lines[len(chunk):]
		var sql strings.Builder
		sql.WriteString(`INSERT INTO build_log_lines (build_id, seq, tenant_id, at, line) VALUES `)
		args := make([]any, 0, 5*len(chunk))
		for i, l := range chunk {
			if i > 0 {
				sql.WriteString(", ")
			}
			fmt.Fprintf(&sql, "($%d, $%d, $%d, $%d, $%d)", 5*i+1, 5*i+2, 5*i+3, 5*i+4, 5*i+5)
			args = append(args, string(l.BuildID), l.Seq, string(l.TenantID), l.At, l.Line)
		}
		if _, err := q.Exec(ctx, sql.String(), args...); err != nil {
			return fmt.Errorf("storing build log lines: %w", err)
		}
	}
	return nil
}

// BuildLogAfter reads up to limit lines of a build's log after line seq.
func BuildLogAfter(ctx context.Context, q Querier, build model.BuildID, after int64, limit int) ([]model.BuildLogLine, error) {
	rows, err := q.Query(ctx, `SELECT build_id, seq, tenant_id, at, line FROM build_log_lines
		WHERE build_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, string(build), after, limit)
	if err != nil {
		return nil, fmt.Errorf("reading a build log: %w", err)
	}
	defer rows.Close()
	var out []model.BuildLogLine
	for rows.Next() {
		var l model.BuildLogLine
		if err := rows.Scan(&l.BuildID, &l.Seq, &l.TenantID, &l.At, &l.Line); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// BuildLogPage reads one page of a build's log, in order (first line
// first): pg's cursors are line numbers.
func BuildLogPage(ctx context.Context, q Querier, build model.BuildID, pg PageArgs) (Page[model.BuildLogLine], error) {
	args := []any{string(build)}
	conds, more, err := pg.numbered("seq", "ASC", len(args))
	if err != nil {
		return Page[model.BuildLogLine]{}, err
	}
	args = append(append(args, more...), pg.limit())
	rows, err := q.Query(ctx, fmt.Sprintf(`SELECT build_id, seq, tenant_id, at, line FROM build_log_lines
		WHERE %s ORDER BY seq %s LIMIT $%d`, strings.Join(append([]string{"build_id = $1"}, conds...), " AND "),
		pg.readOrder("ASC"), len(args)), args...)
	if err != nil {
		return Page[model.BuildLogLine]{}, fmt.Errorf("reading a build log: %w", err)
	}
	defer rows.Close()
	var out []*model.BuildLogLine
	for rows.Next() {
		var l model.BuildLogLine
		if err := rows.Scan(&l.BuildID, &l.Seq, &l.TenantID, &l.At, &l.Line); err != nil {
			return Page[model.BuildLogLine]{}, err
		}
		out = append(out, &l)
	}
	if err := rows.Err(); err != nil {
		return Page[model.BuildLogLine]{}, fmt.Errorf("reading a build log: %w", err)
	}
	return pageOf(out, pg), nil
}

// DeleteBuildLogsBefore deletes the log lines written before t (the
// retention job) and says how many.
func DeleteBuildLogsBefore(ctx context.Context, q Querier, t time.Time) (int64, error) {
	n, err := q.Exec(ctx, `DELETE FROM build_log_lines WHERE at < $1`, t)
	if err != nil {
		return 0, fmt.Errorf("deleting old build logs: %w", err)
	}
	return n, nil
}
