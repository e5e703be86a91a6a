//go:build unix

// BenchmarkFanout: a fleet of simulated agents on one control plane,
// heartbeating, with revisions fanned out to all of them (docs/benchmarks.md,
// "Agent fan-out"). The agents run in a child process (this test binary,
// started again to run TestFanoutAgents), so that the heap, goroutines and
// CPU time measured here are the control plane's alone: the hub, the plane
// and, on SQLite, the store. PostgreSQL's CPU time is read from /proc.
//
// It needs getrusage and open-file limits, hence unix only.

package hub_test

import (
	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/logcheck"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

// Flags of BenchmarkFanout, after -args:
//
//	go test -run '^$' -bench Fanout ./internal/hub/ -args -fanout.agents=100,1000 -fanout.store=sqlite
var (
	fanoutAgents    = flag.String("fanout.agents", "1000", "BenchmarkFanout: fleet sizes, comma-separated, one sub-benchmark each")
	fanoutHeartbeat = flag.Duration("fanout.heartbeat", time.Second, "BenchmarkFanout: the heartbeat interval the control plane asks agents for (1s at least)")
	fanoutWindow    = flag.Duration("fanout.window", 10*time.Second, "BenchmarkFanout: how long the steady heartbeat period is measured")
	fanoutStore     = flag.String("fanout.store", "postgres", `BenchmarkFanout: the control plane's store, "postgres" (pgtest's server or NEBULA_TEST_DATABASE_URL) or "sqlite" (a file, in this process; fails at 400 agents today)`)
	fanoutSeed      = flag.String("fanout.seed", "store", `BenchmarkFanout: seed environments and deployments through the plane ("plane": one mutation each) or as store rows ("store")`)
	fanoutProfile   = flag.String("fanout.profile", "", "BenchmarkFanout: write CPU profiles of the steady period and of the fan-outs to <prefix>-steady.pprof and <prefix>-fanout.pprof")
	fanoutTimeout   = flag.Duration("fanout.timeout", 10*time.Minute, "BenchmarkFanout: how long to wait for the fleet to connect, or for one fan-out")
	fanoutTo        = flag.Int("fanout.to", 0, "BenchmarkFanout: fan out to the first this many clusters of the fleet (0: all of them), through a service deployed to them only")
)

// TestMain lets BenchmarkFanout -fanout.store=postgres use pgtest, which
// stops the server it started when the tests are done.
func TestMain(m *testing.M) { pgtest.Main(m) }

// The agents process finds the control plane and its tokens here.
const (
	envAgentsURL    = "NEBULA_FANOUT_URL"
	envAgentsTokens = "NEBULA_FANOUT_TOKENS"
)

// fleetVariable is the project variable every service of the fleet gets:
// setting it changes every cluster's desired state in one mutation.
const fleetVariable = "FLEET_REVISION"

// partService is deployed to the clusters fan-outs reach when they reach
// only part of the fleet (-fanout.to).
const partService = "part"

// seeded is a fleet's database, seeded once and opened by each run: one
// tenant of n clusters edge-0000…, where the project "edge" has one
// environment per cluster, selecting it by its name label, and the service
// "api" is deployed to every environment. Seeding a large fleet takes
// minutes (every mutation compiles every cluster), so BenchmarkFanout seeds
// once per size and each -count run opens a copy.
type seeded struct {
	dir      string       // SQLite: nebula.db and its companions, copied by each run
	shared   *store.Store // PostgreSQL: the database every run uses in turn
	secret   string       // the tenant admin's API token
	tenant   model.TenantID
	project  model.ProjectID
	clusters []model.ClusterID
	tokens   []string
	// part is the service deployed to the first parts clusters only, when
	// fan-outs reach only them (-fanout.to); "" when they reach all.
	part   model.ServiceID
	parts  int
	took   time.Duration
	phases string // what the seeding spent its time on
	// value is the newest FLEET_REVISION set: every fan-out sets a new one
	// (setting the same value changes nothing), runs on PostgreSQL share it.
	value int
}

// seedFleet seeds a fleet of n into st, an empty migrated store.
// viaPlane seeds each environment and deployment with its own mutation, as
// an API client would; otherwise they are inserted as the rows those
// mutations write (without their audit events) in one transaction, because
// through the plane the seeding grows with the fourth power of n
// (docs/benchmarks.md). Clusters, the project, the service and the variable
// always go through the plane, and setting the variable compiles the whole
// fleet.
func seedFleet(tb testing.TB, st *store.Store, n int, viaPlane bool) *seeded {
	tb.Helper()
	ctx := context.Background()
	plane, err := control.New(st, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	var phases []string
	phase := func(what string, since time.Time) time.Time {
		phases = append(phases, fmt.Sprintf("%s %v", what, time.Since(since).Round(time.Millisecond)))
		return time.Now()
	}
	boot, err := plane.People.Bootstrap(ctx, "fleet", "admin@fleet.test")
	if err != nil {
		tb.Fatal(err)
	}
	actor, err := plane.People.Authenticate(ctx, boot.Secret, "127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	admin := authz.WithActor(ctx, actor)
	sd := &seeded{secret: boot.Secret, tenant: boot.Tenant.ID}
	// TEAM allows 10 clusters.
	if _, err := plane.People.SetTenantPlan(admin, sd.tenant, model.PlanEnterprise); err != nil {
		tb.Fatal(err)
	}
	t := time.Now()
	for i := range n {
		c, secret, err := plane.Clusters.RegisterCluster(admin, sd.tenant, clusterName(i),
			[]model.Label{{Key: "fleet", Value: "edge"}, {Key: "name", Value: clusterName(i)}})
		if err != nil {
			tb.Fatal(err)
		}
		sd.clusters, sd.tokens = append(sd.clusters, c.ID), append(sd.tokens, secret)
	}
	t = phase("registering the clusters", t)
	p, err := plane.Delivery.CreateProject(admin, sd.tenant, "edge", "")
	if err != nil {
		tb.Fatal(err)
	}
	sd.project = p.ID
	port := 8080
	svc, err := plane.Delivery.CreateService(admin, p.ID, delivery.ServiceInput{Name: "api", Image: ptr("registry.example.com/api"),
		Processes: []model.Process{{Name: "web", Command: []string{"./api"}, Replicas: 2, Port: &port}}})
	if err != nil {
		tb.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	sd.parts = n
	var part *model.Service
	if *fanoutTo > 0 && *fanoutTo < n {
		if part, err = plane.Delivery.CreateService(admin, p.ID, delivery.ServiceInput{Name: partService, Image: ptr("registry.example.com/part"),
			Processes: []model.Process{{Name: "web", Command: []string{"./part"}, Replicas: 1, Port: &port}}}); err != nil {
			tb.Fatal(err)
		}
		sd.part, sd.parts = part.ID, *fanoutTo
	}
	if viaPlane {
		for i := range n {
			env, err := plane.Delivery.CreateEnvironment(admin, p.ID, delivery.EnvironmentInput{Name: ptr(envName(i)),
				ClusterSelector: []model.Label{{Key: "name", Value: clusterName(i)}}})
			if err != nil {
				tb.Fatal(err)
			}
			if _, _, err := plane.Delivery.Deploy(admin, svc.ID, env.ID, digest); err != nil {
				tb.Fatal(err)
			}
			if part != nil && i < sd.parts {
				if _, _, err := plane.Delivery.Deploy(admin, part.ID, env.ID, digest); err != nil {
					tb.Fatal(err)
				}
			}
		}
		t = phase("environments and deployments through the plane", t)
	} else {
		if err := sd.insertDeployments(ctx, st, svc, part, actor.User.ID, digest); err != nil {
			tb.Fatal(err)
		}
		t = phase("environments and deployments as rows", t)
	}
	setVariable(tb, plane, admin, sd.project, nil, "0")
	phase("the first compile (setting "+fleetVariable+")", t)
	sd.took, sd.phases = time.Since(start), strings.Join(phases, ", ")
	return sd
}

// openSQLite opens and migrates the store in dir/nebula.db. Closing it
// checkpoints the write-ahead log into nebula.db.
func openSQLite(tb testing.TB, dir string) *store.Store {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "nebula.db"))
	if err != nil {
		tb.Fatal(err)
	}
	st := store.New(db)
	if _, err := st.Migrate(context.Background()); err != nil {
		st.Close()
		tb.Fatal(err)
	}
	return st
}

// seedSQLite seeds a fleet into dir/nebula.db and closes it, for openFleet
// to copy.
func seedSQLite(tb testing.TB, dir string, n int, viaPlane bool) *seeded {
	tb.Helper()
	st := openSQLite(tb, dir)
	defer st.Close()
	sd := seedFleet(tb, st, n, viaPlane)
	sd.dir = dir
	return sd
}

// insertDeployments writes, for every cluster, the environment selecting it
// and a release of svc deployed there, and one of part (if not nil) in the
// first sd.parts: the rows CreateEnvironment and Deploy insert.
func (sd *seeded) insertDeployments(ctx context.Context, st *store.Store, svc, part *model.Service, by model.UserID, digest string) error {
	return st.Tx(ctx, func(q store.Querier) error {
		now := store.Now()
		deploy := func(svc *model.Service, env *model.Environment, c model.ClusterID) error {
			rel := &model.Release{ID: model.ReleaseID(uuid.Must(uuid.NewV7()).String()), TenantID: sd.tenant, ProjectID: sd.project,
				ServiceID: svc.ID, EnvironmentID: env.ID, Number: 1, Image: svc.Image, ImageDigest: digest,
				ServiceConfig: svc.ServiceConfig, CreatedBy: &by, CreatedAt: now}
			dep := &model.Deployment{ID: model.DeploymentID(uuid.Must(uuid.NewV7()).String()), TenantID: sd.tenant,
				ProjectID: sd.project, ServiceID: svc.ID, EnvironmentID: env.ID, ReleaseID: rel.ID, ClusterID: c,
				Stage: model.StageSucceeded, RequestedBy: &by, CreatedAt: now, UpdatedAt: now}
			if err := store.Releases.Insert(ctx, q, rel); err != nil {
				return err
			}
			return store.Deployments.Insert(ctx, q, dep)
		}
		for i, c := range sd.clusters {
			env := &model.Environment{ID: model.EnvironmentID(uuid.Must(uuid.NewV7()).String()), TenantID: sd.tenant,
				ProjectID: sd.project, Name: envName(i), ClusterSelector: model.Labels{{Key: "name", Value: clusterName(i)}},
				NamespaceSelector: model.Labels{}, CreatedAt: now}
			if err := store.Environments.Insert(ctx, q, env); err != nil {
				return err
			}
			if err := deploy(svc, env, c); err != nil {
				return err
			}
			if part != nil && i < sd.parts {
				if err := deploy(part, env, c); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// setVariable sets FLEET_REVISION on the project (service nil), the one
// mutation that changes every cluster's state, or on one of its services.
func setVariable(tb testing.TB, plane *control.Plane, admin context.Context, project model.ProjectID, service *model.ServiceID, value string) {
	tb.Helper()
	if _, err := plane.Delivery.SetVariable(admin, delivery.SetVariableInput{Project: project, Service: service,
		VariableInput: delivery.VariableInput{Name: fleetVariable, Value: value}}); err != nil {
		tb.Fatal(err)
	}
}

// fleet is a seeded fleet's control plane, on a copy of its database, served
// over loopback by the real server.
type fleet struct {
	*seeded
	st     *store.Store
	plane  *control.Plane
	admin  context.Context // acts as the tenant admin
	srv    *httptest.Server
	hub    *hub.Hub
	pub    *publishClock
	errors *logcheck.Warnings
}

// openFleet starts a control plane on a seeded fleet (a copy of it, on
// SQLite) that asks agents to heartbeat every heartbeat.
func openFleet(tb testing.TB, sd *seeded, heartbeat time.Duration) *fleet {
	tb.Helper()
	ctx := context.Background()
	f := &fleet{seeded: sd, st: sd.shared, errors: &logcheck.Warnings{}}
	if f.st == nil {
		dir := tb.TempDir()
		if err := os.CopyFS(dir, os.DirFS(sd.dir)); err != nil {
			tb.Fatal(err)
		}
		f.st = openSQLite(tb, dir)
		tb.Cleanup(f.st.Close)
	}
	var err error
	log := slog.New(f.errors)
	if f.plane, err = control.New(f.st, log); err != nil {
		tb.Fatal(err)
	}
	actor, err := f.plane.People.Authenticate(ctx, sd.secret, "127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	f.admin = authz.WithActor(ctx, actor)
	cfg, err := config.FromEnv(func(k string) (string, bool) {
		if k == "NEBULA_AGENT_HEARTBEAT" {
			return heartbeat.String(), true
		}
		return "", false
	})
	if err != nil {
		tb.Fatal(err)
	}
	s := server.New(f.plane, cfg, log)
	// Set before the server takes its first request: the plane reads its
	// publisher without a lock.
	f.hub = s.Hub()
	f.pub = &publishClock{Publisher: f.hub}
	f.plane.SetPublisher(f.pub)
	f.srv = httptest.NewServer(s.Handler())
	tb.Cleanup(f.srv.Close)
	return f
}

// newFleet seeds a fleet into a temporary directory and opens it.
func newFleet(tb testing.TB, n int, viaPlane bool, heartbeat time.Duration) *fleet {
	tb.Helper()
	return openFleet(tb, seedSQLite(tb, tb.TempDir(), n, viaPlane), heartbeat)
}

// setVariable sets FLEET_REVISION on the project, or on the part service
// when fan-outs reach only part of the fleet.
func (f *fleet) setVariable(tb testing.TB, value string) {
	tb.Helper()
	var on *model.ServiceID
	if f.part != "" {
		on = &f.part
	}
	setVariable(tb, f.plane, f.admin, f.project, on, value)
}

// waitDisconnected waits until the hub holds no session of the fleet, so
// that the next measurement does not count sessions still ending.
func (f *fleet) waitDisconnected(tb testing.TB) {
	tb.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(time.Minute)
	for slices.ContainsFunc(f.clusters, f.hub.Connected) {
		if time.Now().After(deadline) {
			tb.Errorf("sessions still open a minute after their agents left")
			return
		}
		<-tick.C
	}
}

func clusterName(i int) string { return fmt.Sprintf("edge-%04d", i) }
func envName(i int) string     { return fmt.Sprintf("e%04d", i) }

func (f *fleet) url() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/agent/v1/connect"
}

// waitApplied waits until every cluster's agent has acknowledged its
// desired revision, as the API would show it.
func (f *fleet) waitApplied(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		behind, err := store.CountClustersBehind(context.Background(), f.st.Q(), f.tenant)
		if err != nil {
			tb.Fatal(err)
		}
		if behind == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d clusters have not acknowledged their revision after %v", behind, timeout)
		}
		<-tick.C
	}
}

// publishClock stands between the plane and the hub: it notes when each
// change was published (after its commit) and what it bumped.
type publishClock struct {
	core.Publisher
	mu     sync.Mutex
	at     time.Time
	bumped map[model.ClusterID]int64
}

func (p *publishClock) Published(bumped []core.Bumped) {
	at := time.Now()
	m := make(map[model.ClusterID]int64, len(bumped))
	for _, b := range bumped {
		m[b.Cluster] = b.Revision
	}
	p.mu.Lock()
	p.at, p.bumped = at, m
	p.mu.Unlock()
	p.Publisher.Published(bumped)
}

func (p *publishClock) last() (time.Time, map[model.ClusterID]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.at, p.bumped
}

// fleetAgents is the agents process as the control plane's side sees it:
// it reads what the agents report, one line each, from the child's stdout.
//
//	D <agent> <revision> <unix ns received> <FLEET_REVISION>   a desired state arrived
//	E <agent> <error>                                         a session ended unexpectedly
//	C <heartbeats sent> <CPU ns of the agents process>         the answer to "count"
type fleetAgents struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	counts chan agentCounts
	ended  chan struct{} // the child's stdout closed
	failed chan struct{} // an agent reported an error
	fail   sync.Once

	mu      sync.Mutex
	rev     []int64  // newest revision each agent received
	value   []string // the FLEET_REVISION in it
	at      []int64  // Unix ns when the first revision newer than base arrived
	base    []int64
	parts   int // the round waits for the first parts agents
	pending int
	arrived chan struct{} // closed when no agent is pending
	failure string
}

type agentCounts struct {
	heartbeats int64
	cpu        time.Duration
}

// startAgents starts one agent per cluster in a child process. The first
// round (see arm) is every agent's first desired state.
func startAgents(tb testing.TB, f *fleet) *fleetAgents {
	tb.Helper()
	tokens := filepath.Join(tb.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(strings.Join(f.tokens, "\n")), 0o600); err != nil {
		tb.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	n := len(f.tokens)
	a := &fleetAgents{counts: make(chan agentCounts), ended: make(chan struct{}), failed: make(chan struct{}),
		rev: make([]int64, n), value: make([]string, n), at: make([]int64, n), base: make([]int64, n)}
	a.arm(n) // every agent's first state
	a.cmd = exec.Command(exe, "-test.run=^TestFanoutAgents$", "-test.count=1", "-test.timeout=0",
		fmt.Sprintf("-fanout.to=%d", *fanoutTo))
	a.cmd.Env = append(os.Environ(), envAgentsURL+"="+f.url(), envAgentsTokens+"="+tokens)
	a.cmd.Stderr = &a.stderr
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go a.read(out)
	tb.Cleanup(func() {
		a.stop(tb)
		f.waitDisconnected(tb)
	})
	return a
}

// arm starts a round: it ends when each of the first parts agents has
// received a revision newer than the one it holds now.
func (a *fleetAgents) arm(parts int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	copy(a.base, a.rev)
	clear(a.at)
	a.parts, a.pending = parts, parts
	a.arrived = make(chan struct{})
}

func (a *fleetAgents) read(r io.Reader) {
	defer close(a.ended)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 5 && f[0] == "D":
			i, _ := strconv.Atoi(f[1])
			rev, _ := strconv.ParseInt(f[2], 10, 64)
			at, _ := strconv.ParseInt(f[3], 10, 64)
			a.got(i, rev, at, f[4])
		case len(f) >= 2 && f[0] == "E":
			a.fail.Do(func() {
				a.mu.Lock()
				a.failure = "agent " + strings.Join(f[1:], " ")
				a.mu.Unlock()
				close(a.failed)
			})
		case len(f) == 3 && f[0] == "C":
			hb, _ := strconv.ParseInt(f[1], 10, 64)
			cpu, _ := strconv.ParseInt(f[2], 10, 64)
			a.counts <- agentCounts{heartbeats: hb, cpu: time.Duration(cpu)}
		}
	}
}

func (a *fleetAgents) got(i int, rev, at int64, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i < 0 || i >= len(a.rev) || rev <= a.rev[i] {
		return
	}
	a.rev[i], a.value[i] = rev, value
	if a.at[i] == 0 && rev > a.base[i] && i < a.parts {
		a.at[i] = at
		if a.pending--; a.pending == 0 {
			close(a.arrived)
		}
	}
}

// received is each agent's newest revision and its FLEET_REVISION.
func (a *fleetAgents) received() ([]int64, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.rev), slices.Clone(a.value)
}

// wait ends with the round, or with the reason it cannot end.
func (a *fleetAgents) wait(timeout time.Duration) error {
	a.mu.Lock()
	arrived := a.arrived
	a.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-arrived:
		return nil
	case <-a.failed:
		a.mu.Lock()
		defer a.mu.Unlock()
		return errors.New(a.failure)
	case <-a.ended:
		return fmt.Errorf("the agents process ended: %s", a.stderr.String())
	case <-t.C:
		a.mu.Lock()
		defer a.mu.Unlock()
		return fmt.Errorf("%d agents still waiting for a new revision after %v", a.pending, timeout)
	}
}

// latencies are, for the round just ended, the times from since to each
// of its agents' receipt.
func (a *fleetAgents) latencies(since time.Time) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]time.Duration, a.parts)
	for i, at := range a.at[:a.parts] {
		out[i] = time.Unix(0, at).Sub(since)
	}
	return out
}

