package control

import (
	"context"
	"time"

	"github.com/nebulactrl/nebula/internal/store"
)

// Container logs and Kubernetes events are kept for a retention
// (NEBULA_LOG_RETENTION, 7 days). On PostgreSQL their tables are
// partitioned by day: a job creates the partitions of the days ahead and
// another drops the days past the retention whole, each run by one
// replica at a time; on SQLite the second deletes old rows in batches.

// DefaultLogRetention is how long container logs and events are kept.
const DefaultLogRetention = 7 * 24 * time.Hour

// logPartitionsAhead is how many days after today have their partitions
// before a line could need them.
const logPartitionsAhead = 2

// expireLogsBatch bounds the rows a run deletes per table on SQLite, so
// that a run never holds the store's one writer for long.
const expireLogsBatch = 5000

// WithLogRetention sets how long container logs and events are kept.
func WithLogRetention(d time.Duration) Option { return func(p *Plane) { p.logRetention = d } }

// logRetentionJob is the job that keeps the log tables: it creates the day
// partitions from the oldest day still kept through logPartitionsAhead
// days after today (rep.LogPartitions), then removes what is older than
// the retention — whole days on PostgreSQL, a batch of rows on SQLite —
// and returns the partitions dropped or rows deleted. One job, so that
// one transaction at a time changes the tables' partitions (two, each
// locking both parents in its own order, would deadlock).
func (p *Plane) logRetentionJob(ctx context.Context, q *txn, rep *JobReport) (int, error) {
	now := p.now()
	made, err := store.EnsureLogPartitions(ctx, q, now.Add(-p.logRetention), now.Add(logPartitionsAhead*24*time.Hour))
	if err != nil {
		return 0, err
	}
	rep.LogPartitions = made
	r, err := store.ExpireLogs(ctx, q, now.Add(-p.logRetention), expireLogsBatch)
	return r.Partitions + int(r.Rows), err
}
