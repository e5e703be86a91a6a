package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// Container logs and Kubernetes events (issue 13). On PostgreSQL both
// tables are partitioned by day (UTC) on their time; EnsureLogPartitions
// creates the days a write needs and ExpireLogs drops whole days. On
// SQLite ExpireLogs deletes old rows in batches.

// logTables are the tables partitioned by day.
var logTables = []string{"log_lines", "kube_events"}

// scanOne reads the single value a statement returns.
func scanOne(ctx context.Context, q Querier, dest []any, sql string, args ...any) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return ErrNotFound
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Err()
}

// AppendLogLines stores lines and returns those it stored, numbered: a
// line at or before the last one stored of its source (the same pod,
// container, stream, release) is taken for a resend and skipped; the
// others get the next Seq of their service in their environment, taken
// under that position's row lock, so that lines are numbered in the order
// their transactions commit. Lines of one source must come in the order
// printed. A line names its source by id (log_sources). The days the lines
// fall on must have their partitions (EnsureLogPartitions).
func AppendLogLines(ctx context.Context, q Querier, lines []model.LogLine) ([]model.LogLine, error) {
	type posKey struct {
		env model.EnvironmentID
		svc model.ServiceID
	}
	type srcKey struct {
		pos                                   int64
		release, cluster, process, pod, cntnr string
		stream                                model.LogStream
	}
	type position struct{ id, last int64 }
	type source struct {
		id     int64
		stored time.Time // the last line stored before
		last   time.Time // and after these
		new    bool
	}
	// Times are stored to the microsecond: compared at that precision, a
	// resent line is the one stored.
	lines = slices.Clone(lines)
	for i := range lines {
		lines[i].At = lines[i].At.UTC().Truncate(time.Microsecond)
	}
	pos := map[posKey]*position{}
	for _, l := range lines {
		k := posKey{l.EnvironmentID, l.ServiceID}
		if pos[k] != nil {
			continue
		}
		p := &position{}
		// The row is locked until the transaction ends.
		if err := scanOne(ctx, q, []any{&p.id, &p.last}, `INSERT INTO log_positions (environment_id, service_id, tenant_id, project_id, last_seq)
			VALUES ($1, $2, $3, $4, 0) ON CONFLICT (environment_id, service_id) DO UPDATE SET last_seq = log_positions.last_seq
			RETURNING id, last_seq`, string(k.env), string(k.svc), string(l.TenantID), string(l.ProjectID)); err != nil {
			return nil, fmt.Errorf("numbering log lines: %w", err)
		}
		pos[k] = p
	}
	keyOf := func(l model.LogLine) srcKey {
		return srcKey{pos[posKey{l.EnvironmentID, l.ServiceID}].id, string(l.ReleaseID), string(l.ClusterID), l.Process, l.Pod, l.Container, l.Stream}
	}
	srcs := map[srcKey]*source{}
	var kept []model.LogLine
	for _, l := range lines {
		k := keyOf(l)
		src := srcs[k]
		if src == nil {
			src = &source{}
			err := scanOne(ctx, q, []any{&src.id, &src.stored}, `SELECT id, last_at FROM log_sources WHERE position_id = $1 AND pod = $2
				AND container = $3 AND stream = $4 AND release_id = $5 AND cluster_id = $6 AND process = $7`+q.Dialect().ForUpdate,
				k.pos, k.pod, k.cntnr, int(k.stream), k.release, k.cluster, k.process)
			switch {
			case errors.Is(err, ErrNotFound):
				src.new = true
			case err != nil:
				return nil, fmt.Errorf("reading a log source: %w", err)
			}
			src.last = src.stored
			srcs[k] = src
		}
		if !src.new && !l.At.After(src.stored) {
			continue // stored already
		}
		if l.At.After(src.last) {
			src.last = l.At
		}
		p := pos[posKey{l.EnvironmentID, l.ServiceID}]
		p.last++
		l.Seq = p.last
		kept = append(kept, l)
	}
	for k, src := range srcs {
		var err error
		if src.new {
			err = scanOne(ctx, q, []any{&src.id}, `INSERT INTO log_sources (position_id, release_id, cluster_id, process, pod, container, stream, last_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`, k.pos, k.release, k.cluster, k.process, k.pod, k.cntnr, int(k.stream), src.last.UTC())
		} else {
			_, err = q.Exec(ctx, `UPDATE log_sources SET last_at = $1 WHERE id = $2`, src.last.UTC(), src.id)
		}
		if err != nil {
			return nil, fmt.Errorf("naming a log source: %w", err)
		}
	}
	for _, p := range pos {
		if _, err := q.Exec(ctx, `UPDATE log_positions SET last_seq = $1 WHERE id = $2`, p.last, p.id); err != nil {
			return nil, fmt.Errorf("numbering log lines: %w", err)
		}
	}
	const cols = 5
	for rest := kept; len(rest) > 0; {
		chunk := rest[:min(len(rest), logRowsPerInsert)]
		rest = rest[len(chunk):]
		var sql strings.Builder
		sql.WriteString(`INSERT INTO log_lines (position_id, seq, at, source_id, line) VALUES `)
		args := make([]any, 0, cols*len(chunk))
		for i, l := range chunk {
			if i > 0 {
				sql.WriteString(", ")
			}
			fmt.Fprintf(&sql, "($%d, $%d, $%d, $%d, $%d)", cols*i+1, cols*i+2, cols*i+3, cols*i+4, cols*i+5)
			k := keyOf(l)
			args = append(args, k.pos, l.Seq, l.At.UTC(), srcs[k].id, l.Line)
		}
		if _, err := q.Exec(ctx, sql.String(), args...); err != nil {
			return nil, fmt.Errorf("storing log lines: %w", err)
		}
	}
	return kept, nil
}