// count asks the agents process how many heartbeats it has sent and how
// much CPU it has used.
func (a *fleetAgents) count() (agentCounts, error) {
	if _, err := io.WriteString(a.stdin, "count\n"); err != nil {
		return agentCounts{}, err
	}
	select {
	case c := <-a.counts:
		return c, nil
	case <-a.ended:
		return agentCounts{}, fmt.Errorf("the agents process ended: %s", a.stderr.String())
	}
}

// stop closes the child's stdin, which closes every agent's connection and
// ends the process.
func (a *fleetAgents) stop(tb testing.TB) {
	_ = a.stdin.Close()
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	select {
	case <-a.ended:
	case <-t.C:
		tb.Errorf("the agents process did not end within a minute; killing it")
		_ = a.cmd.Process.Kill()
		<-a.ended
	}
	_ = a.cmd.Wait()
}

// TestFanoutAgents is the agents process of BenchmarkFanout and TestFanout:
// one simulated agent per token, each a real websocket client that says
// hello, acknowledges every desired state and heartbeats at the interval
// the welcome names.
func TestFanoutAgents(t *testing.T) {
	url := os.Getenv(envAgentsURL)
	if url == "" {
		t.Skip("the agents process of BenchmarkFanout and TestFanout; it runs only when they start it")
	}
	b, err := os.ReadFile(os.Getenv(envAgentsTokens))
	if err != nil {
		t.Fatal(err)
	}
	out := newLineWriter(os.Stdout)
	ctx, cancel := context.WithCancel(context.Background())
	var heartbeats atomic.Int64
	// A few connections at a time, as agents started over a rollout would
	// arrive; every one of them still gets its first state.
	dialing := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i, tok := range strings.Fields(string(b)) {
		wg.Go(func() { runAgent(ctx, i, url, tok, dialing, &heartbeats, out) })
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "count" {
			out.line(fmt.Sprintf("C %d %d", heartbeats.Load(), processCPU()))
		}
	}
	cancel()
	wg.Wait()
	out.close()
}

