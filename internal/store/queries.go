package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// LockTenant serialises writes within one tenant: plan limits, last-admin
// checks and release numbers are read and written under this lock. On
// SQLite every write transaction is already exclusive.
func LockTenant(ctx context.Context, q Querier, id model.TenantID) (*model.Tenant, error) {
	return Tenants.GetForUpdate(ctx, q, id)
}

// exec runs a statement that must touch one row.
func execOne(ctx context.Context, q Querier, what, sql string, args ...any) error {
	n, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func UpdateTenant(ctx context.Context, q Querier, t *model.Tenant) error {
	return execOne(ctx, q, "updating tenant", `UPDATE tenants SET name = $2, plan = $3 WHERE id = $1`,
		string(t.ID), t.Name, string(t.PlanName))
}

// CountTenants tells whether the store is empty.
func CountTenants(ctx context.Context, q Querier) (int, error) {
	return Tenants.count(ctx, q, "1 = 1")
}

// InsertUserIfAbsent creates the user unless one with the email exists
// (perhaps just created by a concurrent request) and returns the stored one.
func InsertUserIfAbsent(ctx context.Context, q Querier, u *model.User) (*model.User, error) {
	if _, err := q.Exec(ctx, `INSERT INTO users (id, email, name, kind, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (email) DO NOTHING`, string(u.ID), u.Email, u.Name, string(u.Kind), u.CreatedAt); err != nil {
		return nil, fmt.Errorf("inserting user: %w", err)
	}
	return UserByEmail(ctx, q, u.Email)
}

func UserByEmail(ctx context.Context, q Querier, email string) (*model.User, error) {
	return Users.one(ctx, q, "email = $1", email)
}

// GrantsOf reads every tenant and project role of a user, in two queries.
func GrantsOf(ctx context.Context, q Querier, user model.UserID) (*model.Grants, error) {
	g := &model.Grants{Tenants: map[model.TenantID]model.TenantRole{}, Projects: map[model.ProjectID]model.ProjectRole{}}
	ms, err := Members.all(ctx, q, "user_id = $1", string(user))
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		g.Tenants[m.TenantID] = m.Role
	}
	pms, err := ProjectMembers.all(ctx, q, "user_id = $1", string(user))
	if err != nil {
		return nil, err
	}
	for _, m := range pms {
		g.Projects[m.ProjectID] = m.Role
	}
	return g, nil
}

func UpdateMemberRole(ctx context.Context, q Querier, id model.MemberID, role model.TenantRole) error {
	return execOne(ctx, q, "updating member", `UPDATE members SET role = $2 WHERE id = $1`, string(id), string(role))
}

// DeleteProjectGrantsInTenant removes a user's project roles in one tenant.
func DeleteProjectGrantsInTenant(ctx context.Context, q Querier, tenant model.TenantID, user model.UserID) error {
	_, err := q.Exec(ctx, `DELETE FROM project_members WHERE tenant_id = $1 AND user_id = $2`, string(tenant), string(user))
	return err
}

func UpdateProjectMemberRole(ctx context.Context, q Querier, id model.ProjectMemberID, role model.ProjectRole) error {
	return execOne(ctx, q, "updating project member", `UPDATE project_members SET role = $2 WHERE id = $1`,
		string(id), string(role))
}

// TokenByHash reads the API token with a hash and its user as the token's
// tenant knows them (UserAsKnownIn), in one statement: every API request
// authenticates with it. ErrNotFound if no token has the hash.
func TokenByHash(ctx context.Context, q Querier, hash []byte) (*model.APIToken, *model.User, error) {
	rows, err := q.Query(ctx, `SELECT `+qualified("t", Tokens.Columns)+`, `+knownUserColumns+`
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		JOIN member_profiles p ON p.user_id = u.id AND p.tenant_id = t.tenant_id
		WHERE t.hash = $1`, hash)
	if err != nil {
		return nil, nil, fmt.Errorf("reading token: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, nil, fmt.Errorf("reading token: %w", err)
		}
		return nil, nil, ErrNotFound
	}
	total := len(Tokens.Columns) + knownUserWidth
	tok, err := Tokens.scan(newColumnsAt(rows, 0, total, skipping(q)))
	if err != nil {
		return nil, nil, fmt.Errorf("reading token: %w", err)
	}
	u, err := scanKnownUser(newColumnsAt(rows, len(Tokens.Columns), total, skipping(q)))
	if err != nil {
		return nil, nil, fmt.Errorf("reading token user: %w", err)
	}
	return tok, u, rows.Err()
}

