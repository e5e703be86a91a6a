package store

import (
	"context"

	"github.com/nebulactrl/nebula/internal/model"
)

// The named reads below are the only way callers filter rows: each says
// what it selects in its name and takes typed parameters, so that no
// predicate is written outside this package.

// TenantsIn lists one page of the tenants with the given ids.
func TenantsIn(ctx context.Context, q Querier, ids []model.TenantID, pg PageArgs) (Page[model.Tenant], error) {
	if len(ids) == 0 {
		return Page[model.Tenant]{}, nil
	}
	in, args := inList(ids, 0)
	return Tenants.list(ctx, q, pg, "id IN ("+in+")", args...)
}

// OldestTenant is the tenant created first; ErrNotFound on an empty store.
func OldestTenant(ctx context.Context, q Querier) (*model.Tenant, error) {
	page, err := Tenants.list(ctx, q, PageArgs{First: 1}, "1 = 1")
	if err != nil {
		return nil, err
	}
	if len(page.Items) == 0 {
		return nil, ErrNotFound
	}
	return page.Items[0], nil
}

// ShareTenant reads a tenant and, on PostgreSQL, holds a shared lock on
// its row (FOR KEY SHARE) until the transaction ends: writers of other
// rows go on, while LockTenant waits. SQLite's write transactions are
// exclusive anyway.
func ShareTenant(ctx context.Context, q Querier, id model.TenantID) (*model.Tenant, error) {
	return Tenants.one(ctx, q, "id = $1"+q.Dialect().KeyShare, string(id))
}

// MembersOf lists one page of a tenant's members.
func MembersOf(ctx context.Context, q Querier, tenant model.TenantID, pg PageArgs) (Page[model.Member], error) {
	return Members.list(ctx, q, pg, "tenant_id = $1", string(tenant))
}

// MemberOf is a user's membership of a tenant; ErrNotFound when the user
// is not a member.
func MemberOf(ctx context.Context, q Querier, tenant model.TenantID, user model.UserID) (*model.Member, error) {
	return Members.one(ctx, q, "tenant_id = $1 AND user_id = $2", string(tenant), string(user))
}

// MembersByUsers reads the memberships in a tenant of the given users;
// those who are not members are absent.
func MembersByUsers(ctx context.Context, q Querier, tenant model.TenantID, users []model.UserID) ([]*model.Member, error) {
	if len(users) == 0 {
		return nil, nil
	}
	in, args := inList(users, 1)
	return Members.all(ctx, q, "tenant_id = $1 AND user_id IN ("+in+")", append([]any{string(tenant)}, args...)...)
}

// MembersWithRole lists a tenant's members holding role, oldest first.
func MembersWithRole(ctx context.Context, q Querier, tenant model.TenantID, role model.TenantRole) ([]*model.Member, error) {
	return Members.all(ctx, q, "tenant_id = $1 AND role = $2", string(tenant), string(role))
}

// CountMembersWithRole counts a tenant's members holding role.
func CountMembersWithRole(ctx context.Context, q Querier, tenant model.TenantID, role model.TenantRole) (int, error) {
	return Members.count(ctx, q, "tenant_id = $1 AND role = $2", string(tenant), string(role))
}

// ProjectsOf lists one page of a tenant's projects.
func ProjectsOf(ctx context.Context, q Querier, tenant model.TenantID, pg PageArgs) (Page[model.Project], error) {
	return Projects.list(ctx, q, pg, "tenant_id = $1", string(tenant))
}

// ProjectsIn lists one page of a tenant's projects among ids.
func ProjectsIn(ctx context.Context, q Querier, tenant model.TenantID, ids []model.ProjectID, pg PageArgs) (Page[model.Project], error) {
	if len(ids) == 0 {
		return Page[model.Project]{}, nil
	}
	in, args := inList(ids, 1)
	return Projects.list(ctx, q, pg, "tenant_id = $1 AND id IN ("+in+")", append([]any{string(tenant)}, args...)...)
}

// ProjectMembersOf lists one page of a project's members.
func ProjectMembersOf(ctx context.Context, q Querier, project model.ProjectID, pg PageArgs) (Page[model.ProjectMember], error) {
	return ProjectMembers.list(ctx, q, pg, "project_id = $1", string(project))
}

// EnvironmentsOfProjects lists one page of environments per project, in
// one query.
func EnvironmentsOfProjects(ctx context.Context, q Querier, projects []string, pg PageArgs) (map[string]Page[model.Environment], error) {
	return Environments.listByParents(ctx, q, "project_id",
		func(e *model.Environment) string { return string(e.ProjectID) }, projects, pg, "ASC")
}

// ServicesOfProjects lists one page of services per project, in one
// query.
func ServicesOfProjects(ctx context.Context, q Querier, projects []string, pg PageArgs) (map[string]Page[model.Service], error) {
	return Services.listByParents(ctx, q, "project_id",
		func(s *model.Service) string { return string(s.ProjectID) }, projects, pg, "ASC")
}