// LogQuery selects lines of one service in one environment.
type LogQuery struct {
	EnvironmentID model.EnvironmentID
	ServiceID     model.ServiceID
	// After and Before bound Seq (0: no bound).
	After, Before int64
	// Since and Until bound the time (zero: no bound); Until is exclusive.
	Since, Until time.Time
	// Release, Pod and Stream, when set, keep only their lines; Text keeps
	// the lines that contain it (case-sensitive).
	Release model.ReleaseID
	Pod     string
	Stream  *model.LogStream
	Text    string
	// Limit lines, the first ones after After, or with Last the last ones
	// before Before (returned in order all the same).
	Limit int
	Last  bool
}

// LogSourceKey names a container's output stored for a service in an
// environment, from one cluster.
type LogSourceKey struct {
	EnvironmentID  model.EnvironmentID
	ServiceID      model.ServiceID
	ClusterID      model.ClusterID
	Pod, Container string
	Stream         model.LogStream
}

// LastLogTimes returns, for each key, the time of the last line stored of
// it (of any release or process: a pod's name already names its release),
// and the zero time where none is: where an agent that starts following
// the container again goes on from.
func LastLogTimes(ctx context.Context, q Querier, keys []LogSourceKey) ([]time.Time, error) {
	out := make([]time.Time, len(keys))
	for i, k := range keys {
		var at time.Time
		err := scanOne(ctx, q, []any{&at}, `SELECT s.last_at FROM log_sources s JOIN log_positions p ON p.id = s.position_id
			WHERE p.environment_id = $1 AND p.service_id = $2 AND s.cluster_id = $3 AND s.pod = $4 AND s.container = $5
			AND s.stream = $6 ORDER BY s.last_at DESC LIMIT 1`,
			string(k.EnvironmentID), string(k.ServiceID), string(k.ClusterID), k.Pod, k.Container, int(k.Stream))
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("reading where a log source ends: %w", err)
		default:
			out[i] = at.UTC()
		}
	}
	return out, nil
}

