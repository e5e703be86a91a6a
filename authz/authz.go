// Package authz decides who may do what. Casbin evaluates the role policy
// (model.conf and policy.csv, embedded); this package maps a caller and the
// scope of an object to the role Casbin decides for.
//
// Every caller passes through Check: resolvers, and later the agent hub and
// background jobs. A caller who cannot see a scope gets ErrNotVisible, which
// the API reports exactly like a missing row; one who can see it but lacks
// the capability gets ErrForbidden. This package never reads the database
// itself: the caller's grants come from a loader at every check, so a role
// change takes effect on the next check, also on a connection that stays
// open (the loader keeps grants between changes, not between requests).
package authz

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/casbin/casbin/v2"
	casbinmodel "github.com/casbin/casbin/v2/model"

	"github.com/nebulactrl/nebula/internal/model"
)

//go:embed model.conf
var modelConf string

//go:embed policy.csv
var policyCSV string

var (
	// ErrUnauthenticated: no valid credentials.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrNotVisible: the caller cannot see the object; reported as not found.
	ErrNotVisible = errors.New("not found")
	// ErrForbidden: the caller sees the object but may not do this.
	ErrForbidden = errors.New("forbidden")
)

// Perm is a capability: an action on a kind of object.
type Perm struct{ Obj, Act string }

func (p Perm) String() string { return p.Obj + ":" + p.Act }

// The capabilities the control plane checks. Each must appear in policy.csv
// (a test checks that).
var (
	TenantRead            = Perm{"tenant", "read"}
	TenantUpdate          = Perm{"tenant", "update"}
	PlanUpdate            = Perm{"plan", "update"}
	MemberRead            = Perm{"member", "read"}
	MemberManage          = Perm{"member", "manage"}
	ClusterRead           = Perm{"cluster", "read"}
	ClusterManage         = Perm{"cluster", "manage"}
	NamespaceTargetManage = Perm{"namespace_target", "manage"}
	AuditRead             = Perm{"audit", "read"}
	TokenManageIntegrate  = Perm{"token", "manage_integration"}
	ProjectCreate         = Perm{"project", "create"}
	ProjectDelete         = Perm{"project", "delete"}
	ProjectRead           = Perm{"project", "read"}
	ProjectUpdate         = Perm{"project", "update"}
	ProjectMemberRead     = Perm{"project_member", "read"}
	ProjectMemberManage   = Perm{"project_member", "manage"}
	EnvironmentRead       = Perm{"environment", "read"}
	EnvironmentManage     = Perm{"environment", "manage"}
	ServiceRead           = Perm{"service", "read"}
	ServiceManage         = Perm{"service", "manage"}
	// GitCredentialManage moves a service whose Git source has a stored
	// credential to another repository: the credential was given for
	// the one it had.
	GitCredentialManage = Perm{"git_credential", "manage"}
	ReleaseRead         = Perm{"release", "read"}
	DeploymentRead      = Perm{"deployment", "read"}
	DeploymentCreate    = Perm{"deployment", "create"}
	DeploymentProtected = Perm{"deployment", "create_protected"}
	DeploymentApprove   = Perm{"deployment", "approve"}
	BuildRead           = Perm{"build", "read"}
	LogRead             = Perm{"log", "read"}
	WebhookRead         = Perm{"webhook", "read"}
	WebhookManage       = Perm{"webhook", "manage"}
	WebhookRedeliver    = Perm{"webhook", "redeliver"}
	// EndpointManage: outbound webhook endpoints, their messages and
	// attempts: a project's (project managers) or, at tenant scope, the
	// tenant's (tenant admins).
	EndpointManage = Perm{"endpoint", "manage"}
	// Change sets: reading them and their previews (viewers); opening,
	// adding to, commenting on, submitting and applying them (editors:
	// each change also takes what its direct mutation takes); deciding
	// on them (project managers, never an author of the set).
	ChangeSetRead    = Perm{"change_set", "read"}
	ChangeSetPropose = Perm{"change_set", "propose"}
	ChangeSetApprove = Perm{"change_set", "approve"}
)

