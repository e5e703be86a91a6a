//go:build unix

package bench

import (
	"github.com/nebulactrl/nebula/internal/logcheck"

	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

// subsReplica is one control plane replica on a shared PostgreSQL database,
// wired as `nebula serve` wires it with NEBULA_DATABASE_URL
// (internal/cli: openPlane, listen): its own pgx pool, a bus whose notes go
// out with pg_notify inside each transaction, its own LISTENing connection
// delivering them, and its own HTTP server (the real server.New handler
// behind httptest, loopback). internal/apitest/replicas_test.go builds its
// replicas the same way.
type subsReplica struct {
	name     string
	st       *store.Store
	plane    *control.Plane
	srv      *httptest.Server
	log      *logcheck.Warnings
	queries  *queryCounter // the statements of the replica's pool (not of its listener)
	cancel   context.CancelFunc
	listened chan struct{} // closed when the listener returned
}

// openSubsReplica starts a replica on the database at url (migrating it if
// needed). close stops it; the database is the caller's.
func openSubsReplica(tb testing.TB, url, name string) *subsReplica {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &subsReplica{name: name, log: &logcheck.Warnings{}, queries: &queryCounter{}, cancel: cancel, listened: make(chan struct{})}
	db, err := postgres.Open(ctx, url, postgres.Options{Tracer: r.queries})
	if err != nil {
		cancel()
		tb.Fatalf("replica %s: opening PostgreSQL: %v", name, err)
	}
	r.st = store.New(db)
	if _, err := r.st.Migrate(ctx); err != nil {
		r.st.Close()
		cancel()
		tb.Fatalf("replica %s: migrating: %v", name, err)
	}
	log := slog.New(r.log).With("replica", name)
	b := bus.New()
	r.plane, err = control.New(r.st, log, core.WithBus(b, bus.Postgres{Q: r.st.Q(), B: b, OnError: func(err error) {
		log.Warn("sending a notification", "error", err)
	}}))
	if err != nil {
		r.st.Close()
		cancel()
		tb.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(r.listened)
		bus.Listen(ctx, url, b, log, ready)
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		r.close()
		tb.Fatalf("replica %s: the notification listener did not start", name)
	}
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		r.close()
		tb.Fatalf("default configuration: %v", err)
	}
	// Thousands of subscribers share one address and a few tokens here.
	cfg.MaxConnsPerToken, cfg.MaxConnsPerAddress = 1_000_000, 1_000_000
	r.srv = httptest.NewServer(server.New(r.plane, cfg, log).Handler())
	return r
}

// wsURL is the replica's GraphQL websocket endpoint.
func (r *subsReplica) wsURL() string {
	return "ws" + strings.TrimPrefix(r.srv.URL, "http") + "/graphql"
}

// close stops the server (websockets already hijacked stay open: their
// clients close them), the listener and the pool.
func (r *subsReplica) close() {
	if r.srv != nil {
		r.srv.Close()
	}
	r.cancel()
	<-r.listened
	r.st.Close()
}