// LogLinesOf reads the lines q selects, in Seq order. The service's
// position is read first, so that the lines' query names it by value: the
// planner then walks each day's primary key (position, seq) in order from
// the cursor and stops at the limit, instead of reading all of the
// service's lines to sort them (docs/benchmarks.md, "Container log
// queries"). Filters on what printed a line (release, pod, stream) become
// the set of the position's sources that match.
func LogLinesOf(ctx context.Context, q Querier, lq LogQuery) ([]model.LogLine, error) {
	var pos int64
	var tenant, project string
	rows, err := q.Query(ctx, `SELECT id, tenant_id, project_id FROM log_positions WHERE environment_id = $1 AND service_id = $2`,
		string(lq.EnvironmentID), string(lq.ServiceID))
	if err != nil {
		return nil, fmt.Errorf("reading log lines: %w", err)
	}
	found := rows.Next()
	if found {
		err = rows.Scan(&pos, &tenant, &project)
	}
	rows.Close()
	if err = cmp.Or(err, rows.Err()); err != nil || !found {
		return nil, err
	}
	where := []string{"l.position_id = $1"}
	args := []any{pos}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", fmt.Sprintf("$%d", len(args))))
	}
	if lq.After > 0 {
		add("l.seq > ?", lq.After)
	}
	if lq.Before > 0 {
		add("l.seq < ?", lq.Before)
	}
	if !lq.Since.IsZero() {
		add("l.at >= ?", lq.Since.UTC())
	}
	if !lq.Until.IsZero() {
		add("l.at < ?", lq.Until.UTC())
	}
	if lq.Release != "" || lq.Pod != "" || lq.Stream != nil {
		ids, err := logSourcesOf(ctx, q, pos, lq)
		if err != nil || len(ids) == 0 {
			return nil, err
		}
		ph := make([]string, len(ids))
		for i, id := range ids {
			args = append(args, id)
			ph[i] = fmt.Sprintf("$%d", len(args))
		}
		where = append(where, "l.source_id IN ("+strings.Join(ph, ", ")+")")
	}
	if lq.Text != "" {
		if q.Dialect().Name == "postgres" {
			add("strpos(l.line, ?) > 0", lq.Text)
		} else {
			add("instr(l.line, ?) > 0", lq.Text)
		}
	}
	order := "l.seq"
	if lq.Last {
		order = "l.seq DESC"
	}
	args = append(args, lq.Limit)
	rows, err = q.Query(ctx, fmt.Sprintf(`SELECT l.seq, l.at, s.release_id, s.cluster_id, s.process, s.pod, s.container, s.stream, l.line
		FROM log_lines l JOIN log_sources s ON s.id = l.source_id
		WHERE %s ORDER BY %s LIMIT $%d`, strings.Join(where, " AND "), order, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("reading log lines: %w", err)
	}
	defer rows.Close()
	var out []model.LogLine
	for rows.Next() {
		l := model.LogLine{EnvironmentID: lq.EnvironmentID, ServiceID: lq.ServiceID,
			TenantID: model.TenantID(tenant), ProjectID: model.ProjectID(project)}
		var stream int
		if err := rows.Scan(&l.Seq, &l.At, &l.ReleaseID, &l.ClusterID, &l.Process, &l.Pod, &l.Container, &stream, &l.Line); err != nil {
			return nil, err
		}
		l.Stream, l.At = model.LogStream(stream), l.At.UTC()
		out = append(out, l)
	}
	if lq.Last {
		slices.Reverse(out)
	}
	return out, rows.Err()
}

// logSourcesOf lists the sources of a position that the query's release,
// pod and stream keep. Named by value in the lines' query, they let the
// planner keep walking the primary key in order (a sub-select there made
// it read every line of the service to sort them).
func logSourcesOf(ctx context.Context, q Querier, pos int64, lq LogQuery) ([]int64, error) {
	where := []string{"position_id = $1"}
	args := []any{pos}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if lq.Release != "" {
		add("release_id = $%d", string(lq.Release))
	}
	if lq.Pod != "" {
		add("pod = $%d", lq.Pod)
	}
	if lq.Stream != nil {
		add("stream = $%d", int(*lq.Stream))
	}
	rows, err := q.Query(ctx, `SELECT id FROM log_sources WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return nil, fmt.Errorf("reading log sources: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

const eventColumns = `at, first_at, tenant_id, cluster_id, project_id, environment_id, service_id, uid, count, type, reason,
	message, namespace, object_kind, object_name, source`

// AppendKubeEvents stores the occurrences not stored yet (a cluster's
// event uid and count name one) and returns those it stored, with their
// ids. The days the events fall on must have their partitions.
func AppendKubeEvents(ctx context.Context, q Querier, evs []model.KubeEvent) ([]model.KubeEvent, error) {
	var stored []model.KubeEvent
	for _, e := range evs {
		rows, err := q.Query(ctx, `SELECT 1 FROM kube_events WHERE cluster_id = $1 AND uid = $2 AND count = $3`,
			string(e.ClusterID), e.UID, e.Count)
		if err != nil {
			return nil, fmt.Errorf("reading events: %w", err)
		}
		seen := rows.Next()
		rows.Close()
		if seen {
			continue
		}
		rows, err = q.Query(ctx, `INSERT INTO kube_events (`+eventColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING id`,
			e.At.UTC(), e.FirstAt.UTC(), string(e.TenantID), string(e.ClusterID), string(e.ProjectID), string(e.EnvironmentID),
			string(e.ServiceID), e.UID, e.Count, e.Type, e.Reason, e.Message, e.Namespace, e.ObjectKind, e.ObjectName, e.Source)
		if err != nil {
			return nil, fmt.Errorf("storing an event: %w", err)
		}
		if rows.Next() {
			err = rows.Scan(&e.ID)
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("storing an event: %w", err)
		}
		stored = append(stored, e)
	}
	return stored, nil
}

