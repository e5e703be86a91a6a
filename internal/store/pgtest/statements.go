package pgtest

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
)

// TrackStatements loads pg_stat_statements into the private server (a
// restart) and creates the extension in its database, for a load run to
// see where PostgreSQL's time goes. It fails the test when the contrib
// module is not installed.
func (p *Server) TrackStatements() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := p.exec(ctx, p.s.url, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"); err != nil {
		p.t.Fatalf("pgtest: preloading pg_stat_statements: %v", err)
	}
	p.Restart()
	if err := p.exec(ctx, p.URL, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		p.t.Fatalf("pgtest: creating pg_stat_statements: %v", err)
	}
}

// ResetStatements forgets what pg_stat_statements counted so far (the
// seeding, say).
func (p *Server) ResetStatements(ctx context.Context) error {
	return p.exec(ctx, p.URL, "SELECT pg_stat_statements_reset()")
}

// TopStatements is a table of the n statements that took the most
// execution time since the last reset, or with byCalls the n run most
// often: total and mean milliseconds, calls, rows, and the statement's
// first 160 characters on one line. The last line sums every statement.
func (p *Server) TopStatements(ctx context.Context, n int, byCalls bool) (string, error) {
	conn, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	order := "total_exec_time"
	if byCalls {
		order = "calls"
	}
	rows, err := conn.Query(ctx, `(SELECT total_exec_time, mean_exec_time, calls, rows, query
		FROM pg_stat_statements ORDER BY `+order+` DESC LIMIT $1)
		UNION ALL SELECT sum(total_exec_time), sum(total_exec_time) / greatest(sum(calls), 1), sum(calls), sum(rows), '(all statements)'
		FROM pg_stat_statements`, n)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "total ms\tmean ms\tcalls\trows\t\t")
	for rows.Next() {
		var total, mean float64
		var calls, nrows int64
		var q string
		if err := rows.Scan(&total, &mean, &calls, &nrows, &q); err != nil {
			return "", err
		}
		q = strings.Join(strings.Fields(q), " ")
		if len(q) > 160 {
			q = q[:160] + "…"
		}
		fmt.Fprintf(w, "%.0f\t%.3f\t%d\t%d\t\t%s\n", total, mean, calls, nrows, q)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	w.Flush()
	return b.String(), nil
}

func (p *Server) exec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
