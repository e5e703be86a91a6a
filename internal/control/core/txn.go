package core

import (
	"context"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Txn is one write transaction of the plane. Its rows go through the
// Querier it embeds; what it notes and what it asks to run after the
// commit it keeps itself, an outbox that is dispatched only once the
// transaction committed and dropped with it when it rolls back.
type Txn struct {
	store.Querier
	notes []string
	after []func()
	// cause is the audit event the transaction recorded (the last, if
	// several): the revisions its recompile makes name it as their cause.
	cause model.AuditEventID
	// endpoints are the webhook endpoints of the tenants the transaction
	// emitted events of, read once (a deploy moves several deployments,
	// each move an event); a write of an endpoint drops them.
	endpoints map[model.TenantID][]*model.Endpoint
	// recorded are the deployment events the transaction recorded, for
	// the hints of their deployments' notes (eventhints.go).
	recorded map[model.DeploymentID]*recorded
	busNoted []bus.Note // busNotes, once made
	// approval says who approved the change the transaction applies (a
	// change set's approval): its deployments in protected environments
	// deliver at once. preview marks a dry run.
	approval  string
	preview   bool
	previewed []PreviewedRelease // a preview's releases (Previewed)
	placed    map[model.TenantID]*placedOn
}

// Approve marks the transaction as applying a change approved as why says
// (a change set's approval): deployments it starts in protected
// environments do not wait for another.
func (t *Txn) Approve(why string) { t.approval = why }

// Approved tells whether the transaction may change what protected
// environments run without asking: it applies an approved change, or it
// is a preview, which shows what the change does once approved.
func (t *Txn) Approved() bool { return t.approval != "" || t.preview }

// EndpointsOf reads a tenant's webhook endpoints, once per transaction
// unless it writes one.
func (t *Txn) EndpointsOf(ctx context.Context, tenant model.TenantID) ([]*model.Endpoint, error) {
	if eps, ok := t.endpoints[tenant]; ok {
		return eps, nil
	}
	eps, err := store.EndpointsOfTenant(ctx, t.Querier, tenant)
	if err != nil {
		return nil, err
	}
	if t.endpoints == nil {
		t.endpoints = map[model.TenantID][]*model.Endpoint{}
	}
	t.endpoints[tenant] = eps
	return eps, nil
}

// EndpointsChanged is said before the transaction writes an endpoint.
func (t *Txn) EndpointsChanged() { t.endpoints = nil }

// Audited records an audit event in the transaction; the revisions the
// transaction's recompile then makes name it as their cause.
func (t *Txn) Audited(ctx context.Context, e *model.AuditEvent) error {
	if err := store.InsertAudit(ctx, t.Querier, e); err != nil {
		return err
	}
	t.cause = e.ID
	return nil
}

// AfterCommit runs f once the transaction committed, before its notes are
// told: the recompile hands its states to this process's agent sessions
// there, so that a note never sends a session to compile a state already on
// its way. f never runs for a transaction that rolled back.
func (t *Txn) AfterCommit(f func()) { t.after = append(t.after, f) }

// Note notes topics in the transaction: written with it, all of its notes
// in one notification just before the commit (on PostgreSQL, where the
// other replicas listen; see Plane.tx), and told to this process's
// subscribers once it commits. It returns an error for the callers' sake
// only: noting cannot fail, writing the notification can, and fails the
// transaction.
func (p *Plane) Note(ctx context.Context, q *Txn, topics ...string) error {
	q.notes = append(q.notes, topics...)
	return nil
}

// distinct is topics without repeats, in the order they were first noted.
func distinct(topics []string) []string {
	seen := make(map[string]struct{}, len(topics))
	out := topics[:0]
	for _, t := range topics {
		if _, ok := seen[t]; !ok {
			seen[t] = struct{}{}
			out = append(out, t)
		}
	}
	return out
}

// dispatch tells what a committed transaction kept: this replica's grant
// cache first (a check sees an access change as soon as it committed,
// before its note comes back from PostgreSQL), then the after-commit steps,
// then the notes.
func (p *Plane) dispatch(t *Txn) {
	p.grants.noted(t.notes)
	for _, f := range p.observers {
		f(t.notes)
	}
	for _, f := range t.after {
		f()
	}
	if len(t.notes) > 0 {
		p.notify.Committed(t.busNotes())
	}
}

// NotifyNow tells topics' followers at once, outside any transaction (an
// agent connected: nothing was written that they could read).
func (p *Plane) NotifyNow(ctx context.Context, topics []string) { p.notify.Now(ctx, topics) }
