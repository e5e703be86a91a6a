package resolvers

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/nebulactrl/nebula/graph/gqlmodel"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// node resolves a global id. A malformed id is BAD_USER_INPUT; an id of
// something missing or invisible is null with NOT_FOUND.
func (r *Resolver) node(ctx context.Context, id string) (model.Node, error) {
	kind, raw, err := gid.Parse(id)
	if err != nil {
		return nil, core.Invalid(err.Error(), "id")
	}
	p := r.Plane
	switch kind {
	case gid.Tenant:
		if !readsAny(ctx, "Tenant", tenantColumns) {
			return nonNil(p.People.TenantUnread(ctx, model.TenantID(raw)))
		}
		return nonNil(p.People.Tenant(ctx, model.TenantID(raw)))
	case gid.User:
		return nonNil(p.People.User(ctx, model.LocalUserID(raw)))
	case gid.Member:
		return nonNil(p.People.Member(ctx, model.MemberID(raw)))
	case gid.APIToken:
		return nonNil(p.People.APIToken(ctx, model.TokenID(raw)))
	case gid.Project:
		return nonNil(p.Delivery.Project(ctx, model.ProjectID(raw)))
	case gid.ProjectMember:
		return nonNil(p.People.ProjectMember(ctx, model.ProjectMemberID(raw)))
	case gid.Environment:
		return nonNil(p.Delivery.Environment(ctx, model.EnvironmentID(raw)))
	case gid.Cluster:
		return nonNil(p.Clusters.Cluster(ctx, model.ClusterID(raw)))
	case gid.NamespaceTarget:
		return nonNil(p.Clusters.NamespaceTarget(ctx, model.NamespaceTargetID(raw)))
	case gid.Service:
		return nonNil(p.Delivery.Service(ctx, model.ServiceID(raw)))
	case gid.Release:
		return nonNil(p.Delivery.Release(ctx, model.ReleaseID(raw)))
	case gid.Deployment:
		return nonNil(p.Delivery.Deployment(ctx, model.DeploymentID(raw)))
	case gid.AuditEvent:
		return nonNil(p.AuditEvent(ctx, model.AuditEventID(raw)))
	case gid.Command:
		return nonNil(p.Clusters.Command(ctx, model.CommandID(raw)))
	case gid.ConnectToken:
		return nonNil(p.Clusters.ConnectToken(ctx, model.ConnectTokenID(raw)))
	case gid.Variable:
		return nonNil(p.Delivery.Variable(ctx, model.VariableID(raw)))
	case gid.Webhook:
		return nonNil(p.Builds.Webhook(ctx, model.WebhookID(raw)))
	case gid.WebhookDelivery:
		return nonNil(p.Builds.WebhookDelivery(ctx, model.WebhookDeliveryID(raw)))
	case gid.Build:
		return nonNil(p.Builds.Build(ctx, model.BuildID(raw)))
	case gid.Endpoint:
		return nonNil(p.Outbound.Endpoint(ctx, model.EndpointID(raw)))
	case gid.Message:
		return nonNil(p.Outbound.Message(ctx, model.MessageID(raw)))
	case gid.ChangeSet:
		return nonNil(p.ChangeSets.ChangeSet(ctx, model.ChangeSetID(raw)))
	case gid.Session:
		return nonNil(p.People.Session(ctx, model.SessionID(raw)))
	case gid.Invitation:
		return nonNil(p.People.Invitation(ctx, model.InvitationID(raw)))
	}
	return nil, core.Invalid(fmt.Sprintf("id %q names an unknown kind %q", id, kind), "id")
}

// tenantColumns are the fields of Tenant served from its row (plan reads
// its PlanName); its other fields are its id and lists of other rows.
var tenantColumns = []string{"name", "createdAt", "plan"}

// readsAny tells whether the selection of the field being resolved (an
// interface such as Node) reads any of fields on the object type typ.
func readsAny(ctx context.Context, typ string, fields []string) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil {
		return true
	}
	for _, f := range graphql.CollectFields(graphql.GetOperationContext(ctx), fc.Field.Selections, []string{typ, "Node"}) {
		if slices.Contains(fields, f.Name) {
			return true
		}
	}
	return false
}

// nonNil keeps a typed nil pointer out of the Node interface.
func nonNil[T any](v *T, err error) (model.Node, error) {
	if err != nil || v == nil {
		return nil, err
	}
	if n, ok := any(v).(model.Node); ok {
		return n, nil
	}
	return nil, fmt.Errorf("%T is not a node", v)
}

func auditFilter(f *gqlmodel.AuditEventFilter) (store.AuditFilter, error) {
	var out store.AuditFilter
	if f == nil {
		return out, nil
	}
	out.Action = deref(f.Action, "")
	if f.ActorID != nil {
		id, err := gid.Decode[model.LocalUserID](gid.User, *f.ActorID)
		if err != nil {
			return out, core.Invalid(err.Error(), "filter", "actorId")
		}
		out.ActorID = id
	}
	if f.TargetID != nil {
		kind, raw, err := gid.Parse(*f.TargetID)
		if err != nil {
			return out, core.Invalid(err.Error(), "filter", "targetId")
		}
		out.TargetType, out.TargetID = kind, raw
	}
	out.Since, out.Until = utc(f.Since), utc(f.Until)
	if out.Since != nil && out.Until != nil && !out.Since.Before(*out.Until) {
		return out, core.Invalid("since must be before until", "filter", "since")
	}
	return out, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
