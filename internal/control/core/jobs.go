package core

import (
	"context"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/store"
)

// Background jobs, run by every replica on a timer and, per run, by one
// replica only (store.TryJobLock): a replica that finds the job's lock
// taken skips it. Each job acts only on rows still in the state it looks
// for, inside its transaction, so a run that follows another does nothing
// twice.

// JobReport says what one run of the jobs did.
type JobReport struct {
	Expired, Stalled, Disconnected int
	// Keys counts idempotency keys deleted because their window closed.
	Keys int
	// Builds counts builds handed out, timed out or handed out again;
	// BuildLogLines the log lines deleted after their retention.
	Builds, BuildLogLines int
	// LogPartitions counts the day partitions of container logs and
	// events created ahead; LogsExpired the partitions dropped
	// (PostgreSQL) or rows deleted (SQLite) past the retention.
	LogPartitions, LogsExpired int
	// Messages counts webhook messages deleted past their retention;
	// CLILogins the CLI sign-ins deleted once expired.
	Messages, CLILogins int
	// ChangeSets counts change sets whose submission or approval lapsed.
	ChangeSets int
	// Skipped names jobs whose lock another replica held.
	Skipped []string
}

// A Job is a background job: it runs once a pass, in a transaction that
// holds the job's lock (a replica whose lock another holds skips it), as
// the jobs' system subject, and counts what it did into the pass's report.
// The core has its own; a domain adds its jobs when it is made (AddJob).
type Job struct {
	Name string
	// Run does the job; what it returns is counted into the report's
	// field that Count names (it may fill in others of rep too).
	Run   func(ctx context.Context, q *Txn, rep *JobReport) (int, error)
	Count func(rep *JobReport) *int
}

// Counted is the Run of a job that needs nothing of the report but the
// count it returns.
func Counted(run func(context.Context, *Txn) (int, error)) func(context.Context, *Txn, *JobReport) (int, error) {
	return func(ctx context.Context, q *Txn, _ *JobReport) (int, error) { return run(ctx, q) }
}

// AddJob adds a domain's job to every pass, after those added before it.
// It is called while the plane is made, before the jobs run.
func (p *Plane) AddJob(j Job) {
	if j.Run == nil || j.Count == nil {
		return
	}
	p.jobs = append(p.jobs, j)
}

// RunJobs runs the jobs every interval until ctx ends.
func (p *Plane) RunJobs(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := p.RunJobsOnce(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("background jobs", "error", err)
		}
	}
}

// RunJobsOnce runs each job once.
func (p *Plane) RunJobsOnce(ctx context.Context) (JobReport, error) {
	ctx = As(ctx, SystemJobs)
	var rep JobReport
	jobs := append([]Job{
		{"expire-cli-logins", Counted(func(ctx context.Context, q *Txn) (int, error) { return store.DeleteExpiredCLILogins(ctx, q, p.now()) }),
			func(r *JobReport) *int { return &r.CLILogins }},
	}, p.jobs...)
	for _, j := range jobs {
		var skipped bool
		err := p.InTx(ctx, func(q *Txn) error {
			ok, err := store.TryJobLock(ctx, q, j.Name)
			if err != nil || !ok {
				skipped = err == nil
				return err
			}
			*j.Count(&rep), err = j.Run(ctx, q, &rep)
			return err
		})
		if err != nil {
			return rep, fmt.Errorf("job %s: %w", j.Name, err)
		}
		if skipped {
			rep.Skipped = append(rep.Skipped, j.Name)
		}
	}
	p.jobPasses.Add(1)
	return rep, nil
}

// JobPasses is how many passes of the jobs this process finished (every
// job run, or skipped because another replica held its lock).
func (p *Plane) JobPasses() int64 { return p.jobPasses.Load() }
