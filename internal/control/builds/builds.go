package builds

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/webhook"
)

// newWebhookSecret is 256 random bits, the way the providers suggest:
// long enough for HMAC-SHA256, plain enough to paste into any of them.
func newWebhookSecret() string {
	s, _, _ := core.NewSecret("nbwh_")
	return s
}

// sealWebhook gives a hook a new secret, sealed, and returns it.
func (p *Builds) sealWebhook(w *model.Webhook) (string, error) {
	secret := newWebhookSecret()
	sealed, err := p.Box().Seal([]byte(secret), w.Binding())
	if errors.Is(err, seal.ErrNoKey) {
		return "", core.Invalid("webhooks cannot be made: this control plane has no master key to seal their secrets (the operator sets NEBULA_MASTER_KEY)")
	}
	if err != nil {
		return "", fmt.Errorf("sealing the webhook secret: %w", err)
	}
	w.Secret = sealed
	return secret, nil
}

// CreateWebhook makes a hook for one service of a project (svc set) or
// for the project, routing each push by its repository. The secret is
// returned here only.
func (p *Builds) CreateWebhook(ctx context.Context, project model.ProjectID, svc *model.ServiceID) (*model.Webhook, string, error) {
	proj, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Projects, project, authz.WebhookManage)
	if err != nil {
		return nil, "", err
	}
	now := p.Now()
	w := &model.Webhook{ID: core.NewID[model.WebhookID](), TenantID: proj.TenantID, ProjectID: project, ServiceID: svc,
		CreatedAt: now, RotatedAt: now}
	if a, err := authz.ActorFrom(ctx); err == nil && a.User != nil {
		w.CreatedBy = &a.User.ID
	}
	secret, err := p.sealWebhook(w)
	if err != nil {
		return nil, "", err
	}
	err = p.Change(ctx, proj.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if svc != nil {
			s, err := store.Services.Get(ctx, q, *svc)
			if errors.Is(err, store.ErrNotFound) || err == nil && s.ProjectID != project {
				return core.Invalid("the service is not one of the project's", "input", "serviceId")
			}
			if err != nil {
				return err
			}
		}
		if err := store.Webhooks.Insert(ctx, q, w); err != nil {
			return core.ConflictOn(err, "serviceId", "the service has a webhook already: rotate its secret or delete it first")
		}
		core.Target(ev, ActWebhookCreate, "Webhook", string(w.ID))
		ev.Details["projectId"] = string(project)
		if svc != nil {
			ev.Details["serviceId"] = string(*svc)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return w, secret, nil
}

// RotateWebhookSecret gives a hook a new secret, returned here only; the
// old one stops verifying at once.
func (p *Builds) RotateWebhookSecret(ctx context.Context, id model.WebhookID) (*model.Webhook, string, error) {
	w, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Webhooks, id, authz.WebhookManage)
	if err != nil {
		return nil, "", err
	}
	secret, err := p.sealWebhook(w)
	if err != nil {
		return nil, "", err
	}
	w.RotatedAt = p.Now()
	err = p.Change(ctx, w.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActWebhookRotate, "Webhook", string(id))
		return store.RotateWebhookSecret(ctx, q, w)
	})
	if err != nil {
		return nil, "", err
	}
	return w, secret, nil
}

func (p *Builds) DeleteWebhook(ctx context.Context, id model.WebhookID) error {
	w, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Webhooks, id, authz.WebhookManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, w.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActWebhookDelete, "Webhook", string(id))
		ev.Details["projectId"] = string(w.ProjectID)
		return store.Webhooks.Delete(ctx, q, id)
	})
}

func (p *Builds) Webhook(ctx context.Context, id model.WebhookID) (*model.Webhook, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Webhooks, id, authz.WebhookRead)
}

func (p *Builds) WebhooksByIDs(ctx context.Context, ids []model.WebhookID) (map[model.WebhookID]*model.Webhook, error) {
	return core.ByIDs(ctx, p.Plane, store.Webhooks, ids, authz.WebhookRead)
}

// WebhookOf is a service's hook, nil when it has none.
func (p *Builds) WebhookOf(ctx context.Context, svc *model.Service) (*model.Webhook, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.WebhookRead, svc.Scope()); err != nil {
		return nil, err
	}
	w, err := store.WebhookOfService(ctx, p.Querier(ctx), svc.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return w, err
}

