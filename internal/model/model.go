// Package model holds the domain types every layer shares: tenants, projects,
// environments, clusters, services, releases, deployments and audit events.
//
// It is plain data plus small pure helpers. It must never import the store,
// the API or the agent, so that every one of them can import it.
package model

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Typed ids: mixing them up is a compile error rather than a wrong row.
type (
	TenantID string
	UserID   string
	// LocalUserID is the id a tenant knows a user by: the API shows a
	// user by it, never by the UserID, which is the same in every tenant.
	LocalUserID       string
	MemberID          string
	TokenID           string
	ProjectID         string
	ProjectMemberID   string
	EnvironmentID     string
	ClusterID         string
	NamespaceTargetID string
	ServiceID         string
	ReleaseID         string
	DeploymentID      string
	AuditEventID      string
	VariableID        string
	ConnectTokenID    string
	CommandID         string
	ApprovalID        string
	SessionID         string
	InvitationID      string
)

// Scope says which tenant, and which project if any, an object belongs to.
// Authorization decides on scopes.
type Scope struct {
	Tenant  TenantID
	Project ProjectID
}

// Node is implemented by every object that has a global id.
type Node interface{ IsNode() }

type Tenant struct {
	ID        TenantID
	Name      string
	PlanName  PlanName
	CreatedAt time.Time
}

type User struct {
	ID UserID
	// LocalID is the id of the tenant that read the user (its profile).
	LocalID   LocalUserID
	Email     string
	Name      string
	Kind      UserKind
	CreatedAt time.Time
}

type Member struct {
	ID        MemberID
	TenantID  TenantID
	UserID    UserID
	Role      TenantRole
	CreatedAt time.Time
}

// APIToken is a stored token. The secret itself is never stored, only its
// hash. A token acts for its user in one tenant only.
type APIToken struct {
	ID         TokenID
	TenantID   TenantID
	UserID     UserID
	Name       string
	Prefix     string
	Hash       []byte
	CreatedAt  time.Time
	LastUsedAt *time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	// TrustedDocumentsOnly: the token runs only the operations of the
	// trusted documents (NEBULA_TRUSTED_DOCUMENTS and the console's).
	TrustedDocumentsOnly bool
}

// Session is a person's sign-in from a browser. Its secret is the cookie;
// only its hash is stored. It acts in Tenants only: the tenants whose
// passphrase (or identity provider mapping) the sign-in proved.
type Session struct {
	ID         SessionID
	UserID     UserID
	Tenants    []TenantID
	Method     string // "passphrase" or "oidc"
	Prefix     string
	Hash       []byte
	Address    string
	UserAgent  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
	RevokedAt  *time.Time
}

// Invitation is a one-time link through which a member of a tenant sets
// their passphrase there. Only the link secret's hash is stored.
type Invitation struct {
	ID         InvitationID
	TenantID   TenantID
	UserID     UserID
	Email      string
	Hash       []byte
	InvitedBy  UserID
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AcceptedAt *time.Time
	RevokedAt  *time.Time
}

type Project struct {
	ID          ProjectID
	TenantID    TenantID
	Name        string
	Description string
	CreatedAt   time.Time
}

type ProjectMember struct {
	ID        ProjectMemberID
	TenantID  TenantID
	ProjectID ProjectID
	UserID    UserID
	Role      ProjectRole
	CreatedAt time.Time
}

type Environment struct {
	ID                EnvironmentID
	TenantID          TenantID
	ProjectID         ProjectID
	Name              string
	Protected         bool
	ClusterSelector   Labels
	NamespaceSelector Labels
	CreatedAt         time.Time
}

