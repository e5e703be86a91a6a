package agents

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Container logs and Kubernetes events are kept for a retention
// (NEBULA_LOG_RETENTION, 7 days). On PostgreSQL their tables are
// partitioned by day: a job creates the partitions of the days ahead and
// another drops the days past the retention whole, each run by one
// replica at a time; on SQLite the second deletes old rows in batches.

// logPartitionsAhead is how many days after today have their partitions
// before a line could need them.
const logPartitionsAhead = 2

// expireLogsBatch bounds the rows a run deletes per table on SQLite, so
// that a run never holds the store's one writer for long.
const expireLogsBatch = 5000

// logRetentionJob is the job that keeps the log tables: it creates the day
// partitions from the oldest day still kept through logPartitionsAhead
// days after today (rep.LogPartitions), then removes what is older than
// the retention — whole days on PostgreSQL, a batch of rows on SQLite —
// and returns the partitions dropped or rows deleted. One job, so that
// one transaction at a time changes the tables' partitions (two, each
// locking both parents in its own order, would deadlock).
func (p *Agents) logRetentionJob(ctx context.Context, q *core.Txn, rep *core.JobReport) (int, error) {
	now := p.Now()
	made, err := store.EnsureLogPartitions(ctx, q, now.Add(-p.Settings.LogRetention), now.Add(logPartitionsAhead*24*time.Hour))
	if err != nil {
		return 0, err
	}
	rep.LogPartitions = made
	r, err := store.ExpireLogs(ctx, q, now.Add(-p.Settings.LogRetention), expireLogsBatch)
	return r.Partitions + int(r.Rows), err
}

// LogStreamIn is a stream of lines an agent sent (logs.v1): what printed
// them, by the ids of the desired state it was given, and the lines.
type LogStreamIn struct {
	Environment model.EnvironmentID
	Service     model.ServiceID
	Release     int // the release's number
	Process     string
	Namespace   string
	Pod         string
	Container   string
	Stderr      bool
	Lines       []LogLine
	// Gap says why lines are missing before these; it is stored as a
	// marker line.
	Gap string
}

// minRedacted is the shortest secret value replaced in logs: a shorter one
// ("1", "on") would blank out ordinary text and say what the secret is.
const minRedacted = 4

// Redacted replaces a service's secret values in its log lines.
const Redacted = "[redacted]"

// logTarget is a service in an environment that runs on the cluster, as
// its desired state says: where its lines belong and the secret values to
// take out of them.
type logTarget struct {
	tenant   model.TenantID
	project  model.ProjectID
	releases map[int]model.ReleaseID // by number
	redact   *strings.Replacer
}

// logTargets are the services the cluster runs, from its desired state
// at revision rev (compiled again when the revision moves on, or the tenant's secrets
// may have changed), and what
// every text the cluster reports has taken out before it is stored.
type logTargets struct {
	mu  sync.Mutex
	rev int64
	// secrets is the count of the tenant's secrets changes it was built at.
	secrets [2]uint64
	targets map[[2]string]*logTarget
	redact  *strings.Replacer
}

// logTargetsNow returns the cluster's services, compiling its desired state
// when its revision changed since the last call, or the tenant's secrets
// may have (a change noted bus.Secrets: a Git credential, or a secret of a
// service not yet on the cluster, changes no revision). Every target redacts the
// same values: every secret of the tenant a service could see — its own, a
// project's or an environment's, another service's it takes in by
// reference, whole or inside a template — and the services' Git
// credentials. A value of another service in a line is as secret as one of
// its own.
func (a *AgentSide) logTargetsNow(ctx context.Context) (map[[2]string]*logTarget, error) {
	// Read before the snapshot: a secret changed after it moves the count
	// again, and the next call rebuilds.
	seen := a.p.secretsSeen(a.tenant)
	rev, err := a.DesiredRevision(ctx)
	if err != nil {
		return nil, err
	}
	a.logs.mu.Lock()
	defer a.logs.mu.Unlock()
	if a.logs.targets != nil && a.logs.rev == rev && a.logs.secrets == seen {
		return a.logs.targets, nil
	}
	snap, err := a.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	rev, st, _ := snap.State(a.cluster)
	var pairs []string
	add := func(v string) {
		if len(v) >= minRedacted {
			pairs = append(pairs, v, Redacted)
		}
	}
	for _, prj := range snap.Input().Projects {
		for _, v := range prj.Variables {
			if v.Secret {
				add(v.Value)
			}
		}
		for i := range prj.Services {
			if c, err := a.p.OpenGitCredential(&prj.Services[i]); err == nil {
				add(c)
			}
		}
	}
	out := map[[2]string]*logTarget{}
	for _, ns := range st.Namespaces {
		for _, svc := range ns.Services {
			for _, e := range svc.Env {
				if e.Secret {
					add(e.Value) // a template that takes a secret in, expanded
				}
			}
		}
	}
	// Longer values first, so that one inside another goes whole.
	redact := strings.NewReplacer(sortedPairs(pairs)...)
	for _, ns := range st.Namespaces {
		for _, svc := range ns.Services {
			out[[2]string{string(ns.EnvID), string(svc.ID)}] = &logTarget{tenant: a.tenant,
				releases: map[int]model.ReleaseID{svc.Release: svc.ReleaseID}, redact: redact}
		}
	}
	a.logs.rev, a.logs.secrets, a.logs.targets, a.logs.redact = rev, seen, out, redact
	return out, nil
}

