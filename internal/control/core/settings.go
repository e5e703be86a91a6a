package core

import (
	"time"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/model"
)

// Settings are what the options set: the tunables of every domain, read
// by the domain they concern (p.Settings.SessionTTL).
type Settings struct {
	// ConnectGrace is how long a replaced connect token keeps working.
	ConnectGrace time.Duration
	// DisconnectedAfter is how long a silent cluster still counts as
	// connected.
	DisconnectedAfter time.Duration
	// ApprovalTTL is how long a deployment may wait for approval;
	// AllowSelfApproval lets requesters approve their own.
	ApprovalTTL       time.Duration
	AllowSelfApproval bool
	StallAfter        time.Duration
	// MaxTokensPerUser caps the API tokens working at once for one user
	// in one tenant.
	MaxTokensPerUser int
	// Builds bound the builds run on the clusters.
	Builds BuildSettings
	// LogRetention is how long container logs and events are kept.
	LogRetention time.Duration
	// SessionTTL is how long a person's sign-in lasts; InvitationTTL how
	// long an invitation link works.
	SessionTTL, InvitationTTL time.Duration
	// OIDC decides single sign-ons; nil when it is off.
	OIDC *OIDCSettings
	// Outbound tunes outbound webhooks.
	Outbound OutboundSettings
}

// How long a person's sign-in lasts, and an invitation link works.
const (
	DefaultSessionTTL    = 12 * time.Hour
	DefaultInvitationTTL = 7 * 24 * time.Hour
)

// DefaultMaxTokensPerUser is how many API tokens may work at once for one
// user in one tenant (NEBULA_MAX_TOKENS_PER_USER).
const DefaultMaxTokensPerUser = 25

// OIDCGrant is a tenant role a group of the identity provider gives. The
// tenant is named by id, or by name (then it must be the only tenant so
// named).
type OIDCGrant struct {
	Tenant     model.TenantID
	TenantName string
	Role       model.TenantRole
}

// OIDCSettings are what single sign-on decides with: the email domains
// allowed (any when empty) and the tenant roles each group gives.
type OIDCSettings struct {
	AllowedDomains []string
	Roles          map[string][]OIDCGrant
}

// WithOIDC turns single sign-on's decisions on.
func WithOIDC(s OIDCSettings) Option { return func(p *Plane) { p.Settings.OIDC = &s } }

// WithSessionTTL sets how long a person's sign-in lasts.
func WithSessionTTL(d time.Duration) Option { return func(p *Plane) { p.Settings.SessionTTL = d } }

// WithInvitationTTL sets how long an invitation link works.
func WithInvitationTTL(d time.Duration) Option {
	return func(p *Plane) { p.Settings.InvitationTTL = d }
}

// WithMaxTokensPerUser sets how many API tokens may work at once for one
// user in one tenant.
func WithMaxTokensPerUser(n int) Option {
	return func(p *Plane) { p.Settings.MaxTokensPerUser = n }
}

// BuildSettings bound the builds the control plane runs: the
// configuration's own type (NEBULA_BUILD_*).
type BuildSettings = config.Builds

// DefaultBuildSettings are the settings of `nebula serve` unless changed.
var DefaultBuildSettings = BuildSettings{
	PerCluster: 2, Timeout: 30 * time.Minute, Silence: 2 * time.Minute, Attempts: 3,
	MaxLogLines: 20000, MaxLogBytes: 10 << 20, MaxLineBytes: 4 << 10,
	LogRetention: 7 * 24 * time.Hour,
	Builder:      "moby/buildkit:v0.26.2-rootless",
	GitTimeout:   10 * time.Second,
}

// WithBuildSettings sets how builds are run.
func WithBuildSettings(s BuildSettings) Option { return func(p *Plane) { p.Settings.Builds = s } }

// OutboundSettings tune outbound webhooks.
type OutboundSettings struct {
	// Timeout bounds one attempt (connecting, sending, the answer).
	Timeout time.Duration
	// RetryWindow is how long a message is tried again (backing off
	// from BackoffMin to BackoffMax, jittered): past it, the message
	// FAILED and its endpoint is disabled.
	RetryWindow            time.Duration
	BackoffMin, BackoffMax time.Duration
	// SecretOverlap is how long a rotated-out secret still signs.
	SecretOverlap time.Duration
	// AllowPrivate lets endpoints be on loopback, private and link-local
	// addresses (refused otherwise: server-side request forgery).
	AllowPrivate bool
	// Retention is how long delivered and failed messages are kept.
	Retention time.Duration
	// Poll is how often each replica looks for messages due (a change on
	// this replica wakes it at once).
	Poll time.Duration
	// Concurrency bounds the deliveries a replica makes at once.
	Concurrency int
	// UserAgent is what requests say they come from.
	UserAgent string
}

// DefaultOutboundSettings are nebula serve's unless changed.
var DefaultOutboundSettings = OutboundSettings{Timeout: 10 * time.Second, RetryWindow: 24 * time.Hour,
	BackoffMin: 5 * time.Second, BackoffMax: time.Hour, SecretOverlap: 24 * time.Hour, Retention: 7 * 24 * time.Hour,
	Poll: time.Second, Concurrency: 8, UserAgent: "NebulaCtrl-Webhooks"}

// WithOutbound sets how outbound webhooks are delivered.
func WithOutbound(s OutboundSettings) Option { return func(p *Plane) { p.Settings.Outbound = s } }

// DefaultLogRetention is how long container logs and events are kept.
const DefaultLogRetention = 7 * 24 * time.Hour

// WithLogRetention sets how long container logs and events are kept.
func WithLogRetention(d time.Duration) Option { return func(p *Plane) { p.Settings.LogRetention = d } }

// DefaultConnectGrace is how long a replaced connect token keeps working.
const DefaultConnectGrace = time.Hour

// WithConnectGrace sets how long a replaced connect token keeps working.
func WithConnectGrace(d time.Duration) Option { return func(p *Plane) { p.Settings.ConnectGrace = d } }

// DefaultApprovalTTL is how long a deployment may wait for approval.
const DefaultApprovalTTL = 24 * time.Hour

// WithApprovals sets how long an approval may be waited for and whether a
// requester may approve their own deployment.
func WithApprovals(ttl time.Duration, allowSelf bool) Option {
	return func(p *Plane) { p.Settings.ApprovalTTL, p.Settings.AllowSelfApproval = ttl, allowSelf }
}

// DefaultStallAfter is how long a deployment may go without progress
// before it is flagged.
const DefaultStallAfter = 10 * time.Minute

// WithStallAfter sets how long a rollout may make no progress before the
// stall job flags it.
func WithStallAfter(d time.Duration) Option { return func(p *Plane) { p.Settings.StallAfter = d } }

// WithClock replaces the clock, for tests of time windows.
func WithClock(now func() time.Time) Option { return func(p *Plane) { p.now = now } }