// WebhooksOf lists a project's hooks, its services' included.
func (p *Builds) WebhooksOf(ctx context.Context, proj *model.Project) ([]*model.Webhook, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.WebhookRead, proj.Scope()); err != nil {
		return nil, err
	}
	return store.WebhooksOfProject(ctx, p.Querier(ctx), proj.ID)
}

func (p *Builds) WebhookDeliveries(ctx context.Context, w *model.Webhook, pg store.PageArgs) (store.Page[model.WebhookDelivery], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.WebhookRead, w.Scope()); err != nil {
		return store.Page[model.WebhookDelivery]{}, err
	}
	return store.DeliveriesOf(ctx, p.Querier(ctx), w.ID, pg)
}

func (p *Builds) WebhookDelivery(ctx context.Context, id model.WebhookDeliveryID) (*model.WebhookDelivery, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.WebhookDeliveries, id, authz.WebhookRead)
}

func (p *Builds) DeliveriesByIDs(ctx context.Context, ids []model.WebhookDeliveryID) (map[model.WebhookDeliveryID]*model.WebhookDelivery, error) {
	return core.ByIDs(ctx, p.Plane, store.WebhookDeliveries, ids, authz.WebhookRead)
}

func (p *Builds) Build(ctx context.Context, id model.BuildID) (*model.Build, error) {
	return core.Get(ctx, p.Plane, p.Querier(ctx), store.Builds, id, authz.BuildRead)
}

func (p *Builds) BuildsByIDs(ctx context.Context, ids []model.BuildID) (map[model.BuildID]*model.Build, error) {
	return core.ByIDs(ctx, p.Plane, store.Builds, ids, authz.BuildRead)
}

// Builds lists one page of a service's builds, newest first, of one
// environment when env is set.
func (p *Builds) Builds(ctx context.Context, svc *model.Service, env *model.EnvironmentID, pg store.PageArgs) (store.Page[model.Build], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.BuildRead, svc.Scope()); err != nil {
		return store.Page[model.Build]{}, err
	}
	return store.BuildsOf(ctx, p.Querier(ctx), svc.ID, env, pg)
}

// Inbound is a request to a hook, as the HTTP server read it.
type Inbound struct {
	Header http.Header
	Body   []byte
	// Oversized: the body was longer than webhook.MaxBody; Body holds
	// only its start.
	Oversized bool
}

// Refusal is why a delivery was refused, for the provider's answer.
type Refusal int

const (
	NotRefused Refusal = iota
	// RefusedUnknown: no provider's headers, or no delivery id.
	RefusedUnknown
	RefusedOversized
	RefusedSignature
	RefusedReplay
	// RefusedMalformed: signed, but not a push a provider sends.
	RefusedMalformed
)

// ReceiveWebhook takes a delivery to hook id: it checks the provider's
// signature, refuses replays, decides what the push builds, and records
// the delivery with its outcome either way. A hook that does not exist is
// ErrNotFound and records nothing.
func (p *Builds) ReceiveWebhook(ctx context.Context, id model.WebhookID, in Inbound) (*model.WebhookDelivery, Refusal, error) {
	ctx = core.As(ctx, core.SystemWebhook)
	w, err := store.Webhooks.Get(ctx, p.Querier(ctx), id)
	if err != nil {
		return nil, NotRefused, err
	}
	d := &model.WebhookDelivery{ID: core.NewID[model.WebhookDeliveryID](), TenantID: w.TenantID, ProjectID: w.ProjectID,
		WebhookID: w.ID, ReceivedAt: p.Now()}
	var why Refusal
	err = p.SystemChange(ctx, w.TenantID, false, func(q *core.Txn) (err error) {
		why, err = p.takeDelivery(ctx, q, w, d, in)
		return err
	})
	if err != nil {
		return nil, NotRefused, err
	}
	return d, why, nil
}

