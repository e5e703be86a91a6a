package core

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/egress"
	"github.com/nebulactrl/nebula/internal/gid"
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
func (p *Plane) checkEndpoint(ctx context.Context, url, description *string, events []model.EventKind, project bool) error {
	var c Checks
	if url != nil {
		*url = strings.TrimSpace(*url)
		switch {
		case *url == "":
			c.Add(Invalid("the endpoint's URL is empty", field("input", "url")...))
		case len(*url) > 2000:
			c.Add(Invalid("the endpoint's URL is longer than 2000 characters", field("input", "url")...))
		default:
			if err := egress.CheckURL(ctx, *url, p.Settings.Outbound.AllowPrivate); err != nil {
				msg := "the endpoint's URL " + err.Error()
				if errors.Is(err, egress.ErrPrivateAddress) {
					msg += " (NEBULA_WEBHOOK_ALLOW_PRIVATE_NETWORKS lets endpoints be there)"
				}
				c.Add(Invalid(msg, field("input", "url")...))
			}
		}
	}
	if description != nil {
		*description = strings.TrimSpace(*description)
		c.Text(*description, "description", 200, false, "input", "description")
	}
	if events != nil {
		if len(events) == 0 {
			c.Add(Invalid("say which events the endpoint is told of: one at least", field("input", "events")...))
		}
		for i, k := range events {
			switch {
			case !k.Valid():
				c.Add(Invalid(fmt.Sprintf("%q is not a kind of event", k), field("input", "events", i)...))
			case project && !k.ProjectEvent():
				c.Add(Invalid(fmt.Sprintf("%s is the tenant's, not a project's: a tenant admin makes a tenant endpoint for it", k), field("input", "events", i)...))
			case slices.Contains(events[:i], k):
				c.Add(Invalid(fmt.Sprintf("%s is listed twice", k), field("input", "events", i)...))
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
func (p *Plane) sealEndpointSecret(e *model.Endpoint) (secret, sealed string, err error) {
	secret = newEndpointSecret()
	sealed, err = p.box.Seal([]byte(secret), e.Binding())
	if errors.Is(err, seal.ErrNoKey) {
		return "", "", Invalid("webhook endpoints cannot be made: this control plane has no master key to seal their secrets (the operator sets NEBULA_MASTER_KEY)")
	}
	if err != nil {
		return "", "", fmt.Errorf("sealing the endpoint's secret: %w", err)
	}
	return secret, sealed, nil
}

// CreateEndpoint registers an endpoint; its signing secret is returned
// here only.
func (p *Plane) CreateEndpoint(ctx context.Context, in EndpointInput) (*model.Endpoint, string, error) {
	scope := model.Scope{Tenant: in.Tenant}
	if in.Project != nil {
		proj, err := Get(ctx, p, p.Querier(ctx), store.Projects, *in.Project, authz.EndpointManage)
		if err != nil {
			return nil, "", err
		}
		scope = proj.Scope()
	}
	if err := p.authz.CheckCtx(ctx, authz.EndpointManage, scope); err != nil {
		return nil, "", err
	}
	if err := p.checkEndpoint(ctx, &in.URL, &in.Description, in.Events, in.Project != nil); err != nil {
		return nil, "", err
	}
	now := p.now()
	e := &model.Endpoint{ID: NewID[model.EndpointID](), TenantID: scope.Tenant, ProjectID: in.Project, URL: in.URL,
		Description: in.Description, Events: in.Events, RotatedAt: now, Enabled: true, CreatedAt: now, UpdatedAt: now}
	if a, err := authz.ActorFrom(ctx); err == nil && a.User != nil {
		e.CreatedBy = &a.User.ID
	}
	secret, sealed, err := p.sealEndpointSecret(e)
	if err != nil {
		return nil, "", err
	}
	e.Secret = sealed
	err = p.Change(ctx, scope.Tenant, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		Target(ev, ActEndpointCreate, "WebhookEndpoint", string(e.ID))
		auditEndpoint(ev, e)
		q.EndpointsChanged()
		return store.Endpoints.Insert(ctx, q, e)
	})
	if err != nil {
		return nil, "", err
	}
	return e, secret, nil
}

func auditEndpoint(ev *Audit, e *model.Endpoint) {
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
func (p *Plane) UpdateEndpoint(ctx context.Context, id model.EndpointID, in EndpointUpdate) (*model.Endpoint, error) {
	e, err := Get(ctx, p, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage)
	if err != nil {
		return nil, err
	}
	if err := p.checkEndpoint(ctx, in.URL, in.Description, in.Events, e.ProjectID != nil); err != nil {
		return nil, err
	}
	return p.changeEndpoint(ctx, id, ActEndpointUpdate, func(e *model.Endpoint, ev *Audit) {
		changed(ev, "url", &e.URL, in.URL)
		changed(ev, "description", &e.Description, in.Description)
		if in.Events != nil {
			ev.Details["events"] = map[string]any{"from": e.Events, "to": in.Events}
			e.Events = in.Events
		}
	})
}

// changeEndpoint reads an endpoint again in a change, applies f and
// stores it.
func (p *Plane) changeEndpoint(ctx context.Context, id model.EndpointID, act Action, f func(*model.Endpoint, *Audit)) (*model.Endpoint, error) {
	e, err := Get(ctx, p, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage)
	if err != nil {
		return nil, err
	}
	err = p.Change(ctx, e.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		e, err = store.Endpoints.GetForUpdate(ctx, q, id)
		if err != nil {
			return err
		}
		Target(ev, act, "WebhookEndpoint", string(id))
		f(e, ev)
		e.UpdatedAt = p.now()
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
func (p *Plane) RotateEndpointSecret(ctx context.Context, id model.EndpointID) (*model.Endpoint, string, error) {
	e, err := Get(ctx, p, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage)
	if err != nil {
		return nil, "", err
	}
	secret, sealed, err := p.sealEndpointSecret(e)
	if err != nil {
		return nil, "", err
	}
	e, err = p.changeEndpoint(ctx, id, ActEndpointRotate, func(e *model.Endpoint, ev *Audit) {
		now := p.now()
		until := now.Add(p.Settings.Outbound.SecretOverlap)
		e.OldSecret, e.OldSecretUntil, e.Secret, e.RotatedAt = e.Secret, &until, sealed, now
		ev.Details["oldSecretValidUntil"] = until.Format(time.RFC3339)
	})
	return e, secret, err
}

// SetEndpointEnabled enables an endpoint again (its waiting messages go
// out from the oldest; a FAILED one can be redelivered) or disables it
// (it is given no new message).
func (p *Plane) SetEndpointEnabled(ctx context.Context, id model.EndpointID, enabled bool) (*model.Endpoint, error) {
	act := ActEndpointDisable
	if enabled {
		act = ActEndpointEnable
	}
	e, err := p.changeEndpoint(ctx, id, act, func(e *model.Endpoint, ev *Audit) {
		if enabled {
			ev.Details["disabledReason"] = e.DisabledReason
			e.Enabled, e.DisabledReason, e.DisabledAt = true, "", nil
			return
		}
		now := p.now()
		e.Enabled, e.DisabledReason, e.DisabledAt = false, "disabled by a manager", &now
	})
	if err == nil && enabled {
		p.wakeSender()
	}
	return e, err
}

// DeleteEndpoint removes an endpoint with its messages and attempts.
func (p *Plane) DeleteEndpoint(ctx context.Context, id model.EndpointID) error {
	e, err := Get(ctx, p, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, e.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		Target(ev, ActEndpointDelete, "WebhookEndpoint", string(id))
		auditEndpoint(ev, e)
		q.EndpointsChanged()
		return store.Endpoints.Delete(ctx, q, id)
	})
}

// Endpoint reads an endpoint; to anyone who may not manage it, it is not
// there at all (its URL is its managers' business).
func (p *Plane) Endpoint(ctx context.Context, id model.EndpointID) (*model.Endpoint, error) {
	return hidden(Get(ctx, p, p.Querier(ctx), store.Endpoints, id, authz.EndpointManage))
}

// hidden reports a denied read as not found.
func hidden[T any](v *T, err error) (*T, error) {
	if IsDenied(err) {
		return nil, authz.ErrNotVisible
	}
	return v, err
}

// EndpointsOfTenant lists a tenant's endpoints, its projects' included
// (tenant admins).
func (p *Plane) EndpointsOfTenant(ctx context.Context, tenant model.TenantID) ([]*model.Endpoint, error) {
	if err := p.authz.CheckCtx(ctx, authz.EndpointManage, model.Scope{Tenant: tenant}); err != nil {
		return nil, err
	}
	return store.EndpointsOfTenant(ctx, p.Querier(ctx), tenant)
}

// EndpointsOfProject lists a project's endpoints (its project managers).
func (p *Plane) EndpointsOfProject(ctx context.Context, proj *model.Project) ([]*model.Endpoint, error) {
	if err := p.authz.CheckCtx(ctx, authz.EndpointManage, proj.Scope()); err != nil {
		return nil, err
	}
	return store.EndpointsOfProject(ctx, p.Querier(ctx), proj.ID)
}

// EndpointMessages pages an endpoint's messages, newest first.
func (p *Plane) EndpointMessages(ctx context.Context, e *model.Endpoint, status *model.MessageStatus, pg store.PageArgs) (store.Page[model.Message], error) {
	if err := p.authz.CheckCtx(ctx, authz.EndpointManage, e.Scope()); err != nil {
		return store.Page[model.Message]{}, err
	}
	return store.MessagesOf(ctx, p.Querier(ctx), e.ID, status, pg)
}

// Message reads a message, hidden as its endpoint is.
func (p *Plane) Message(ctx context.Context, id model.MessageID) (*model.Message, error) {
	return hidden(Get(ctx, p, p.Querier(ctx), store.Messages, id, authz.EndpointManage))
}

// MessageAttempts lists a message's attempts, oldest first.
func (p *Plane) MessageAttempts(ctx context.Context, m *model.Message) ([]*model.Attempt, error) {
	if err := p.authz.CheckCtx(ctx, authz.EndpointManage, m.Scope()); err != nil {
		return nil, err
	}
	return store.AttemptsOf(ctx, p.Querier(ctx), m.ID)
}

// RedeliverMessage sends a message again, now (in its endpoint's order:
// after the endpoint's earlier messages still waiting), with the same
// webhook-id, so that a receiver that had it knows it.
func (p *Plane) RedeliverMessage(ctx context.Context, id model.MessageID) (*model.Message, error) {
	m, err := Get(ctx, p, p.Querier(ctx), store.Messages, id, authz.EndpointManage)
	if err != nil {
		return nil, err
	}
	err = p.Change(ctx, m.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		m, err = store.Messages.GetForUpdate(ctx, q, id)
		if err != nil {
			return err
		}
		if m.Status == model.MessagePending {
			return Problem{Field: []string{"input", "messageId"}, Code: CodeConflict,
				Message: "the message is still being delivered: it goes out when its endpoint takes it"}
		}
		Target(ev, ActMessageRedeliver, "WebhookMessage", string(id))
		ev.Details["endpointId"], ev.Details["previousStatus"] = string(m.EndpointID), string(m.Status)
		m.Status, m.NextAttemptAt, m.LeaseUntil, m.Redelivery = model.MessagePending, p.now(), nil, true
		q.AfterCommit(p.wakeSender)
		return store.UpdateMessage(ctx, q, m)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// outboundEvent is what a change tells endpoints: its kind, whose it is
// and the essentials (ids and the new state, never whole objects).
type outboundEvent struct {
	tenant  model.TenantID
	project *model.ProjectID
	kind    model.EventKind
	data    map[string]any
}

// emit writes the event into the outbox of every endpoint of the tenant
// that wants it, in q, the transaction of the change it reports; the
// sender is woken once it committed.
func (p *Plane) emit(ctx context.Context, q *Txn, e outboundEvent) error {
	eps, err := q.EndpointsOf(ctx, e.tenant)
	if err != nil {
		return err
	}
	var payload []byte
	now := p.now()
	for _, ep := range eps {
		if !ep.Wants(e.kind, e.project) {
			continue
		}
		if payload == nil {
			if payload, err = json.Marshal(map[string]any{"type": e.kind, "timestamp": now.Format(time.RFC3339Nano), "data": e.data}); err != nil {
				return fmt.Errorf("encoding a webhook payload: %w", err)
			}
		}
		seq, err := store.NextMessageSeq(ctx, q, ep.ID)
		if err != nil {
			return err
		}
		m := &model.Message{ID: NewID[model.MessageID](), EndpointID: ep.ID, TenantID: e.tenant, ProjectID: ep.ProjectID,
			Kind: e.kind, Payload: payload, Seq: seq, Status: model.MessagePending, NextAttemptAt: now, CreatedAt: now}
		if err := store.Messages.Insert(ctx, q, m); err != nil {
			return err
		}
	}
	if payload != nil {
		q.AfterCommit(p.wakeSender)
	}
	return nil
}

// wakeSender tells this replica's sender a message may be due.
func (p *Plane) wakeSender() { p.outboundWake.Poke() }

// deploymentEvent is the data of a deployment's stage event.
func deploymentData(d *model.Deployment) map[string]any {
	data := map[string]any{"deploymentId": gid.Encode(gid.Deployment, d.ID), "projectId": gid.Encode(gid.Project, d.ProjectID),
		"environmentId": gid.Encode(gid.Environment, d.EnvironmentID), "serviceId": gid.Encode(gid.Service, d.ServiceID),
		"clusterId": gid.Encode(gid.Cluster, d.ClusterID), "stage": d.Stage, "message": d.Message, "sequence": d.LastSeq}
	if d.Blocker != nil {
		data["blocker"] = *d.Blocker
	}
	return data
}

// emitStage tells endpoints a deployment reached its stage: always as a
// stage change, and as an approval request or an end when it is one.
func (p *Plane) emitStage(ctx context.Context, q *Txn, d *model.Deployment) error {
	proj := d.ProjectID
	ev := outboundEvent{tenant: d.TenantID, project: &proj, kind: model.EventDeploymentStage, data: deploymentData(d)}
	if err := p.emit(ctx, q, ev); err != nil {
		return err
	}
	switch {
	case d.Stage == model.StageAwaitingApproval:
		ev.kind = model.EventApprovalRequested
		if d.ApprovalExpiresAt != nil {
			ev.data["approvalExpiresAt"] = d.ApprovalExpiresAt.Format(time.RFC3339)
		}
	case d.Stage.Terminal():
		ev.kind = model.EventDeploymentEnded
	default:
		return nil
	}
	return p.emit(ctx, q, ev)
}

// emitBuildEnded tells endpoints a build ended.
func (p *Plane) emitBuildEnded(ctx context.Context, q *Txn, b *model.Build) error {
	proj := b.ProjectID
	data := map[string]any{"buildId": gid.Encode(gid.Build, b.ID), "projectId": gid.Encode(gid.Project, b.ProjectID),
		"serviceId": gid.Encode(gid.Service, b.ServiceID), "environmentId": gid.Encode(gid.Environment, b.EnvironmentID),
		"status": b.Status, "commit": b.Commit, "imageDigest": b.ImageDigest, "message": b.Message}
	if b.DeploymentID != nil {
		data["deploymentId"] = gid.Encode(gid.Deployment, *b.DeploymentID)
	}
	return p.emit(ctx, q, outboundEvent{tenant: b.TenantID, project: &proj, kind: model.EventBuildEnded, data: data})
}

// emitClusterStatus tells endpoints a cluster connected or disconnected,
// once per change (whichever replica records it first).
func (p *Plane) emitClusterStatus(ctx context.Context, q *Txn, c *model.Cluster, connected bool) error {
	kind, status := model.EventClusterDisconnected, "DISCONNECTED"
	if connected {
		kind, status = model.EventClusterConnected, "CONNECTED"
	}
	changed, err := store.TellClusterStatus(ctx, q, c.ID, status)
	if err != nil || !changed {
		return err
	}
	data := map[string]any{"clusterId": gid.Encode(gid.Cluster, c.ID), "name": c.Name, "status": status}
	if c.LastHeartbeatAt != nil {
		data["lastHeartbeatAt"] = c.LastHeartbeatAt.Format(time.RFC3339)
	}
	return p.emit(ctx, q, outboundEvent{tenant: c.TenantID, kind: kind, data: data})
}
