// Package gid encodes the API's opaque global ids: base64url of
// "Type:rawid", so that node(id:) knows which kind of object an id names and
// an id of one kind is never mistaken for another.
//
// gqlgen binds the ID scalar to the Marshal/Unmarshal pairs below, so that
// every typed domain id leaves the API encoded.
package gid

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/nebulactrl/nebula/internal/model"
)

// Kinds: the GraphQL type names that global ids carry.
const (
	Tenant          = "Tenant"
	User            = "User"
	Member          = "Member"
	APIToken        = "ApiToken"
	Project         = "Project"
	ProjectMember   = "ProjectMember"
	Environment     = "Environment"
	Cluster         = "Cluster"
	NamespaceTarget = "NamespaceTarget"
	Service         = "Service"
	Release         = "Release"
	Deployment      = "Deployment"
	AuditEvent      = "AuditEvent"
	Variable        = "Variable"
	ConnectToken    = "ConnectToken"
	Command         = "Command"
	Webhook         = "Webhook"
	WebhookDelivery = "WebhookDelivery"
	Build           = "Build"
	Session         = "Session"
	Invitation      = "Invitation"
	Endpoint        = "WebhookEndpoint"
	Message         = "WebhookMessage"
)

// ErrMalformed is returned for an id that is not one of ours.
var ErrMalformed = errors.New("malformed id")

// Encode returns the global id of a raw id of a kind.
func Encode[T ~string](kind string, raw T) string {
	var buf [96]byte
	return base64.RawURLEncoding.EncodeToString(plain(buf[:0], kind, string(raw)))
}

// plain appends "kind:raw", what a global id encodes, to b.
func plain(b []byte, kind, raw string) []byte {
	return append(append(append(b, kind...), ':'), raw...)
}

// writeQuoted writes the global id of raw as a JSON string. The base64url
// alphabet needs no escaping. Into a buffer with room to spare (gqlgen
// writes its responses into a bytes.Buffer) it writes without allocating.
func writeQuoted(w io.Writer, kind, raw string) {
	var src [96]byte
	id := plain(src[:0], kind, raw)
	var b []byte
	if ab, ok := w.(interface{ AvailableBuffer() []byte }); ok {
		b = ab.AvailableBuffer()
	}
	b = append(b, '"')
	b = base64.RawURLEncoding.AppendEncode(b, id)
	_, _ = w.Write(append(b, '"'))
}

// Parse splits a global id into its kind and raw id.
func Parse(id string) (kind, raw string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(id) > 200 {
		return "", "", fmt.Errorf("%w %q: not a NebulaCtrl id", ErrMalformed, clip(id))
	}
	kind, raw, ok := strings.Cut(string(b), ":")
	if !ok || kind == "" || raw == "" {
		return "", "", fmt.Errorf("%w %q: not a NebulaCtrl id", ErrMalformed, clip(id))
	}
	return kind, raw, nil
}

// Decode parses a global id that must be of kind.
func Decode[T ~string](kind, id string) (T, error) {
	k, raw, err := Parse(id)
	if err != nil {
		return "", err
	}
	if k != kind {
		return "", fmt.Errorf("%w: %q is an id of kind %s where kind %s is expected", ErrMalformed, clip(id), k, kind)
	}
	return T(raw), nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func marshal[T ~string](kind string, v T) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { writeQuoted(w, kind, string(v)) })
}

func unmarshal[T ~string](kind string, v any) (T, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: an id is a string, got %T", ErrMalformed, v)
	}
	return Decode[T](kind, s)
}

func MarshalTenantID(v model.TenantID) graphql.Marshaler { return marshal(Tenant, v) }
func UnmarshalTenantID(v any) (model.TenantID, error) {
	return unmarshal[model.TenantID](Tenant, v)
}