// EventQuery selects events of a cluster, an environment or a service in
// one.
type EventQuery struct {
	ClusterID     model.ClusterID
	EnvironmentID model.EnvironmentID
	ServiceID     model.ServiceID
	// Type, when set, keeps only events of that type (Warning, Normal).
	Type string
	// After reads the events after that id, oldest first (Oldest: from
	// the first, with After 0); otherwise the newest events before Before
	// (0: the newest of all), newest first.
	After, Before int64
	Oldest        bool
	// Since keeps the events that happened then or later.
	Since time.Time
	Limit int
}

// KubeEventsOf reads the events q selects.
func KubeEventsOf(ctx context.Context, q Querier, eq EventQuery) ([]model.KubeEvent, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", fmt.Sprintf("$%d", len(args))))
	}
	if eq.ClusterID != "" {
		add("cluster_id = ?", string(eq.ClusterID))
	}
	if eq.EnvironmentID != "" {
		add("environment_id = ?", string(eq.EnvironmentID))
	}
	if eq.ServiceID != "" {
		add("service_id = ?", string(eq.ServiceID))
	}
	if len(where) == 0 {
		return nil, fmt.Errorf("reading events: no cluster, environment or service given")
	}
	if eq.Type != "" {
		add("type = ?", eq.Type)
	}
	if !eq.Since.IsZero() {
		add("at >= ?", eq.Since.UTC())
	}
	order := "id DESC"
	switch {
	case eq.After > 0 || eq.Oldest:
		add("id > ?", eq.After)
		order = "id"
	case eq.Before > 0:
		add("id < ?", eq.Before)
	}
	args = append(args, eq.Limit)
	rows, err := q.Query(ctx, fmt.Sprintf(`SELECT id, %s FROM kube_events WHERE %s ORDER BY %s LIMIT $%d`,
		eventColumns, strings.Join(where, " AND "), order, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("reading events: %w", err)
	}
	defer rows.Close()
	var out []model.KubeEvent
	for rows.Next() {
		var e model.KubeEvent
		if err := rows.Scan(&e.ID, &e.At, &e.FirstAt, &e.TenantID, &e.ClusterID, &e.ProjectID, &e.EnvironmentID,
			&e.ServiceID, &e.UID, &e.Count, &e.Type, &e.Reason, &e.Message, &e.Namespace, &e.ObjectKind, &e.ObjectName,
			&e.Source); err != nil {
			return nil, err
		}
		e.At, e.FirstAt = e.At.UTC(), e.FirstAt.UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// LogPartition is a day's partition of a log table (PostgreSQL).
type LogPartition struct {
	Table string // log_lines or kube_events
	Day   time.Time
}

func partitionName(table string, day time.Time) string {
	return table + "_p" + day.Format("20060102")
}

// LogPartitions lists the day partitions of the log tables, log_lines's
// first (the order every change of partitions locks the tables in), by
// day; none on SQLite, which does not partition.
func LogPartitions(ctx context.Context, q Querier) ([]LogPartition, error) {
	if q.Dialect().Name != "postgres" {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT p.relname, c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.relname = ANY($1) ORDER BY p.relname DESC, c.relname`, logTables)
	if err != nil {
		return nil, fmt.Errorf("listing log partitions: %w", err)
	}
	defer rows.Close()
	var out []LogPartition
	for rows.Next() {
		var table, name string
		if err := rows.Scan(&table, &name); err != nil {
			return nil, err
		}
		day, err := time.Parse("20060102", strings.TrimPrefix(name, table+"_p"))
		if err != nil {
			continue // not one of ours
		}
		out = append(out, LogPartition{Table: table, Day: day})
	}
	return out, rows.Err()
}

// EnsureLogPartitions makes sure every day from from through to (UTC) has
// its partition in each log table, and says how many it created. Nothing
// to do on SQLite.
func EnsureLogPartitions(ctx context.Context, q Querier, from, to time.Time) (int, error) {
	if q.Dialect().Name != "postgres" {
		return 0, nil
	}
	have, err := LogPartitions(ctx, q)
	if err != nil {
		return 0, err
	}
	exists := map[string]bool{}
	for _, p := range have {
		exists[partitionName(p.Table, p.Day)] = true
	}
	n := 0
	for day := from.UTC().Truncate(24 * time.Hour); !day.After(to.UTC()); day = day.Add(24 * time.Hour) {
		for _, t := range logTables {
			name := partitionName(t, day)
			if exists[name] {
				continue
			}
			if _, err := q.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
				name, t, day.Format(time.RFC3339), day.Add(24*time.Hour).Format(time.RFC3339))); err != nil {
				return n, fmt.Errorf("creating log partition %s: %w", name, err)
			}
			n++
		}
	}
	return n, nil
}

// ExpireReport says what ExpireLogs removed.
type ExpireReport struct {
	// Partitions dropped (PostgreSQL), rows deleted (SQLite).
	Partitions int
	Rows       int64
}

// ExpireLogs removes log lines and events older than before: on
// PostgreSQL it drops the partitions of days that ended by then (whole
// days: a line stays at most a day past before), on SQLite it deletes up
// to batch rows of each table.
func ExpireLogs(ctx context.Context, q Querier, before time.Time, batch int) (ExpireReport, error) {
	var r ExpireReport
	// Sources no line used since then are forgotten with their lines.
	if _, err := q.Exec(ctx, `DELETE FROM log_sources WHERE last_at < $1`, before.UTC()); err != nil {
		return r, fmt.Errorf("deleting old log sources: %w", err)
	}
	if q.Dialect().Name != "postgres" {
		for _, t := range logTables {
			n, err := q.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (SELECT rowid FROM %s WHERE at < $1 LIMIT $2)`, t, t),
				before.UTC(), batch)
			if err != nil {
				return r, fmt.Errorf("deleting old rows of %s: %w", t, err)
			}
			r.Rows += n
		}
		return r, nil
	}
	have, err := LogPartitions(ctx, q)
	if err != nil {
		return r, err
	}
	for _, p := range have {
		if p.Day.Add(24 * time.Hour).After(before) {
			continue
		}
		if _, err := q.Exec(ctx, `DROP TABLE IF EXISTS `+partitionName(p.Table, p.Day)); err != nil {
			return r, fmt.Errorf("dropping log partition: %w", err)
		}
		r.Partitions++
	}
	return r, nil
}