// Subjects: the roles Casbin knows.
const (
	SubjectTenantAdmin    = "tenant_admin"
	SubjectTenantMember   = "tenant_member"
	SubjectProjectManager = "project_manager"
	SubjectEditor         = "editor"
	SubjectViewer         = "viewer"
)

var subjects = []string{SubjectTenantAdmin, SubjectTenantMember, SubjectProjectManager, SubjectEditor, SubjectViewer}

// Loader reads a user's grants as they are now. The control plane's loader
// keeps them between changes and drops them when a change is noted.
type Loader func(ctx context.Context, user model.UserID) (*model.Grants, error)

// Actor is an authenticated caller: a user and the token they present. An
// actor may live as long as a websocket connection; it holds no roles of
// its own, so that every check sees the grants in force when it runs.
type Actor struct {
	User  *model.User
	Token *model.APIToken
	// Session is the browser sign-in the request came with, when it came
	// with no token: it acts in its own tenants only.
	Session *model.Session
	// Origin is the client address the request came from.
	Origin string

	mu      sync.Mutex
	founded []model.TenantID
}

// Founded records that the actor created tenant t in this request and is
// its admin: the rest of the request (the mutation's payload) may read it
// although the token acts in another tenant.
func (a *Actor) Founded(t model.TenantID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.founded = append(a.founded, t)
}

// ActsIn tells whether the actor may act in tenant t at all: a token acts
// in its own tenant (and one it just founded), never in the user's others;
// a session in the tenants its sign-in proved.
func (a *Actor) ActsIn(t model.TenantID) bool {
	switch {
	case a.Token != nil:
		if a.Token.TenantID == t {
			return true
		}
	case a.Session != nil:
		if slices.Contains(a.Session.Tenants, t) {
			return true
		}
	default:
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.founded, t)
}