// takeDelivery fills in d from the request and records it, with the
// builds it queues. Callers hold the tenant lock.
func (p *Builds) takeDelivery(ctx context.Context, q *core.Txn, w *model.Webhook, d *model.WebhookDelivery, in Inbound) (Refusal, error) {
	refuse := func(r Refusal, why string) (Refusal, error) {
		d.Outcome, d.Reason, d.Body, d.Builds = model.DeliveryRefused, why, nil, nil
		return r, store.WebhookDeliveries.Insert(ctx, q, d)
	}
	id, err := webhook.Identify(in.Header)
	d.Provider, d.DeliveryID, d.Event = string(id.Provider), core.ClipText(id.ID, 200), core.ClipText(id.Event, 100)
	if err != nil {
		return refuse(RefusedUnknown, err.Error())
	}
	if in.Oversized {
		return refuse(RefusedOversized, fmt.Sprintf("the body is over %d bytes: a push is a few kilobytes", webhook.MaxBody))
	}
	secret, err := p.Box().Open(w.Secret, w.Binding())
	if err != nil {
		return NotRefused, fmt.Errorf("opening the webhook secret: %w", err)
	}
	if err := webhook.Verify(id, in.Header, in.Body, secret); err != nil {
		return refuse(RefusedSignature, err.Error()+": check the secret set at the provider (rotate it to get a new one)")
	}
	prev, err := store.AcceptedDelivery(ctx, q, w.ID, id.ID)
	if err == nil {
		return refuse(RefusedReplay, fmt.Sprintf("delivery %s was received already, at %s: a replay", core.ClipText(id.ID, 200),
			prev.ReceivedAt.UTC().Format(time.RFC3339)))
	}
	if !errors.Is(err, store.ErrNotFound) {
		return NotRefused, err
	}
	return p.decideDelivery(ctx, q, w, d, id, in.Body)
}

// decideDelivery decides what a trusted delivery builds and records it.
func (p *Builds) decideDelivery(ctx context.Context, q *core.Txn, w *model.Webhook, d *model.WebhookDelivery, id webhook.Delivery, body []byte) (Refusal, error) {
	d.Body = body
	if !id.IsPush() {
		d.Outcome, d.Reason = model.DeliveryIgnored, fmt.Sprintf("a %q event: only pushes build", d.Event)
		if id.Event == "ping" {
			d.Reason = "a ping: the hook is set up and its secret matches"
		}
		return NotRefused, store.WebhookDeliveries.Insert(ctx, q, d)
	}
	push, err := webhook.Parse(id, body)
	if err != nil {
		d.Outcome, d.Reason, d.Body = model.DeliveryRefused, err.Error(), nil
		return RefusedMalformed, store.WebhookDeliveries.Insert(ctx, q, d)
	}
	d.Ref, d.Commit = core.ClipText(push.Ref, 250), push.Commit
	// The delivery id is not signed: a push of a commit to a ref this hook
	// took before is a replay under a new id, or the branch moved back to
	// an older commit. Either way it builds nothing (a person deploys an
	// older commit by its commit); a redelivery by a tenant admin is meant.
	if d.RedeliveredBy == nil {
		prev, err := store.AcceptedPush(ctx, q, w.ID, d.Provider, d.Ref, d.Commit)
		switch {
		case err == nil:
			d.Outcome, d.Reason, d.Body = model.DeliveryRefused, fmt.Sprintf("commit %s was pushed to %s already (delivery %s, %s): a replay, or the branch moved back to it; deploy an older commit by its commit",
				push.Commit[:12], core.ClipText(push.Ref, 250), prev.DeliveryID, prev.ReceivedAt.UTC().Format(time.RFC3339)), nil
			return RefusedReplay, store.WebhookDeliveries.Insert(ctx, q, d)
		case !errors.Is(err, store.ErrNotFound):
			return NotRefused, err
		}
	}
	d.Outcome, d.Reason, err = p.pushBuilds(ctx, q, w, d, push)
	if err != nil {
		return NotRefused, err
	}
	return NotRefused, store.WebhookDeliveries.Insert(ctx, q, d)
}