func runAgent(ctx context.Context, i int, url, token string, dialing chan struct{}, heartbeats *atomic.Int64, out *lineWriter) {
	fail := func(err error) {
		if ctx.Err() == nil {
			out.line(fmt.Sprintf("E %d %v", i, err))
		}
	}
	dialing <- struct{}{}
	c, w, err := connectAgent(ctx, url, token)
	<-dialing
	if err != nil {
		fail(err)
		return
	}
	defer context.AfterFunc(ctx, func() { _ = c.Close() })()
	defer c.Close()

	var mu sync.Mutex // one writer at a time: heartbeats and acks
	write := func(typ string, body any) error {
		frame, err := protocol.Encode(typ, body)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		return c.WriteMessage(websocket.TextMessage, frame)
	}
	var applied atomic.Int64
	done := make(chan struct{})
	var beating sync.WaitGroup
	beating.Go(func() {
		interval := time.Duration(w.HeartbeatSeconds) * time.Second
		// Spread the fleet's heartbeats over the interval, as agents started
		// at different times would.
		next := time.NewTimer(rand.N(interval))
		defer next.Stop()
		for {
			select {
			case <-done:
				return
			case <-next.C:
			}
			if err := write(protocol.TypeHeartbeat, protocol.Heartbeat{Inventory: inventory,
				AppliedRevision: applied.Load(), SentAt: time.Now()}); err != nil {
				return // the reader reports the session's end
			}
			heartbeats.Add(1)
			next.Reset(interval)
		}
	})
	defer beating.Wait()
	defer close(done)
	for {
		_, frame, err := c.ReadMessage()
		if err != nil {
			fail(fmt.Errorf("reading: %w", err))
			return
		}
		at := time.Now().UnixNano()
		var env protocol.Envelope
		var d protocol.Desired
		if err := json.Unmarshal(frame, &env); err != nil || env.Type != protocol.TypeDesired {
			fail(fmt.Errorf("got %.40q, want a desired state", frame))
			return
		}
		if err := json.Unmarshal(env.Body, &d); err != nil {
			fail(err)
			return
		}
		out.line(fmt.Sprintf("D %d %d %d %s", i, d.Revision, at, fleetValue(d.State)))
		applied.Store(d.Revision)
		if err := write(protocol.TypeAck, protocol.Ack{Revision: d.Revision, Result: protocol.ResultApplied}); err != nil {
			fail(fmt.Errorf("acknowledging: %w", err))
			return
		}
	}
}