// Within is the tenants the actor acts in, and false; or nil and true for
// an actor that acts in every tenant (with neither token nor session).
// The result is the caller's to keep.
func (a *Actor) Within() ([]model.TenantID, bool) {
	var own []model.TenantID
	switch {
	case a.Token != nil:
		own = []model.TenantID{a.Token.TenantID}
	case a.Session != nil:
		own = slices.Clone(a.Session.Tenants)
	default:
		return nil, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return append(own, a.founded...), false
}

// Covers tells whether the actor acts in every one of tenants: what
// concerns all of them (a session that acts in them) is its to see and end,
// and never what also concerns a tenant it does not act in.
func (a *Actor) Covers(tenants []model.TenantID) bool {
	for _, t := range tenants {
		if !a.ActsIn(t) {
			return false
		}
	}
	return true
}

// Home is the tenant the actor's credential belongs to: a token's tenant,
// a session's first tenant; empty for an actor with neither (the
// bootstrap).
func (a *Actor) Home() model.TenantID {
	switch {
	case a.Token != nil:
		return a.Token.TenantID
	case a.Session != nil && len(a.Session.Tenants) > 0:
		return a.Session.Tenants[0]
	}
	return ""
}

// Credential names the token or session the actor came with, for limits
// kept per credential; empty for neither.
func (a *Actor) Credential() string {
	switch {
	case a.Token != nil:
		return "token:" + string(a.Token.ID)
	case a.Session != nil:
		return "session:" + string(a.Session.ID)
	}
	return ""
}

// Grants returns the actor's roles in force now, limited to the tenants
// the actor acts in. The result is the caller's to keep.
func (a *Actor) Grants(ctx context.Context, load Loader) (*model.Grants, error) {
	g, err := load(ctx, a.User.ID)
	if err != nil {
		return nil, err
	}
	out := &model.Grants{Tenants: map[model.TenantID]model.TenantRole{}, Projects: map[model.ProjectID]model.ProjectRole{}}
	for t, r := range g.Tenants {
		if a.ActsIn(t) {
			out.Tenants[t] = r
		}
	}
	// Project roles in other tenants are unreachable: every project check
	// first needs the project's tenant.
	maps.Copy(out.Projects, g.Projects)
	return out, nil
}

type actorKey struct{}

// WithActor returns a context carrying the actor.
func WithActor(ctx context.Context, a *Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the context's actor or ErrUnauthenticated.
func ActorFrom(ctx context.Context) (*Actor, error) {
	a, ok := ctx.Value(actorKey{}).(*Actor)
	if !ok || a == nil {
		return nil, ErrUnauthenticated
	}
	return a, nil
}

// Authorizer answers capability questions.
type Authorizer struct {
	load Loader
	// allowed is Casbin's answer for every subject and every capability in
	// the policy, computed once: the policy is embedded and never changes
	// while the process runs.
	allowed map[string]map[Perm]bool
}

// New builds the authorizer from the embedded model and policy.
func New(load Loader) (*Authorizer, error) {
	m, err := casbinmodel.NewModelFromString(modelConf)
	if err != nil {
		return nil, fmt.Errorf("loading the Casbin model: %w", err)
	}
	e, err := casbin.NewEnforcer(m)
	if err != nil {
		return nil, fmt.Errorf("creating the Casbin enforcer: %w", err)
	}
	var perms []Perm
	for i, line := range strings.Split(policyCSV, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		switch {
		case f[0] == "p" && len(f) == 4:
			if _, err := e.AddPolicy(f[1], f[2], f[3]); err != nil {
				return nil, fmt.Errorf("policy.csv line %d: %w", i+1, err)
			}
			perms = append(perms, Perm{f[2], f[3]})
		case f[0] == "g" && len(f) == 3:
			if _, err := e.AddGroupingPolicy(f[1], f[2]); err != nil {
				return nil, fmt.Errorf("policy.csv line %d: %w", i+1, err)
			}
		default:
			return nil, fmt.Errorf("policy.csv line %d: cannot parse %q", i+1, line)
		}
	}
	allowed := map[string]map[Perm]bool{}
	for _, s := range subjects {
		allowed[s] = map[Perm]bool{}
		for _, p := range perms {
			ok, err := e.Enforce(s, p.Obj, p.Act)
			if err != nil {
				return nil, fmt.Errorf("evaluating %s %s: %w", s, p, err)
			}
			allowed[s][p] = ok
		}
	}
	return &Authorizer{load: load, allowed: allowed}, nil
}

// Allows reports the policy's answer for a subject, without any caller.
func (z *Authorizer) Allows(subject string, p Perm) bool { return z.allowed[subject][p] }

// Known reports whether the policy mentions the capability at all.
func (z *Authorizer) Known(p Perm) bool {
	for _, s := range subjects {
		if _, ok := z.allowed[s][p]; ok {
			return true
		}
	}
	return false
}

// Subject returns the role the actor holds for the scope, or ErrNotVisible
// when the actor cannot see it: not a member of the tenant, or (for a
// project scope) neither tenant admin nor holding a project role.
func (z *Authorizer) Subject(ctx context.Context, a *Actor, scope model.Scope) (string, error) {
	if !a.ActsIn(scope.Tenant) {
		return "", ErrNotVisible
	}
	g, err := z.load(ctx, a.User.ID)
	if err != nil {
		return "", fmt.Errorf("loading grants: %w", err)
	}
	tr, ok := g.Tenants[scope.Tenant]
	if !ok {
		return "", ErrNotVisible
	}
	if tr == model.TenantAdmin {
		return SubjectTenantAdmin, nil
	}
	if scope.Project == "" {
		return SubjectTenantMember, nil
	}
	switch g.Projects[scope.Project] {
	case model.ProjectManager:
		return SubjectProjectManager, nil
	case model.ProjectEditor:
		return SubjectEditor, nil
	case model.ProjectViewer:
		return SubjectViewer, nil
	}
	return "", ErrNotVisible
}

// Check returns nil when the actor may do p on an object in scope.
func (z *Authorizer) Check(ctx context.Context, a *Actor, p Perm, scope model.Scope) error {
	s, err := z.Subject(ctx, a, scope)
	if err != nil {
		return err
	}
	if !z.allowed[s][p] {
		return fmt.Errorf("%w: %s", ErrForbidden, p)
	}
	return nil
}

// CheckCtx is Check for the actor in ctx.
func (z *Authorizer) CheckCtx(ctx context.Context, p Perm, scope model.Scope) error {
	a, err := ActorFrom(ctx)
	if err != nil {
		return err
	}
	return z.Check(ctx, a, p, scope)
}
