// Package core is what every domain of the control layer builds on: the
// door to the store (door.go: a querier only for a subject), transactions
// and their outbox (txn.go, emit.go), typed audit actions (actions.go),
// checks and Invalid (validate.go, problem.go), idempotency keys, the
// deployment state machine (deployments.go: Advance, RecordEvent, Deliver),
// recompiling desired state (revisions.go) and placement, previews as
// rolled-back changes (preview.go), secrets and Git sources, the settings
// and the background jobs. It imports no domain: where it needs one (a
// deploy of a commit builds it) it calls an interface the domain sets when
// the plane is made (Builder, Publisher, AddJob, ObserveNotes).
//
// Every read goes through authorization in the control layer, never in its
// callers, and every committed change writes exactly one audit event in its
// transaction. It never returns a secret except the one-time token value of
// the call that created it.
package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/wake"
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
	// Settings are what the options set (settings.go).
	Settings Settings

	// jobs are the domains' background jobs (AddJob).
	jobs []Job
	// builder is the builds domain (SetBuilder).
	builder Builder
	// observers are told the notes of every transaction this replica
	// commits, before they are published (ObserveNotes).
	observers []func(topics []string)

	// bus fans notes out to this process's subscribers; notify tells
	// them (and, on PostgreSQL, the other replicas'). A transaction keeps
	// its own notes until it commits (txn).
	bus    *bus.Bus
	notify bus.Notifier

	// releases keeps the releases compiles read (they never change), so
	// that a recompile reads only the ones it has not seen.
	releases *store.ReleaseCache
	// compiler keeps what the compiles compiled, so that a change
	// compiles again only what it feeds (desired/incremental.go).
	compiler *desired.Compiler
	// jobPasses counts the finished passes of the background jobs.
	jobPasses atomic.Int64
	// outboundWake wakes this replica's sender when a change wrote a
	// message.
	outboundWake wake.Signal
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

// maxCachedReleases bounds the release cache (a few KB each): past it, it
// starts again empty, and a tenant with more live releases than this reads
// them as before.
const maxCachedReleases = 20_000

// Option configures a Plane.
type Option func(*Plane)

// WithBox gives the plane the master keys that seal and open secrets.
// Without it, secrets cannot be set and stored ones are unreadable.
func WithBox(b *seal.Box) Option { return func(p *Plane) { p.box = b } }

// WithDisconnectedAfter sets how long a cluster may stay silent before it
// shows DISCONNECTED.
func WithDisconnectedAfter(d time.Duration) Option {
	return func(p *Plane) { p.Settings.DisconnectedAfter = d }
}

// New wires the domain layer over a migrated store.
func New(st *store.Store, log *slog.Logger, opts ...Option) (*Plane, error) {
	grants := newGrantCache(st)
	z, err := authz.New(grants.get)
	if err != nil {
		return nil, err
	}
	b := bus.New()
	p := &Plane{store: st, authz: z, grants: grants, box: seal.NewBox(nil), log: log, now: store.Now,
		bus: b, notify: bus.Memory{B: b}, releases: store.NewReleaseCache(maxCachedReleases),
		compiler: desired.NewCompiler(), outboundWake: wake.New(),
		Settings: Settings{ConnectGrace: DefaultConnectGrace, DisconnectedAfter: model.DisconnectedAfter, ApprovalTTL: DefaultApprovalTTL,
			StallAfter: DefaultStallAfter, MaxTokensPerUser: DefaultMaxTokensPerUser, Builds: DefaultBuildSettings,
			LogRetention: DefaultLogRetention, SessionTTL: DefaultSessionTTL, InvitationTTL: DefaultInvitationTTL,
			Outbound: DefaultOutboundSettings}}
	for _, o := range opts {
		o(p)
	}
	// Access changed on another replica drops the grants here too.
	p.bus.Observe(grants.noted)
	return p, nil
}

// ObserveNotes has f told the notes of every change: this replica's as
// soon as they commit (before they are published, so that a cache here
// never serves what a commit here changed), and every replica's as they
// reach the bus. Domains keep their caches of access with it.
func (p *Plane) ObserveNotes(f func(topics []string)) {
	if f == nil {
		return
	}
	p.observers = append(p.observers, f)
	p.bus.Observe(f)
}

// Box seals and opens secrets.
func (p *Plane) Box() *seal.Box { return p.box }

// Log is the plane's logger.
func (p *Plane) Log() *slog.Logger { return p.log }

// Now is the plane's clock (WithClock).
func (p *Plane) Now() time.Time { return p.now() }

// Authorizer exposes the policy, for the role matrix test and docs.
func (p *Plane) Authorizer() *authz.Authorizer { return p.authz }

func NewID[T ~string]() T { return T(uuid.Must(uuid.NewV7()).String()) }

// Scoped is a row type that knows its tenant and project.
type Scoped[T any] interface {
	*T
	Scope() model.Scope
}