// redactor is what the cluster's reported text has taken out (see
// logTargetsNow).
func (a *AgentSide) redactor(ctx context.Context) (*strings.Replacer, error) {
	if _, err := a.logTargetsNow(ctx); err != nil {
		return nil, err
	}
	a.logs.mu.Lock()
	defer a.logs.mu.Unlock()
	return a.logs.redact, nil
}

// storable makes text storable — NULs taken out, invalid UTF-8 replaced —
// before anything is redacted in it: a secret a container prints split by
// a NUL, or in UTF-16, is whole when it is looked for.
func storable(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// projectOf is the project of a target's environment, read once per
// target.
func (a *AgentSide) projectOf(ctx context.Context, t *logTarget, env model.EnvironmentID) (model.ProjectID, error) {
	a.logs.mu.Lock()
	project := t.project
	a.logs.mu.Unlock()
	if project != "" {
		return project, nil
	}
	e, err := store.Environments.Get(ctx, a.q(ctx), env)
	if err != nil {
		return "", err
	}
	a.logs.mu.Lock()
	t.project = e.ProjectID
	a.logs.mu.Unlock()
	return e.ProjectID, nil
}

// sortedPairs orders old/new pairs by the old value's length, longest
// first.
func sortedPairs(pairs []string) []string {
	type pair struct{ old, new string }
	ps := make([]pair, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		ps = append(ps, pair{pairs[i], pairs[i+1]})
	}
	sort.SliceStable(ps, func(i, j int) bool { return len(ps[i].old) > len(ps[j].old) })
	out := make([]string, 0, len(pairs))
	for _, p := range ps {
		out = append(out, p.old, p.new)
	}
	return out
}

// Logs stores the lines an agent sent: each stream must name a service
// its cluster runs (in an environment placed there) and the number of a
// release of that service there, or it is dropped; secret values of the service are replaced
// with Redacted before anything is stored; times outside the retention
// (or in the future) are taken as the time received; lines at or before
// the last stored of their stream are a resend and skipped. Subscribers of
// the services are told. It returns the lines stored.
func (a *AgentSide) Logs(ctx context.Context, streams []LogStreamIn) (int, error) {
	ctx = a.as(ctx)
	p := a.p
	targets, err := a.logTargetsNow(ctx)
	if err != nil {
		return 0, err
	}
	now := p.Now()
	oldest := now.Add(-p.Settings.LogRetention).Add(time.Hour)
	var lines []model.LogLine
	var dropped []string
	topics := map[string]bool{}
	for _, s := range streams {
		t := targets[[2]string{string(s.Environment), string(s.Service)}]
		if t == nil {
			dropped = append(dropped, string(s.Environment)+"/"+string(s.Service))
			continue
		}
		a.logs.mu.Lock()
		release := t.releases[s.Release]
		a.logs.mu.Unlock()
		if release == "" {
			rel, err := store.ReleaseByNumber(ctx, a.q(ctx), s.Service, s.Environment, s.Release)
			if errors.Is(err, store.ErrNotFound) {
				dropped = append(dropped, fmt.Sprintf("%s release %d", s.Service, s.Release))
				continue
			}
			if err != nil {
				return 0, err
			}
			release = rel.ID
			a.logs.mu.Lock()
			t.releases[s.Release] = release
			a.logs.mu.Unlock()
		}
		project, err := a.projectOf(ctx, t, s.Environment)
		if err != nil {
			return 0, err
		}
		base := model.LogLine{TenantID: t.tenant, ProjectID: project, EnvironmentID: s.Environment, ServiceID: s.Service, ReleaseID: release,
			ClusterID: a.cluster, Process: s.Process, Pod: s.Pod, Container: s.Container, Stream: model.LogStdout}
		if s.Stderr {
			base.Stream = model.LogStderr
		}
		at := func(x time.Time) time.Time {
			if x.Before(oldest) || x.After(now.Add(5*time.Minute)) {
				return now
			}
			return x
		}
		if s.Gap != "" {
			m := base
			m.Stream, m.At = model.LogMarker, now
			if len(s.Lines) > 0 {
				m.At = at(s.Lines[0].At).Add(-time.Nanosecond)
			}
			m.Line = p.cutLine(t.redact.Replace(storable("[nebula] lines of " + s.Pod + "/" + s.Container + " are missing here: " + s.Gap)))
			lines = append(lines, m)
		}
		for _, l := range s.Lines {
			x := base
			x.At, x.Line = at(l.At), p.cutLine(t.redact.Replace(storable(l.Text)))
			lines = append(lines, x)
		}
		topics[bus.Logs(string(s.Environment), string(s.Service))] = true
	}
	if len(dropped) > 0 {
		p.Log().Warn("dropped log streams of services the cluster does not run", "cluster", a.cluster, "streams", core.ClipText(strings.Join(dropped, ", "), 500))
	}
	if len(lines) == 0 {
		return 0, nil
	}
	times := make([]time.Time, len(lines))
	for i, l := range lines {
		times[i] = l.At
	}
	if err := p.ensureLogDays(ctx, times); err != nil {
		return 0, err
	}
	var stored []model.LogLine
	err = p.InTx(ctx, func(q *core.Txn) error {
		var err error
		if stored, err = store.AppendLogLines(ctx, q, lines); err != nil {
			return err
		}
		if len(stored) == 0 {
			return nil
		}
		return p.Note(ctx, q, slices.Sorted(maps.Keys(topics))...)
	})
	return len(stored), err
}

// LogStreamKey names a container's stream an agent asks about: what
// printed it, by the ids of the desired state it was given.
type LogStreamKey struct {
	Environment    model.EnvironmentID
	Service        model.ServiceID
	Pod, Container string
}

// LogPositions tells an agent where the stored log of each stream ends
// (the time of its last line stored, zero where none is), so that it goes on
// from there after a restart. Only this cluster's lines count, and a stream
// of a service the cluster does not run gets zero, as one never stored.
func (a *AgentSide) LogPositions(ctx context.Context, streams []LogStreamKey) ([]time.Time, error) {
	ctx = a.as(ctx)
	targets, err := a.logTargetsNow(ctx)
	if err != nil {
		return nil, err
	}
	var keys []store.LogSourceKey
	var index []int // keys[j] answers streams[index[j]]
	for i, s := range streams {
		if targets[[2]string{string(s.Environment), string(s.Service)}] == nil {
			continue
		}
		keys = append(keys, store.LogSourceKey{EnvironmentID: s.Environment, ServiceID: s.Service, ClusterID: a.cluster,
			Pod: s.Pod, Container: s.Container, Stream: model.LogStdout})
		index = append(index, i)
	}
	out := make([]time.Time, len(streams))
	if len(keys) == 0 {
		return out, nil
	}
	ats, err := store.LastLogTimes(ctx, a.q(ctx), keys)
	if err != nil {
		return nil, err
	}
	for j, at := range ats {
		out[index[j]] = at
	}
	return out, nil
}

// ensureLogDays makes sure the days of the times given have their
// partitions; the days this process made sure of once are not looked at
// again (the retention job keeps them until they expire). One session at
// a time does it in this process (sessions creating the same partition at
// once would fail each other), and a failure is tried once more: another
// replica may have been creating it.
func (p *Agents) ensureLogDays(ctx context.Context, times []time.Time) error {
	p.logDaysMu.Lock()
	defer p.logDaysMu.Unlock()
	var from, to time.Time
	for _, at := range times {
		day := at.UTC().Truncate(24 * time.Hour)
		if p.logDays[day] {
			continue
		}
		if from.IsZero() || day.Before(from) {
			from = day
		}
		if day.After(to) {
			to = day
		}
	}
	if from.IsZero() {
		return nil
	}
	ensure := func() error {
		return p.InTx(ctx, func(q *core.Txn) error {
			_, err := store.EnsureLogPartitions(ctx, q, from, to)
			return err
		})
	}
	if err := ensure(); err != nil {
		p.Log().Info("making log partitions failed; trying once more", "error", err)
		if err := ensure(); err != nil {
			return err
		}
	}
	if p.logDays == nil {
		p.logDays = map[time.Time]bool{}
	}
	for d := from; !d.After(to); d = d.Add(24 * time.Hour) {
		p.logDays[d] = true
	}
	return nil
}

// MaxLogPage is the most lines a page of a service's log holds; a read
// may ask for one more, to tell whether another page follows.
const MaxLogPage = 1000

// LogRead selects lines of a service in an environment (store.LogQuery
// without the ids); Deployment, when set, keeps its release's lines.
type LogRead struct {
	After, Before int64
	Since, Until  time.Time
	Text          string
	Stream        *model.LogStream
	Pod           string
	Deployment    model.DeploymentID
	Limit         int
	Last          bool
}

// ServiceLogs reads lines a service printed in an environment, within
// the retention; viewers of the project may.
func (p *Agents) ServiceLogs(ctx context.Context, svcID model.ServiceID, envID model.EnvironmentID, r LogRead) ([]model.LogLine, error) {
	svc, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Services, svcID, authz.LogRead)
	if err != nil {
		return nil, err
	}
	env, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Environments, envID, authz.EnvironmentRead)
	if err != nil {
		return nil, err
	}
	if env.ProjectID != svc.ProjectID {
		return nil, core.Invalid("the environment belongs to another project than the service", "environmentId")
	}
	if r.Limit < 0 || r.Limit > MaxLogPage+1 {
		return nil, core.Invalid(fmt.Sprintf("at most %d lines at a time", MaxLogPage), "first")
	}
	if len(r.Text) > 500 || len(r.Pod) > 253 {
		return nil, core.Invalid("text must be at most 500 characters and pod 253", "filter")
	}
	q := store.LogQuery{EnvironmentID: env.ID, ServiceID: svc.ID, After: r.After, Before: r.Before, Since: r.Since,
		Until: r.Until, Text: r.Text, Stream: r.Stream, Pod: r.Pod, Limit: r.Limit, Last: r.Last}
	// Lines past the retention may wait for their day's partition to go:
	// they are not shown.
	if oldest := p.Now().Add(-p.Settings.LogRetention); q.Since.Before(oldest) {
		q.Since = oldest
	}
	if r.Deployment != "" {
		d, err := store.Deployments.Get(ctx, p.Querier(ctx), r.Deployment)
		if errors.Is(err, store.ErrNotFound) || err == nil && (d.ServiceID != svc.ID || d.EnvironmentID != env.ID) {
			return nil, core.Invalid("deployment "+string(r.Deployment)+" is not one of this service in this environment", "filter", "deploymentId")
		}
		if err != nil {
			return nil, err
		}
		q.Release = d.ReleaseID
	}
	return store.LogLinesOf(ctx, p.Querier(ctx), q)
}