// TouchToken records a use of the token, at most once per interval, so that
// authentication does not write on every request.
func TouchToken(ctx context.Context, q Querier, id model.TokenID, now time.Time, interval time.Duration) error {
	_, err := q.Exec(ctx, `UPDATE api_tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`,
		string(id), now, now.Add(-interval))
	return err
}

func RevokeToken(ctx context.Context, q Querier, id model.TokenID, now time.Time) error {
	return execOne(ctx, q, "revoking token", `UPDATE api_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`,
		string(id), now)
}

func UpdateProject(ctx context.Context, q Querier, p *model.Project) error {
	return execOne(ctx, q, "updating project", `UPDATE projects SET name = $2, description = $3 WHERE id = $1`,
		string(p.ID), p.Name, p.Description)
}

func UpdateEnvironment(ctx context.Context, q Querier, e *model.Environment) error {
	return execOne(ctx, q, "updating environment",
		`UPDATE environments SET name = $2, protected = $3, cluster_selector = $4, namespace_selector = $5 WHERE id = $1`,
		string(e.ID), e.Name, e.Protected, encodeJSON(e.ClusterSelector), encodeJSON(e.NamespaceSelector))
}

func SetClusterLabels(ctx context.Context, q Querier, id model.ClusterID, labels model.Labels) error {
	return execOne(ctx, q, "updating cluster", `UPDATE clusters SET labels = $2 WHERE id = $1`,
		string(id), encodeJSON(labels))
}

func SetNamespaceTargetLabels(ctx context.Context, q Querier, id model.NamespaceTargetID, labels model.Labels) error {
	return execOne(ctx, q, "updating namespace target", `UPDATE namespace_targets SET labels = $2 WHERE id = $1`,
		string(id), encodeJSON(labels))
}

func UpdateService(ctx context.Context, q Querier, s *model.Service) error {
	return execOne(ctx, q, "updating service",
		`UPDATE services SET image = $2, config = $3, git = $4, git_credential = $5, updated_at = $6 WHERE id = $1`,
		string(s.ID), s.Image, encodeJSON(s.ServiceConfig), gitColumn(s.Git), s.GitCredential, s.UpdatedAt)
}

