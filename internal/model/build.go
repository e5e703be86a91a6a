package model

import (
	"io"
	"slices"
	"time"
)

// GitSource is where a Git service's releases are built from: a
// repository's tracked branch, built with a Dockerfile.
type GitSource struct {
	// Repository is the repository's URL, https or ssh.
	Repository string `json:"repository"`
	// Branch is the branch whose pushes build.
	Branch string `json:"branch"`
	// ContextDir is the build context, relative to the repository's root.
	ContextDir string `json:"contextDir"`
	// Dockerfile is the Dockerfile's path, relative to ContextDir.
	Dockerfile string `json:"dockerfile"`
	// DeployOnPush are the environments a push to Branch builds and
	// deploys to; none: pushes are recorded and build nothing.
	DeployOnPush []EnvironmentID `json:"deployOnPush"`
	// CredentialRepository is the repository (host and path, as
	// webhook.RepositoryKey gives it) the stored credential was given for:
	// it is sent to that repository only. Empty for a credential stored
	// before the binding was kept: the repository the service had then.
	CredentialRepository string `json:"credentialRepository,omitempty"`
}

// The ids of the build side.
type (
	WebhookID         string
	WebhookDeliveryID string
	BuildID           string
)

// A Webhook receives a Git provider's push deliveries for one service, or
// for every Git service of a project whose repository the push names.
type Webhook struct {
	ID        WebhookID
	TenantID  TenantID
	ProjectID ProjectID
	// ServiceID is the one service the hook builds; nil for a project's
	// hook, which routes each push by its repository.
	ServiceID *ServiceID
	// Secret is the hook's secret, sealed (the HMAC key or GitLab's
	// token): shown once, when made or rotated.
	Secret    string
	CreatedBy *UserID
	CreatedAt time.Time
	RotatedAt time.Time
}

// DeliveryOutcome is what became of a delivery.
type DeliveryOutcome string

const (
	// DeliveryBuildQueued: the push queued a build per environment it
	// deploys to.
	DeliveryBuildQueued DeliveryOutcome = "BUILD_QUEUED"
	// DeliveryIgnored: a valid delivery that builds nothing (another
	// branch, a tag, a deletion, not a push).
	DeliveryIgnored DeliveryOutcome = "IGNORED"
	// DeliveryDuplicate: the commit is built or being built already.
	DeliveryDuplicate DeliveryOutcome = "DUPLICATE"
	// DeliveryRefused: not trusted (no or a wrong signature, a replayed
	// delivery id, an oversized or malformed body); its body is not kept.
	DeliveryRefused DeliveryOutcome = "REFUSED"
)

// A WebhookDelivery is one request a hook received, as a provider's
// "recent deliveries" page shows it.
type WebhookDelivery struct {
	ID        WebhookDeliveryID
	TenantID  TenantID
	ProjectID ProjectID
	WebhookID WebhookID
	// Provider is who sent it ("" when the headers name none).
	Provider string
	// DeliveryID is the provider's id of the delivery.
	DeliveryID string
	Event      string
	Ref        string
	Commit     string
	Outcome    DeliveryOutcome
	Reason     string
	Builds     []BuildID
	// Body is the delivery's body, kept when it was trusted, so that a
	// tenant admin can redeliver it.
	Body []byte
	// RedeliveryOf is the delivery this one redelivered.
	RedeliveryOf *WebhookDeliveryID
	// RedeliveredBy is who asked for a redelivery.
	RedeliveredBy *UserID
	ReceivedAt    time.Time
}

// BuildStatus is where a build stands.
type BuildStatus string

const (
	BuildQueued    BuildStatus = "QUEUED"
	BuildRunning   BuildStatus = "RUNNING"
	BuildSucceeded BuildStatus = "SUCCEEDED"
	BuildFailed    BuildStatus = "FAILED"
	BuildCancelled BuildStatus = "CANCELLED"
	BuildTimedOut  BuildStatus = "TIMED_OUT"
)

