package bench

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

// configServices is how many services the project of
// BenchmarkConfigRelease runs.
const configServices = 100

// BenchmarkConfigRelease is one project-scope `setVariable` with a new
// value in a project of 100 deployed services in one unprotected
// environment, on PostgreSQL (issue 32): the change, and in its one
// transaction a release and a deployment of each of the 100 services with
// the new configuration, delivered, and the recompile of the cluster. It
// reports the statements and transactions that reached the database per
// change (stmts/op, txs/op) and per release made (stmts/release).
func BenchmarkConfigRelease(b *testing.B) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.URL(b), postgres.Options{})
	if err != nil {
		b.Fatalf("opening PostgreSQL: %v", err)
	}
	counted := &controltest.Counting{Driver: db}
	st := store.New(counted)
	b.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatalf("migrating: %v", err)
	}
	plane, err := control.New(st, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	boot, err := plane.People.Bootstrap(ctx, "bench", "admin@bench.example.com")
	if err != nil {
		b.Fatal(err)
	}
	actor, err := plane.People.Authenticate(ctx, boot.Secret, "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	ctx = authz.WithActor(ctx, actor)
	tenant := boot.Tenant.ID
	if _, err := plane.People.SetTenantPlan(ctx, tenant, model.PlanEnterprise); err != nil {
		b.Fatal(err)
	}
	if _, _, err := plane.Clusters.RegisterCluster(ctx, tenant, "bench-1", nil); err != nil {
		b.Fatal(err)
	}
	proj, err := plane.Delivery.CreateProject(ctx, tenant, "many", "")
	if err != nil {
		b.Fatal(err)
	}
	name := "prod"
	env, err := plane.Delivery.CreateEnvironment(ctx, proj.ID, delivery.EnvironmentInput{Name: &name})
	if err != nil {
		b.Fatal(err)
	}
	image := "registry.example.com/bench/app"
	var first *model.Service
	for i := range configServices {
		svc, err := plane.Delivery.CreateService(ctx, proj.ID, delivery.ServiceInput{Name: fmt.Sprintf("s%03d", i), Image: &image,
			Processes: []model.Process{{Name: "web", Command: []string{"/app"}, Replicas: 1}},
			Variables: []delivery.VariableInput{{Name: "OWN", Value: fmt.Sprint(i)}}})
		if err != nil {
			b.Fatal(err)
		}
		if first == nil {
			first = svc
		}
		if _, _, err := plane.Delivery.Deploy(ctx, svc.ID, env.ID, Digest(fmt.Sprint("config/", i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	stmts0, txs0 := counted.N()-counted.Txs(), counted.Txs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		if _, err := plane.Delivery.SetVariable(ctx, delivery.SetVariableInput{Project: proj.ID,
			VariableInput: delivery.VariableInput{Name: "LEVEL", Value: fmt.Sprint("v", n)}}); err != nil {
			b.Fatalf("change %d: %v", n, err)
		}
		n++
	}
	b.StopTimer()
	stmts, txs := float64(counted.N()-counted.Txs()-stmts0), float64(counted.Txs()-txs0)
	b.ReportMetric(stmts/float64(n), "stmts/op")
	b.ReportMetric(txs/float64(n), "txs/op")
	b.ReportMetric(stmts/float64(n*configServices), "stmts/release")
	page, err := plane.Delivery.Releases(ctx, first, &env.ID, store.PageArgs{First: 1})
	if err != nil || len(page.Items) == 0 || page.Items[0].Number != n+1 {
		b.Fatalf("after %d changes the newest release of a service is %+v (%v), want number %d", n, page.Items, err, n+1)
	}
}