// ReleaseNumbers are the highest release numbers of a project's services,
// per service and environment (absent: none yet), in one query: a change
// that releases many services numbers them all from it. Callers hold the
// tenant lock.
func ReleaseNumbers(ctx context.Context, q Querier, project model.ProjectID) (map[[2]string]int, error) {
	rows, err := q.Query(ctx, `SELECT service_id, environment_id, MAX(number) FROM releases WHERE project_id = $1
		GROUP BY service_id, environment_id`, string(project))
	if err != nil {
		return nil, fmt.Errorf("reading release numbers: %w", err)
	}
	defer rows.Close()
	out := map[[2]string]int{}
	for rows.Next() {
		var k [2]string
		var n int
		if err := rows.Scan(&k[0], &k[1], &n); err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, rows.Err()
}

// NextReleaseNumber is one more than the highest release number of the
// service in the environment. Callers hold the tenant lock.
func NextReleaseNumber(ctx context.Context, q Querier, svc model.ServiceID, env model.EnvironmentID) (int, error) {
	n, err := count(ctx, q, `SELECT COALESCE(MAX(number), 0) FROM releases WHERE service_id = $1 AND environment_id = $2`,
		string(svc), string(env))
	return n + 1, err
}

// Usage counts what a tenant uses of each limited resource, in one query.
func Usage(ctx context.Context, q Querier, tenant model.TenantID) (model.Usage, error) {
	rows, err := q.Query(ctx, `SELECT
		(SELECT COUNT(*) FROM clusters WHERE tenant_id = $1),
		(SELECT COUNT(*) FROM projects WHERE tenant_id = $1),
		(SELECT COUNT(*) FROM environments WHERE tenant_id = $1 AND protected),
		(SELECT COUNT(*) FROM members WHERE tenant_id = $1),
		(SELECT COUNT(*) FROM services WHERE tenant_id = $1),
		(SELECT COUNT(*) FROM builds WHERE tenant_id = $1 AND status = $2)`, string(tenant), string(model.BuildRunning))
	if err != nil {
		return nil, fmt.Errorf("counting usage: %w", err)
	}
	defer rows.Close()
	var c, p, pe, m, s, b int
	if rows.Next() {
		if err := rows.Scan(&c, &p, &pe, &m, &s, &b); err != nil {
			return nil, err
		}
	}
	return model.Usage{
		model.LimitClusters: c, model.LimitProjects: p, model.LimitProtectedEnvironments: pe,
		model.LimitMembers: m, model.LimitServices: s, model.LimitConcurrentBuilds: b,
	}, rows.Err()
}

// RevokeUserTokens revokes every live token of a user in a tenant.
func RevokeUserTokens(ctx context.Context, q Querier, tenant model.TenantID, user model.UserID, now time.Time) error {
	_, err := q.Exec(ctx, `UPDATE api_tokens SET revoked_at = $3 WHERE tenant_id = $1 AND user_id = $2 AND revoked_at IS NULL`,
		string(tenant), string(user), now)
	return err
}

// VariableIn reads the variable of a scope by name.
func VariableIn(ctx context.Context, q Querier, project model.ProjectID, scopeKey, name string) (*model.Variable, error) {
	return Variables.one(ctx, q, "project_id = $1 AND scope_key = $2 AND name = $3", string(project), scopeKey, name)
}

// UpdateVariable stores a new value (sealed for a secret).
func UpdateVariable(ctx context.Context, q Querier, v *model.Variable) error {
	return execOne(ctx, q, "updating variable", `UPDATE variables SET secret = $2, value = $3, updated_at = $4 WHERE id = $1`,
		string(v.ID), v.Secret, v.Value, v.UpdatedAt)
}

// ReplaceSealed swaps a sealed value for the same secret sealed under
// another key, unless the value changed meanwhile. It reports whether it
// swapped; the variable's updated time stays, as its value did.
func ReplaceSealed(ctx context.Context, q Querier, id model.VariableID, old, sealed string) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE variables SET value = $3 WHERE id = $1 AND secret AND value = $2`, string(id), old, sealed)
	if err != nil {
		return false, fmt.Errorf("resealing variable: %w", err)
	}
	return n == 1, nil
}

// ConnectTokenByHash finds a connect token by the hash of its secret.
func ConnectTokenByHash(ctx context.Context, q Querier, hash []byte) (*model.ConnectToken, error) {
	return ConnectTokens.one(ctx, q, "hash = $1", hash)
}

// ExpireConnectTokens gives every live token of a cluster an end (the grace
// window after a regeneration), unless it already ends sooner.
func ExpireConnectTokens(ctx context.Context, q Querier, cluster model.ClusterID, at time.Time) error {
	_, err := q.Exec(ctx, `UPDATE connect_tokens SET expires_at = $2
		WHERE cluster_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)`, string(cluster), at)
	return err
}

func RevokeConnectToken(ctx context.Context, q Querier, id model.ConnectTokenID, now time.Time) error {
	return execOne(ctx, q, "revoking connect token",
		`UPDATE connect_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`, string(id), now)
}

func TouchConnectToken(ctx context.Context, q Querier, id model.ConnectTokenID, now time.Time) error {
	_, err := q.Exec(ctx, `UPDATE connect_tokens SET last_used_at = $2 WHERE id = $1`, string(id), now)
	return err
}

// Heartbeat is an agent's report, for RecordHeartbeats. A nil Inventory
// leaves the stored one as it is: most heartbeats repeat the last one, and
// not rewriting it spares the database most of the report's cost.
type Heartbeat struct {
	Cluster   model.ClusterID
	At        time.Time
	Inventory *string
	Applied   int64  // the revision the agent says it has applied
	Hash      string // the hash of the state it applied; "" when it reports none
}

// RecordHeartbeat stores one agent's report (see RecordHeartbeats);
// ErrNotFound if there is no such cluster.
func RecordHeartbeat(ctx context.Context, q Querier, cluster model.ClusterID, at time.Time, inventory *string, applied int64, hash string) error {
	n, err := RecordHeartbeats(ctx, q, []Heartbeat{{Cluster: cluster, At: at, Inventory: inventory, Applied: applied, Hash: hash}})
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	return err
}

// RecordHeartbeats stores agents' reports, one per cluster, and tells how
// many clusters it found. The applied revision only ever grows: a stale or
// reordered report cannot move it back. What a report says it runs (the
// revision and the hash of the state it applied) is kept as said, for the
// control plane to confirm against the revision's own hash. On PostgreSQL
// they are written in one statement, whatever their number, but for those
// whose rows another transaction holds (see recordFreeHeartbeats).
func RecordHeartbeats(ctx context.Context, q Querier, beats []Heartbeat) (int, error) {
	if len(beats) == 0 {
		return 0, nil
	}
	var written map[model.ClusterID]bool
	one := `(SELECT $2 AS at, $3 AS applied, $4 AS hash, $5 AS inv) b`
	if q.Dialect().Name == "postgres" {
		var err error
		if written, err = recordFreeHeartbeats(ctx, q, beats); err != nil {
			return 0, err
		}
		one = `(SELECT $2::timestamptz AS at, $3::bigint AS applied, $4::text AS hash, $5::text AS inv) b`
	}
	found := len(written)
	for _, h := range beats {
		if written[h.Cluster] {
			continue
		}
		n, err := q.Exec(ctx, `UPDATE clusters SET `+heartbeatSet+` FROM `+one+` WHERE clusters.id = $1`,
			string(h.Cluster), h.At, h.Applied, h.Hash, h.Inventory)
		if err != nil {
			return found, fmt.Errorf("recording heartbeat: %w", err)
		}
		found += int(n)
	}
	return found, nil
}

// heartbeatSet writes a report b over its cluster's row.
const heartbeatSet = `last_heartbeat_at = b.at, applied_revision = CASE
		WHEN b.applied > clusters.applied_revision AND b.applied <= clusters.desired_revision THEN b.applied
		ELSE clusters.applied_revision END,
	reported_revision = b.applied, reported_hash = b.hash, inventory = COALESCE(b.inv, clusters.inventory)`

// recordFreeHeartbeats writes, in one statement on PostgreSQL, the reports
// whose rows no other transaction holds, and tells which it wrote.
//
// A round holds the rows it locked until it ends, so it must never wait
// for a row while holding others: a transaction that holds a cluster and
// waits for a tenant lock, and a change that holds the tenant and waits
// for a row of the round, would close a cycle (the load run met it). So
// the round takes only the rows free now (SKIP LOCKED, in id order), and
// RecordHeartbeats writes each report it left out after it, alone,
// waiting for its row while holding nothing else.
func recordFreeHeartbeats(ctx context.Context, q Querier, beats []Heartbeat) (map[model.ClusterID]bool, error) {
	rows, err := q.Query(ctx, `WITH free AS (SELECT id FROM clusters WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED)
		UPDATE clusters SET `+heartbeatSet+` FROM `+heartbeatRows+`
		WHERE clusters.id = b.id AND clusters.id IN (SELECT id FROM free) RETURNING clusters.id`, heartbeatArgs(beats)...)
	if err != nil {
		return nil, fmt.Errorf("recording heartbeats: %w", err)
	}
	defer rows.Close()
	written := make(map[model.ClusterID]bool, len(beats))
	for rows.Next() {
		var id model.ClusterID
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("recording heartbeats: %w", err)
		}
		written[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recording heartbeats: %w", err)
	}
	return written, nil
}

// heartbeatRows are heartbeatArgs as rows b(id, at, applied, hash, inv),
// on PostgreSQL.
const heartbeatRows = `unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::text[], $5::text[]) AS b(id, at, applied, hash, inv)`

func heartbeatArgs(beats []Heartbeat) []any {
	ids, ats := make([]string, len(beats)), make([]time.Time, len(beats))
	applied, hashes, inventories := make([]int64, len(beats)), make([]string, len(beats)), make([]*string, len(beats))
	for i, h := range beats {
		ids[i], ats[i], applied[i], hashes[i], inventories[i] = string(h.Cluster), h.At, h.Applied, h.Hash, h.Inventory
	}
	return []any{ids, ats, applied, hashes, inventories}
}

// RecordAck stores the outcome of applying a revision: applied moves the
// applied revision forward (never back, never past the desired one);
// failed keeps the object errors for people to read.
func RecordAck(ctx context.Context, q Querier, cluster model.ClusterID, revision int64, failed *model.ApplyFailure) error {
	if failed == nil {
		// A stale ack (older than what is applied) or one beyond the
		// desired revision changes nothing, errors included.
		return execOne(ctx, q, "recording ack", `UPDATE clusters SET
			apply_errors = CASE WHEN $2 >= applied_revision AND $2 <= desired_revision THEN '' ELSE apply_errors END,
			applied_revision = CASE WHEN $2 > applied_revision AND $2 <= desired_revision THEN $2 ELSE applied_revision END
			WHERE id = $1`, string(cluster), revision)
	}
	b, err := json.Marshal(failed)
	if err != nil {
		return fmt.Errorf("encoding apply errors: %w", err)
	}
	return execOne(ctx, q, "recording ack", `UPDATE clusters SET apply_errors = $2 WHERE id = $1`, string(cluster), string(b))
}

// PendingCommands are a cluster's commands not yet acknowledged, oldest
// first: queued ones, and delivered ones whose ack was lost with a session.
func PendingCommands(ctx context.Context, q Querier, cluster model.ClusterID) ([]*model.Command, error) {
	return Commands.all(ctx, q, "cluster_id = $1 AND status IN ($2, $3)",
		string(cluster), string(model.CommandQueued), string(model.CommandDelivered))
}

// MarkCommand moves a command of a cluster to a status; an acknowledged
// command never moves again. It reports whether it moved.
func MarkCommand(ctx context.Context, q Querier, cluster model.ClusterID, id model.CommandID, status model.CommandStatus, result string, now time.Time) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE cluster_commands SET status = $3, result = $4, updated_at = $5
		WHERE id = $1 AND cluster_id = $2 AND status IN ($6, $7)`, string(id), string(cluster), string(status), result, now,
		string(model.CommandQueued), string(model.CommandDelivered))
	if err != nil {
		return false, fmt.Errorf("marking command: %w", err)
	}
	return n == 1, nil
}