// pushBuilds queues the builds a trusted push asks for: for each Git
// service the hook covers whose repository and tracked branch it is, one
// per environment the service deploys pushes to, unless that commit is
// built or being built there already.
func (p *Builds) pushBuilds(ctx context.Context, q *core.Txn, w *model.Webhook, d *model.WebhookDelivery, push *webhook.Push) (model.DeliveryOutcome, string, error) {
	var svcs []*model.Service
	if w.ServiceID != nil {
		s, err := store.Services.Get(ctx, q, *w.ServiceID)
		if err != nil {
			return "", "", err
		}
		if s.Git == nil {
			return model.DeliveryIgnored, "service " + s.Name + " is not built from Git", nil
		}
		svcs = append(svcs, s)
	} else {
		all, err := store.GitServicesOfProject(ctx, q, w.ProjectID)
		if err != nil {
			return "", "", err
		}
		for _, s := range all {
			if push.Of(s.Git.Repository) {
				svcs = append(svcs, s)
			}
		}
		if len(svcs) == 0 {
			return model.DeliveryIgnored, "no Git service of the project is built from " + strings.Join(push.Repository, ", "), nil
		}
	}
	var reasons, dups []string
	for _, s := range svcs {
		if why := push.Ignored(s.Git.Repository, s.Git.Branch); why != "" {
			reasons = append(reasons, why)
			continue
		}
		if len(s.Git.DeployOnPush) == 0 {
			reasons = append(reasons, "service "+s.Name+" deploys pushes to no environment (its Git source's deployOnPush)")
			continue
		}
		for _, env := range s.Git.DeployOnPush {
			prev, err := store.BuildOfCommit(ctx, q, s.ID, env, push.Commit)
			if err == nil {
				dups = append(dups, fmt.Sprintf("%s is built for %s already (build %s, %s)", push.Commit[:12], s.Name, prev.ID, prev.Status))
				continue
			}
			if !errors.Is(err, store.ErrNotFound) {
				return "", "", err
			}
			why := fmt.Sprintf("release %%d: a push of %s to %s by %s (%s)", push.Commit[:12], push.Branch(),
				core.OrNone(push.Pusher), core.OrNone(push.Message))
			b, err := p.startBuild(ctx, q, s, env, push.Commit, why, &d.ID, d.RedeliveredBy)
			var pr core.Problem
			if errors.As(err, &pr) {
				reasons = append(reasons, pr.Message)
				continue
			}
			if err != nil {
				return "", "", err
			}
			d.Builds = append(d.Builds, b.ID)
			ev := &core.Audit{AuditEvent: &model.AuditEvent{TenantID: s.TenantID, ClientAddress: "webhook " + string(w.ID),
				CreatedAt: p.Now(), Details: map[string]any{"actor": "webhook:" + string(w.ID), "webhookId": string(w.ID),
					"deliveryId": string(d.ID), "provider": d.Provider, "serviceId": string(s.ID),
					"environmentId": string(env), "commit": push.Commit, "pusher": push.Pusher}}}
			if d.RedeliveredBy != nil {
				ev.ActorID = d.RedeliveredBy
				ev.Details["redeliveryOf"] = string(*d.RedeliveryOf)
			}
			core.Target(ev, ActBuildQueue, "Build", string(b.ID))
			if err := store.InsertAudit(ctx, q, ev.AuditEvent); err != nil {
				return "", "", err
			}
		}
	}
	switch {
	case len(d.Builds) > 0:
		return model.DeliveryBuildQueued, fmt.Sprintf("queued %d build(s) of %s", len(d.Builds), push.Commit[:12]), nil
	case len(dups) > 0:
		return model.DeliveryDuplicate, strings.Join(dups, "; "), nil
	default:
		return model.DeliveryIgnored, strings.Join(reasons, "; "), nil
	}
}

// Redeliver takes a delivery again, as its hook received it (tenant
// admins only): the replay check is skipped, everything else holds, and
// the new delivery names the one it repeats. A refused delivery kept no
// body and cannot be redelivered.
func (p *Builds) Redeliver(ctx context.Context, id model.WebhookDeliveryID) (*model.WebhookDelivery, error) {
	prev, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.WebhookDeliveries, id, authz.WebhookRedeliver)
	if err != nil {
		return nil, err
	}
	if prev.Body == nil {
		return nil, core.Invalid("a refused delivery kept no body: ask the provider to send it again", "input", "deliveryId")
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	d := &model.WebhookDelivery{ID: core.NewID[model.WebhookDeliveryID](), TenantID: prev.TenantID, ProjectID: prev.ProjectID,
		WebhookID: prev.WebhookID, ReceivedAt: p.Now(), RedeliveryOf: &prev.ID}
	if a.User != nil {
		d.RedeliveredBy = &a.User.ID
	}
	err = p.Change(ctx, prev.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		w, err := store.Webhooks.Get(ctx, q, prev.WebhookID)
		if err != nil {
			return err
		}
		// Trusted when it came (its body is kept only then): only the
		// decision is taken again.
		d.Provider, d.DeliveryID, d.Event = prev.Provider, prev.DeliveryID, prev.Event
		id := webhook.Delivery{Provider: webhook.Provider(prev.Provider), ID: prev.DeliveryID, Event: prev.Event}
		if _, err := p.decideDelivery(ctx, q, w, d, id, prev.Body); err != nil {
			return err
		}
		core.Target(ev, ActWebhookRedeliver, "WebhookDelivery", string(d.ID))
		ev.Details["redeliveryOf"], ev.Details["outcome"] = string(prev.ID), string(d.Outcome)
		return nil
	})
	return core.Committed(d, err)
}
