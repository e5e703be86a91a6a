package delivery

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
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
func checkGit(c *core.Checks, g *GitInput, envs map[model.EnvironmentID]bool, path ...any) {
	at := func(f string) []string { return core.FieldPath(append(slices.Clone(path), f)...) }
	switch u, err := url.Parse(g.Repository); {
	case webhook.RepositoryKey(g.Repository) == "":
		c.Add(core.Invalid(fmt.Sprintf("repository %q is not a Git repository URL (https://host/owner/repo or git@host:owner/repo)", g.Repository), at("repository")...))
	case err == nil && u.User != nil && u.Scheme != "ssh":
		c.Add(core.Invalid("the repository URL must not carry credentials: give them as the credential, which is kept sealed", at("repository")...))
	case len(g.Repository) > 500:
		c.Add(core.Invalid("repository must be at most 500 characters", at("repository")...))
	}
	if !gitBranch.MatchString(g.Branch) || len(g.Branch) > 200 || strings.Contains(g.Branch, "..") ||
		strings.HasSuffix(g.Branch, "/") || strings.HasSuffix(g.Branch, ".lock") {
		c.Add(core.Invalid(fmt.Sprintf("branch %q is not a branch name", g.Branch), at("branch")...))
	}
	for _, p := range []struct{ v, what string }{{g.ContextDir, "contextDir"}, {g.Dockerfile, "dockerfile"}} {
		if !relativePath(p.v) {
			c.Add(core.Invalid(fmt.Sprintf("%s %q must be a path inside the repository (relative, without '..')", p.what, p.v), at(p.what)...))
		}
	}
	if len(g.DeployOnPush) > core.MaxListItems {
		c.Add(core.Invalid(fmt.Sprintf("deployOnPush may name at most %d environments", core.MaxListItems), at("deployOnPush")...))
	}
	for i, e := range g.DeployOnPush {
		if !envs[e] {
			c.Add(core.Invalid(fmt.Sprintf("environment %s is not one of the project's", e), core.FieldPath(append(slices.Clone(path), "deployOnPush", i)...)...))
		}
	}
	if g.Credential != nil && (len(*g.Credential) > maxGitCredential || strings.ContainsRune(*g.Credential, 0)) {
		c.Add(core.Invalid(fmt.Sprintf("the credential must be at most %d bytes of text", maxGitCredential), at("credential")...))
	}
}

func relativePath(p string) bool {
	if p == "" || len(p) > 500 || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\x00\\") {
		return false
	}
	clean := path.Clean(p)
	return clean != ".." && !strings.HasPrefix(clean, "../")
}

// SetGit gives svc the Git source in, or with in nil and remove set, none.
// Callers hold the tenant lock and validate nothing else of in.
func (p *Delivery) setGit(ctx context.Context, q store.Querier, svc *model.Service, in *GitInput, remove bool, at ...any) error {
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
	var c core.Checks
	checkGit(&c, &g, known, at...)
	if err := c.Err(); err != nil {
		return err
	}
	// A credential was given for a repository: moving the service to
	// another is a tenant admin's decision, and drops it unless one for
	// the new repository comes with the change.
	to := webhook.RepositoryKey(g.Repository)
	if svc.GitCredential != "" && svc.Git != nil && core.CredentialRepository(svc.Git) != to {
		if err := p.Authorizer().CheckCtx(ctx, authz.GitCredentialManage, model.Scope{Tenant: svc.TenantID, Project: svc.ProjectID}); err != nil {
			return core.Problem{Field: core.FieldPath(append(slices.Clone(at), "repository")...), Code: core.CodeForbidden,
				Message: "this service's repository has a stored read credential: moving it to another repository is a tenant admin's decision (the credential is dropped, or replaced by one given with the change)"}
		}
		if g.Credential == nil {
			svc.GitCredential = ""
		}
	}
	svc.Git = &model.GitSource{Repository: g.Repository, Branch: g.Branch, ContextDir: path.Clean(g.ContextDir),
		Dockerfile: path.Clean(g.Dockerfile), DeployOnPush: core.OrEmpty(slices.Compact(g.DeployOnPush))}
	switch {
	case g.Credential == nil:
	case *g.Credential == "":
		svc.GitCredential = ""
	default:
		sealed, err := p.Box().Seal([]byte(*g.Credential), svc.GitBinding())
		if errors.Is(err, seal.ErrNoKey) {
			return core.Invalid("a credential cannot be stored: this control plane has no master key (the operator sets NEBULA_MASTER_KEY)",
				core.FieldPath(append(slices.Clone(at), "credential")...)...)
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

// AuditGit records a Git source in an audit event, the credential only by
// whether there is one.
func AuditGit(ev *core.Audit, svc *model.Service) {
	if svc.Git == nil {
		ev.Details["git"] = nil
		return
	}
	ev.Details["git"] = map[string]any{"repository": svc.Git.Repository, "branch": svc.Git.Branch,
		"contextDir": svc.Git.ContextDir, "dockerfile": svc.Git.Dockerfile, "deployOnPush": svc.Git.DeployOnPush,
		"credential": svc.GitCredential != ""}
}