var (
	buildStatuses    = []BuildStatus{BuildQueued, BuildRunning, BuildSucceeded, BuildFailed, BuildCancelled, BuildTimedOut}
	deliveryOutcomes = []DeliveryOutcome{DeliveryBuildQueued, DeliveryIgnored, DeliveryDuplicate, DeliveryRefused}
	// unbuiltStatuses end a build without an image: the commit may be
	// built again.
	unbuiltStatuses = []BuildStatus{BuildFailed, BuildCancelled, BuildTimedOut}
)

// UnbuiltStatuses are the statuses that end a build without an image.
func UnbuiltStatuses() []BuildStatus { return slices.Clone(unbuiltStatuses) }

// Ended tells whether a build is over.
func (s BuildStatus) Ended() bool { return s == BuildSucceeded || slices.Contains(unbuiltStatuses, s) }

// A Build makes an image of a commit of a Git service, for one
// environment (it runs on that environment's cluster and pushes to its
// registry).
type Build struct {
	ID            BuildID
	TenantID      TenantID
	ProjectID     ProjectID
	ServiceID     ServiceID
	EnvironmentID EnvironmentID
	// ClusterID is where it runs, once scheduled.
	ClusterID  *ClusterID
	Repository string
	Branch     string
	Commit     string
	Status     BuildStatus
	// Message says what the build did last, or why it ended.
	Message string
	// ImageDigest is what a successful build produced.
	ImageDigest string
	// DeliveryID is the webhook delivery that queued it; CreatedBy whoever
	// did otherwise.
	DeliveryID *WebhookDeliveryID
	CreatedBy  *UserID
	// DeploymentID and ReleaseID are what the build makes: the deployment
	// waits at BUILDING, the release's digest is the build's image.
	DeploymentID *DeploymentID
	ReleaseID    *ReleaseID
	// LogLines and LogBytes count the log kept; LogTruncated says the
	// build wrote more than is kept.
	LogLines     int64
	LogBytes     int64
	LogTruncated bool
	// Attempts counts the times it was handed to an agent.
	Attempts int
	// HeartbeatAt is when its agent last said it runs.
	HeartbeatAt *time.Time
	CreatedAt   time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time
}

// Deadline is when the control plane stops waiting for the build, given
// how long a build may take: timeout after it started; until its agent
// says it started, after it was last handed out (HeartbeatAt is set then,
// and only the agent's reports, which start it, move it); never handed
// out, after it was queued. The agent is handed the same deadline, and the
// scheduler times a running build out past it.
func (b *Build) Deadline(timeout time.Duration) time.Time {
	switch {
	case b.StartedAt != nil:
		return b.StartedAt.Add(timeout)
	case b.HeartbeatAt != nil:
		return b.HeartbeatAt.Add(timeout)
	default:
		return b.CreatedAt.Add(timeout)
	}
}

// A BuildLogLine is one line a build printed, numbered from 1.
type BuildLogLine struct {
	BuildID  BuildID
	Seq      int64
	TenantID TenantID
	At       time.Time
	Line     string
}

func (Webhook) IsNode()         {}
func (WebhookDelivery) IsNode() {}
func (Build) IsNode()           {}

func (v BuildStatus) MarshalGQL(w io.Writer)        { marshalEnum(w, v) }
func (v *BuildStatus) UnmarshalGQL(x any) error     { return unmarshalEnum(x, v, buildStatuses) }
func (v DeliveryOutcome) MarshalGQL(w io.Writer)    { marshalEnum(w, v) }
func (v *DeliveryOutcome) UnmarshalGQL(x any) error { return unmarshalEnum(x, v, deliveryOutcomes) }

func (w *Webhook) Scope() Scope         { return Scope{Tenant: w.TenantID, Project: w.ProjectID} }
func (d *WebhookDelivery) Scope() Scope { return Scope{Tenant: d.TenantID, Project: d.ProjectID} }
func (b *Build) Scope() Scope           { return Scope{Tenant: b.TenantID, Project: b.ProjectID} }

// Binding ties a sealed webhook secret to its hook.
func (w *Webhook) Binding() string { return "webhook:" + string(w.ID) }

// GitBinding ties a service's sealed Git credential to the service.
func (s *Service) GitBinding() string { return "service-git:" + string(s.ID) }
