package bench

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

var (
	logqueryLines    = flag.Int("logquery.lines", 10_000_000, "BenchmarkLogQuery: lines in the 7-day table")
	logqueryServices = flag.Int("logquery.services", 100, "BenchmarkLogQuery: services (of one environment) the lines are spread over")
)

// logTable is the 7-day log table BenchmarkLogQuery reads, filled once
// per process.
type logTable struct {
	s     *store.Store
	start time.Time // the first line's time; the last is 7 days later
	env   model.EnvironmentID
	svc   model.ServiceID // the service read: one of the many
	lines int64           // the service's lines
	bytes int64           // the partitions' size on disk
}

var (
	logTableOnce sync.Once
	logTableOf   *logTable
	logTableErr  error
)

// filledLogTable stores *logqueryLines lines over 7 days in PostgreSQL's
// day-partitioned log_lines, spread evenly over *logqueryServices services
// of one environment, interleaved in time as many services print at once.
// Every tenth line of a service is stderr and about one in a hundred says
// status=500. The rows are written with generate_series, not through
// AppendLogLines: ten million lines through the ingest path would take
// the benchmark an hour, and it measures reading.
func filledLogTable(b *testing.B) *logTable {
	logTableOnce.Do(func() { logTableOf, logTableErr = fillLogTable(b) })
	if logTableErr != nil {
		b.Fatal(logTableErr)
	}
	return logTableOf
}

func fillLogTable(b *testing.B) (*logTable, error) {
	ctx := context.Background()
	url := pgtest.URL(b)
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		return nil, err
	}
	s := store.New(db)
	if _, err := s.Migrate(ctx); err != nil {
		return nil, err
	}
	end := time.Now().UTC().Truncate(time.Second)
	start := end.Add(-7 * 24 * time.Hour)
	if _, err := store.EnsureLogPartitions(ctx, s.Q(), start, end.Add(24*time.Hour)); err != nil {
		return nil, err
	}
	t := &logTable{s: s, start: start, env: "01a20001-e2e0-7000-8000-000000000001"}
	svc := func(i int) string { return fmt.Sprintf("01a2%04d-5e1c-7000-8000-000000000000", i) }
	t.svc = model.ServiceID(svc(*logqueryServices / 2))

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	n, services := int64(*logqueryLines), int64(*logqueryServices)
	// Position k (1..services) is service k-1; its sources are 2k-1
	// (stdout) and 2k (stderr).
	for k := int64(1); k <= services; k++ {
		if _, err := conn.Exec(ctx, `INSERT INTO log_positions (id, environment_id, service_id, tenant_id, project_id, last_seq)
			OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, 't', 'p', $4)`, k, string(t.env), svc(int(k-1)), (n-k)/services+1); err != nil {
			return nil, err
		}
		for stream := int64(1); stream <= 2; stream++ {
			if _, err := conn.Exec(ctx, `INSERT INTO log_sources (id, position_id, release_id, cluster_id, process, pod, container, stream, last_at)
				OVERRIDING SYSTEM VALUE VALUES ($1, $2, 'r', 'c', 'web', $3, 'app', $4, $5)`,
				2*k-2+stream, k, fmt.Sprintf("api-web-r12-7d9f8c6b5-%05d", k), stream, end); err != nil {
				return nil, err
			}
		}
	}
	// Line g is printed at start + g·(7 days / n) by service g mod
	// services, whose g/services+1-th line it is.
	step := float64(7*24*time.Hour/time.Microsecond) / float64(n)
	began := time.Now()
	const chunk = 1_000_000
	for lo := int64(0); lo < n; lo += chunk {
		hi := min(lo+chunk, n) - 1
		if _, err := conn.Exec(ctx, `INSERT INTO log_lines (position_id, seq, at, source_id, line)
			SELECT g % $3 + 1, g / $3 + 1, $4::timestamptz + make_interval(secs => g * $5 / 1e6),
				2 * (g % $3) + 1 + (CASE WHEN (g / $3) % 10 = 0 THEN 1 ELSE 0 END),
				format('level=info msg="request" method=GET path=/api/v1/items/%s status=%s duration_ms=%s bytes=%s',
					(g * 7919) % 100000, CASE WHEN g % 97 = 0 THEN 500 ELSE 200 END, g % 250, 512 + g % 4096)
			FROM generate_series($1::bigint, $2::bigint) g`, lo, hi, services, start, step); err != nil {
			return nil, err
		}
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE log_lines`); err != nil {
		return nil, err
	}
	if err := conn.QueryRow(ctx, `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.relname = 'log_lines'`).Scan(&t.bytes); err != nil {
		return nil, err
	}
	t.lines = (n + services - 1) / services
	b.Logf("filled log_lines: %d lines over 7 days, %d services, %.1f GiB on disk (%.0f bytes/line), in %s",
		n, services, float64(t.bytes)/(1<<30), float64(t.bytes)/float64(n), time.Since(began).Round(time.Second))
	return t, nil
}

// BenchmarkLogQuery reads 1,000 lines of one service out of a 7-day,
// day-partitioned table of 10 million lines (100 services), as
// Service.logs does (store.LogLinesOf, the query behind it): the newest
// page (a dashboard's tail), a page back from a cursor, a page forward
// from one (a subscription resuming), a time window, and the newest
// lines with a text or a stream filter. An op is one query; lines/op
// is what it returned.
func BenchmarkLogQuery(b *testing.B) {
	t := filledLogTable(b)
	ctx := context.Background()
	stderr := model.LogStderr
	mid := t.lines / 2
	window := t.start.Add(84 * time.Hour) // the middle of the fourth day
	for _, c := range []struct {
		name string
		q    store.LogQuery
	}{
		{"tail", store.LogQuery{Last: true}},
		{"before-cursor", store.LogQuery{Last: true, Before: mid}},
		{"after-cursor", store.LogQuery{After: mid}},
		{"window-2h", store.LogQuery{Since: window, Until: window.Add(2 * time.Hour)}},
		{"text-1pct", store.LogQuery{Last: true, Text: "status=500"}},
		{"stderr-10pct", store.LogQuery{Last: true, Stream: &stderr}},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := c.q
			q.EnvironmentID, q.ServiceID, q.Limit = t.env, t.svc, 1000
			var got int
			for b.Loop() {
				lines, err := store.LogLinesOf(ctx, t.s.Q(), q)
				if err != nil {
					b.Fatal(err)
				}
				got = len(lines)
			}
			if got == 0 {
				b.Fatalf("%s read no lines", c.name)
			}
			b.ReportMetric(float64(got), "lines/op")
		})
	}
}
