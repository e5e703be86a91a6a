package bench

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

var logstoreLines = flag.Int("logstore.lines", 200_000, "BenchmarkLogStore: lines stored per op")

// BenchmarkLogStore stores container log lines the way the control plane
// does (AppendLogLines, 500 lines a transaction, 10 services of one
// environment) into PostgreSQL's day-partitioned log_lines, and reports
// the lines stored a second and the bytes each takes on disk: the
// partitions' heap, TOAST and indexes (pg_total_relation_size) divided by
// the lines, after VACUUM ANALYZE. Lines are ~110 bytes of text like an
// HTTP service's access log.
func BenchmarkLogStore(b *testing.B) {
	ctx := context.Background()
	url := pgtest.URL(b)
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := store.New(db)
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := store.EnsureLogPartitions(ctx, s.Q(), now.Add(-24*time.Hour), now.Add(24*time.Hour)); err != nil {
		b.Fatal(err)
	}
	ids := func(kind string, i int) string {
		return fmt.Sprintf("01a2%04d-%s-7000-8000-0000000000%02d", i, kind, i%100)
	}
	var stored int
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for done := 0; done < *logstoreLines; {
			batch := make([]model.LogLine, 0, 500)
			for i := 0; i < 500 && done < *logstoreLines; i, done = i+1, done+1 {
				svc := done % 10
				batch = append(batch, model.LogLine{At: now.Add(time.Duration(done) * time.Millisecond), TenantID: model.TenantID(ids("7e7a", 1)),
					ProjectID: model.ProjectID(ids("9b0c", 1)), EnvironmentID: model.EnvironmentID(ids("e2e0", 1)),
					ServiceID: model.ServiceID(ids("5e1c", svc)), ReleaseID: model.ReleaseID(ids("4e1e", svc)), ClusterID: model.ClusterID(ids("c1a5", 1)),
					Process: "web", Pod: fmt.Sprintf("api-web-r12-7d9f8c6b5-%05d", svc), Container: "app", Stream: model.LogStdout,
					Line: fmt.Sprintf(`level=info msg="request" method=GET path=/api/v1/items/%d status=200 duration_ms=%d bytes=%d`,
						done*7919%100000, done%250, 512+done%4096)})
			}
			if err := s.Tx(ctx, func(q store.Querier) error { _, err := store.AppendLogLines(ctx, q, batch); return err }); err != nil {
				b.Fatal(err)
			}
		}
		stored += *logstoreLines
		b.ReportMetric(float64(*logstoreLines)/time.Since(start).Seconds(), "lines/s")
	}
	b.StopTimer()
	// The size on disk, looked at directly: no API exposes it.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE log_lines`); err != nil {
		b.Fatal(err)
	}
	var total, heap int64
	if err := conn.QueryRow(ctx, `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0), COALESCE(SUM(pg_relation_size(c.oid)), 0)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.relname = 'log_lines'`).Scan(&total, &heap); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(total)/float64(stored), "bytes/line")
	b.ReportMetric(float64(heap)/float64(stored), "heap-bytes/line")
}
