//go:build linux

package loadrun_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/loadrun"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

// Flags of TestSystemLoad, after -args (make load passes -load.duration):
//
//	go test -run '^TestSystemLoad$' -v -timeout 60m ./internal/loadrun/ -args -load.duration=5m
var (
	loadDuration    = flag.Duration("load.duration", 0, "TestSystemLoad: the measured window; without it the run is skipped")
	loadWarmup      = flag.Duration("load.warmup", 30*time.Second, "TestSystemLoad: the full load before the window, not measured")
	loadAgents      = flag.Int("load.agents", 200, "TestSystemLoad: simulated agents, one cluster each")
	loadTenants     = flag.Int("load.tenants", 10, "TestSystemLoad: tenants sharing the clusters (a tenant's mutations run one at a time)")
	loadSubscribers = flag.Int("load.subscribers", 500, "TestSystemLoad: GraphQL subscribers (graphql-transport-ws)")
	loadMutations   = flag.Float64("load.mutations", 50, "TestSystemLoad: mutations per second, open loop")
	loadQueries     = flag.Float64("load.queries", 200, "TestSystemLoad: queries per second, open loop")
	loadHeartbeat   = flag.Duration("load.heartbeat", 15*time.Second, "TestSystemLoad: the heartbeat interval the replicas ask for (1s at least)")
	loadBin         = flag.String("load.bin", "", "the nebula binary; built from ./cmd/nebula into a temporary directory when empty")
	loadOut         = flag.String("load.out", "", "TestSystemLoad: also write the report (Markdown) to this file")
	loadProfile     = flag.String("load.profile", "", "TestSystemLoad: write 30 s CPU profiles of each replica, taken in the middle of the window, into this directory")
	loadStatements  = flag.Int("load.statements", 0, "TestSystemLoad: log the N statements PostgreSQL spent the most time in after the seeding (pg_stat_statements)")
)

// TestSystemLoad is the whole-system load run of docs/benchmarks.md
// (make load): two replicas of nebula serve, each its own process, on one
// PostgreSQL, under the full load for -load.duration. It fails on any
// error or missed event.
func TestSystemLoad(t *testing.T) {
	if *loadDuration == 0 {
		t.Skip("the whole-system load run needs -load.duration (make load DURATION=5m)")
	}
	rep := run(t, loadrun.Scale{Agents: *loadAgents, Tenants: *loadTenants, Subscribers: *loadSubscribers, Mutations: *loadMutations,
		Queries: *loadQueries, Heartbeat: *loadHeartbeat, StageDelay: time.Second, Warmup: *loadWarmup, Duration: *loadDuration})
	md := rep.Markdown()
	t.Log("report:\n" + md)
	if *loadOut != "" {
		if err := os.WriteFile(*loadOut, []byte(md), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, f := range rep.Failures() {
		t.Error(f)
	}
}

// The driver at a small scale: every kind of operation is measured, with
// no error and no missed event, and every process is measured.
func TestLoadSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, two replicas and a 10 s load")
	}
	rep := run(t, loadrun.Scale{Agents: 4, Tenants: 2, Subscribers: 10, Mutations: 5, Queries: 10, Heartbeat: time.Second,
		StageDelay: 200 * time.Millisecond, Warmup: 2 * time.Second, Duration: 5 * time.Second})
	t.Log("report:\n" + rep.Markdown())
	for _, f := range rep.Failures() {
		t.Error(f)
	}
	got := map[string]loadrun.Op{}
	for _, op := range rep.Ops {
		got[op.Kind] = op
	}
	for _, k := range loadrun.MeasuredKinds {
		if got[k].Count == 0 {
			t.Errorf("%s: nothing measured in the window", k)
		}
	}
	for _, k := range []string{"query", "mutation", "subscription: deploy", "agent: deploy"} {
		for kind, op := range got {
			if strings.HasPrefix(kind, k) && !op.HasLatency {
				t.Errorf("%s: no latency measured", kind)
			}
		}
	}
	if len(rep.Usage) != 4 {
		t.Fatalf("measured %d processes, want 4 (driver, two replicas, PostgreSQL)", len(rep.Usage))
	}
	for _, u := range rep.Usage {
		if u.Cores <= 0 || u.RSS <= 0 || u.Peak < u.RSS {
			t.Errorf("%s: %.3f cores, %d bytes resident, %d at the peak: want CPU time and memory, the peak at least the end", u.Name, u.Cores, u.RSS, u.Peak)
		}
	}
	if rep.Queries.Scheduled < 40 || rep.Mutations.Scheduled < 20 {
		t.Errorf("scheduled %d queries and %d mutations in 5 s, want about 50 and 25", rep.Queries.Scheduled, rep.Mutations.Scheduled)
	}
}

