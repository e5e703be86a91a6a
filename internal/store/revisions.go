package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// BumpRevision gives a cluster the next desired revision with its hash,
// redacted state and the audited change that caused it ("": none), and
// returns the new number. Callers hold the tenant lock, so revisions of one
// cluster are assigned one at a time, on every replica.
func BumpRevision(ctx context.Context, q Querier, cluster model.ClusterID, hash, redactedState string, cause model.AuditEventID, now time.Time) (int64, error) {
	rows, err := q.Query(ctx, `UPDATE clusters SET desired_revision = desired_revision + 1, desired_hash = $2
		WHERE id = $1 RETURNING desired_revision`, string(cluster), hash)
	if err != nil {
		return 0, fmt.Errorf("bumping revision: %w", err)
	}
	var rev int64
	found := rows.Next()
	if found {
		err = rows.Scan(&rev)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("bumping revision: %w", err)
	}
	if !found {
		return 0, ErrNotFound
	}
	var seq *int64
	if cause != "" {
		n, err := strconv.ParseInt(string(cause), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("recording revision: the cause %q is not an audit event's id", cause)
		}
		seq = &n
	}
	if _, err := q.Exec(ctx, `INSERT INTO cluster_revisions (cluster_id, revision, hash, state, audit_seq, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		string(cluster), rev, hash, redactedState, seq, now); err != nil {
		return 0, fmt.Errorf("recording revision: %w", err)
	}
	return rev, nil
}

// Revision is one stored desired revision of a cluster.
type Revision struct {
	Cluster model.ClusterID
	Number  int64
	Hash    string
	State   string // redacted JSON; empty when read for a list
	// Cause is the audit event of the change that made the revision;
	// empty for revisions made before causes were recorded.
	Cause     model.AuditEventID
	CreatedAt time.Time
}

// LatestRevision reads a cluster's newest revision.
func LatestRevision(ctx context.Context, q Querier, cluster model.ClusterID) (*Revision, error) {
	rs, err := revisions(ctx, q, true, "cluster_id = $1 ORDER BY revision DESC LIMIT 1", string(cluster))
	if err != nil || len(rs) == 0 {
		return nil, cmp.Or(err, ErrNotFound)
	}
	return rs[0], nil
}

// RevisionByNumber reads one revision of a cluster, state included.
func RevisionByNumber(ctx context.Context, q Querier, cluster model.ClusterID, number int64) (*Revision, error) {
	rs, err := revisions(ctx, q, true, "cluster_id = $1 AND revision = $2", string(cluster), number)
	if err != nil || len(rs) == 0 {
		return nil, cmp.Or(err, ErrNotFound)
	}
	return rs[0], nil
}

// RevisionHistory reads up to limit revisions of a cluster older than
// before (0: the newest), newest first, without their states, and whether
// older ones remain.
func RevisionHistory(ctx context.Context, q Querier, cluster model.ClusterID, before int64, limit int) ([]*Revision, bool, error) {
	return revisionPage(ctx, q, cluster, before, limit, false)
}

// RevisionsAfter reads a cluster's revisions numbered above after (0:
// from the first), oldest first, at most limit, and whether newer ones
// remain.
func RevisionsAfter(ctx context.Context, q Querier, cluster model.ClusterID, after int64, limit int) ([]*Revision, bool, error) {
	return revisionPage(ctx, q, cluster, after, limit, true)
}

func revisionPage(ctx context.Context, q Querier, cluster model.ClusterID, from int64, limit int, up bool) ([]*Revision, bool, error) {
	where := "cluster_id = $1 AND revision > $2 ORDER BY revision LIMIT $3"
	if !up {
		where = "cluster_id = $1 AND revision < $2 ORDER BY revision DESC LIMIT $3"
		if from <= 0 {
			from = math.MaxInt64
		}
	}
	rs, err := revisions(ctx, q, false, where, string(cluster), from, limit+1)
	if err != nil {
		return nil, false, err
	}
	more := len(rs) > limit
	return rs[:min(len(rs), limit)], more, nil
}

func revisions(ctx context.Context, q Querier, withState bool, where string, args ...any) ([]*Revision, error) {
	state := "''"
	if withState {
		state = "state"
	}
	rows, err := q.Query(ctx, `SELECT cluster_id, revision, hash, `+state+`, audit_seq, created_at FROM cluster_revisions WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("reading revisions: %w", err)
	}
	defer rows.Close()
	var out []*Revision
	for rows.Next() {
		var r Revision
		var seq *int64
		if err := rows.Scan(&r.Cluster, &r.Number, &r.Hash, &r.State, &seq, &r.CreatedAt); err != nil {
			return nil, fmt.Errorf("reading revisions: %w", err)
		}
		if seq != nil {
			r.Cause = model.AuditEventID(strconv.FormatInt(*seq, 10))
		}
		out = append(out, &r)
	}
	return out, rows.Err()
}

