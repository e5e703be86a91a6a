package bench

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

var deployProfile = flag.String("deploy.profile", "", "BenchmarkDeployMutation: write a CPU profile of the deploys alone (not the seeding) to this file")

// scaleSize is the tenant of the agent-at-scale benchmark (issue 10): 1,000
// services deployed, one cluster (here 50 projects × 20 environments, one
// service each).
var scaleSize = Size{Projects: 50, Environments: 20, Deployments: 1}

// BenchmarkDeployMutation is one `deploy` of a new image digest in a tenant
// of scaleSize on PostgreSQL, as the control plane runs it: the tenant's
// lock, the release and deployment rows, the recompile of the tenant's
// cluster (its rows loaded, compiled, hashed, a new revision stored), the
// audit event and the commit. It is what each of the thousand deploys of
// the agent-at-scale benchmark's new-release phase costs the control plane
// before any agent session takes the state (see docs/benchmarks.md).
func BenchmarkDeployMutation(b *testing.B) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.URL(b), postgres.Options{})
	if err != nil {
		b.Fatalf("opening PostgreSQL: %v", err)
	}
	st := store.New(db)
	b.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatalf("migrating: %v", err)
	}
	plane, err := control.New(st, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	seed, err := Seed(ctx, plane, scaleSize)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d deployed services in %s", len(seed.Latest), time.Since(start).Round(time.Millisecond))
	actor, err := plane.People.Authenticate(ctx, seed.Secret, "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	ctx = authz.WithActor(ctx, actor)
	var targets []Deployed
	for _, d := range seed.Latest {
		if d.Deployment.Stage == model.StageAwaitingApproval {
			continue // a protected environment's deploy waits and compiles nothing new
		}
		targets = append(targets, d)
	}
	if *deployProfile != "" {
		f, err := os.Create(*deployProfile)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatalf("profiling (-deploy.profile and -cpuprofile exclude each other): %v", err)
		}
		b.Cleanup(func() { pprof.StopCPUProfile(); _ = f.Close() })
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		t := targets[n%len(targets)]
		if _, _, err := plane.Delivery.Deploy(ctx, t.Release.ServiceID, t.Release.EnvironmentID, Digest(fmt.Sprintf("bench/%d", n))); err != nil {
			b.Fatalf("deploy %d: %v", n, err)
		}
		n++
	}
}