// LastLogLine is the number of the last line a service printed in an
// environment (0 for none): where a live tail starts.
func (p *Agents) LastLogLine(ctx context.Context, svcID model.ServiceID, envID model.EnvironmentID) (int64, error) {
	lines, err := p.ServiceLogs(ctx, svcID, envID, LogRead{Limit: 1, Last: true})
	if err != nil || len(lines) == 0 {
		return 0, err
	}
	return lines[0].Seq, nil
}

// EventIn is an occurrence of a Kubernetes event an agent sent
// (events.v1).
type EventIn struct {
	UID                               string
	Count                             int
	Type, Reason, Message             string
	Namespace, ObjectKind, ObjectName string
	Source                            string
	FirstAt, LastAt                   time.Time
	Environment                       model.EnvironmentID
	Service                           model.ServiceID
}

// Events stores the occurrences an agent sent that are new (by uid and
// count): each must name an environment the cluster runs (and, when it
// names one, a service of it there), or it is dropped. The services'
// secret values are replaced in messages as in log lines. Subscribers are
// told. It returns how many were stored.
func (a *AgentSide) Events(ctx context.Context, evs []EventIn) (int, error) {
	ctx = a.as(ctx)
	p := a.p
	targets, err := a.logTargetsNow(ctx)
	if err != nil {
		return 0, err
	}
	envs := map[model.EnvironmentID]*logTarget{}
	for k, t := range targets {
		envs[model.EnvironmentID(k[0])] = t
	}
	now := p.Now()
	oldest := now.Add(-p.Settings.LogRetention).Add(time.Hour)
	at := func(x time.Time) time.Time {
		if x.Before(oldest) || x.After(now.Add(5*time.Minute)) {
			return now
		}
		return x
	}
	var out []model.KubeEvent
	topics := map[string]bool{}
	dropped := 0
	for _, e := range evs {
		t := envs[e.Environment]
		if e.Service != "" {
			t = targets[[2]string{string(e.Environment), string(e.Service)}]
		}
		if t == nil {
			dropped++
			continue
		}
		project, err := a.projectOf(ctx, t, e.Environment)
		if err != nil {
			return 0, err
		}
		// Every text of an event is redacted, whether or not the agent
		// tied it to a service.
		r := func(s string) string { return t.redact.Replace(storable(s)) }
		out = append(out, model.KubeEvent{At: at(e.LastAt), FirstAt: at(e.FirstAt), TenantID: a.tenant, ClusterID: a.cluster,
			ProjectID: project, EnvironmentID: e.Environment, ServiceID: e.Service, UID: e.UID, Count: e.Count,
			Type: r(e.Type), Reason: r(e.Reason), Message: core.ClipText(r(e.Message), 4000), Namespace: e.Namespace,
			ObjectKind: e.ObjectKind, ObjectName: r(e.ObjectName), Source: r(e.Source)})
		topics[bus.Events(string(e.Environment))] = true
	}
	if dropped > 0 {
		p.Log().Warn("dropped events of objects the cluster does not run", "cluster", a.cluster, "events", dropped)
	}
	if len(out) == 0 {
		return 0, nil
	}
	times := make([]time.Time, len(out))
	for i, e := range out {
		times[i] = e.At
	}
	if err := p.ensureLogDays(ctx, times); err != nil {
		return 0, err
	}
	var stored []model.KubeEvent
	err = p.InTx(ctx, func(q *core.Txn) error {
		var err error
		if stored, err = store.AppendKubeEvents(ctx, q, out); err != nil || len(stored) == 0 {
			return err
		}
		return p.Note(ctx, q, slices.Sorted(maps.Keys(topics))...)
	})
	return len(stored), err
}