func connectAgent(ctx context.Context, url, token string) (*websocket.Conn, protocol.Welcome, error) {
	var w protocol.Welcome
	d := websocket.Dialer{HandshakeTimeout: time.Minute}
	c, resp, err := d.DialContext(ctx, url, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			err = fmt.Errorf("%w: %s %s", err, resp.Status, bytes.TrimSpace(body))
		}
		return nil, w, fmt.Errorf("dialing: %w", err)
	}
	frame, err := protocol.Encode(protocol.TypeHello, protocol.Hello{Protocols: []int{protocol.Version},
		Capabilities: protocol.Known, Inventory: inventory})
	if err == nil {
		err = c.WriteMessage(websocket.TextMessage, frame)
	}
	var env protocol.Envelope
	if err == nil {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		_, frame, err = c.ReadMessage()
		_ = c.SetReadDeadline(time.Time{})
	}
	if err == nil {
		err = json.Unmarshal(frame, &env)
	}
	if err == nil && env.Type != protocol.TypeWelcome {
		err = fmt.Errorf("got %s, want welcome", env.Type)
	}
	if err == nil {
		err = json.Unmarshal(env.Body, &w)
	}
	if err != nil {
		c.Close()
		return nil, w, fmt.Errorf("saying hello: %w", err)
	}
	return c, w, nil
}

