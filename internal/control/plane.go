// Package control holds the control plane's domain services: the rules of
// every query and mutation, their transactions, authorization checks, plan
// limits and audit events. Resolvers, the CLI and (later) the agent hub call
// it; it calls the store.
//
// Every read goes through authorization here, never in the callers, and
// every committed change writes exactly one audit event in its transaction.
// It never returns a secret except the one-time token value of the call
// that created it.
package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
)

// Plane is the control plane's domain layer.
type Plane struct {
	store  *store.Store
	authz  *authz.Authorizer
	grants *grantCache
	box    *seal.Box
	log    *slog.Logger
	now    func() time.Time
	pub    Publisher
	// connectGrace is how long a replaced connect token keeps working.
	connectGrace time.Duration
	// disconnectedAfter is how long a silent cluster still counts as
	// connected.
	disconnectedAfter time.Duration
	// approvalTTL is how long a deployment may wait for approval;
	// allowSelfApproval lets requesters approve their own.
	approvalTTL       time.Duration
	allowSelfApproval bool
	stallAfter        time.Duration
	// maxTokensPerUser caps the API tokens working at once for one user
	// in one tenant.
	maxTokensPerUser int

	// bus fans notes out to this process's subscribers; notify tells
	// them (and, on PostgreSQL, the other replicas'). pending holds the
	// topics noted in each open transaction, by its querier.
	bus     *bus.Bus
	notify  bus.Notifier
	pending sync.Map

	// snaps keeps, per tenant, the rows last read to deliver a state.
	snapMu  sync.Mutex
	snaps   map[model.TenantID]*tenantSnapshot
	loading map[model.TenantID]*sync.Mutex
}

// WithBus sets the bus subscribers follow and how notes reach it (in
// memory, or through PostgreSQL to every replica).
func WithBus(b *bus.Bus, n bus.Notifier) Option {
	return func(p *Plane) { p.bus, p.notify = b, n }
}

// Bus is what subscribers follow (nil without a plane).
func (p *Plane) Bus() *bus.Bus {
	if p == nil {
		return nil
	}
	return p.bus
}

// noteTx notes topics inside the transaction q: told to subscribers once
// it commits.
func (p *Plane) noteTx(ctx context.Context, q store.Querier, topics ...string) error {
	if v, ok := p.pending.Load(q); ok {
		list := v.(*[]string)
		*list = append(*list, topics...)
	}
	return p.notify.InTx(ctx, q, topics)
}

// tx runs fn in a transaction whose noted topics are told after it
// commits.
func (p *Plane) tx(ctx context.Context, fn func(q store.Querier) error) error {
	return p.txThen(ctx, fn, nil)
}

// txThen is tx with a step between the commit and the notes: the recompile
// hands its states to this process's agent sessions there, so that a note
// never sends a session to compile a state already on its way.
func (p *Plane) txThen(ctx context.Context, fn func(q store.Querier) error, committed func()) error {
	var topics []string
	err := p.store.Tx(ctx, func(q store.Querier) error {
		list := &[]string{}
		p.pending.Store(q, list)
		defer p.pending.Delete(q)
		if err := fn(q); err != nil {
			return err
		}
		topics = *list
		return nil
	})
	if err == nil {
		// This replica's checks see an access change as soon as it
		// committed, before its note comes back from PostgreSQL.
		p.grants.noted(topics)
	}
	if err == nil && committed != nil {
		committed()
	}
	if err == nil && len(topics) > 0 {
		p.notify.Committed(topics)
	}
	return err
}

// Option configures a Plane.
type Option func(*Plane)

// WithBox gives the plane the master keys that seal and open secrets.
// Without it, secrets cannot be set and stored ones are unreadable.
func WithBox(b *seal.Box) Option { return func(p *Plane) { p.box = b } }

// WithDisconnectedAfter sets how long a cluster may stay silent before it
// shows DISCONNECTED.
func WithDisconnectedAfter(d time.Duration) Option {
	return func(p *Plane) { p.disconnectedAfter = d }
}

// New wires the domain layer over a migrated store.
func New(st *store.Store, log *slog.Logger, opts ...Option) (*Plane, error) {
	grants := newGrantCache(st)
	z, err := authz.New(grants.get)
	if err != nil {
		return nil, err
	}
	b := bus.New()
	p := &Plane{store: st, authz: z, grants: grants, box: seal.NewBox(nil), log: log, now: store.Now, connectGrace: DefaultConnectGrace,
		bus: b, notify: bus.Memory{B: b},
		disconnectedAfter: model.DisconnectedAfter, approvalTTL: DefaultApprovalTTL,
		stallAfter: DefaultStallAfter, maxTokensPerUser: DefaultMaxTokensPerUser}
	for _, o := range opts {
		o(p)
	}
	// Access changed on another replica drops the grants here too.
	p.bus.Observe(grants.noted)
	return p, nil
}

// Authorizer exposes the policy, for the role matrix test and docs.
func (p *Plane) Authorizer() *authz.Authorizer { return p.authz }

// Store exposes the store, for health checks.
func (p *Plane) Store() *store.Store { return p.store }

func newID[T ~string]() T { return T(uuid.Must(uuid.NewV7()).String()) }

// scoped is a row type that knows its tenant and project.
type scoped[T any] interface {
	*T
	Scope() model.Scope
}

