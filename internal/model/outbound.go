package model

import (
	"io"
	"slices"
	"time"
)

// Outbound webhooks: endpoints that are told what happens, as Standard
// Webhooks messages signed with the endpoint's secret.

type (
	EndpointID string
	// MessageID is a message's webhook-id: the same for every attempt.
	MessageID string
	AttemptID string
)

// EventKind is what an endpoint can be told of; it is the payload's type.
type EventKind string

const (
	EventDeploymentStage     EventKind = "deployment.stage_changed"
	EventDeploymentEnded     EventKind = "deployment.ended"
	EventApprovalRequested   EventKind = "deployment.approval_requested"
	EventClusterConnected    EventKind = "cluster.connected"
	EventClusterDisconnected EventKind = "cluster.disconnected"
	EventBuildEnded          EventKind = "build.ended"
	EventChangeSetSubmitted  EventKind = "changeset.submitted"
	EventChangeSetApproved   EventKind = "changeset.approved"
	EventChangeSetRejected   EventKind = "changeset.rejected"
	EventChangeSetApplied    EventKind = "changeset.applied"
)

var eventKinds = []EventKind{EventDeploymentStage, EventDeploymentEnded, EventApprovalRequested,
	EventClusterConnected, EventClusterDisconnected, EventBuildEnded, EventChangeSetSubmitted, EventChangeSetApproved,
	EventChangeSetRejected, EventChangeSetApplied}

// EventKinds are every kind of event, in a fixed order.
func EventKinds() []EventKind { return slices.Clone(eventKinds) }

// Valid tells whether k is a kind of event.
func (k EventKind) Valid() bool { return slices.Contains(eventKinds, k) }

// ProjectEvent tells whether events of the kind belong to a project
// (a deployment's, a build's); cluster events are the tenant's.
func (k EventKind) ProjectEvent() bool {
	return k != EventClusterConnected && k != EventClusterDisconnected
}

// An Endpoint receives the tenant's events of the kinds it asked for: all
// of the tenant's (ProjectID nil; tenant admins manage those) or one
// project's (its project managers too).
type Endpoint struct {
	ID          EndpointID
	TenantID    TenantID
	ProjectID   *ProjectID
	URL         string
	Description string
	Events      []EventKind
	// Secret is the signing secret (whsec_…), sealed; shown once, when
	// made or rotated.
	Secret string
	// OldSecret ("" for none), until OldSecretUntil, signs too: the
	// overlap of a rotation, while the receiver moves to the new secret.
	OldSecret      string
	OldSecretUntil *time.Time
	RotatedAt      time.Time
	// Enabled is false once every attempt of a message failed for the
	// retry window (DisabledReason says which and how), or when a manager
	// disabled it; a disabled endpoint is given no new message.
	Enabled        bool
	DisabledReason string
	DisabledAt     *time.Time
	// LastSeq numbers the endpoint's messages in the order they were
	// made: they are delivered in that order.
	LastSeq   int64
	CreatedBy *UserID
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (e *Endpoint) Scope() Scope {
	s := Scope{Tenant: e.TenantID}
	if e.ProjectID != nil {
		s.Project = *e.ProjectID
	}
	return s
}

// Binding binds the sealed secrets to the endpoint.
func (e *Endpoint) Binding() string { return "endpoint:" + string(e.ID) }

// Wants tells whether the endpoint is told of an event of kind in project
// (nil for a tenant's event).
func (e *Endpoint) Wants(kind EventKind, project *ProjectID) bool {
	if !e.Enabled || !slices.Contains(e.Events, kind) {
		return false
	}
	return e.ProjectID == nil || project != nil && *project == *e.ProjectID
}

// MessageStatus is where a message's delivery is.
type MessageStatus string

const (
	// MessagePending: to be sent (again) at NextAttemptAt, after the
	// endpoint's earlier messages.
	MessagePending MessageStatus = "PENDING"
	// MessageDelivered: the endpoint answered 2xx.
	MessageDelivered MessageStatus = "DELIVERED"
	// MessageFailed: every attempt failed for the retry window; it can be
	// redelivered.
	MessageFailed MessageStatus = "FAILED"
)

// A Message is one event for one endpoint, written in the transaction of
// the change it reports (the outbox) and sent after it committed.
type Message struct {
	ID         MessageID
	EndpointID EndpointID
	TenantID   TenantID
	ProjectID  *ProjectID
	Kind       EventKind
	// Payload is the JSON body sent: {"type", "timestamp", "data"}.
	Payload []byte
	Seq     int64
	Status  MessageStatus
	// Attempts counts the attempts made; NextAttemptAt is when the next
	// may be; LeaseUntil, while set and ahead, is a replica sending it.
	Attempts      int
	NextAttemptAt time.Time
	LeaseUntil    *time.Time
	DeliveredAt   *time.Time
	// Redelivery marks the next attempt as one a manager asked for.
	Redelivery bool
	CreatedAt  time.Time
}

func (m *Message) Scope() Scope {
	s := Scope{Tenant: m.TenantID}
	if m.ProjectID != nil {
		s.Project = *m.ProjectID
	}
	return s
}

// An Attempt is one request made to deliver a message, and what came of it.
type Attempt struct {
	ID         AttemptID
	MessageID  MessageID
	EndpointID EndpointID
	TenantID   TenantID
	At         time.Time
	// StatusCode is the HTTP status answered; 0 when none came (Error
	// says why: a timeout, a refused connection or address).
	StatusCode int
	Latency    time.Duration
	// Response is the start of the answer's body (at most 1 KiB).
	Response string
	Error    string
	// Redelivery marks an attempt a manager asked for.
	Redelivery bool
}

// Delivered tells whether the attempt succeeded.
func (a *Attempt) Delivered() bool { return a.Error == "" && a.StatusCode >= 200 && a.StatusCode < 300 }

func (Endpoint) IsNode() {}
func (Message) IsNode()  {}

var messageStatuses = []MessageStatus{MessagePending, MessageDelivered, MessageFailed}

func (v MessageStatus) MarshalGQL(w io.Writer)    { marshalEnum(w, v) }
func (v *MessageStatus) UnmarshalGQL(x any) error { return unmarshalEnum(x, v, messageStatuses) }