// fleetValue is FLEET_REVISION as the fleet's service gets it (the part
// service, when fan-outs reach only part of the fleet), or "-".
func fleetValue(st desired.State) string {
	for _, ns := range st.Namespaces {
		for _, s := range ns.Services {
			if *fanoutTo > 0 && s.Name != partService {
				continue
			}
			for _, e := range s.Env {
				if e.Name == fleetVariable {
					return e.Value
				}
			}
		}
	}
	return "-"
}

// lineWriter writes lines from many goroutines to one writer, flushing
// whenever it has nothing more queued.
type lineWriter struct {
	lines chan string
	done  chan struct{}
}

func newLineWriter(w io.Writer) *lineWriter {
	lw := &lineWriter{lines: make(chan string, 4096), done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		bw := bufio.NewWriter(w)
		for l := range lw.lines {
			_, _ = bw.WriteString(l + "\n")
			if len(lw.lines) == 0 {
				_ = bw.Flush()
			}
		}
		_ = bw.Flush()
	}()
	return lw
}

func (lw *lineWriter) line(s string) { lw.lines <- s }

// close flushes; nobody may write a line after it.
func (lw *lineWriter) close() {
	close(lw.lines)
	<-lw.done
}

// Every agent of a fleet gets its first state on connect and the revision
// one mutation publishes to all of them, whichever way the fleet was seeded.
func TestFanout(t *testing.T) {
	for name, viaPlane := range map[string]bool{"seeded through the plane": true, "seeded as store rows": false} {
		t.Run(name, func(t *testing.T) {
			const n = 20
			f := newFleet(t, n, viaPlane, time.Second)
			a := startAgents(t, f)
			if err := a.wait(time.Minute); err != nil {
				t.Fatalf("connecting: %v; %s", err, f.errors)
			}
			rev, value := a.received()
			for i, c := range f.clusters {
				if want := f.clusterRow(t, c).DesiredRevision; rev[i] != want || value[i] != "0" {
					t.Errorf("agent %d got revision %d with %s=%s on connect, want %d with 0", i, rev[i], fleetVariable, value[i], want)
				}
			}
			a.arm(n)
			f.setVariable(t, "1")
			if err := a.wait(time.Minute); err != nil {
				t.Fatalf("fanning out: %v; %s", err, f.errors)
			}
			_, bumped := f.pub.last()
			if len(bumped) != n {
				t.Errorf("the mutation bumped %d clusters, want %d", len(bumped), n)
			}
			rev, value = a.received()
			for i, c := range f.clusters {
				if rev[i] != bumped[c] || value[i] != "1" {
					t.Errorf("agent %d got revision %d with %s=%s, want the published %d with 1", i, rev[i], fleetVariable, value[i], bumped[c])
				}
			}
			f.waitApplied(t, time.Minute)
		})
	}
}

