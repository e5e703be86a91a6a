package store

import (
	"context"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// TryJobLock takes the lock of a background job for the rest of the
// transaction q, if no replica holds it: a job's run happens on one
// replica at a time. The embedded store has one replica; its write
// transaction already excludes every other.
func TryJobLock(ctx context.Context, q Querier, job string) (bool, error) {
	if q.Dialect().Name != "postgres" {
		return true, nil
	}
	rows, err := q.Query(ctx, `SELECT pg_try_advisory_xact_lock(hashtext('nebula.job.' || $1))`, job)
	if err != nil {
		return false, fmt.Errorf("locking job %s: %w", job, err)
	}
	defer rows.Close()
	var ok bool
	if rows.Next() {
		if err := rows.Scan(&ok); err != nil {
			return false, err
		}
	}
	return ok, rows.Err()
}

// StalledDeployments lists deployments being rolled out that have not moved
// since before, and are not already flagged.
func StalledDeployments(ctx context.Context, q Querier, before time.Time) ([]*model.Deployment, error) {
	in, stages := inList(model.RollingStages(), 1)
	return Deployments.all(ctx, q, `stage IN (`+in+`) AND blocker IS NULL AND updated_at < $1`,
		append([]any{before}, stages...)...)
}

// SilentClusters lists clusters heard from before (but at all) that have
// not been marked disconnected since their last heartbeat.
func SilentClusters(ctx context.Context, q Querier, before time.Time) ([]*model.Cluster, error) {
	return Clusters.all(ctx, q, `last_heartbeat_at < $1 AND (disconnected_at IS NULL OR disconnected_at < last_heartbeat_at)`, before)
}

// MarkDisconnected records that a cluster was found silent at.
func MarkDisconnected(ctx context.Context, q Querier, cluster model.ClusterID, at time.Time) error {
	return execOne(ctx, q, "marking cluster disconnected", `UPDATE clusters SET disconnected_at = $2 WHERE id = $1`, string(cluster), at)
}

// RolloutsOn lists a cluster's deployments being delivered or rolled out.
func RolloutsOn(ctx context.Context, q Querier, cluster model.ClusterID) ([]*model.Deployment, error) {
	in, stages := inList(model.RollingStages(), 1)
	return Deployments.all(ctx, q, `cluster_id = $1 AND stage IN (`+in+`)`, append([]any{string(cluster)}, stages...)...)
}