// InsertDrift records a drift and sets its ID.
func InsertDrift(ctx context.Context, q Querier, d *model.Drift) error {
	fields, err := json.Marshal(d.Fields)
	if err != nil {
		return err
	}
	managers, err := json.Marshal(d.Managers)
	if err != nil {
		return err
	}
	if err := scanOne(ctx, q, []any{&d.ID}, `INSERT INTO drifts (tenant_id, cluster_id, project_id, environment_id, service_id,
		kind, namespace, name, fields, managers, detected_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		string(d.TenantID), string(d.ClusterID), string(d.ProjectID), string(d.EnvironmentID), string(d.ServiceID),
		d.Kind, d.Namespace, d.Name, string(fields), string(managers), d.DetectedAt.UTC()); err != nil {
		return fmt.Errorf("recording a drift: %w", err)
	}
	return nil
}

// DriftsOf reads one page of the drifts of a cluster, or of a service in
// an environment, newest first: pg's cursors are drift ids (the order
// they were stored in).
func DriftsOf(ctx context.Context, q Querier, cluster model.ClusterID, env model.EnvironmentID, svc model.ServiceID, pg PageArgs) (Page[model.Drift], error) {
	where, args := "cluster_id = $1", []any{string(cluster)}
	if cluster == "" {
		where, args = "environment_id = $1 AND service_id = $2", []any{string(env), string(svc)}
	}
	conds, more, err := pg.numbered("id", "DESC", len(args))
	if err != nil {
		return Page[model.Drift]{}, err
	}
	args = append(append(args, more...), pg.limit())
	rows, err := q.Query(ctx, fmt.Sprintf(`SELECT id, tenant_id, cluster_id, project_id, environment_id, service_id, kind, namespace,
		name, fields, managers, detected_at FROM drifts WHERE %s ORDER BY id %s LIMIT $%d`,
		strings.Join(append([]string{where}, conds...), " AND "), pg.readOrder("DESC"), len(args)), args...)
	if err != nil {
		return Page[model.Drift]{}, fmt.Errorf("reading drifts: %w", err)
	}
	defer rows.Close()
	var out []*model.Drift
	for rows.Next() {
		var d model.Drift
		var fields, managers string
		if err := rows.Scan(&d.ID, &d.TenantID, &d.ClusterID, &d.ProjectID, &d.EnvironmentID, &d.ServiceID, &d.Kind, &d.Namespace,
			&d.Name, &fields, &managers, &d.DetectedAt); err != nil {
			return Page[model.Drift]{}, err
		}
		if err := json.Unmarshal([]byte(fields), &d.Fields); err != nil {
			return Page[model.Drift]{}, err
		}
		if err := json.Unmarshal([]byte(managers), &d.Managers); err != nil {
			return Page[model.Drift]{}, err
		}
		d.DetectedAt = d.DetectedAt.UTC()
		out = append(out, &d)
	}
	if err := rows.Err(); err != nil {
		return Page[model.Drift]{}, fmt.Errorf("reading drifts: %w", err)
	}
	return pageOf(out, pg), nil
}