func (f *fleet) clusterRow(t *testing.T, id model.ClusterID) *model.Cluster {
	t.Helper()
	c, err := store.Clusters.Get(context.Background(), f.st.Q(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// BenchmarkFanout measures, for a fleet of agents connected to one control
// plane (flags above):
//
//   - bytes/session, goroutines/session: the control plane's heap and stacks
//     (HeapInuse + StackInuse after a collection) and goroutines with the
//     fleet connected and heartbeating, less the same before it connected,
//     per agent;
//   - cpu-ns/heartbeat: the control plane's CPU time (getrusage) over a
//     steady period with no changes, per heartbeat the agents sent in it;
//     it includes everything a session does meanwhile (its pings and token
//     checks). agent-cpu-ns/heartbeat is the agents process's own;
//   - per op, one fan-out: a project variable that every cluster's state
//     holds is set (SetVariable, which compiles every cluster), and the op
//     ends when every agent has received its new revision. mutation-ns is
//     the SetVariable call; p50-ns, p99-ns and max-ns are, over every agent
//     of every op, the time from the publish after commit to the agent
//     reading the frame; cpu-ns/op is the control plane's CPU from the
//     mutation until every agent's ack is recorded. With -fanout.to=k the
//     variable is set on a service deployed to the first k clusters only,
//     and the op ends when those k agents have their new revision.
func BenchmarkFanout(b *testing.B) {
	// One seeding per size, shared by every -count run: this function runs
	// once, its sub-benchmarks count times each.
	seeds, root := map[int]*seeded{}, b
	for _, s := range strings.Split(*fanoutAgents, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			b.Fatalf("-fanout.agents=%q: want fleet sizes, comma-separated", *fanoutAgents)
		}
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) {
			openFiles(b, n)
			if seeds[n] == nil {
				viaPlane := *fanoutSeed == "plane"
				switch *fanoutStore {
				case "sqlite":
					dir := filepath.Join(root.TempDir(), strconv.Itoa(n))
					if err := os.Mkdir(dir, 0o700); err != nil {
						b.Fatal(err)
					}
					seeds[n] = seedSQLite(b, dir, n, viaPlane)
				case "postgres":
					// Dropped when this function ends, after every run.
					st := pgtest.Open(root)
					seeds[n] = seedFleet(b, st, n, viaPlane)
					seeds[n].shared = st
				default:
					b.Fatalf("-fanout.store=%q: want sqlite or postgres", *fanoutStore)
				}
				b.Logf("seeded %d clusters (%s, %s) in %v: %s", n, *fanoutStore, *fanoutSeed, seeds[n].took.Round(time.Millisecond), seeds[n].phases)
			}
			benchFanout(b, seeds[n])
		})
	}
}

