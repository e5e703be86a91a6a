package store

import (
	"context"

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
			"branch", "commit_sha", "status", "message", "image_digest", "delivery_id", "created_by", "created_at",
			"started_at", "finished_at"},
		scan: func(s Scanner) (*model.Build, error) {
			var b model.Build
			return &b, s.Scan(&b.ID, &b.TenantID, &b.ProjectID, &b.ServiceID, &b.EnvironmentID, &b.ClusterID,
				&b.Repository, &b.Branch, &b.Commit, &b.Status, &b.Message, &b.ImageDigest, &b.DeliveryID, &b.CreatedBy,
				&b.CreatedAt, &b.StartedAt, &b.FinishedAt)
		},
		values: func(b *model.Build) []any {
			return []any{string(b.ID), string(b.TenantID), string(b.ProjectID), string(b.ServiceID),
				string(b.EnvironmentID), nullable(b.ClusterID), b.Repository, b.Branch, b.Commit, string(b.Status),
				b.Message, b.ImageDigest, nullable(b.DeliveryID), nullable(b.CreatedBy), b.CreatedAt, b.StartedAt,
				b.FinishedAt}
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
