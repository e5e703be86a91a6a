package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/webhook"
)

// GitInput is a service's Git source as given. A nil Credential keeps the
// one stored, "" removes it.
type GitInput struct {
	Repository   string
	Branch       string
	ContextDir   string
	Dockerfile   string
	DeployOnPush []model.EnvironmentID
	Credential   *string
}

const maxGitCredential = 16 << 10

// gitBranch is what a branch name may be made of here: Git allows more,
// but a tracked branch with spaces or control characters is a mistake.
var gitBranch = regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._/-]*$`)

// git checks a Git source; envs are the project's environments.
func (c *Checks) git(g *GitInput, envs map[model.EnvironmentID]bool, path ...any) {
	at := func(f string) []string { return FieldPath(append(slices.Clone(path), f)...) }
	switch u, err := url.Parse(g.Repository); {
	case webhook.RepositoryKey(g.Repository) == "":
		c.Add(Invalid(fmt.Sprintf("repository %q is not a Git repository URL (https://host/owner/repo or git@host:owner/repo)", g.Repository), at("repository")...))
	case err == nil && u.User != nil && u.Scheme != "ssh":
		c.Add(Invalid("the repository URL must not carry credentials: give them as the credential, which is kept sealed", at("repository")...))
	case len(g.Repository) > 500:
		c.Add(Invalid("repository must be at most 500 characters", at("repository")...))
	}
	if !gitBranch.MatchString(g.Branch) || len(g.Branch) > 200 || strings.Contains(g.Branch, "..") ||
		strings.HasSuffix(g.Branch, "/") || strings.HasSuffix(g.Branch, ".lock") {
		c.Add(Invalid(fmt.Sprintf("branch %q is not a branch name", g.Branch), at("branch")...))
	}
	for _, p := range []struct{ v, what string }{{g.ContextDir, "contextDir"}, {g.Dockerfile, "dockerfile"}} {
		if !relativePath(p.v) {
			c.Add(Invalid(fmt.Sprintf("%s %q must be a path inside the repository (relative, without '..')", p.what, p.v), at(p.what)...))
		}
	}
	if len(g.DeployOnPush) > MaxListItems {
		c.Add(Invalid(fmt.Sprintf("deployOnPush may name at most %d environments", MaxListItems), at("deployOnPush")...))
	}
	for i, e := range g.DeployOnPush {
		if !envs[e] {
			c.Add(Invalid(fmt.Sprintf("environment %s is not one of the project's", e), FieldPath(append(slices.Clone(path), "deployOnPush", i)...)...))
		}
	}
	if g.Credential != nil && (len(*g.Credential) > maxGitCredential || strings.ContainsRune(*g.Credential, 0)) {
		c.Add(Invalid(fmt.Sprintf("the credential must be at most %d bytes of text", maxGitCredential), at("credential")...))
	}
}

func relativePath(p string) bool {
	if p == "" || len(p) > 500 || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\x00\\") {
		return false
	}
	clean := path.Clean(p)
	return clean != ".." && !strings.HasPrefix(clean, "../")
}

// setGit gives svc the Git source in, or with in nil and remove set, none.
// Callers hold the tenant lock and validate nothing else of in.
func (p *Plane) setGit(ctx context.Context, q store.Querier, svc *model.Service, in *GitInput, remove bool, at ...any) error {
	if remove {
		svc.Git, svc.GitCredential = nil, ""
		return nil
	}
	if in == nil {
		return nil
	}
	g := *in
	if g.ContextDir == "" {
		g.ContextDir = "."
	}
	if g.Dockerfile == "" {
		g.Dockerfile = "Dockerfile"
	}
	envs, err := store.EnvironmentsOfProjects(ctx, q, []string{string(svc.ProjectID)}, store.PageArgs{First: store.MaxPage})
	if err != nil {
		return err
	}
	known := map[model.EnvironmentID]bool{}
	for _, e := range envs[string(svc.ProjectID)].Items {
		known[e.ID] = true
	}
	var c Checks
	c.git(&g, known, at...)
	if err := c.Err(); err != nil {
		return err
	}
	// A credential was given for a repository: moving the service to
	// another is a tenant admin's decision, and drops it unless one for
	// the new repository comes with the change.
	to := webhook.RepositoryKey(g.Repository)
	if svc.GitCredential != "" && svc.Git != nil && credentialRepository(svc.Git) != to {
		if err := p.authz.CheckCtx(ctx, authz.GitCredentialManage, model.Scope{Tenant: svc.TenantID, Project: svc.ProjectID}); err != nil {
			return Problem{Field: FieldPath(append(slices.Clone(at), "repository")...), Code: CodeForbidden,
				Message: "this service's repository has a stored read credential: moving it to another repository is a tenant admin's decision (the credential is dropped, or replaced by one given with the change)"}
		}
		if g.Credential == nil {
			svc.GitCredential = ""
		}
	}
	svc.Git = &model.GitSource{Repository: g.Repository, Branch: g.Branch, ContextDir: path.Clean(g.ContextDir),
		Dockerfile: path.Clean(g.Dockerfile), DeployOnPush: orEmpty(slices.Compact(g.DeployOnPush))}
	switch {
	case g.Credential == nil:
	case *g.Credential == "":
		svc.GitCredential = ""
	default:
		sealed, err := p.box.Seal([]byte(*g.Credential), svc.GitBinding())
		if errors.Is(err, seal.ErrNoKey) {
			return Invalid("a credential cannot be stored: this control plane has no master key (the operator sets NEBULA_MASTER_KEY)",
				FieldPath(append(slices.Clone(at), "credential")...)...)
		}
		if err != nil {
			return fmt.Errorf("sealing the Git credential: %w", err)
		}
		svc.GitCredential = sealed
	}
	if svc.GitCredential != "" {
		svc.Git.CredentialRepository = to
	}
	return nil
}

// credentialRepository is the repository a Git source's credential was
// given for.
func credentialRepository(g *model.GitSource) string {
	if g.CredentialRepository != "" {
		return g.CredentialRepository
	}
	return webhook.RepositoryKey(g.Repository) // stored before the binding was kept
}

// gitCredential opens a service's Git credential for a request to
// repository: "" when it has none, or when the repository is not the one
// it was given for (host and path), which never gets it.
func (p *Plane) gitCredential(svc *model.Service, repository string) (string, error) {
	if svc.Git == nil || svc.GitCredential == "" || webhook.RepositoryKey(repository) != credentialRepository(svc.Git) {
		return "", nil
	}
	return p.openGitCredential(svc)
}

// openGitCredential opens a service's Git credential ("" for none), for
// whatever asks: a request to its repository, or redaction.
func (p *Plane) openGitCredential(svc *model.Service) (string, error) {
	if svc.GitCredential == "" {
		return "", nil
	}
	c, err := p.box.Open(svc.GitCredential, svc.GitBinding())
	if err != nil {
		return "", fmt.Errorf("opening the Git credential of service %s: %w", svc.Name, err)
	}
	return string(c), nil
}

// auditGit records a Git source in an audit event, the credential only by
// whether there is one.
func auditGit(ev *Audit, svc *model.Service) {
	if svc.Git == nil {
		ev.Details["git"] = nil
		return
	}
	ev.Details["git"] = map[string]any{"repository": svc.Git.Repository, "branch": svc.Git.Branch,
		"contextDir": svc.Git.ContextDir, "dockerfile": svc.Git.Dockerfile, "deployOnPush": svc.Git.DeployOnPush,
		"credential": svc.GitCredential != ""}
}

// newWebhookSecret is 256 random bits, the way the providers suggest:
// long enough for HMAC-SHA256, plain enough to paste into any of them.
func newWebhookSecret() string {
	s, _, _ := NewSecret("nbwh_")
	return s
}

// sealWebhook gives a hook a new secret, sealed, and returns it.
func (p *Plane) sealWebhook(w *model.Webhook) (string, error) {
	secret := newWebhookSecret()
	sealed, err := p.box.Seal([]byte(secret), w.Binding())
	if errors.Is(err, seal.ErrNoKey) {
		return "", Invalid("webhooks cannot be made: this control plane has no master key to seal their secrets (the operator sets NEBULA_MASTER_KEY)")
	}
	if err != nil {
		return "", fmt.Errorf("sealing the webhook secret: %w", err)
	}
	w.Secret = sealed
	return secret, nil
}

// CreateWebhook makes a hook for one service of a project (svc set) or
// for the project, routing each push by its repository. The secret is
// returned here only.
func (p *Plane) CreateWebhook(ctx context.Context, project model.ProjectID, svc *model.ServiceID) (*model.Webhook, string, error) {
	proj, err := Get(ctx, p, p.Querier(ctx), store.Projects, project, authz.WebhookManage)
	if err != nil {
		return nil, "", err
	}
	now := p.now()
	w := &model.Webhook{ID: NewID[model.WebhookID](), TenantID: proj.TenantID, ProjectID: project, ServiceID: svc,
		CreatedAt: now, RotatedAt: now}
	if a, err := authz.ActorFrom(ctx); err == nil && a.User != nil {
		w.CreatedBy = &a.User.ID
	}
	secret, err := p.sealWebhook(w)
	if err != nil {
		return nil, "", err
	}
	err = p.Change(ctx, proj.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		if svc != nil {
			s, err := store.Services.Get(ctx, q, *svc)
			if errors.Is(err, store.ErrNotFound) || err == nil && s.ProjectID != project {
				return Invalid("the service is not one of the project's", "input", "serviceId")
			}
			if err != nil {
				return err
			}
		}
		if err := store.Webhooks.Insert(ctx, q, w); err != nil {
			return ConflictOn(err, "serviceId", "the service has a webhook already: rotate its secret or delete it first")
		}
		Target(ev, ActWebhookCreate, "Webhook", string(w.ID))
		ev.Details["projectId"] = string(project)
		if svc != nil {
			ev.Details["serviceId"] = string(*svc)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return w, secret, nil
}

// RotateWebhookSecret gives a hook a new secret, returned here only; the
// old one stops verifying at once.
func (p *Plane) RotateWebhookSecret(ctx context.Context, id model.WebhookID) (*model.Webhook, string, error) {
	w, err := Get(ctx, p, p.Querier(ctx), store.Webhooks, id, authz.WebhookManage)
	if err != nil {
		return nil, "", err
	}
	secret, err := p.sealWebhook(w)
	if err != nil {
		return nil, "", err
	}
	w.RotatedAt = p.now()
	err = p.Change(ctx, w.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		Target(ev, ActWebhookRotate, "Webhook", string(id))
		return store.RotateWebhookSecret(ctx, q, w)
	})
	if err != nil {
		return nil, "", err
	}
	return w, secret, nil
}

func (p *Plane) DeleteWebhook(ctx context.Context, id model.WebhookID) error {
	w, err := Get(ctx, p, p.Querier(ctx), store.Webhooks, id, authz.WebhookManage)
	if err != nil {
		return err
	}
	return p.Change(ctx, w.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		Target(ev, ActWebhookDelete, "Webhook", string(id))
		ev.Details["projectId"] = string(w.ProjectID)
		return store.Webhooks.Delete(ctx, q, id)
	})
}

func (p *Plane) Webhook(ctx context.Context, id model.WebhookID) (*model.Webhook, error) {
	return Get(ctx, p, p.Querier(ctx), store.Webhooks, id, authz.WebhookRead)
}

func (p *Plane) WebhooksByIDs(ctx context.Context, ids []model.WebhookID) (map[model.WebhookID]*model.Webhook, error) {
	return ByIDs(ctx, p, store.Webhooks, ids, authz.WebhookRead)
}

// WebhookOf is a service's hook, nil when it has none.
func (p *Plane) WebhookOf(ctx context.Context, svc *model.Service) (*model.Webhook, error) {
	if err := p.authz.CheckCtx(ctx, authz.WebhookRead, svc.Scope()); err != nil {
		return nil, err
	}
	w, err := store.WebhookOfService(ctx, p.Querier(ctx), svc.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return w, err
}

// WebhooksOf lists a project's hooks, its services' included.
func (p *Plane) WebhooksOf(ctx context.Context, proj *model.Project) ([]*model.Webhook, error) {
	if err := p.authz.CheckCtx(ctx, authz.WebhookRead, proj.Scope()); err != nil {
		return nil, err
	}
	return store.WebhooksOfProject(ctx, p.Querier(ctx), proj.ID)
}

func (p *Plane) WebhookDeliveries(ctx context.Context, w *model.Webhook, pg store.PageArgs) (store.Page[model.WebhookDelivery], error) {
	if err := p.authz.CheckCtx(ctx, authz.WebhookRead, w.Scope()); err != nil {
		return store.Page[model.WebhookDelivery]{}, err
	}
	return store.DeliveriesOf(ctx, p.Querier(ctx), w.ID, pg)
}

func (p *Plane) WebhookDelivery(ctx context.Context, id model.WebhookDeliveryID) (*model.WebhookDelivery, error) {
	return Get(ctx, p, p.Querier(ctx), store.WebhookDeliveries, id, authz.WebhookRead)
}

func (p *Plane) DeliveriesByIDs(ctx context.Context, ids []model.WebhookDeliveryID) (map[model.WebhookDeliveryID]*model.WebhookDelivery, error) {
	return ByIDs(ctx, p, store.WebhookDeliveries, ids, authz.WebhookRead)
}

func (p *Plane) Build(ctx context.Context, id model.BuildID) (*model.Build, error) {
	return Get(ctx, p, p.Querier(ctx), store.Builds, id, authz.BuildRead)
}

func (p *Plane) BuildsByIDs(ctx context.Context, ids []model.BuildID) (map[model.BuildID]*model.Build, error) {
	return ByIDs(ctx, p, store.Builds, ids, authz.BuildRead)
}

// Builds lists one page of a service's builds, newest first, of one
// environment when env is set.
func (p *Plane) Builds(ctx context.Context, svc *model.Service, env *model.EnvironmentID, pg store.PageArgs) (store.Page[model.Build], error) {
	if err := p.authz.CheckCtx(ctx, authz.BuildRead, svc.Scope()); err != nil {
		return store.Page[model.Build]{}, err
	}
	return store.BuildsOf(ctx, p.Querier(ctx), svc.ID, env, pg)
}

// Inbound is a request to a hook, as the HTTP server read it.
type Inbound struct {
	Header http.Header
	Body   []byte
	// Oversized: the body was longer than webhook.MaxBody; Body holds
	// only its start.
	Oversized bool
}

// Refusal is why a delivery was refused, for the provider's answer.
type Refusal int

const (
	NotRefused Refusal = iota
	// RefusedUnknown: no provider's headers, or no delivery id.
	RefusedUnknown
	RefusedOversized
	RefusedSignature
	RefusedReplay
	// RefusedMalformed: signed, but not a push a provider sends.
	RefusedMalformed
)

// ReceiveWebhook takes a delivery to hook id: it checks the provider's
// signature, refuses replays, decides what the push builds, and records
// the delivery with its outcome either way. A hook that does not exist is
// ErrNotFound and records nothing.
func (p *Plane) ReceiveWebhook(ctx context.Context, id model.WebhookID, in Inbound) (*model.WebhookDelivery, Refusal, error) {
	ctx = As(ctx, SystemWebhook)
	w, err := store.Webhooks.Get(ctx, p.Querier(ctx), id)
	if err != nil {
		return nil, NotRefused, err
	}
	d := &model.WebhookDelivery{ID: NewID[model.WebhookDeliveryID](), TenantID: w.TenantID, ProjectID: w.ProjectID,
		WebhookID: w.ID, ReceivedAt: p.now()}
	var why Refusal
	err = p.SystemChange(ctx, w.TenantID, false, func(q *Txn) (err error) {
		why, err = p.takeDelivery(ctx, q, w, d, in)
		return err
	})
	if err != nil {
		return nil, NotRefused, err
	}
	return d, why, nil
}

// takeDelivery fills in d from the request and records it, with the
// builds it queues. Callers hold the tenant lock.
func (p *Plane) takeDelivery(ctx context.Context, q *Txn, w *model.Webhook, d *model.WebhookDelivery, in Inbound) (Refusal, error) {
	refuse := func(r Refusal, why string) (Refusal, error) {
		d.Outcome, d.Reason, d.Body, d.Builds = model.DeliveryRefused, why, nil, nil
		return r, store.WebhookDeliveries.Insert(ctx, q, d)
	}
	id, err := webhook.Identify(in.Header)
	d.Provider, d.DeliveryID, d.Event = string(id.Provider), ClipText(id.ID, 200), ClipText(id.Event, 100)
	if err != nil {
		return refuse(RefusedUnknown, err.Error())
	}
	if in.Oversized {
		return refuse(RefusedOversized, fmt.Sprintf("the body is over %d bytes: a push is a few kilobytes", webhook.MaxBody))
	}
	secret, err := p.box.Open(w.Secret, w.Binding())
	if err != nil {
		return NotRefused, fmt.Errorf("opening the webhook secret: %w", err)
	}
	if err := webhook.Verify(id, in.Header, in.Body, secret); err != nil {
		return refuse(RefusedSignature, err.Error()+": check the secret set at the provider (rotate it to get a new one)")
	}
	prev, err := store.AcceptedDelivery(ctx, q, w.ID, id.ID)
	if err == nil {
		return refuse(RefusedReplay, fmt.Sprintf("delivery %s was received already, at %s: a replay", ClipText(id.ID, 200),
			prev.ReceivedAt.UTC().Format(time.RFC3339)))
	}
	if !errors.Is(err, store.ErrNotFound) {
		return NotRefused, err
	}
	return p.decideDelivery(ctx, q, w, d, id, in.Body)
}

// decideDelivery decides what a trusted delivery builds and records it.
func (p *Plane) decideDelivery(ctx context.Context, q *Txn, w *model.Webhook, d *model.WebhookDelivery, id webhook.Delivery, body []byte) (Refusal, error) {
	d.Body = body
	if !id.IsPush() {
		d.Outcome, d.Reason = model.DeliveryIgnored, fmt.Sprintf("a %q event: only pushes build", d.Event)
		if id.Event == "ping" {
			d.Reason = "a ping: the hook is set up and its secret matches"
		}
		return NotRefused, store.WebhookDeliveries.Insert(ctx, q, d)
	}
	push, err := webhook.Parse(id, body)
	if err != nil {
		d.Outcome, d.Reason, d.Body = model.DeliveryRefused, err.Error(), nil
		return RefusedMalformed, store.WebhookDeliveries.Insert(ctx, q, d)
	}
	d.Ref, d.Commit = ClipText(push.Ref, 250), push.Commit
	// The delivery id is not signed: a push of a commit to a ref this hook
	// took before is a replay under a new id, or the branch moved back to
	// an older commit. Either way it builds nothing (a person deploys an
	// older commit by its commit); a redelivery by a tenant admin is meant.
	if d.RedeliveredBy == nil {
		prev, err := store.AcceptedPush(ctx, q, w.ID, d.Provider, d.Ref, d.Commit)
		switch {
		case err == nil:
			d.Outcome, d.Reason, d.Body = model.DeliveryRefused, fmt.Sprintf("commit %s was pushed to %s already (delivery %s, %s): a replay, or the branch moved back to it; deploy an older commit by its commit",
				push.Commit[:12], ClipText(push.Ref, 250), prev.DeliveryID, prev.ReceivedAt.UTC().Format(time.RFC3339)), nil
			return RefusedReplay, store.WebhookDeliveries.Insert(ctx, q, d)
		case !errors.Is(err, store.ErrNotFound):
			return NotRefused, err
		}
	}
	d.Outcome, d.Reason, err = p.pushBuilds(ctx, q, w, d, push)
	if err != nil {
		return NotRefused, err
	}
	return NotRefused, store.WebhookDeliveries.Insert(ctx, q, d)
}

// pushBuilds queues the builds a trusted push asks for: for each Git
// service the hook covers whose repository and tracked branch it is, one
// per environment the service deploys pushes to, unless that commit is
// built or being built there already.
func (p *Plane) pushBuilds(ctx context.Context, q *Txn, w *model.Webhook, d *model.WebhookDelivery, push *webhook.Push) (model.DeliveryOutcome, string, error) {
	var svcs []*model.Service
	if w.ServiceID != nil {
		s, err := store.Services.Get(ctx, q, *w.ServiceID)
		if err != nil {
			return "", "", err
		}
		if s.Git == nil {
			return model.DeliveryIgnored, "service " + s.Name + " is not built from Git", nil
		}
		svcs = append(svcs, s)
	} else {
		all, err := store.GitServicesOfProject(ctx, q, w.ProjectID)
		if err != nil {
			return "", "", err
		}
		for _, s := range all {
			if push.Of(s.Git.Repository) {
				svcs = append(svcs, s)
			}
		}
		if len(svcs) == 0 {
			return model.DeliveryIgnored, "no Git service of the project is built from " + strings.Join(push.Repository, ", "), nil
		}
	}
	var reasons, dups []string
	for _, s := range svcs {
		if why := push.Ignored(s.Git.Repository, s.Git.Branch); why != "" {
			reasons = append(reasons, why)
			continue
		}
		if len(s.Git.DeployOnPush) == 0 {
			reasons = append(reasons, "service "+s.Name+" deploys pushes to no environment (its Git source's deployOnPush)")
			continue
		}
		for _, env := range s.Git.DeployOnPush {
			prev, err := store.BuildOfCommit(ctx, q, s.ID, env, push.Commit)
			if err == nil {
				dups = append(dups, fmt.Sprintf("%s is built for %s already (build %s, %s)", push.Commit[:12], s.Name, prev.ID, prev.Status))
				continue
			}
			if !errors.Is(err, store.ErrNotFound) {
				return "", "", err
			}
			why := fmt.Sprintf("release %%d: a push of %s to %s by %s (%s)", push.Commit[:12], push.Branch(),
				OrNone(push.Pusher), OrNone(push.Message))
			b, err := p.startBuild(ctx, q, s, env, push.Commit, why, &d.ID, d.RedeliveredBy)
			var pr Problem
			if errors.As(err, &pr) {
				reasons = append(reasons, pr.Message)
				continue
			}
			if err != nil {
				return "", "", err
			}
			d.Builds = append(d.Builds, b.ID)
			ev := &Audit{AuditEvent: &model.AuditEvent{TenantID: s.TenantID, ClientAddress: "webhook " + string(w.ID),
				CreatedAt: p.now(), Details: map[string]any{"actor": "webhook:" + string(w.ID), "webhookId": string(w.ID),
					"deliveryId": string(d.ID), "provider": d.Provider, "serviceId": string(s.ID),
					"environmentId": string(env), "commit": push.Commit, "pusher": push.Pusher}}}
			if d.RedeliveredBy != nil {
				ev.ActorID = d.RedeliveredBy
				ev.Details["redeliveryOf"] = string(*d.RedeliveryOf)
			}
			Target(ev, ActBuildQueue, "Build", string(b.ID))
			if err := store.InsertAudit(ctx, q, ev.AuditEvent); err != nil {
				return "", "", err
			}
		}
	}
	switch {
	case len(d.Builds) > 0:
		return model.DeliveryBuildQueued, fmt.Sprintf("queued %d build(s) of %s", len(d.Builds), push.Commit[:12]), nil
	case len(dups) > 0:
		return model.DeliveryDuplicate, strings.Join(dups, "; "), nil
	default:
		return model.DeliveryIgnored, strings.Join(reasons, "; "), nil
	}
}

// Redeliver takes a delivery again, as its hook received it (tenant
// admins only): the replay check is skipped, everything else holds, and
// the new delivery names the one it repeats. A refused delivery kept no
// body and cannot be redelivered.
func (p *Plane) Redeliver(ctx context.Context, id model.WebhookDeliveryID) (*model.WebhookDelivery, error) {
	prev, err := Get(ctx, p, p.Querier(ctx), store.WebhookDeliveries, id, authz.WebhookRedeliver)
	if err != nil {
		return nil, err
	}
	if prev.Body == nil {
		return nil, Invalid("a refused delivery kept no body: ask the provider to send it again", "input", "deliveryId")
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	d := &model.WebhookDelivery{ID: NewID[model.WebhookDeliveryID](), TenantID: prev.TenantID, ProjectID: prev.ProjectID,
		WebhookID: prev.WebhookID, ReceivedAt: p.now(), RedeliveryOf: &prev.ID}
	if a.User != nil {
		d.RedeliveredBy = &a.User.ID
	}
	err = p.Change(ctx, prev.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		w, err := store.Webhooks.Get(ctx, q, prev.WebhookID)
		if err != nil {
			return err
		}
		// Trusted when it came (its body is kept only then): only the
		// decision is taken again.
		d.Provider, d.DeliveryID, d.Event = prev.Provider, prev.DeliveryID, prev.Event
		id := webhook.Delivery{Provider: webhook.Provider(prev.Provider), ID: prev.DeliveryID, Event: prev.Event}
		if _, err := p.decideDelivery(ctx, q, w, d, id, prev.Body); err != nil {
			return err
		}
		Target(ev, ActWebhookRedeliver, "WebhookDelivery", string(d.ID))
		ev.Details["redeliveryOf"], ev.Details["outcome"] = string(prev.ID), string(d.Outcome)
		return nil
	})
	return Committed(d, err)
}