// EventRead selects events: of an environment (and a service in it), or
// of a cluster.
type EventRead struct {
	Cluster     model.ClusterID
	Environment model.EnvironmentID
	Service     model.ServiceID
	Type        string
	After       int64
	Before      int64
	// Oldest reads oldest first from the first event (After 0).
	Oldest bool
	Limit  int
}

// KubeEvents reads events newest first (or, with After, oldest first after
// it), within the retention. A cluster's events are its tenant admins'
// (they span projects); an environment's and a service's are the
// project's viewers'.
func (p *Agents) KubeEvents(ctx context.Context, r EventRead) ([]model.KubeEvent, error) {
	if r.Limit < 0 || r.Limit > 500 {
		return nil, core.Invalid("at most 500 events at a time", "first")
	}
	q := store.EventQuery{Type: r.Type, After: r.After, Before: r.Before, Oldest: r.Oldest, Limit: r.Limit, Since: p.Now().Add(-p.Settings.LogRetention)}
	switch {
	case r.Cluster != "":
		if _, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Clusters, r.Cluster, authz.ClusterManage); err != nil {
			return nil, err
		}
		q.ClusterID = r.Cluster
	default:
		env, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Environments, r.Environment, authz.EnvironmentRead)
		if err != nil {
			return nil, err
		}
		if err := p.Authorizer().CheckCtx(ctx, authz.LogRead, env.Scope()); err != nil {
			return nil, err
		}
		q.EnvironmentID = env.ID
		if r.Service != "" {
			svc, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Services, r.Service, authz.LogRead)
			if err != nil {
				return nil, err
			}
			if svc.ProjectID != env.ProjectID {
				return nil, core.Invalid("the environment belongs to another project than the service", "environmentId")
			}
			q.ServiceID = svc.ID
		}
	}
	return store.KubeEventsOf(ctx, p.Querier(ctx), q)
}