func benchFanout(b *testing.B, sd *seeded) {
	n := len(sd.clusters)
	f := openFleet(b, sd, *fanoutHeartbeat)

	heap0, stack0, g0 := heapAndStacks()
	start := time.Now()
	a := startAgents(b, f)
	if err := a.wait(*fanoutTimeout); err != nil {
		b.Fatalf("connecting: %v; %s", err, f.errors)
	}
	connected := time.Since(start)
	f.waitApplied(b, *fanoutTimeout)
	// Idle sessions: the fleet is connected and every agent has heartbeated.
	// The steady state is a stretch of time, not an event to wait for.
	<-time.After(2 * *fanoutHeartbeat)
	heap1, stack1, g1 := heapAndStacks()

	c0, err := a.count()
	if err != nil {
		b.Fatal(err)
	}
	stopProfile := startProfile(b, "steady")
	cpu0 := readCPU()
	<-time.After(*fanoutWindow)
	cpu1 := readCPU()
	stopProfile()
	c1, err := a.count()
	if err != nil {
		b.Fatal(err)
	}
	beats := c1.heartbeats - c0.heartbeats
	steady := cpu1.sub(cpu0)
	b.Logf("connected %d agents in %v; steady %v: %d heartbeats, CPU %v, agents CPU %v",
		n, connected.Round(time.Millisecond), *fanoutWindow, beats, steady, (c1.cpu - c0.cpu).Round(time.Millisecond))

	var lat []time.Duration
	var mutation time.Duration
	var cpu cpuTimes
	ops := 0
	stopProfile = startProfile(b, "fanout")
	b.ReportAllocs()
	for b.Loop() {
		ops++
		sd.value++
		value := sd.value
		a.arm(f.parts)
		cpuStart := readCPU()
		t0 := time.Now()
		f.setVariable(b, strconv.Itoa(value))
		mutation += time.Since(t0)
		if err := a.wait(*fanoutTimeout); err != nil {
			b.Fatalf("fan-out %d: %v; %s", value, err, f.errors)
		}
		b.StopTimer()
		f.waitApplied(b, *fanoutTimeout)
		cpu = cpu.add(readCPU().sub(cpuStart))
		published, bumped := f.pub.last()
		if len(bumped) != f.parts {
			b.Fatalf("fan-out %d bumped %d clusters, want %d", value, len(bumped), f.parts)
		}
		rev, got := a.received()
		for i, c := range f.clusters {
			if i >= f.parts {
				if _, ok := bumped[c]; ok {
					b.Errorf("fan-out %d bumped cluster %d, which it does not reach", value, i)
				}
				continue
			}
			if rev[i] != bumped[c] || got[i] != strconv.Itoa(value) {
				b.Errorf("fan-out %d: agent %d got revision %d with %s=%s, want %d with %d", value, i, rev[i], fleetVariable, got[i], bumped[c], value)
			}
		}
		lat = append(lat, a.latencies(published)...)
		b.StartTimer()
	}
	stopProfile()
	b.Logf("fan-outs: %d, CPU %v; %s", ops, cpu, f.errors)
	slices.Sort(lat)
	b.ReportMetric(float64(int64(heap1+stack1)-int64(heap0+stack0))/float64(n), "bytes/session")
	b.ReportMetric(float64(int64(stack1)-int64(stack0))/float64(n), "stack-bytes/session")
	b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/session")
	b.ReportMetric(float64(steady.self)/float64(beats), "cpu-ns/heartbeat")
	b.ReportMetric(float64(c1.cpu-c0.cpu)/float64(beats), "agent-cpu-ns/heartbeat")
	b.ReportMetric(float64(connected.Nanoseconds()), "connect-ns")
	b.ReportMetric(float64(mutation.Nanoseconds())/float64(ops), "mutation-ns")
	b.ReportMetric(float64(cpu.self)/float64(ops), "cpu-ns/op")
	if steady.dbKnown && cpu.dbKnown {
		b.ReportMetric(float64(steady.db)/float64(beats), "db-cpu-ns/heartbeat")
		b.ReportMetric(float64(cpu.db)/float64(ops), "db-cpu-ns/op")
	}
	b.ReportMetric(float64(percentile(lat, 0.50)), "p50-ns")
	b.ReportMetric(float64(percentile(lat, 0.99)), "p99-ns")
	b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
}

