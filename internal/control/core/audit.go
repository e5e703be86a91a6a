package core

import (
	"context"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// AuditEvents lists a tenant's audit history newest first; tenant admins only.
func (p *Plane) AuditEvents(ctx context.Context, tenant model.TenantID, f store.AuditFilter, pg store.PageArgs) (store.Page[model.AuditEvent], error) {
	if err := p.authz.CheckCtx(ctx, authz.AuditRead, model.Scope{Tenant: tenant}); err != nil {
		return store.Page[model.AuditEvent]{}, err
	}
	return store.ListAudit(ctx, p.Querier(ctx), tenant, f, pg)
}

func (p *Plane) AuditEvent(ctx context.Context, id model.AuditEventID) (*model.AuditEvent, error) {
	ev, err := store.AuditEventByID(ctx, p.Querier(ctx), id)
	if err != nil {
		return nil, err
	}
	if err := p.authz.CheckCtx(ctx, authz.AuditRead, ev.Scope()); err != nil {
		return nil, authz.ErrNotVisible
	}
	return ev, nil
}