// DriftIn is a drift an agent reported (drift.v1).
type DriftIn struct {
	Kind, Namespace, Name string
	Fields, Managers      []string
	Environment           model.EnvironmentID
	Service               model.ServiceID
	At                    time.Time
}

// Drift records an object the agent found changed outside NebulaCtrl: it
// must be in an environment the cluster runs, or it is dropped. It is
// audited (cluster.drift, the control plane as the actor, the cluster as
// the target) and shown on the cluster (its followers are told) and the
// service.
func (a *AgentSide) Drift(ctx context.Context, d DriftIn) error {
	ctx = a.as(ctx)
	p := a.p
	targets, err := a.logTargetsNow(ctx)
	if err != nil {
		return err
	}
	var t *logTarget
	for k, x := range targets {
		if k[0] == string(d.Environment) && (d.Service == "" || k[1] == string(d.Service)) {
			t = x
			break
		}
	}
	if t == nil {
		p.Log().Warn("dropped a drift of an object the cluster does not run", "cluster", a.cluster, "object", d.Kind+" "+d.Namespace+"/"+d.Name)
		return nil
	}
	project, err := a.projectOf(ctx, t, d.Environment)
	if err != nil {
		return err
	}
	now := p.Now()
	// What a drift names comes from whoever changed the object: redacted
	// as the cluster's other reports are.
	r := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = t.redact.Replace(storable(s))
		}
		return out
	}
	d.Name, d.Fields, d.Managers = t.redact.Replace(storable(d.Name)), r(d.Fields), r(d.Managers)
	rec := &model.Drift{TenantID: a.tenant, ClusterID: a.cluster, ProjectID: project, EnvironmentID: d.Environment,
		ServiceID: d.Service, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name, Fields: d.Fields, Managers: d.Managers, DetectedAt: now}
	return p.InTx(ctx, func(q *core.Txn) error {
		if err := store.InsertDrift(ctx, q, rec); err != nil {
			return err
		}
		ev := a.auditEvent(ActDriftDetected, "Cluster", string(a.cluster))
		ev.Details["object"], ev.Details["fields"], ev.Details["managers"] = d.Kind+" "+d.Namespace+"/"+d.Name, d.Fields, d.Managers
		ev.Details["environmentId"], ev.Details["serviceId"] = string(d.Environment), string(d.Service)
		if err := q.Audited(ctx, ev); err != nil {
			return err
		}
		return p.Note(ctx, q, bus.Cluster(string(a.cluster)))
	})
}

