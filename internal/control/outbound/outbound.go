package outbound

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/egress"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
)

// Outbound webhooks. A tenant admin (for the tenant) or a project manager
// (for a project) registers an endpoint with the kinds of event it wants.
// A change that makes such an event writes a message for each endpoint
// that wants it in the change's own transaction (emit): a change that
// rolls back sends nothing, and none is lost once it committed. The
// sender (outbound_send.go) delivers them.

// EndpointInput is a new endpoint: a tenant's (Project nil) or a project's.
type EndpointInput struct {
	Tenant      model.TenantID
	Project     *model.ProjectID
	URL         string
	Description string
	Events      []model.EventKind
}

// checkEndpoint validates what an endpoint is given; the URL must be one
// the control plane may reach.
func (p *Outbound) checkEndpoint(ctx context.Context, url, description *string, events []model.EventKind, project bool) error {
	var c core.Checks
	if url != nil {
		*url = strings.TrimSpace(*url)
		switch {
		case *url == "":
			c.Add(core.Invalid("the endpoint's URL is empty", core.FieldPath("input", "url")...))
		case len(*url) > 2000:
			c.Add(core.Invalid("the endpoint's URL is longer than 2000 characters", core.FieldPath("input", "url")...))
		default:
			if err := egress.CheckURL(ctx, *url, p.Settings.Outbound.AllowPrivate); err != nil {
				msg := "the endpoint's URL " + err.Error()
				if errors.Is(err, egress.ErrPrivateAddress) {
					msg += " (NEBULA_WEBHOOK_ALLOW_PRIVATE_NETWORKS lets endpoints be there)"
				}
				c.Add(core.Invalid(msg, core.FieldPath("input", "url")...))
			}
		}
	}
	if description != nil {
		*description = strings.TrimSpace(*description)
		c.Text(*description, "description", 200, false, "input", "description")
	}
	if events != nil {
		if len(events) == 0 {
			c.Add(core.Invalid("say which events the endpoint is told of: one at least", core.FieldPath("input", "events")...))
		}
		for i, k := range events {
			switch {
			case !k.Valid():
				c.Add(core.Invalid(fmt.Sprintf("%q is not a kind of event", k), core.FieldPath("input", "events", i)...))
			case project && !k.ProjectEvent():
				c.Add(core.Invalid(fmt.Sprintf("%s is the tenant's, not a project's: a tenant admin makes a tenant endpoint for it", k), core.FieldPath("input", "events", i)...))
			case slices.Contains(events[:i], k):
				c.Add(core.Invalid(fmt.Sprintf("%s is listed twice", k), core.FieldPath("input", "events", i)...))
			}
		}
	}
	return c.Err()
}

// newEndpointSecret is a Standard Webhooks secret: whsec_ and 32 random
// bytes in base64.
func newEndpointSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}

// sealEndpointSecret makes a new secret, sealed for the endpoint.
func (p *Outbound) sealEndpointSecret(e *model.Endpoint) (secret, sealed string, err error) {
	secret = newEndpointSecret()
	sealed, err = p.Box().Seal([]byte(secret), e.Binding())
	if errors.Is(err, seal.ErrNoKey) {
		return "", "", core.Invalid("webhook endpoints cannot be made: this control plane has no master key to seal their secrets (the operator sets NEBULA_MASTER_KEY)")
	}
	if err != nil {
		return "", "", fmt.Errorf("sealing the endpoint's secret: %w", err)
	}
	return secret, sealed, nil
}