// DeploymentsOfEnvironments lists one page of deployments per
// environment, newest first, in one query: the columns cols of each (see
// Cols; zero for whole rows).
func DeploymentsOfEnvironments(ctx context.Context, q Querier, envs []string, pg PageArgs, cols Cols) (map[string]Page[model.Deployment], error) {
	return Deployments.listByParentsJoined(ctx, q, "environment_id",
		func(d *model.Deployment) string { return string(d.EnvironmentID) }, envs, pg, "DESC", cols, nil)
}

// ClustersOf lists one page of a tenant's clusters.
func ClustersOf(ctx context.Context, q Querier, tenant model.TenantID, pg PageArgs) (Page[model.Cluster], error) {
	return Clusters.list(ctx, q, pg, "tenant_id = $1", string(tenant))
}

// AllClustersOf reads every cluster of a tenant.
func AllClustersOf(ctx context.Context, q Querier, tenant model.TenantID) ([]*model.Cluster, error) {
	return Clusters.all(ctx, q, "tenant_id = $1", string(tenant))
}

// CountClustersBehind counts a tenant's clusters whose agent has not
// acknowledged their desired revision yet.
func CountClustersBehind(ctx context.Context, q Querier, tenant model.TenantID) (int, error) {
	return Clusters.count(ctx, q, "tenant_id = $1 AND applied_revision < desired_revision", string(tenant))
}

// NamespaceTargetsOf lists one page of a cluster's namespace targets.
func NamespaceTargetsOf(ctx context.Context, q Querier, cluster model.ClusterID, pg PageArgs) (Page[model.NamespaceTarget], error) {
	return NamespaceTargets.list(ctx, q, pg, "cluster_id = $1", string(cluster))
}

// AllNamespaceTargetsOf reads every namespace target of a tenant.
func AllNamespaceTargetsOf(ctx context.Context, q Querier, tenant model.TenantID) ([]*model.NamespaceTarget, error) {
	return NamespaceTargets.all(ctx, q, "tenant_id = $1", string(tenant))
}

// ConnectTokensOf reads every connect token of a cluster: live, replaced
// and revoked.
func ConnectTokensOf(ctx context.Context, q Querier, cluster model.ClusterID) ([]*model.ConnectToken, error) {
	return ConnectTokens.all(ctx, q, "cluster_id = $1", string(cluster))
}

// VariablesOfService reads the variables set on a service itself.
func VariablesOfService(ctx context.Context, q Querier, svc model.ServiceID) ([]*model.Variable, error) {
	return Variables.all(ctx, q, "service_id = $1", string(svc))
}

// VariablesInScope reads the variables of one scope of a project.
func VariablesInScope(ctx context.Context, q Querier, project model.ProjectID, scopeKey string) ([]*model.Variable, error) {
	return Variables.all(ctx, q, "project_id = $1 AND scope_key = $2", string(project), scopeKey)
}

// SecretVariables reads every secret variable of every tenant, for
// re-sealing under a new key.
func SecretVariables(ctx context.Context, q Querier) ([]*model.Variable, error) {
	return Variables.all(ctx, q, "secret")
}

// ReleasesOf lists one page of a service's releases newest first, of one
// environment when env is not nil.
func ReleasesOf(ctx context.Context, q Querier, svc model.ServiceID, env *model.EnvironmentID, pg PageArgs) (Page[model.Release], error) {
	where, args := "service_id = $1", []any{string(svc)}
	if env != nil {
		where, args = where+" AND environment_id = $2", append(args, string(*env))
	}
	return Releases.newest(ctx, q, pg, where, args...)
}

// ReleaseByNumber is a service's release number n in an environment.
func ReleaseByNumber(ctx context.Context, q Querier, svc model.ServiceID, env model.EnvironmentID, n int) (*model.Release, error) {
	return Releases.one(ctx, q, "service_id = $1 AND environment_id = $2 AND number = $3", string(svc), string(env), n)
}

// ApprovalsOf reads the approvals given to a deployment.
func ApprovalsOf(ctx context.Context, q Querier, d model.DeploymentID) ([]*model.Approval, error) {
	return Approvals.all(ctx, q, "deployment_id = $1", string(d))
}

// DeploymentsWithReleasesOfEnvironments is DeploymentsOfEnvironments with
// each deployment's release read in the same statement, its columns
// release (zero for whole rows). A reader that shows neither processes nor
// domains leaves out "config", most of a release's row.
func DeploymentsWithReleasesOfEnvironments(ctx context.Context, q Querier, envs []string, pg PageArgs, cols, release Cols) (map[string]Page[model.Deployment], map[model.ReleaseID]*model.Release, error) {
	releases := map[model.ReleaseID]*model.Release{}
	if cols != 0 {
		cols |= Deployments.Cols("release_id") // the join's
	}
	names, at := Releases.picked("r", release)
	with := &joined{cols: names, at: at, join: "JOIN releases r ON r.id = page.release_id", scan: func(s Scanner) error {
		r, err := Releases.scan(s)
		if err == nil {
			releases[r.ID] = r
		}
		return err
	}}
	pages, err := Deployments.listByParentsJoined(ctx, q, "environment_id",
		func(d *model.Deployment) string { return string(d.EnvironmentID) }, envs, pg, "DESC", cols, with)
	if err != nil {
		return nil, nil, err
	}
	return pages, releases, nil
}
