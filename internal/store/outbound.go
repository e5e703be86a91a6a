package store

import (
	"context"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// Outbound webhooks: endpoints, their messages (the outbox) and every
// attempt to deliver one.

var (
	Endpoints = &Table[model.EndpointID, model.Endpoint]{
		Name: "webhook_endpoints",
		Columns: []string{"id", "tenant_id", "project_id", "url", "description", "events", "secret", "old_secret",
			"old_secret_until", "rotated_at", "enabled", "disabled_reason", "disabled_at", "last_seq", "created_by",
			"created_at", "updated_at"},
		scan: func(s Scanner) (*model.Endpoint, error) {
			var e model.Endpoint
			var events string
			if err := s.Scan(&e.ID, &e.TenantID, &e.ProjectID, &e.URL, &e.Description, &events, &e.Secret, &e.OldSecret,
				&e.OldSecretUntil, &e.RotatedAt, &e.Enabled, &e.DisabledReason, &e.DisabledAt, &e.LastSeq, &e.CreatedBy,
				&e.CreatedAt, &e.UpdatedAt); err != nil {
				return nil, err
			}
			return &e, decodeJSON(&e.Events, events)
		},
		values: func(e *model.Endpoint) []any {
			return []any{string(e.ID), string(e.TenantID), nullable(e.ProjectID), e.URL, e.Description, encodeJSON(e.Events),
				e.Secret, e.OldSecret, e.OldSecretUntil, e.RotatedAt, e.Enabled, e.DisabledReason, e.DisabledAt, e.LastSeq,
				nullable(e.CreatedBy), e.CreatedAt, e.UpdatedAt}
		},
		id: func(e *model.Endpoint) model.EndpointID { return e.ID },
	}
	Messages = &Table[model.MessageID, model.Message]{
		Name: "webhook_messages",
		Columns: []string{"id", "endpoint_id", "tenant_id", "project_id", "kind", "payload", "seq", "status", "attempts",
			"next_attempt_at", "lease_until", "delivered_at", "redelivery", "created_at"},
		scan: func(s Scanner) (*model.Message, error) {
			var m model.Message
			var payload string
			err := s.Scan(&m.ID, &m.EndpointID, &m.TenantID, &m.ProjectID, &m.Kind, &payload, &m.Seq, &m.Status, &m.Attempts,
				&m.NextAttemptAt, &m.LeaseUntil, &m.DeliveredAt, &m.Redelivery, &m.CreatedAt)
			m.Payload = []byte(payload)
			return &m, err
		},
		values: func(m *model.Message) []any {
			return []any{string(m.ID), string(m.EndpointID), string(m.TenantID), nullable(m.ProjectID), string(m.Kind),
				string(m.Payload), m.Seq, string(m.Status), m.Attempts, m.NextAttemptAt, m.LeaseUntil, m.DeliveredAt, m.Redelivery,
				m.CreatedAt}
		},
		id: func(m *model.Message) model.MessageID { return m.ID },
	}
	Attempts = &Table[model.AttemptID, model.Attempt]{
		Name: "webhook_attempts",
		Columns: []string{"id", "message_id", "endpoint_id", "tenant_id", "at", "status_code", "latency_ms", "response",
			"error", "redelivery"},
		scan: func(s Scanner) (*model.Attempt, error) {
			var a model.Attempt
			var ms int64
			err := s.Scan(&a.ID, &a.MessageID, &a.EndpointID, &a.TenantID, &a.At, &a.StatusCode, &ms, &a.Response, &a.Error,
				&a.Redelivery)
			a.Latency = time.Duration(ms) * time.Millisecond
			return &a, err
		},
		values: func(a *model.Attempt) []any {
			return []any{string(a.ID), string(a.MessageID), string(a.EndpointID), string(a.TenantID), a.At, a.StatusCode,
				a.Latency.Milliseconds(), a.Response, a.Error, a.Redelivery}
		},
		id: func(a *model.Attempt) model.AttemptID { return a.ID },
	}
)

// EndpointsOfTenant lists every endpoint of a tenant (its projects'
// included), oldest first.
func EndpointsOfTenant(ctx context.Context, q Querier, tenant model.TenantID) ([]*model.Endpoint, error) {
	return Endpoints.all(ctx, q, "tenant_id = $1", string(tenant))
}

// EndpointsOfProject lists a project's endpoints, oldest first.
func EndpointsOfProject(ctx context.Context, q Querier, project model.ProjectID) ([]*model.Endpoint, error) {
	return Endpoints.all(ctx, q, "project_id = $1", string(project))
}

// UpdateEndpoint stores what can change of an endpoint.
func UpdateEndpoint(ctx context.Context, q Querier, e *model.Endpoint) error {
	return execOne(ctx, q, "updating webhook endpoint", `UPDATE webhook_endpoints SET url = $2, description = $3, events = $4,
		secret = $5, old_secret = $6, old_secret_until = $7, rotated_at = $8, enabled = $9, disabled_reason = $10,
		disabled_at = $11, updated_at = $12 WHERE id = $1`,
		string(e.ID), e.URL, e.Description, encodeJSON(e.Events), e.Secret, e.OldSecret, e.OldSecretUntil, e.RotatedAt,
		e.Enabled, e.DisabledReason, e.DisabledAt, e.UpdatedAt)
}

// NextMessageSeq numbers an endpoint's next message. The update holds the
// endpoint's row until the transaction ends, so that the numbers of its
// messages follow the order their transactions commit in.
func NextMessageSeq(ctx context.Context, q Querier, endpoint model.EndpointID) (int64, error) {
	rows, err := q.Query(ctx, `UPDATE webhook_endpoints SET last_seq = last_seq + 1 WHERE id = $1 RETURNING last_seq`, string(endpoint))
	if err != nil {
		return 0, fmt.Errorf("numbering a webhook message: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, ErrNotFound
	}
	var seq int64
	if err := rows.Scan(&seq); err != nil {
		return 0, err
	}
	return seq, rows.Err()
}

// DueMessages leases up to limit messages due at now, each the earliest
// undelivered message of its endpoint (an endpoint gets its messages in
// order, one at a time), of endpoints that are enabled and not leased by
// another replica; the lease lasts until until. On PostgreSQL the rows
// another replica is leasing at the same moment are skipped.
func DueMessages(ctx context.Context, q Querier, now, until time.Time, limit int) ([]*model.Message, error) {
	lock := ""
	if q.Dialect().Name == "postgres" {
		lock = " FOR UPDATE OF m SKIP LOCKED"
	}
	ms, err := Messages.query(ctx, q, `SELECT `+prefixed("m", Messages.Columns)+` FROM webhook_messages m
		JOIN webhook_endpoints e ON e.id = m.endpoint_id
		WHERE m.status = $1 AND m.next_attempt_at <= $2 AND (m.lease_until IS NULL OR m.lease_until < $2) AND e.enabled
		  AND m.seq = (SELECT MIN(o.seq) FROM webhook_messages o WHERE o.endpoint_id = m.endpoint_id AND o.status = $1)
		ORDER BY m.next_attempt_at, m.id LIMIT $3`+lock, string(model.MessagePending), now, limit)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if _, err := q.Exec(ctx, `UPDATE webhook_messages SET lease_until = $2 WHERE id = $1`, string(m.ID), until); err != nil {
			return nil, fmt.Errorf("leasing a webhook message: %w", err)
		}
		m.LeaseUntil = &until
	}
	return ms, nil
}

// prefixed is columns qualified by a table alias.
func prefixed(alias string, cols []string) string {
	out := ""
	for i, c := range cols {
		if i > 0 {
			out += ", "
		}
		out += alias + "." + c
	}
	return out
}

// UpdateMessage stores a message's delivery state.
func UpdateMessage(ctx context.Context, q Querier, m *model.Message) error {
	return execOne(ctx, q, "updating webhook message", `UPDATE webhook_messages SET status = $2, attempts = $3,
		next_attempt_at = $4, lease_until = $5, delivered_at = $6, redelivery = $7 WHERE id = $1`,
		string(m.ID), string(m.Status), m.Attempts, m.NextAttemptAt, m.LeaseUntil, m.DeliveredAt, m.Redelivery)
}

// MessagesOf reads a page of an endpoint's messages, newest first,
// optionally of one status.
func MessagesOf(ctx context.Context, q Querier, endpoint model.EndpointID, status *model.MessageStatus, pg PageArgs) (Page[model.Message], error) {
	if status != nil {
		return Messages.newest(ctx, q, pg, "endpoint_id = $1 AND status = $2", string(endpoint), string(*status))
	}
	return Messages.newest(ctx, q, pg, "endpoint_id = $1", string(endpoint))
}

// AttemptsOf lists a message's attempts, oldest first.
func AttemptsOf(ctx context.Context, q Querier, message model.MessageID) ([]*model.Attempt, error) {
	return Attempts.query(ctx, q, `SELECT `+Attempts.cols()+` FROM webhook_attempts WHERE message_id = $1 ORDER BY at, id`,
		string(message))
}

// DeleteMessagesBefore deletes the delivered and failed messages (their
// attempts with them) made before, at most limit; it returns how many.
func DeleteMessagesBefore(ctx context.Context, q Querier, before time.Time, limit int) (int, error) {
	n, err := q.Exec(ctx, `DELETE FROM webhook_messages WHERE id IN (SELECT id FROM webhook_messages
		WHERE status <> $1 AND created_at < $2 ORDER BY created_at LIMIT $3)`, string(model.MessagePending), before, limit)
	if err != nil {
		return 0, fmt.Errorf("deleting old webhook messages: %w", err)
	}
	return int(n), nil
}

// TellClusterStatus records that a cluster's status, as webhooks told
// it, is now status ("CONNECTED", "DISCONNECTED"); it tells whether that
// changed it (a status is told once, whichever replica sees it first).
func TellClusterStatus(ctx context.Context, q Querier, cluster model.ClusterID, status string) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE clusters SET told_status = $2 WHERE id = $1 AND told_status <> $2`, string(cluster), status)
	if err != nil {
		return false, fmt.Errorf("recording the cluster status told: %w", err)
	}
	return n == 1, nil
}