// CreateEndpoint registers an endpoint; its signing secret is returned
// here only.
func (p *Outbound) CreateEndpoint(ctx context.Context, in EndpointInput) (*model.Endpoint, string, error) {
	scope := model.Scope{Tenant: in.Tenant}
	if in.Project != nil {
		proj, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Projects, *in.Project, authz.EndpointManage)
		if err != nil {
			return nil, "", err
		}
		scope = proj.Scope()
	}
	if err := p.Authorizer().CheckCtx(ctx, authz.EndpointManage, scope); err != nil {
		return nil, "", err
	}
	// Its events are always checked: none (even nil) is refused, not "all".
	if err := p.checkEndpoint(ctx, &in.URL, &in.Description, append([]model.EventKind{}, in.Events...), in.Project != nil); err != nil {
		return nil, "", err
	}
	now := p.Now()
	e := &model.Endpoint{ID: core.NewID[model.EndpointID](), TenantID: scope.Tenant, ProjectID: in.Project, URL: in.URL,
		Description: in.Description, Events: in.Events, RotatedAt: now, Enabled: true, CreatedAt: now, UpdatedAt: now}
	if a, err := authz.ActorFrom(ctx); err == nil && a.User != nil {
		e.CreatedBy = &a.User.ID
	}
	secret, sealed, err := p.sealEndpointSecret(e)
	if err != nil {
		return nil, "", err
	}
	e.Secret = sealed
	err = p.Change(ctx, scope.Tenant, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActEndpointCreate, "WebhookEndpoint", string(e.ID))
		auditEndpoint(ev, e)
		q.EndpointsChanged()
		return store.Endpoints.Insert(ctx, q, e)
	})
	if err != nil {
		return nil, "", err
	}
	return e, secret, nil
}

func auditEndpoint(ev *core.Audit, e *model.Endpoint) {
	ev.Details["url"], ev.Details["events"] = e.URL, e.Events
	if e.ProjectID != nil {
		ev.Details["projectId"] = string(*e.ProjectID)
	}
}

// EndpointUpdate changes an endpoint; nil fields stay as they are.
type EndpointUpdate struct {
	URL, Description *string
	Events           []model.EventKind
}

// UpdateEndpoint changes an endpoint's URL, description or events.
func (p *Outbound) UpdateEndpoint(ctx context.Context, id model.EndpointID, in EndpointUpdate) (*model.Endpoint, error) {
	e, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage)
	if err != nil {
		return nil, err
	}
	if err := p.checkEndpoint(ctx, in.URL, in.Description, in.Events, e.ProjectID != nil); err != nil {
		return nil, err
	}
	return p.changeEndpoint(ctx, id, ActEndpointUpdate, func(e *model.Endpoint, ev *core.Audit) {
		core.Changed(ev, "url", &e.URL, in.URL)
		core.Changed(ev, "description", &e.Description, in.Description)
		if in.Events != nil {
			ev.Details["events"] = map[string]any{"from": e.Events, "to": in.Events}
			e.Events = in.Events
		}
	})
}

// changeEndpoint reads an endpoint again in a change, applies f and
// stores it.
func (p *Outbound) changeEndpoint(ctx context.Context, id model.EndpointID, act core.Action, f func(*model.Endpoint, *core.Audit)) (*model.Endpoint, error) {
	e, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage)
	if err != nil {
		return nil, err
	}
	err = p.Change(ctx, e.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		e, err = store.Endpoints.GetForUpdate(ctx, q, id)
		if err != nil {
			return err
		}
		core.Target(ev, act, "WebhookEndpoint", string(id))
		f(e, ev)
		e.UpdatedAt = p.Now()
		q.EndpointsChanged()
		return store.UpdateEndpoint(ctx, q, e)
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// RotateEndpointSecret gives an endpoint a new secret, returned here
// only; the old one signs too for SecretOverlap, so that the receiver can
// move to the new one without missing a message.
func (p *Outbound) RotateEndpointSecret(ctx context.Context, id model.EndpointID) (*model.Endpoint, string, error) {
	e, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage)
	if err != nil {
		return nil, "", err
	}
	secret, sealed, err := p.sealEndpointSecret(e)
	if err != nil {
		return nil, "", err
	}
	e, err = p.changeEndpoint(ctx, id, ActEndpointRotate, func(e *model.Endpoint, ev *core.Audit) {
		now := p.Now()
		until := now.Add(p.Settings.Outbound.SecretOverlap)
		e.OldSecret, e.OldSecretUntil, e.Secret, e.RotatedAt = e.Secret, &until, sealed, now
		ev.Details["oldSecretValidUntil"] = until.Format(time.RFC3339)
	})
	return e, secret, err
}

// SetEndpointEnabled enables an endpoint again (its waiting messages go
// out from the oldest; a FAILED one can be redelivered) or disables it
// (it is given no new message).
func (p *Outbound) SetEndpointEnabled(ctx context.Context, id model.EndpointID, enabled bool) (*model.Endpoint, error) {
	act := ActEndpointDisable
	if enabled {
		act = ActEndpointEnable
	}
	e, err := p.changeEndpoint(ctx, id, act, func(e *model.Endpoint, ev *core.Audit) {
		if enabled {
			ev.Details["disabledReason"] = e.DisabledReason
			e.Enabled, e.DisabledReason, e.DisabledAt = true, "", nil
			return
		}
		now := p.Now()
		e.Enabled, e.DisabledReason, e.DisabledAt = false, "disabled by a manager", &now
	})
	if err == nil && enabled {
		p.WakeSender()
	}
	return e, err
}

