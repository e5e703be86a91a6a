package model

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// A ChangeSet groups changes to one project — variables, secrets,
// processes, domains, image deploys — into one reviewable unit, as a pull
// request does for code: opened, changed, submitted, decided on by another
// project manager, then applied in one transaction (one desired revision
// per cluster). A direct change that would reach a protected environment is
// a change set of one (Direct), submitted at once and applied when
// approved.
type ChangeSetID string

// ChangeSetState is where a change set is in its review.
type ChangeSetState string

const (
	ChangeSetOpen      ChangeSetState = "OPEN"
	ChangeSetSubmitted ChangeSetState = "SUBMITTED"
	ChangeSetApproved  ChangeSetState = "APPROVED"
	ChangeSetRejected  ChangeSetState = "REJECTED"
	ChangeSetExpired   ChangeSetState = "EXPIRED"
	ChangeSetApplied   ChangeSetState = "APPLIED"
	ChangeSetClosed    ChangeSetState = "CLOSED"
)

var changeSetStates = []ChangeSetState{ChangeSetOpen, ChangeSetSubmitted, ChangeSetApproved, ChangeSetRejected,
	ChangeSetExpired, ChangeSetApplied, ChangeSetClosed}

// ChangeSetStates are every state, in a fixed order.
func ChangeSetStates() []ChangeSetState { return slices.Clone(changeSetStates) }

// Ended tells whether a change set in state s can change no more.
func (s ChangeSetState) Ended() bool {
	return s == ChangeSetRejected || s == ChangeSetExpired || s == ChangeSetApplied || s == ChangeSetClosed
}

// ChangeKind is what one change of a change set does.
type ChangeKind string

const (
	ChangeSetVariable    ChangeKind = "SET_VARIABLE"
	ChangeDeleteVariable ChangeKind = "DELETE_VARIABLE"
	ChangeUpdateService  ChangeKind = "UPDATE_SERVICE"
	ChangeDeploy         ChangeKind = "DEPLOY"
)

var changeKinds = []ChangeKind{ChangeSetVariable, ChangeDeleteVariable, ChangeUpdateService, ChangeDeploy}

// ChangeKinds are every kind of change, in a fixed order.
func ChangeKinds() []ChangeKind { return slices.Clone(changeKinds) }

type ChangeSet struct {
	ID        ChangeSetID
	TenantID  TenantID
	ProjectID ProjectID
	// Number counts the project's change sets from 1.
	Number int
	Title  string
	State  ChangeSetState
	// Direct: made by a direct mutation whose change reached a protected
	// environment; applied when approved.
	Direct    bool
	CreatedBy *UserID
	CreatedAt time.Time
	UpdatedAt time.Time
	// SubmittedAt is when it was last submitted; ExpiresAt when its
	// submission, or its approval not applied, lapses.
	SubmittedAt *time.Time
	ExpiresAt   *time.Time
	DecidedBy   *UserID
	DecidedAt   *time.Time
	AppliedBy   *UserID
	AppliedAt   *time.Time
	Changes     []Change
	Comments    []ChangeComment
	// Deployments are those applying it started.
	Deployments []DeploymentID
}

// Change is one change of a change set: the input of its direct mutation
// (a secret's value sealed to the change set, never in the clear), who
// added it, and what it was made against (Base) — applying it is refused
// if that moved since.
type Change struct {
	// ID names the change for good (a secret's value is sealed to it);
	// Seq numbers it in its set from 1.
	ID     string     `json:"id"`
	Seq    int        `json:"seq"`
	Kind   ChangeKind `json:"kind"`
	Author UserID     `json:"author"`
	At     time.Time  `json:"at"`
	// Base fingerprints what the change replaces as it was when the change
	// was added: a variable's version ("" for none), a service's processes
	// or domains, the release in force of a deploy's service.
	Base string `json:"base"`

	ServiceID     *ServiceID     `json:"serviceId,omitempty"`
	EnvironmentID *EnvironmentID `json:"environmentId,omitempty"`

	// SET_VARIABLE, DELETE_VARIABLE: the variable's name at its scope
	// (the project's when ServiceID and EnvironmentID are nil).
	Name   string `json:"name,omitempty"`
	Value  string `json:"value,omitempty"`
	Secret bool   `json:"secret,omitempty"`
	// UPDATE_SERVICE: a list given replaces the service's.
	Processes []Process `json:"processes,omitempty"`
	Domains   []Domain  `json:"domains,omitempty"`
	// DEPLOY: the image digest to release in EnvironmentID.
	ImageDigest string `json:"imageDigest,omitempty"`
}