type Cluster struct {
	ID              ClusterID
	TenantID        TenantID
	Name            string
	Labels          Labels
	LastHeartbeatAt *time.Time
	CreatedAt       time.Time
	// DesiredRevision numbers the cluster's compiled desired state; it only
	// grows. DesiredHash fingerprints that state.
	DesiredRevision int64
	DesiredHash     string
	// AppliedRevision is the newest revision the agent acknowledged as
	// applied; it never goes backwards. Inventory is the agent's last report
	// (JSON, protocol.Inventory); ApplyErrors the last failed revision
	// (JSON of an ApplyFailure), empty when the newest revision applied.
	AppliedRevision int64
	Inventory       string
	ApplyErrors     string
	// ReportedRevision and ReportedHash are what the agent's last
	// heartbeat said it runs: the revision and the hash of the state it
	// applied (empty from an agent that does not report one).
	ReportedRevision int64
	ReportedHash     string
}

// ApplyFailure is what a cluster's agent reported when a revision did not
// apply: kept on the cluster (ApplyErrors) until a revision at least as new
// applies.
type ApplyFailure struct {
	Revision int64         `json:"revision"`
	Errors   []ObjectError `json:"errors"`
}

// ObjectError is one object an agent could not apply, and why.
type ObjectError struct {
	Object  string `json:"object"`
	Message string `json:"message"`
}

// DisconnectedAfter is how long a cluster may stay silent before it counts as
// disconnected, unless the control plane is configured otherwise.
const DisconnectedAfter = 60 * time.Second

// Status derives the cluster's connection status from its last heartbeat:
// silent for longer than after is DISCONNECTED.
func (c *Cluster) Status(now time.Time, after time.Duration) ClusterStatus {
	switch {
	case c.LastHeartbeatAt == nil:
		return ClusterPending
	case now.Sub(*c.LastHeartbeatAt) > after:
		return ClusterDisconnected
	default:
		return ClusterConnected
	}
}

type NamespaceTarget struct {
	ID        NamespaceTargetID
	TenantID  TenantID
	ClusterID ClusterID
	Namespace string
	Labels    Labels
	CreatedAt time.Time
}

// ServiceConfig is the part of a service's own row a release freezes; a
// release freezes its variables too (Release.Variables), merged from
// their three scopes.
type ServiceConfig struct {
	Processes []Process `json:"processes"`
	Domains   []Domain  `json:"domains"`
}