// SetCommandProject records the project a command acts in.
func SetCommandProject(ctx context.Context, q Querier, id model.CommandID, project model.ProjectID) error {
	return execOne(ctx, q, "recording command project", `UPDATE cluster_commands SET project_id = $2 WHERE id = $1`,
		string(id), string(project))
}

// CommandProject reads the project a command acts in; nil for a
// cluster-wide command, and for a restart queued before commands recorded
// their project.
func CommandProject(ctx context.Context, q Querier, id model.CommandID) (*model.ProjectID, error) {
	rows, err := q.Query(ctx, `SELECT project_id FROM cluster_commands WHERE id = $1`, string(id))
	if err != nil {
		return nil, fmt.Errorf("reading command project: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, ErrNotFound
	}
	var p *model.ProjectID
	if err := rows.Scan(&p); err != nil {
		return nil, fmt.Errorf("reading command project: %w", err)
	}
	return p, rows.Err()
}

// CommandsIn lists a cluster's commands newest first: when all is false,
// only those acting in one of projects and those of no project that are
// not restarts (cluster-wide commands).
func CommandsIn(ctx context.Context, q Querier, cluster model.ClusterID, all bool, projects []model.ProjectID, pg PageArgs) (Page[model.Command], error) {
	if all {
		return Commands.newest(ctx, q, pg, "cluster_id = $1", string(cluster))
	}
	where := "cluster_id = $1 AND ((project_id IS NULL AND kind <> $2)"
	args := []any{string(cluster), string(model.CommandRestartProcess)}
	if len(projects) > 0 {
		in, ps := inList(projects, 2)
		where += " OR project_id IN (" + in + ")"
		args = append(args, ps...)
	}
	return Commands.newest(ctx, q, pg, where+")", args...)
}

// TokensOf lists a user's API tokens in a tenant, oldest first: live,
// expired and revoked.
func TokensOf(ctx context.Context, q Querier, tenant model.TenantID, user model.UserID, pg PageArgs) (Page[model.APIToken], error) {
	return Tokens.list(ctx, q, pg, "tenant_id = $1 AND user_id = $2", string(tenant), string(user))
}

// CountLiveTokens counts a user's tokens in a tenant that still work at
// now: neither revoked nor expired.
func CountLiveTokens(ctx context.Context, q Querier, tenant model.TenantID, user model.UserID, now time.Time) (int, error) {
	return count(ctx, q, `SELECT COUNT(*) FROM api_tokens WHERE tenant_id = $1 AND user_id = $2 AND revoked_at IS NULL
		AND (expires_at IS NULL OR expires_at > $3)`, string(tenant), string(user), now)
}

// UnrevokedTokens lists a user's tokens in a tenant not revoked yet
// (expired ones included), oldest first.
func UnrevokedTokens(ctx context.Context, q Querier, tenant model.TenantID, user model.UserID) ([]*model.APIToken, error) {
	return Tokens.all(ctx, q, "tenant_id = $1 AND user_id = $2 AND revoked_at IS NULL", string(tenant), string(user))
}