// Get reads one row and checks the actor may perm on it. A row the actor
// cannot see is reported as not found, exactly like a missing one.
func Get[K ~string, T any, PT Scoped[T]](ctx context.Context, p *Plane, q store.Querier, t *store.Table[K, T], id K, perm authz.Perm) (*T, error) {
	v, err := t.Get(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if err := p.authz.CheckCtx(ctx, perm, PT(v).Scope()); err != nil {
		return nil, err
	}
	return v, nil
}

// ByIDs reads rows for a dataloader, dropping those the actor may not read.
func ByIDs[K ~string, T any, PT Scoped[T]](ctx context.Context, p *Plane, t *store.Table[K, T], ids []K, perm authz.Perm) (map[K]*T, error) {
	rows, err := t.ByIDs(ctx, p.Querier(ctx), ids)
	if err != nil {
		return nil, err
	}
	return Visible[K, T, PT](ctx, p, rows, perm)
}

// Visible removes from rows those the caller may not read with perm.
func Visible[K ~string, T any, PT Scoped[T]](ctx context.Context, p *Plane, rows map[K]*T, perm authz.Perm) (map[K]*T, error) {
	for id, v := range rows {
		if err := p.authz.CheckCtx(ctx, perm, PT(v).Scope()); err != nil {
			if IsDenied(err) {
				delete(rows, id)
				continue
			}
			return nil, err
		}
	}
	return rows, nil
}

func IsDenied(err error) bool {
	return errors.Is(err, authz.ErrNotVisible) || errors.Is(err, authz.ErrForbidden)
}

// IsNotFound reports whether err means "no such object, or not yours".
func IsNotFound(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, authz.ErrNotVisible)
}

// Change runs fn in a transaction that holds the tenant's write lock and
// records the audit event fn fills in. A failed fn writes nothing, audit
// included. What the change does beyond its rows follows from the action fn
// chose: it recompiles unless the action keeps every state, and it notes an
// access change of the user in the event's details.
func (p *Plane) Change(ctx context.Context, tenant model.TenantID, fn func(q *Txn, t *model.Tenant, ev *Audit) error) error {
	return p.ChangeOr(ctx, nil, tenant, fn)
}

// ChangeOr is change, or with dry set, its dry run: the same fn in a
// transaction that always rolls back, its effect on the tenant's clusters
// collected in dry (see preview). The mutations that can be previewed take
// dry as an explicit argument and pass it here.
func (p *Plane) ChangeOr(ctx context.Context, dry *Previewing, tenant model.TenantID, fn func(q *Txn, t *model.Tenant, ev *Audit) error) error {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return err
	}
	if dry != nil {
		// A preview runs the same fn without the tenant's write lock.
		return p.changePreview(ctx, tenant, a, dry, fn)
	}
	return p.InTx(ctx, func(q *Txn) error {
		t, err := store.LockTenant(ctx, q, tenant)
		if err != nil {
			return fmt.Errorf("locking tenant: %w", err)
		}
		ev := p.NewAuditEvent(a, tenant)
		if err := fn(q, t, ev); err != nil {
			return err
		}
		if uid, ok := ev.Details["userId"].(string); ok && ev.act.Access {
			// Checks read that user's grants afresh, and open connections
			// check their token now.
			if err := p.Note(ctx, q, bus.User(uid)); err != nil {
				return err
			}
		}
		if err := p.recordKey(ctx, q, ev.AuditEvent); err != nil {
			return err
		}
		// The audit event first: the revisions the recompile makes name
		// it as their cause.
		if err := q.Audited(ctx, ev.AuditEvent); err != nil {
			return err
		}
		if ev.act.KeepsState {
			return nil
		}
		if err := p.Recompile(ctx, q, tenant); err != nil {
			return fmt.Errorf("compiling desired state: %w", err)
		}
		return nil
	})
}

func (p *Plane) NewAuditEvent(a *authz.Actor, tenant model.TenantID) *Audit {
	ev := &Audit{AuditEvent: &model.AuditEvent{TenantID: tenant, ClientAddress: a.Origin, CreatedAt: p.now(), Details: map[string]any{}}}
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

// EnsureRoom fails with ENTITLEMENT_REQUIRED when adding n of res would
// exceed the tenant's plan. Callers hold the tenant lock.
func (p *Plane) EnsureRoom(ctx context.Context, q store.Querier, t *model.Tenant, res model.LimitedResource, n int) error {
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
			t.PlanName, HumanResource(res), limit, use[res])}
	}
	return nil
}

func HumanResource(r model.LimitedResource) string {
	switch r {
	case model.LimitClusters:
		return "clusters"
	case model.LimitProjects:
		return "projects"
	case model.LimitProtectedEnvironments:
		return "protected environments"
	case model.LimitMembers:
		return "members"
	case model.LimitConcurrentBuilds:
		return "builds running at once"
	default:
		return "services"
	}
}

// ConflictOn turns a duplicate-key error into a user error on field.
func ConflictOn(err error, field, message string) error {
	var ce *store.ConflictError
	if errors.As(err, &ce) && !ce.Reference {
		return Problem{Field: []string{"input", field}, Code: CodeConflict, Message: message}
	}
	return err
}

// Committed returns v only when the change committed: a failed mutation
// never hands back an object that was not stored.
func Committed[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Publisher hears, after commit, which clusters got a new desired revision
// and which connect tokens stopped being valid. The agent hub is one.
type Publisher interface {
	Published(bumped []Bumped)
	TokensRevoked(cluster model.ClusterID, tokens []model.ConnectTokenID)
	CommandQueued(cluster model.ClusterID)
}

// WithPublisher tells the plane whom to notify after commits.
func WithPublisher(pub Publisher) Option { return func(p *Plane) { p.pub = pub } }

// SetPublisher attaches the publisher after construction (the hub needs
// the plane first).
func (p *Plane) SetPublisher(pub Publisher) { p.pub = pub }

// Publisher is what tells this replica's connected agents (nil without
// one, as in tests and jobs-only processes).
func (p *Plane) Publisher() Publisher { return p.pub }

// ReleaseCache is the cache of the releases compiles read (they never change);
// a read through it checks nothing: the caller checks what it hands out.
func (p *Plane) ReleaseCache() *store.ReleaseCache { return p.releases }