type Service struct {
	ID        ServiceID
	TenantID  TenantID
	ProjectID ProjectID
	Name      string
	Image     string
	ServiceConfig
	// Git is where the service is built from; nil for a service deployed
	// from images built elsewhere.
	Git *GitSource
	// GitCredential is the sealed read credential of a private repository
	// (a deploy key or a token), "" for none. It leaves the control plane
	// only for the agent that runs a build.
	GitCredential string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

type Process struct {
	Name           string   `json:"name"`
	Command        []string `json:"command"`
	Replicas       int      `json:"replicas"`
	Port           *int     `json:"port,omitempty"`
	ReadinessProbe *Probe   `json:"readinessProbe,omitempty"`
}

type Probe struct {
	Path                *string `json:"path,omitempty"`
	Port                int     `json:"port"`
	InitialDelaySeconds int     `json:"initialDelaySeconds"`
	PeriodSeconds       int     `json:"periodSeconds"`
}

// VariableScope is where a variable applies; the narrower scope overrides.
type VariableScope string

const (
	VariableProject     VariableScope = "PROJECT"
	VariableEnvironment VariableScope = "ENVIRONMENT"
	VariableService     VariableScope = "SERVICE"
)

// Variable is one variable row. For a secret, Value holds the sealed text,
// never the plaintext.
type Variable struct {
	ID            VariableID
	TenantID      TenantID
	ProjectID     ProjectID
	EnvironmentID *EnvironmentID
	ServiceID     *ServiceID
	Name          string
	Secret        bool
	Value         string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Kind says which scope the variable is at.
func (v *Variable) Kind() VariableScope {
	switch {
	case v.ServiceID != nil:
		return VariableService
	case v.EnvironmentID != nil:
		return VariableEnvironment
	default:
		return VariableProject
	}
}

// ScopeKey names the variable's scope uniquely within its project.
func (v *Variable) ScopeKey() string {
	switch {
	case v.ServiceID != nil:
		return "service:" + string(*v.ServiceID)
	case v.EnvironmentID != nil:
		return "environment:" + string(*v.EnvironmentID)
	default:
		return "project"
	}
}

// Binding is what a sealed value is bound to: its row.
func (v *Variable) Binding() string { return "variable:" + string(v.ID) }

type Domain struct {
	Host    string `json:"host"`
	Process string `json:"process"`
}

// Release is immutable once stored: an image digest plus the
// configuration frozen when it was made (release.go).
type Release struct {
	ID            ReleaseID
	TenantID      TenantID
	ProjectID     ProjectID
	ServiceID     ServiceID
	EnvironmentID EnvironmentID
	Number        int
	Image         string
	ImageDigest   string
	ServiceConfig
	// Variables are the variables in force for the service in the
	// environment when the release was made; nil for a release made
	// before releases froze them, until it is frozen (Frozen).
	Variables []ReleaseVariable
	CreatedBy *UserID
	CreatedAt time.Time
}

type Deployment struct {
	ID            DeploymentID
	TenantID      TenantID
	ProjectID     ProjectID
	ServiceID     ServiceID
	EnvironmentID EnvironmentID
	ReleaseID     ReleaseID
	ClusterID     ClusterID
	Stage         DeploymentStage
	Blocker       *Blocker
	RequestedBy   *UserID
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Message says what the latest stage did or why it ended; LastSeq is
	// the number of its newest event.
	Message string
	LastSeq int64
	// ApprovalExpiresAt is when a deployment awaiting approval can no
	// longer be approved.
	ApprovalExpiresAt *time.Time
	// DeliveredAt is when it was released to its cluster.
	DeliveredAt *time.Time
}

// DeploymentEvent is one stage a deployment reached, numbered from 1 per
// deployment: subscribers resume after a number.
type DeploymentEvent struct {
	DeploymentID DeploymentID
	Seq          int64
	TenantID     TenantID
	Stage        DeploymentStage
	Blocker      *Blocker
	Message      string
	CreatedAt    time.Time
}

// Approval is a reviewer's decision on a deployment to a protected
// environment.
type Approval struct {
	ID           ApprovalID
	TenantID     TenantID
	DeploymentID DeploymentID
	UserID       *UserID
	Decision     ApprovalDecision
	Comment      string
	CreatedAt    time.Time
}

type ApprovalDecision string

const (
	Approved ApprovalDecision = "APPROVED"
	Rejected ApprovalDecision = "REJECTED"
)

// Blocker names what a stage that cannot proceed waits for. It is stored
// (and sent in webhook payloads) lowercase; the API's DeploymentBlocker
// enum is its uppercase name.
type Blocker string

const (
	BlockerDelivery Blocker = "delivery" // the cluster's agent is not connected
	BlockerApproval Blocker = "approval" // a reviewer has not decided yet
	BlockerStalled  Blocker = "stalled"  // no progress within the stall window
	BlockerBuild    Blocker = "build"    // the release's image is being built
)

// MarshalGQL writes the blocker as the API's enum value.
func (b Blocker) MarshalGQL(w io.Writer) {
	_, _ = io.WriteString(w, strconv.Quote(strings.ToUpper(string(b))))
}

// UnmarshalGQL reads an enum value of DeploymentBlocker.
func (b *Blocker) UnmarshalGQL(v any) error {
	s, ok := v.(string)
	switch x := Blocker(strings.ToLower(s)); {
	case ok && (x == BlockerDelivery || x == BlockerApproval || x == BlockerStalled || x == BlockerBuild):
		*b = x
		return nil
	}
	return fmt.Errorf("%v is not a DeploymentBlocker", v)
}

// AuditEvent records one committed change. Details never hold a secret.
type AuditEvent struct {
	ID            AuditEventID
	TenantID      TenantID
	ActorID       *UserID
	TokenID       *TokenID
	Action        string
	TargetType    string
	TargetID      *string
	ClientAddress string
	Details       map[string]any
	CreatedAt     time.Time
}

func (Tenant) IsNode()          {}
func (User) IsNode()            {}
func (Member) IsNode()          {}
func (APIToken) IsNode()        {}
func (Project) IsNode()         {}
func (ProjectMember) IsNode()   {}
func (Environment) IsNode()     {}
func (Cluster) IsNode()         {}
func (NamespaceTarget) IsNode() {}
func (Service) IsNode()         {}
func (Release) IsNode()         {}
func (Deployment) IsNode()      {}
func (AuditEvent) IsNode()      {}
func (Variable) IsNode()        {}
func (Session) IsNode()         {}
func (Invitation) IsNode()      {}

func (t *Tenant) Scope() Scope          { return Scope{Tenant: t.ID} }
func (m *Member) Scope() Scope          { return Scope{Tenant: m.TenantID} }
func (p *Project) Scope() Scope         { return Scope{Tenant: p.TenantID, Project: p.ID} }
func (m *ProjectMember) Scope() Scope   { return Scope{Tenant: m.TenantID, Project: m.ProjectID} }
func (e *Environment) Scope() Scope     { return Scope{Tenant: e.TenantID, Project: e.ProjectID} }
func (c *Cluster) Scope() Scope         { return Scope{Tenant: c.TenantID} }
func (n *NamespaceTarget) Scope() Scope { return Scope{Tenant: n.TenantID} }
func (s *Service) Scope() Scope         { return Scope{Tenant: s.TenantID, Project: s.ProjectID} }
func (r *Release) Scope() Scope         { return Scope{Tenant: r.TenantID, Project: r.ProjectID} }
func (d *Deployment) Scope() Scope      { return Scope{Tenant: d.TenantID, Project: d.ProjectID} }
func (c *ChangeSet) Scope() Scope       { return Scope{Tenant: c.TenantID, Project: c.ProjectID} }
func (a *AuditEvent) Scope() Scope      { return Scope{Tenant: a.TenantID} }
func (t *APIToken) Scope() Scope        { return Scope{Tenant: t.TenantID} }
func (v *Variable) Scope() Scope        { return Scope{Tenant: v.TenantID, Project: v.ProjectID} }

// LabelSet is the object's labels, for the code that sets them on either.
func (c *Cluster) LabelSet() Labels         { return c.Labels }
func (n *NamespaceTarget) LabelSet() Labels { return n.Labels }

// Grants are a user's roles: one per tenant they belong to and one per
// project they were given a role in.
type Grants struct {
	Tenants  map[TenantID]TenantRole
	Projects map[ProjectID]ProjectRole
}

// ConnectToken lets one cluster's agent connect. Only its hash is stored.
type ConnectToken struct {
	ID         ConnectTokenID
	TenantID   TenantID
	ClusterID  ClusterID
	Prefix     string
	Hash       []byte
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
}

func (ConnectToken) IsNode()         {}
func (t *ConnectToken) Scope() Scope { return Scope{Tenant: t.TenantID} }

// CommandKind is an operation an agent can be asked to do.
type CommandKind string

const (
	CommandRestartProcess     CommandKind = "RESTART_PROCESS"
	CommandResync             CommandKind = "RESYNC"
	CommandCollectDiagnostics CommandKind = "COLLECT_DIAGNOSTICS"
)

// CommandStatus is where a command is.
type CommandStatus string

const (
	CommandQueued    CommandStatus = "QUEUED"
	CommandDelivered CommandStatus = "DELIVERED"
	CommandApplied   CommandStatus = "APPLIED"
	CommandFailed    CommandStatus = "FAILED"
)

// Command is queued for one cluster's agent and kept until acknowledged.
type Command struct {
	ID          CommandID
	TenantID    TenantID
	ClusterID   ClusterID
	Kind        CommandKind
	Args        map[string]string
	Status      CommandStatus
	Result      string
	RequestedBy *UserID
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (Command) IsNode()         {}
func (c *Command) Scope() Scope { return Scope{Tenant: c.TenantID} }