// Drifts reads a page of the drifts of a cluster (tenant admins: they
// span projects) or of a service in an environment (the project's
// viewers), newest first; pg's cursors are drift ids.
func (p *Agents) Drifts(ctx context.Context, cluster model.ClusterID, env model.EnvironmentID, svc model.ServiceID, pg store.PageArgs) (store.Page[model.Drift], error) {
	if pg.First < 0 || pg.First > store.MaxPage {
		return store.Page[model.Drift]{}, core.Invalid(fmt.Sprintf("at most %d drifts at a time", store.MaxPage), "first")
	}
	if cluster != "" {
		if _, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Clusters, cluster, authz.ClusterManage); err != nil {
			return store.Page[model.Drift]{}, err
		}
	} else {
		s, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Services, svc, authz.LogRead)
		if err != nil {
			return store.Page[model.Drift]{}, err
		}
		e, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Environments, env, authz.EnvironmentRead)
		if err != nil {
			return store.Page[model.Drift]{}, err
		}
		if e.ProjectID != s.ProjectID {
			return store.Page[model.Drift]{}, core.Invalid("the environment belongs to another project than the service", "environmentId")
		}
	}
	return store.DriftsOf(ctx, p.Querier(ctx), cluster, env, svc, pg)
}

// ClusterDriftMark is the number of the cluster's newest drift (0 for
// none), for its cluster readers' clusterStatus to tell a new one; the
// drift itself is the tenant admins'.
func (p *Agents) ClusterDriftMark(ctx context.Context, id model.ClusterID) (int64, error) {
	if _, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Clusters, id, authz.ClusterRead); err != nil {
		return 0, err
	}
	ds, err := store.DriftsOf(ctx, p.Querier(ctx), id, "", "", store.PageArgs{First: 1, NoNext: true})
	if err != nil || len(ds.Items) == 0 {
		return 0, err
	}
	return ds.Items[0].ID, nil
}