// run starts PostgreSQL, seeds it, starts two replicas and drives them at
// scale. Everything it started is stopped and removed when the test ends,
// whether it passed or not.
func run(t *testing.T, scale loadrun.Scale) *loadrun.Report {
	t.Helper()
	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-30*time.Second))
		defer cancel()
	}
	bin := *loadBin
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "nebula")
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/nebulactrl/nebula/cmd/nebula").CombinedOutput()
		if err != nil {
			t.Fatalf("building the nebula binary: %v\n%s", err, out)
		}
	}
	pg := pgtest.Private(t)
	if *loadStatements > 0 {
		pg.TrackStatements()
	}
	postmaster, err := loadrun.Child(os.Getpid(), "postgres")
	if err != nil {
		t.Fatal(err)
	}
	key := seal.GenerateKey()

	t0 := time.Now()
	sd := seed(t, ctx, pg.URL, key, scale.Agents, scale.Tenants)
	t.Logf("seeded %d tenants, %d clusters, %d projects and %d deployments in %v", len(sd.Tenants), len(sd.Clusters), len(sd.Projects), len(sd.Deployments), time.Since(t0).Round(time.Millisecond))
	if *loadStatements > 0 {
		if err := pg.ResetStatements(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() {
			for _, byCalls := range []bool{false, true} {
				top, err := pg.TopStatements(context.Background(), *loadStatements, byCalls)
				if err != nil {
					t.Errorf("reading pg_stat_statements: %v", err)
					return
				}
				t.Logf("PostgreSQL's statements by %s, from the end of the seeding:\n%s", map[bool]string{false: "execution time", true: "calls"}[byCalls], top)
			}
		}()
	}

	cfg := loadrun.ReplicaConfig{Bin: bin, Dir: t.TempDir(), DatabaseURL: pg.URL, MasterKey: key, Heartbeat: scale.Heartbeat,
		// Every client of the run comes from 127.0.0.1 with its tenant's
		// admin token: the per-token and per-address connection caps (32 and 256
		// by default) are for the public internet, not for this.
		Env: []string{"NEBULA_MAX_CONNECTIONS_PER_TOKEN=100000", "NEBULA_MAX_CONNECTIONS_PER_ADDRESS=100000"}}
	var replicas []*loadrun.Replica
	profiles := map[string]string{} // replica → its profiling address
	for _, name := range []string{"replica-a", "replica-b"} {
		rc := cfg
		if *loadProfile != "" {
			profiles[name] = freeAddr(t)
			rc.Env = append(slices.Clip(cfg.Env), "NEBULA_PPROF_ADDR="+profiles[name])
		}
		r, err := loadrun.StartReplica(ctx, rc, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Stop) // before PostgreSQL stops: cleanups run last in, first out
		replicas = append(replicas, r)
	}
	if *loadProfile != "" {
		// Connecting the clients takes a few seconds more than the
		// warm-up: the middle of the window is a little later than this.
		at := scale.Warmup + scale.Duration/2 - 15*time.Second
		done := profileReplicas(t, ctx, profiles, max(at, scale.Warmup), *loadProfile)
		defer func() { <-done }()
	}
	rep, err := loadrun.Drive(ctx, loadrun.Setup{Scale: scale, Seeded: sd, Replicas: replicas,
		Procs:    []loadrun.Proc{{Name: "postgresql (postmaster + backends)", PID: postmaster, Tree: true}},
		Progress: func(format string, args ...any) { t.Logf(format, args...) }})
	if err != nil {
		t.Fatalf("driving the load: %v", err)
	}
	return rep
}

// seed migrates the database and seeds the tenant through the domain
// layer, with the replicas' master key, before any replica starts.
func seed(t *testing.T, ctx context.Context, url, key string, clusters, tenants int) *loadrun.Seeded {
	t.Helper()
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(db)
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	k, err := seal.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	plane, err := control.New(st, slog.New(slog.DiscardHandler), core.WithBox(seal.NewBox(&k)))
	if err != nil {
		t.Fatal(err)
	}
	sd, err := loadrun.Seed(ctx, plane, clusters, tenants)
	if err != nil {
		t.Fatal(err)
	}
	return sd
}

// freeAddr is a loopback address with a port free at the moment.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// profileReplicas takes a 30 s CPU profile of each replica after wait,
// all at once, into dir/<replica>.pprof. The channel closes when they are
// written (or failed, which the test reports).
func profileReplicas(t *testing.T, ctx context.Context, addrs map[string]string, wait time.Duration, dir string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		var wg sync.WaitGroup
		for name, addr := range addrs {
			wg.Go(func() {
				path := filepath.Join(dir, name+".pprof")
				if err := fetchProfile(ctx, "http://"+addr+"/debug/pprof/profile?seconds=30", path); err != nil {
					t.Errorf("profiling %s: %v", name, err)
					return
				}
				t.Logf("wrote %s's CPU profile to %s", name, path)
			})
		}
		wg.Wait()
	}()
	return done
}

func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, res.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