// RevisionOutcome is what one agent reported of applying a revision.
type RevisionOutcome struct {
	Revision int64
	// Agent is the agent instance (its pod's name).
	Agent  string
	Failed bool
	// Errors are a failure's object errors.
	Errors []model.ObjectError
	At     time.Time
}

// RecordOutcome keeps an agent's outcome of applying a revision of its
// cluster: the first report of each result per agent (an agent that
// reconnects reports again; a revision it failed and then applied has
// both). A revision the cluster does not have is not recorded.
func RecordOutcome(ctx context.Context, q Querier, cluster model.ClusterID, o RevisionOutcome) error {
	n, err := count(ctx, q, `SELECT COUNT(*) FROM cluster_revisions WHERE cluster_id = $1 AND revision = $2`, string(cluster), o.Revision)
	if err != nil || n == 0 {
		return err
	}
	result, errs := "applied", ""
	if o.Failed {
		result, errs = "failed", encodeJSON(o.Errors)
	}
	if _, err := q.Exec(ctx, `INSERT INTO revision_outcomes (cluster_id, revision, agent, result, errors, reported_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, string(cluster), o.Revision, o.Agent, result, errs, o.At); err != nil {
		return fmt.Errorf("recording a revision's outcome: %w", err)
	}
	return nil
}

// RevisionOutcomes reads the outcomes of some revisions of a cluster,
// oldest first per revision.
func RevisionOutcomes(ctx context.Context, q Querier, cluster model.ClusterID, numbers []int64) (map[int64][]RevisionOutcome, error) {
	out := map[int64][]RevisionOutcome{}
	if len(numbers) == 0 {
		return out, nil
	}
	args := []any{string(cluster)}
	ph := make([]string, len(numbers))
	for i, n := range numbers {
		args = append(args, n)
		ph[i] = fmt.Sprintf("$%d", len(args))
	}
	rows, err := q.Query(ctx, `SELECT revision, agent, result, errors, reported_at FROM revision_outcomes
		WHERE cluster_id = $1 AND revision IN (`+strings.Join(ph, ", ")+`) ORDER BY revision, reported_at, agent`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading revision outcomes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o RevisionOutcome
		var result, errs string
		if err := rows.Scan(&o.Revision, &o.Agent, &result, &errs, &o.At); err != nil {
			return nil, fmt.Errorf("reading revision outcomes: %w", err)
		}
		o.Failed = result == "failed"
		if errs != "" {
			if err := decodeJSON(&o.Errors, errs); err != nil {
				return nil, err
			}
		}
		out[o.Revision] = append(out[o.Revision], o)
	}
	return out, rows.Err()
}

// TenantRows is everything of a tenant the desired-state compiler reads.
type TenantRows struct {
	Clusters     []*model.Cluster
	Targets      []*model.NamespaceTarget
	Projects     []*model.Project
	Environments []*model.Environment
	Services     []*model.Service
	Variables    []*model.Variable
	// Versions are the sealed secret versions the current releases froze.
	Versions map[model.SecretVersionID]*model.SecretVersion
	// Current is the release of the newest live deployment of each service
	// in each environment, and Live those deployments.
	Current []*model.Release
	Live    []*model.Deployment
}

// ReleaseCache keeps releases read before, by id. A release never changes
// once it has its image (an image digest and the configuration frozen when
// it was made; a release waiting for its build gets its digest once, and one
// made before releases froze their variables gets them once: neither is
// kept until then), so the copy read for one compile serves every later one, and a
// compile reads only the releases it has not seen: one per deploy, not the
// tenant's thousand. Safe for concurrent use; bounded, it starts again
// empty when full. Callers must not modify the releases it returns.
type ReleaseCache struct {
	mu  sync.Mutex
	m   map[model.ReleaseID]*model.Release
	max int
}

// NewReleaseCache returns an empty cache of at most max releases.
func NewReleaseCache(max int) *ReleaseCache {
	return &ReleaseCache{m: map[model.ReleaseID]*model.Release{}, max: max}
}

// known splits ids into the releases the cache holds and the ids it does not.
func (c *ReleaseCache) known(ids []model.ReleaseID) (map[model.ReleaseID]*model.Release, []model.ReleaseID) {
	out := make(map[model.ReleaseID]*model.Release, len(ids))
	if c == nil {
		return out, ids
	}
	var missing []model.ReleaseID
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if r, ok := c.m[id]; ok {
			out[id] = r
		} else {
			missing = append(missing, id)
		}
	}
	return out, missing
}

// ByIDs is Releases.ByIDs reading only the releases the cache does not
// hold (a nil cache reads them all), and keeping those it read. The
// returned releases are shared: callers must not modify them.
func (c *ReleaseCache) ByIDs(ctx context.Context, q Querier, ids []model.ReleaseID) (map[model.ReleaseID]*model.Release, error) {
	byID, missing := c.known(ids)
	if len(missing) > 0 {
		read, err := Releases.ByIDs(ctx, q, missing)
		if err != nil {
			return nil, err
		}
		c.keep(read)
		maps.Copy(byID, read)
	}
	return byID, nil
}

// keep adds releases read from the database.
func (c *ReleaseCache) keep(rs map[model.ReleaseID]*model.Release) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m)+len(rs) > c.max {
		c.m = map[model.ReleaseID]*model.Release{}
	}
	for id, r := range rs {
		if r.ImageDigest != "" && r.Frozen() {
			c.m[id] = r
		}
	}
}

// LoadTenantRows reads a tenant's rows for compiling, in a fixed number of
// queries. The current releases come from known where it holds them (nil:
// every one is read).
func LoadTenantRows(ctx context.Context, q Querier, tenant model.TenantID, known *ReleaseCache) (*TenantRows, error) {
	var r TenantRows
	var err error
	t := string(tenant)
	if r.Clusters, err = Clusters.all(ctx, q, "tenant_id = $1", t); err != nil {
		return nil, err
	}
	if r.Targets, err = NamespaceTargets.all(ctx, q, "tenant_id = $1", t); err != nil {
		return nil, err
	}
	if r.Projects, err = Projects.all(ctx, q, "tenant_id = $1", t); err != nil {
		return nil, err
	}
	if r.Environments, err = Environments.all(ctx, q, "tenant_id = $1", t); err != nil {
		return nil, err
	}
	if r.Services, err = Services.all(ctx, q, "tenant_id = $1", t); err != nil {
		return nil, err
	}
	if r.Variables, err = Variables.all(ctx, q, "tenant_id = $1", t); err != nil {
		return nil, err
	}
	if r.Live, err = liveDeployments(ctx, q, "s.tenant_id = $1", t); err != nil {
		return nil, err
	}
	ids := make([]model.ReleaseID, 0, len(r.Live))
	for _, d := range r.Live {
		ids = append(ids, d.ReleaseID)
	}
	byID, err := known.ByIDs(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	var versions []model.SecretVersionID
	for _, d := range r.Live {
		if rel := byID[d.ReleaseID]; rel != nil {
			r.Current = append(r.Current, rel)
			for _, v := range rel.Variables {
				if v.Secret {
					versions = append(versions, v.Version)
				}
			}
		}
	}
	slices.Sort(versions)
	if r.Versions, err = SecretVersions.ByIDs(ctx, q, slices.Compact(versions)); err != nil {
		return nil, err
	}
	return &r, nil
}

// SetReleaseDigest gives a release waiting for its build the image the
// build made. It is set once: a release with an image keeps it.
func SetReleaseDigest(ctx context.Context, q Querier, id model.ReleaseID, digest string) error {
	return execOne(ctx, q, "setting a release's image", `UPDATE releases SET image_digest = $2 WHERE id = $1 AND image_digest = ''`,
		string(id), digest)
}

// liveDeployments reads the newest live deployment of each pair of a
// service and an environment of one project whose service matches cond
// (on services s, with $1 its one argument).
//
// The newest live deployment decides what runs: one that is queued or
// awaits approval does not yet, one that failed, was cancelled or rolled
// back no longer does. One that was delivered and then superseded still
// counts, so that cancelling or rolling back the newer one returns to it.
//
// A deployment's service and environment are of one project (Deploy
// refuses others), so the pairs are those of each project. For each, the
// newest live one is found through deployments_pair_idx, backwards from
// the newest, as far as the first live one: the cost is the pairs, not
// the history. PostgreSQL walks each pair once in a lateral join; SQLite,
// which has none, in a correlated subquery.
func liveDeployments(ctx context.Context, q Querier, cond string, arg any) ([]*model.Deployment, error) {
	in, live := inList(model.LiveStages(), 2)
	newest := `SELECT d.id FROM deployments d WHERE d.service_id = s.id AND d.environment_id = e.id
		AND (d.stage IN (` + in + `) OR d.stage = $2 AND d.delivered_at IS NOT NULL) ORDER BY d.id DESC LIMIT 1`
	pairs := `services s JOIN environments e ON e.project_id = s.project_id`
	where := `id IN (SELECT (` + newest + `) FROM ` + pairs + ` WHERE ` + cond + `)`
	if q.Dialect().Name == "postgres" {
		where = `id IN (SELECT l.id FROM ` + pairs + ` CROSS JOIN LATERAL (` + newest + `) l WHERE ` + cond + `)`
	}
	return Deployments.all(ctx, q, where, append([]any{arg, string(model.StageSuperseded)}, live...)...)
}

// LiveOfProject reads the newest live deployment of each service of a
// project in each of its environments (see liveDeployments): what runs.
func LiveOfProject(ctx context.Context, q Querier, project model.ProjectID) ([]*model.Deployment, error) {
	return liveDeployments(ctx, q, "s.project_id = $1", string(project))
}