// startProfile writes a CPU profile of what follows to
// <-fanout.profile>-<name>.pprof, until the returned function is called.
func startProfile(tb testing.TB, name string) func() {
	tb.Helper()
	if *fanoutProfile == "" {
		return func() {}
	}
	w, err := os.Create(*fanoutProfile + "-" + name + ".pprof")
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(w); err != nil {
		w.Close()
		tb.Fatalf("profiling (-fanout.profile and -cpuprofile exclude each other): %v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := w.Close(); err != nil {
			tb.Error(err)
		}
	}
}

// cpuTimes is CPU time used by this process and by the PostgreSQL server it
// started, if it started one.
type cpuTimes struct {
	self, db time.Duration
	dbKnown  bool
}

func readCPU() cpuTimes {
	db, ok := pgtest.ServerCPU()
	return cpuTimes{self: processCPU(), db: db, dbKnown: ok}
}

func (c cpuTimes) sub(d cpuTimes) cpuTimes {
	return cpuTimes{self: c.self - d.self, db: c.db - d.db, dbKnown: c.dbKnown && d.dbKnown}
}

func (c cpuTimes) add(d cpuTimes) cpuTimes {
	if c == (cpuTimes{}) {
		return d
	}
	return cpuTimes{self: c.self + d.self, db: c.db + d.db, dbKnown: c.dbKnown && d.dbKnown}
}

func (c cpuTimes) String() string {
	if !c.dbKnown {
		return fmt.Sprintf("%v (the database's not known)", c.self.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v here, %v in PostgreSQL", c.self.Round(time.Millisecond), c.db.Round(time.Millisecond))
}

// percentile of sorted samples, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	return sorted[max(0, int(math.Ceil(q*float64(len(sorted))))-1)]
}

// heapAndStacks is the heap and stack memory in use after a collection, and
// the number of goroutines.
func heapAndStacks() (heap, stack uint64, goroutines int) {
	runtime.GC()
	runtime.GC() // the first may leave finalizers' objects for the second
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse, runtime.NumGoroutine()
}

// processCPU is the CPU time, user and system, this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// openFiles raises the soft open-file limit to what a fleet of n needs
// here: a socket per session, and with SQLite, during a connect or fan-out
// burst, up to one SQLite connection per session (database/sql opens them on demand),
// each holding the database, its WAL and its shared memory. Go already
// raises the soft limit to the hard one at start; this is for systems
// where the hard limit is the obstacle, which only skipping can answer.
func openFiles(tb testing.TB, n int) {
	tb.Helper()
	need := uint64(5*n + 256)
	if *fanoutStore == "postgres" { // a socket per session; the pool is small
		need = uint64(n + 256)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		tb.Skipf("the open-file limit is %d (hard) and %d agents need about %d; raise it (ulimit -Hn)", lim.Max, n, need)
	}
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
}