// DeleteEndpoint removes an endpoint with its messages and attempts.
func (p *Outbound) DeleteEndpoint(ctx context.Context, id model.EndpointID) error {
	e, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, e.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		core.Target(ev, ActEndpointDelete, "WebhookEndpoint", string(id))
		auditEndpoint(ev, e)
		q.EndpointsChanged()
		return store.Endpoints.Delete(ctx, q, id)
	})
}

// Endpoint reads an endpoint; to anyone who may not manage it, it is not
// there at all (its URL is its managers' business).
func (p *Outbound) Endpoint(ctx context.Context, id model.EndpointID) (*model.Endpoint, error) {
	return hidden(core.Get(ctx, p.Plane, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage))
}

// hidden reports a denied read as not found.
func hidden[T any](v *T, err error) (*T, error) {
	if core.IsDenied(err) {
		return nil, authz.ErrNotVisible
	}
	return v, err
}

// EndpointsOfTenant lists a tenant's endpoints, its projects' included
// (tenant admins).
func (p *Outbound) EndpointsOfTenant(ctx context.Context, tenant model.TenantID) ([]*model.Endpoint, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.EndpointManage, model.Scope{Tenant: tenant}); err != nil {
		return nil, err
	}
	return store.EndpointsOfTenant(ctx, p.Querier(ctx), tenant)
}

// EndpointsOfProject lists a project's endpoints (its project managers).
func (p *Outbound) EndpointsOfProject(ctx context.Context, proj *model.Project) ([]*model.Endpoint, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.EndpointManage, proj.Scope()); err != nil {
		return nil, err
	}
	return store.EndpointsOfProject(ctx, p.Querier(ctx), proj.ID)
}

// EndpointMessages pages an endpoint's messages, newest first.
func (p *Outbound) EndpointMessages(ctx context.Context, e *model.Endpoint, status *model.MessageStatus, pg store.PageArgs) (store.Page[model.Message], error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.EndpointManage, e.Scope()); err != nil {
		return store.Page[model.Message]{}, err
	}
	return store.MessagesOf(ctx, p.Querier(ctx), e.ID, status, pg)
}

// Message reads a message, hidden as its endpoint is.
func (p *Outbound) Message(ctx context.Context, id model.MessageID) (*model.Message, error) {
	return hidden(core.Get(ctx, p.Plane, p.Querier(ctx), store.Messages, id, authz.EndpointManage))
}

// MessageAttempts lists a message's attempts, oldest first.
func (p *Outbound) MessageAttempts(ctx context.Context, m *model.Message) ([]*model.Attempt, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.EndpointManage, m.Scope()); err != nil {
		return nil, err
	}
	return store.AttemptsOf(ctx, p.Querier(ctx), m.ID)
}

// RedeliverMessage sends a message again, now (in its endpoint's order:
// after the endpoint's earlier messages still waiting), with the same
// webhook-id, so that a receiver that had it knows it.
func (p *Outbound) RedeliverMessage(ctx context.Context, id model.MessageID) (*model.Message, error) {
	m, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Messages, id, authz.EndpointManage)
	if err != nil {
		return nil, err
	}
	err = p.Change(ctx, m.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		m, err = store.Messages.GetForUpdate(ctx, q, id)
		if err != nil {
			return err
		}
		if m.Status == model.MessagePending {
			return core.Problem{Field: []string{"input", "messageId"}, Code: core.CodeConflict,
				Message: "the message is still being delivered: it goes out when its endpoint takes it"}
		}
		core.Target(ev, ActMessageRedeliver, "WebhookMessage", string(id))
		ev.Details["endpointId"], ev.Details["previousStatus"] = string(m.EndpointID), string(m.Status)
		m.Status, m.NextAttemptAt, m.LeaseUntil, m.Redelivery = model.MessagePending, p.Now(), nil, true
		q.AfterCommit(p.WakeSender)
		return store.UpdateMessage(ctx, q, m)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
