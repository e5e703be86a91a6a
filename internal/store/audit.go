package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

const auditColumns = `seq, tenant_id, actor_id, token_id, action, target_type, target_id, client_address, details, created_at`

// InsertAudit appends an audit event and gives it its id. It is called
// inside the transaction of the change it records. A "userId" detail,
// given as the user's model.UserID, is stored (and left in e.Details) as
// the id the event's tenant knows the user by, or dropped if the tenant
// knows no such user: the history never shows an id of another tenant.
func InsertAudit(ctx context.Context, q Querier, e *model.AuditEvent) error {
	if user, ok := e.Details["userId"].(string); ok {
		local, err := LocalIDOf(ctx, q, e.TenantID, model.UserID(user))
		switch {
		case err == nil:
			e.Details["userId"] = string(local)
		case errors.Is(err, ErrNotFound):
			delete(e.Details, "userId")
		default:
			return fmt.Errorf("inserting audit event: %w", err)
		}
	}
	rows, err := q.Query(ctx, `INSERT INTO audit_events
		(tenant_id, actor_id, token_id, action, target_type, target_id, client_address, details, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING seq`,
		string(e.TenantID), nullable(e.ActorID), nullable(e.TokenID), e.Action, e.TargetType, e.TargetID,
		e.ClientAddress, encodeJSON(e.Details), e.CreatedAt)
	if err != nil {
		return fmt.Errorf("inserting audit event: %w", err)
	}
	defer rows.Close()
	var seq int64
	if rows.Next() {
		err = rows.Scan(&seq)
	}
	if err = cmp.Or(err, rows.Err()); err != nil || seq == 0 {
		return fmt.Errorf("inserting audit event: %w", cmp.Or(err, errors.New("no sequence number returned")))
	}
	e.ID = model.AuditEventID(strconv.FormatInt(seq, 10))
	return nil
}

// AuditFilter narrows an audit query; zero fields do not filter.
type AuditFilter struct {
	Action string
	// ActorID is the id the tenant knows the actor by.
	ActorID model.LocalUserID
	// TargetType and TargetID filter together: an id is unique per type.
	TargetType string
	TargetID   string
	Since      *time.Time
	Until      *time.Time
}

// ListAudit reads a tenant's audit events newest first. The cursor is the
// event id (its sequence number).
func ListAudit(ctx context.Context, q Querier, tenant model.TenantID, f AuditFilter, pg PageArgs) (Page[model.AuditEvent], error) {
	where := []string{"tenant_id = $1"}
	args := []any{string(tenant)}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Action != "" {
		add("action = $%d", f.Action)
	}
	if f.ActorID != "" {
		add("actor_id = (SELECT p.user_id FROM member_profiles p WHERE p.tenant_id = audit_events.tenant_id AND p.local_id = $%d)", string(f.ActorID))
	}
	if f.TargetID != "" {
		add("target_type = $%d", f.TargetType)
		add("target_id = $%d", f.TargetID)
	}
	if f.Since != nil {
		add("created_at >= $%d", *f.Since)
	}
	if f.Until != nil {
		add("created_at < $%d", *f.Until)
	}
	for _, c := range []struct {
		cursor, cond string
	}{{pg.After, "seq < $%d"}, {pg.Before, "seq > $%d"}} {
		if c.cursor == "" {
			continue
		}
		seq, err := strconv.ParseInt(c.cursor, 10, 64)
		if err != nil {
			return Page[model.AuditEvent]{}, fmt.Errorf("audit cursor %q: %w", c.cursor, err)
		}
		add(c.cond, seq)
	}
	items, err := queryAudit(ctx, q, strings.Join(where, " AND "), pg.readOrder("DESC"), pg.limit(), args...)
	if err != nil {
		return Page[model.AuditEvent]{}, err
	}
	return pageOf(items, pg), nil
}

// AuditEventByID reads one event; the caller authorizes on its tenant.
func AuditEventByID(ctx context.Context, q Querier, id model.AuditEventID) (*model.AuditEvent, error) {
	seq, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return nil, ErrNotFound
	}
	items, err := queryAudit(ctx, q, "seq = $1", "DESC", 1, seq)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, ErrNotFound
	}
	return items[0], nil
}

func queryAudit(ctx context.Context, q Querier, where, order string, limit int, args ...any) ([]*model.AuditEvent, error) {
	args = append(args, limit)
	rows, err := q.Query(ctx, fmt.Sprintf(`SELECT %s FROM audit_events WHERE %s ORDER BY seq %s LIMIT $%d`,
		auditColumns, where, order, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("querying audit events: %w", err)
	}
	defer rows.Close()
	var out []*model.AuditEvent
	for rows.Next() {
		var e model.AuditEvent
		var seq int64
		var details string
		if err := rows.Scan(&seq, &e.TenantID, &e.ActorID, &e.TokenID, &e.Action, &e.TargetType, &e.TargetID,
			&e.ClientAddress, &details, &e.CreatedAt); err != nil {
			return nil, fmt.Errorf("scanning audit event: %w", err)
		}
		e.ID = model.AuditEventID(strconv.FormatInt(seq, 10))
		if err := json.Unmarshal([]byte(details), &e.Details); err != nil {
			return nil, fmt.Errorf("decoding audit details: %w", err)
		}
		out = append(out, &e)
	}
	return out, rows.Err()
}

// CountAudit counts a tenant's audit events (used by tests and the plan view).
func CountAudit(ctx context.Context, q Querier, tenant model.TenantID) (int, error) {
	return count(ctx, q, `SELECT COUNT(*) FROM audit_events WHERE tenant_id = $1`, string(tenant))
}
