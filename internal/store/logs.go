package store

import (
	"context"
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

const logColumns = `environment_id, service_id, seq, at, tenant_id, project_id, release_id, cluster_id, process, pod, container, stream, line`

// AppendLogLines stores lines and numbers them: each gets the next Seq of
// its service in its environment, taken under that position's row lock,
// so that lines are numbered in the order their transactions commit. The
// days the lines fall on must have their partitions (EnsureLogPartitions).
func AppendLogLines(ctx context.Context, q Querier, lines []model.LogLine) error {
	type key struct {
		env model.EnvironmentID
		svc model.ServiceID
	}
	var order []key
	count := map[key]int64{}
	for _, l := range lines {
		k := key{l.EnvironmentID, l.ServiceID}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	next := map[key]int64{}
	for _, k := range order {
		rows, err := q.Query(ctx, `INSERT INTO log_positions (environment_id, service_id, last_seq) VALUES ($1, $2, $3)
			ON CONFLICT (environment_id, service_id) DO UPDATE SET last_seq = log_positions.last_seq + excluded.last_seq
			RETURNING last_seq`, string(k.env), string(k.svc), count[k])
		if err != nil {
			return fmt.Errorf("numbering log lines: %w", err)
		}
		var last int64
		if rows.Next() {
			err = rows.Scan(&last)
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
		if err != nil {
			return fmt.Errorf("numbering log lines: %w", err)
		}
		next[k] = last - count[k] + 1
	}
	for i := range lines {
		k := key{lines[i].EnvironmentID, lines[i].ServiceID}
		lines[i].Seq = next[k]
		next[k]++
	}
	const cols = 13
	for rest := lines; len(rest) > 0; {
		chunk := rest[:min(len(rest), logRowsPerInsert)]
		rest = rest[len(chunk):]
		var sql strings.Builder
		sql.WriteString(`INSERT INTO log_lines (` + logColumns + `) VALUES `)
		args := make([]any, 0, cols*len(chunk))
		for i, l := range chunk {
			if i > 0 {
				sql.WriteString(", ")
			}
			sql.WriteByte('(')
			for c := range cols {
				if c > 0 {
					sql.WriteString(", ")
				}
				fmt.Fprintf(&sql, "$%d", cols*i+c+1)
			}
			sql.WriteByte(')')
			args = append(args, string(l.EnvironmentID), string(l.ServiceID), l.Seq, l.At.UTC(), string(l.TenantID),
				string(l.ProjectID), string(l.ReleaseID), string(l.ClusterID), l.Process, l.Pod, l.Container, int(l.Stream), l.Line)
		}
		if _, err := q.Exec(ctx, sql.String(), args...); err != nil {
			return fmt.Errorf("storing log lines: %w", err)
		}
	}
	return nil
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

// LogLinesOf reads the lines q selects, in Seq order.
func LogLinesOf(ctx context.Context, q Querier, lq LogQuery) ([]model.LogLine, error) {
	where := []string{"environment_id = $1", "service_id = $2"}
	args := []any{string(lq.EnvironmentID), string(lq.ServiceID)}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", fmt.Sprintf("$%d", len(args))))
	}
	if lq.After > 0 {
		add("seq > ?", lq.After)
	}
	if lq.Before > 0 {
		add("seq < ?", lq.Before)
	}
	if !lq.Since.IsZero() {
		add("at >= ?", lq.Since.UTC())
	}
	if !lq.Until.IsZero() {
		add("at < ?", lq.Until.UTC())
	}
	if lq.Release != "" {
		add("release_id = ?", string(lq.Release))
	}
	if lq.Pod != "" {
		add("pod = ?", lq.Pod)
	}
	if lq.Stream != nil {
		add("stream = ?", int(*lq.Stream))
	}
	if lq.Text != "" {
		if q.Dialect().Name == "postgres" {
			add("strpos(line, ?) > 0", lq.Text)
		} else {
			add("instr(line, ?) > 0", lq.Text)
		}
	}
	order := "seq"
	if lq.Last {
		order = "seq DESC"
	}
	args = append(args, lq.Limit)
	rows, err := q.Query(ctx, fmt.Sprintf(`SELECT %s FROM log_lines WHERE %s ORDER BY %s LIMIT $%d`,
		logColumns, strings.Join(where, " AND "), order, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("reading log lines: %w", err)
	}
	defer rows.Close()
	var out []model.LogLine
	for rows.Next() {
		var l model.LogLine
		var stream int
		if err := rows.Scan(&l.EnvironmentID, &l.ServiceID, &l.Seq, &l.At, &l.TenantID, &l.ProjectID, &l.ReleaseID,
			&l.ClusterID, &l.Process, &l.Pod, &l.Container, &stream, &l.Line); err != nil {
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
	// After reads the events after that id, oldest first; otherwise the
	// newest events before Before (0: the newest of all), newest first.
	After, Before int64
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
	case eq.After > 0:
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

// LogPartitions lists the day partitions of the log tables, by table and
// day; none on SQLite, which does not partition.
func LogPartitions(ctx context.Context, q Querier) ([]LogPartition, error) {
	if q.Dialect().Name != "postgres" {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT p.relname, c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.relname = ANY($1) ORDER BY p.relname, c.relname`, logTables)
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