// A user leaves the API by the id its tenant knows it by, never by its
// model.UserID, which is the same in every tenant.
func MarshalLocalUserID(v model.LocalUserID) graphql.Marshaler { return marshal(User, v) }
func UnmarshalLocalUserID(v any) (model.LocalUserID, error) {
	return unmarshal[model.LocalUserID](User, v)
}
func MarshalMemberID(v model.MemberID) graphql.Marshaler {
	return marshal(Member, v)
}
func UnmarshalMemberID(v any) (model.MemberID, error) {
	return unmarshal[model.MemberID](Member, v)
}
func MarshalTokenID(v model.TokenID) graphql.Marshaler { return marshal(APIToken, v) }
func UnmarshalTokenID(v any) (model.TokenID, error) {
	return unmarshal[model.TokenID](APIToken, v)
}
func MarshalProjectID(v model.ProjectID) graphql.Marshaler { return marshal(Project, v) }
func UnmarshalProjectID(v any) (model.ProjectID, error) {
	return unmarshal[model.ProjectID](Project, v)
}
func MarshalProjectMemberID(v model.ProjectMemberID) graphql.Marshaler {
	return marshal(ProjectMember, v)
}
func UnmarshalProjectMemberID(v any) (model.ProjectMemberID, error) {
	return unmarshal[model.ProjectMemberID](ProjectMember, v)
}
func MarshalEnvironmentID(v model.EnvironmentID) graphql.Marshaler {
	return marshal(Environment, v)
}
func UnmarshalEnvironmentID(v any) (model.EnvironmentID, error) {
	return unmarshal[model.EnvironmentID](Environment, v)
}
func MarshalClusterID(v model.ClusterID) graphql.Marshaler { return marshal(Cluster, v) }
func UnmarshalClusterID(v any) (model.ClusterID, error) {
	return unmarshal[model.ClusterID](Cluster, v)
}
func MarshalNamespaceTargetID(v model.NamespaceTargetID) graphql.Marshaler {
	return marshal(NamespaceTarget, v)
}
func UnmarshalNamespaceTargetID(v any) (model.NamespaceTargetID, error) {
	return unmarshal[model.NamespaceTargetID](NamespaceTarget, v)
}
func MarshalServiceID(v model.ServiceID) graphql.Marshaler { return marshal(Service, v) }
func UnmarshalServiceID(v any) (model.ServiceID, error) {
	return unmarshal[model.ServiceID](Service, v)
}
func MarshalReleaseID(v model.ReleaseID) graphql.Marshaler { return marshal(Release, v) }
func UnmarshalReleaseID(v any) (model.ReleaseID, error) {
	return unmarshal[model.ReleaseID](Release, v)
}
func MarshalDeploymentID(v model.DeploymentID) graphql.Marshaler {
	return marshal(Deployment, v)
}
func UnmarshalDeploymentID(v any) (model.DeploymentID, error) {
	return unmarshal[model.DeploymentID](Deployment, v)
}
func MarshalAuditEventID(v model.AuditEventID) graphql.Marshaler {
	return marshal(AuditEvent, v)
}
func UnmarshalAuditEventID(v any) (model.AuditEventID, error) {
	return unmarshal[model.AuditEventID](AuditEvent, v)
}
func MarshalVariableID(v model.VariableID) graphql.Marshaler { return marshal(Variable, v) }
func UnmarshalVariableID(v any) (model.VariableID, error) {
	return unmarshal[model.VariableID](Variable, v)
}
func MarshalConnectTokenID(v model.ConnectTokenID) graphql.Marshaler {
	return marshal(ConnectToken, v)
}
func UnmarshalConnectTokenID(v any) (model.ConnectTokenID, error) {
	return unmarshal[model.ConnectTokenID](ConnectToken, v)
}
func MarshalCommandID(v model.CommandID) graphql.Marshaler { return marshal(Command, v) }
func UnmarshalCommandID(v any) (model.CommandID, error) {
	return unmarshal[model.CommandID](Command, v)
}
func MarshalWebhookID(v model.WebhookID) graphql.Marshaler { return marshal(Webhook, v) }
func UnmarshalWebhookID(v any) (model.WebhookID, error) {
	return unmarshal[model.WebhookID](Webhook, v)
}
func MarshalWebhookDeliveryID(v model.WebhookDeliveryID) graphql.Marshaler {
	return marshal(WebhookDelivery, v)
}
func UnmarshalWebhookDeliveryID(v any) (model.WebhookDeliveryID, error) {
	return unmarshal[model.WebhookDeliveryID](WebhookDelivery, v)
}
func MarshalBuildID(v model.BuildID) graphql.Marshaler { return marshal(Build, v) }
func UnmarshalBuildID(v any) (model.BuildID, error) {
	return unmarshal[model.BuildID](Build, v)
}
func MarshalSessionID(v model.SessionID) graphql.Marshaler { return marshal(Session, v) }
func UnmarshalSessionID(v any) (model.SessionID, error) {
	return unmarshal[model.SessionID](Session, v)
}
func MarshalInvitationID(v model.InvitationID) graphql.Marshaler { return marshal(Invitation, v) }
func UnmarshalInvitationID(v any) (model.InvitationID, error) {
	return unmarshal[model.InvitationID](Invitation, v)
}
func MarshalEndpointID(v model.EndpointID) graphql.Marshaler { return marshal(Endpoint, v) }
func UnmarshalEndpointID(v any) (model.EndpointID, error) {
	return unmarshal[model.EndpointID](Endpoint, v)
}
func MarshalMessageID(v model.MessageID) graphql.Marshaler { return marshal(Message, v) }
func UnmarshalMessageID(v any) (model.MessageID, error) {
	return unmarshal[model.MessageID](Message, v)
}
