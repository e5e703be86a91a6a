package core

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

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
		q.AfterCommit(p.WakeSender)
	}
	return nil
}

// EmitProject tells the endpoints of a project's events (and the
// tenant's) of an event of kind with data, in q.
func (p *Plane) EmitProject(ctx context.Context, q *Txn, tenant model.TenantID, project model.ProjectID,
	kind model.EventKind, data map[string]any) error {
	return p.emit(ctx, q, outboundEvent{tenant: tenant, project: &project, kind: kind, data: data})
}

// WakeSender tells this replica's sender a message may be due.
func (p *Plane) WakeSender() { p.outboundWake.Poke() }

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

// EmitStage tells endpoints a deployment reached its stage: always as a
// stage change, and as an approval request or an end when it is one.
func (p *Plane) EmitStage(ctx context.Context, q *Txn, d *model.Deployment) error {
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

// EmitBuildEnded tells endpoints a build ended.
func (p *Plane) EmitBuildEnded(ctx context.Context, q *Txn, b *model.Build) error {
	proj := b.ProjectID
	data := map[string]any{"buildId": gid.Encode(gid.Build, b.ID), "projectId": gid.Encode(gid.Project, b.ProjectID),
		"serviceId": gid.Encode(gid.Service, b.ServiceID), "environmentId": gid.Encode(gid.Environment, b.EnvironmentID),
		"status": b.Status, "commit": b.Commit, "imageDigest": b.ImageDigest, "message": b.Message}
	if b.DeploymentID != nil {
		data["deploymentId"] = gid.Encode(gid.Deployment, *b.DeploymentID)
	}
	return p.emit(ctx, q, outboundEvent{tenant: b.TenantID, project: &proj, kind: model.EventBuildEnded, data: data})
}

// EmitClusterStatus tells endpoints a cluster connected or disconnected,
// once per change (whichever replica records it first).
func (p *Plane) EmitClusterStatus(ctx context.Context, q *Txn, c *model.Cluster, connected bool) error {
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

// SenderWake is poked when a change here wrote a message (WakeSender).
func (p *Plane) SenderWake() <-chan struct{} { return p.outboundWake.C() }