// Target names what a change changes: a later change of the same target in
// a change set replaces the earlier one.
func (c *Change) Target() string {
	scope := "project"
	switch {
	case c.ServiceID != nil && c.EnvironmentID != nil:
		scope = fmt.Sprintf("service:%s@%s", *c.ServiceID, *c.EnvironmentID)
	case c.ServiceID != nil:
		scope = "service:" + string(*c.ServiceID)
	case c.EnvironmentID != nil:
		scope = "environment:" + string(*c.EnvironmentID)
	}
	switch c.Kind {
	case ChangeSetVariable, ChangeDeleteVariable:
		return "variable " + c.Name + " of " + scope
	case ChangeUpdateService:
		what := "service"
		if c.Processes != nil {
			what += "+processes"
		}
		if c.Domains != nil {
			what += "+domains"
		}
		return what + " " + scope
	default:
		return "deploy " + scope
	}
}

// Summary says what the change changes, by name ("variable FLAG of service
// web set"), given the names of its service and environment ("" for none).
func (c *Change) Summary(service, env string) string {
	where := "the project"
	switch {
	case service != "" && env != "":
		where = "service " + service + " in environment " + env
	case service != "":
		where = "service " + service
	case env != "":
		where = "environment " + env
	}
	switch c.Kind {
	case ChangeSetVariable:
		return "variable " + c.Name + " of " + where + " set"
	case ChangeDeleteVariable:
		return "variable " + c.Name + " of " + where + " deleted"
	case ChangeUpdateService:
		var parts []string
		if c.Processes != nil {
			parts = append(parts, "processes")
		}
		if c.Domains != nil {
			parts = append(parts, "domains")
		}
		return strings.Join(parts, " and ") + " of " + where + " changed"
	default:
		return "image " + c.ImageDigest[:min(len(c.ImageDigest), 19)] + " deployed to " + where
	}
}

// SealBinding is what the secret value of change ch of the set is sealed
// to: it opens only there.
func (s *ChangeSet) SealBinding(ch *Change) string {
	return fmt.Sprintf("changeset:%s:%s", s.ID, ch.ID)
}

// Authors are everyone who made the set or a change in it: none of them
// may decide on it.
func (s *ChangeSet) Authors() []UserID {
	var out []UserID
	if s.CreatedBy != nil {
		out = append(out, *s.CreatedBy)
	}
	for _, c := range s.Changes {
		if !slices.Contains(out, c.Author) {
			out = append(out, c.Author)
		}
	}
	return out
}

// ChangeComment is a comment on a change set, or a reviewer's decision
// with its comment.
type ChangeComment struct {
	Author   UserID `json:"author"`
	Body     string `json:"body"`
	Decision string `json:"decision,omitempty"`
	// Event records a step of the set's life (submitted, applied, …).
	At time.Time `json:"at"`
}

// AppliedChanges is what applying a change set made: per service and
// environment, the release, the one it replaces (nil for a service's first
// there) and its deployment, in service then environment name order.
type AppliedChanges struct {
	Releases    []*Release
	Previous    []*Release
	Deployments []*Deployment
}

func (ChangeSet) IsNode() {}

func (v ChangeSetState) MarshalGQL(w io.Writer)    { marshalEnum(w, v) }
func (v *ChangeSetState) UnmarshalGQL(x any) error { return unmarshalEnum(x, v, changeSetStates) }
func (v ChangeKind) MarshalGQL(w io.Writer)        { marshalEnum(w, v) }
func (v *ChangeKind) UnmarshalGQL(x any) error     { return unmarshalEnum(x, v, changeKinds) }