// get reads one row and checks the actor may perm on it. A row the actor
// cannot see is reported as not found, exactly like a missing one.
func get[K ~string, T any, PT scoped[T]](ctx context.Context, p *Plane, q store.Querier, t *store.Table[K, T], id K, perm authz.Perm) (*T, error) {
	v, err := t.Get(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if err := p.authz.CheckCtx(ctx, perm, PT(v).Scope()); err != nil {
		return nil, err
	}
	return v, nil
}

// byIDs reads rows for a dataloader, dropping those the actor may not read.
func byIDs[K ~string, T any, PT scoped[T]](ctx context.Context, p *Plane, t *store.Table[K, T], ids []K, perm authz.Perm) (map[K]*T, error) {
	rows, err := t.ByIDs(ctx, p.store.Q(), ids)
	if err != nil {
		return nil, err
	}
	for id, v := range rows {
		if err := p.authz.CheckCtx(ctx, perm, PT(v).Scope()); err != nil {
			if isDenied(err) {
				delete(rows, id)
				continue
			}
			return nil, err
		}
	}
	return rows, nil
}

func isDenied(err error) bool {
	return errors.Is(err, authz.ErrNotVisible) || errors.Is(err, authz.ErrForbidden)
}

// IsNotFound reports whether err means "no such object, or not yours".
func IsNotFound(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, authz.ErrNotVisible)
}

// change runs fn in a transaction that holds the tenant's write lock and
// records the audit event fn fills in. A failed fn writes nothing, audit
// included.
func (p *Plane) change(ctx context.Context, tenant model.TenantID, fn func(q store.Querier, t *model.Tenant, ev *model.AuditEvent) error) error {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return err
	}
	if pv, ok := ctx.Value(previewKey{}).(*previewing); ok {
		// A preview runs the same fn without the tenant's write lock.
		return p.changePreview(ctx, tenant, a, pv, fn)
	}
	var bumped []Bumped
	err = p.txThen(ctx, func(q store.Querier) error {
		bumped = nil
		t, err := store.LockTenant(ctx, q, tenant)
		if err != nil {
			return fmt.Errorf("locking tenant: %w", err)
		}
		ev := p.auditEvent(a, tenant)
		if err := fn(q, t, ev); err != nil {
			return err
		}
		if uid, ok := ev.Details["userId"].(string); ok && accessChanges[ev.Action] {
			// Checks read that user's grants afresh, and open connections
			// check their token now.
			if err := p.noteTx(ctx, q, bus.User(uid)); err != nil {
				return err
			}
		}
		if !stateless[ev.Action] {
			if bumped, err = p.recompile(ctx, q, tenant); err != nil {
				return fmt.Errorf("compiling desired state: %w", err)
			}
		}
		if err := p.recordKey(ctx, q, ev); err != nil {
			return err
		}
		return store.InsertAudit(ctx, q, ev)
	}, func() {
		// After commit: an agent must never see a revision that rolled back.
		if len(bumped) > 0 && p.pub != nil {
			p.pub.Published(bumped)
		}
	})
	return err
}

// accessChanges are the changes of the access of the user named in their
// audit details: their grants are dropped from every replica's cache, and
// their open connections check their token again.
var accessChanges = map[string]bool{
	"member.add": true, "member.update_role": true, "member.remove": true, "project_member.add": true,
	"project_member.update_role": true, "project_member.remove": true, "api_token.revoke": true,
}

func (p *Plane) auditEvent(a *authz.Actor, tenant model.TenantID) *model.AuditEvent {
	ev := &model.AuditEvent{TenantID: tenant, ClientAddress: a.Origin, CreatedAt: p.now(), Details: map[string]any{}}
	if a.User != nil {
		id := a.User.ID
		ev.ActorID = &id
	}
	if a.Token != nil {
		id := a.Token.ID
		ev.TokenID = &id
	}
	return ev
}

// target fills the audit event's target.
func target(ev *model.AuditEvent, action, typ, id string) {
	ev.Action, ev.TargetType, ev.TargetID = action, typ, &id
}

// ensureRoom fails with ENTITLEMENT_REQUIRED when adding n of res would
// exceed the tenant's plan. Callers hold the tenant lock.
func (p *Plane) ensureRoom(ctx context.Context, q store.Querier, t *model.Tenant, res model.LimitedResource, n int) error {
	limit := t.PlanName.Limits()[res]
	if limit == model.Unlimited || n <= 0 {
		return nil
	}
	use, err := store.Usage(ctx, q, t.ID)
	if err != nil {
		return err
	}
	if use[res]+n > limit {
		return Problem{Code: CodeEntitlement, Message: fmt.Sprintf(
			"the %s plan's limit of %s is %d and this tenant uses %d; upgrade the plan to add more",
			t.PlanName, humanResource(res), limit, use[res])}
	}
	return nil
}

func humanResource(r model.LimitedResource) string {
	switch r {
	case model.LimitClusters:
		return "clusters"
	case model.LimitProjects:
		return "projects"
	case model.LimitProtectedEnvironments:
		return "protected environments"
	case model.LimitMembers:
		return "members"
	default:
		return "services"
	}
}

// conflictOn turns a duplicate-key error into a user error on field.
func conflictOn(err error, field, message string) error {
	var ce *store.ConflictError
	if errors.As(err, &ce) && !ce.Reference {
		return Problem{Field: []string{"input", field}, Code: CodeConflict, Message: message}
	}
	return err
}

// committed returns v only when the change committed: a failed mutation
// never hands back an object that was not stored.
func committed[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}
