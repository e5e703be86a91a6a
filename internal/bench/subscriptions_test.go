//go:build unix

// The subscription benchmarks of docs/benchmarks.md, "Subscriptions (issue
// 5)": how long an agent's stage report takes to reach a GraphQL subscriber
// at 100 reports a second, on one replica and across two, how much an idle
// subscription costs the server, and the same for a raw websocket relay on
// the same machine as the baseline.
//
// They need a child process and open-file limits, hence unix only.

package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
)

// Flags, after -args:
//
//	go test -run '^$' -bench StageToSubscriber -benchtime 1x ./internal/bench/ -args -subs.deployments=100
var (
	subsDeployments = flag.Int("subs.deployments", 200, "StageToSubscriber, RawRelay/latency: deployments, one subscriber each; each gets 5 stage reports")
	subsRate        = flag.Int("subs.rate", 100, "StageToSubscriber, RawRelay/latency: stage reports per second")
	subsIdle        = flag.Int("subs.idle", 5000, "IdleSubscriptions, RawRelay/idle: idle subscriptions, one connection each")
	subsWindow      = flag.Duration("subs.window", 30*time.Second, "IdleSubscriptions, RawRelay/idle: how long the idle server's CPU is measured")
	subsProfile     = flag.String("subs.profile", "", "write a CPU profile of each latency run's reports and an idle run's window, and the heap of an idle run, to <prefix>-<benchmark>-{cpu,heap}.pprof")
)

// subsStages are the stages an agent reports for a deployment that
// succeeds, in order.
var subsStages = [...]string{"STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"}

// deploymentEventsQuery is what each latency subscriber asks for: a
// deployment console's event list.
const deploymentEventsQuery = `subscription($d: ID!) { deploymentEvents(deploymentId: $d) { cursor sequence stage message at } }`

// clusterStatusQuery is what each idle subscriber asks for: a cluster
// page's header. It stays open; the seeded cluster has no agent, so it
// never changes.
const clusterStatusQuery = `subscription($c: ID!) { clusterStatus(clusterId: $c) { id name status lastHeartbeatAt desiredRevision appliedRevision } }`

// BenchmarkStageToSubscriber measures, per op one run of 10 s (-benchtime
// 1x), the time from an agent's stage report (AgentSide.Stage, on replica
// A) to a graphql-transport-ws subscriber of deploymentEvents reading the
// `next` of that stage (on replica A with replicas=1, on replica B with
// replicas=2), at 100 reports a second. See docs/benchmarks.md.
func BenchmarkStageToSubscriber(b *testing.B) {
	for _, k := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", k), func(b *testing.B) {
			subsOpenFiles(b, 2*(*subsDeployments)) // both ends of each connection are here
			var res stageResults
			b.ResetTimer()
			b.StopTimer()
			for range b.N {
				t := openNebulaStages(b, k, *subsDeployments)
				b.StartTimer()
				r := runStages(b, t, *subsRate)
				b.StopTimer()
				t.close()
				res.add(b, r)
			}
			res.report(b)
		})
	}
}

// BenchmarkIdleSubscriptions measures the memory and goroutines 5,000 idle
// clusterStatus subscriptions, one websocket each, cost one replica on
// PostgreSQL, with the clients in a child process; and the replica's CPU
// while they idle. An op is connecting and subscribing them all.
func BenchmarkIdleSubscriptions(b *testing.B) {
	subsOpenFiles(b, *subsIdle)
	var res idleResults
	b.ResetTimer()
	b.StopTimer()
	for range b.N {
		res.add(idleNebula(b, idleOpts{n: *subsIdle, settle: 2 * time.Second, window: *subsWindow}))
	}
	res.report(b)
}

// BenchmarkRawRelay is the baseline of both: the same latency run and the
// same idle connections against relay (subs_relay_test.go), a websocket
// relay with no GraphQL and no database.
func BenchmarkRawRelay(b *testing.B) {
	b.Run("latency", func(b *testing.B) {
		subsOpenFiles(b, 2*(*subsDeployments)) // both ends of each connection are here
		var res stageResults
		b.ResetTimer()
		b.StopTimer()
		for range b.N {
			t := openRelayStages(b, *subsDeployments)
			b.StartTimer()
			r := runStages(b, t, *subsRate)
			b.StopTimer()
			t.close()
			res.add(b, r)
		}
		res.report(b)
	})
	b.Run("idle", func(b *testing.B) {
		subsOpenFiles(b, *subsIdle)
		var res idleResults
		b.ResetTimer()
		b.StopTimer()
		for range b.N {
			res.add(idleRelay(b, idleOpts{n: *subsIdle, settle: 2 * time.Second, window: *subsWindow}))
		}
		res.report(b)
	})
}

// TestSubscriptionBenchmarks runs the machinery of the benchmarks above,
// small: every stage of 4 deployments reaches its subscriber across two
// replicas and through the relay, and 20 idle subscriptions connect from
// the child process and are all seen by the server.
func TestSubscriptionBenchmarks(t *testing.T) {
	t.Run("StageToSubscriber", func(t *testing.T) {
		st := openNebulaStages(t, 2, 4)
		defer st.close()
		r := runStages(t, st, 100)
		for _, p := range r.problems {
			t.Error(p)
		}
		if r.delivered != r.sent || r.sent != 4*len(subsStages) {
			t.Errorf("delivered %d of %d stage reports, want all %d", r.delivered, r.sent, 4*len(subsStages))
		}
	})
	t.Run("RawRelay", func(t *testing.T) {
		st := openRelayStages(t, 4)
		defer st.close()
		r := runStages(t, st, 100)
		for _, p := range r.problems {
			t.Error(p)
		}
		if r.delivered != r.sent || r.sent != 4*len(subsStages) {
			t.Errorf("delivered %d of %d, want all %d", r.delivered, r.sent, 4*len(subsStages))
		}
	})
	opts := idleOpts{n: 20, settle: 100 * time.Millisecond}
	t.Run("IdleSubscriptions", func(t *testing.T) {
		// An idle subscription holds one goroutine, its connection's
		// reader: no writer, no operation waiting on its channel, no
		// follower waiting for a note (issue 16). A few more may be
		// finishing their work (settle).
		r := idleNebula(t, opts)
		if r.goroutines > r.n+4 {
			t.Errorf("%d idle subscriptions hold %d goroutines, want one each (at most %d)", r.n, r.goroutines, r.n+4)
		}
	})
	t.Run("RawRelayIdle", func(t *testing.T) { idleRelay(t, opts) })
}

// TestStageReportStatements lists, with -v, the SQL statements one agent
// stage report causes on each of two replicas: the report itself on A, and
// what one deploymentEvents subscriber on B reads to follow it (nothing). (A token
// check or a resync of the subscription falling in the same moment would
// add its own.)
func TestStageReportStatements(t *testing.T) {
	st := openNebulaStages(t, 2, 1)
	defer st.close()
	a, b := st.reps[0], st.reps[1]
	sub := st.subs[0]
	var onB []statement
	onA := a.queries.record(func() {
		onB = b.queries.record(func() {
			if err := st.report(context.Background(), 0, 0); err != nil {
				t.Fatal(err)
			}
			select {
			case <-sub.arrived:
			case <-time.After(10 * time.Second):
				t.Fatal("the subscriber did not get STARTING within 10 s")
			}
			// Anything the subscription reads after sending.
			time.Sleep(200 * time.Millisecond)
		})
	})
	for _, r := range []struct {
		name string
		sql  []statement
	}{{"A (the report)", onA}, {"B (the subscriber)", onB}} {
		t.Logf("replica %s: %d statements", r.name, len(r.sql))
		for i, q := range r.sql {
			t.Logf("  %d. %6s %s", i+1, q.took.Round(time.Microsecond), clip(q.sql, 160))
		}
	}
	// None: the report's note carries its event with the deployment's
	// scope, stage and last event number (control/eventhints.go), and the
	// subscriber's grants are cached, so the event goes out without a read.
	if len(onB) != 0 {
		t.Errorf("the subscriber on B read %d statements, want none", len(onB))
	}
}

// stageTarget is what a latency run drives: n deployments, each with one
// subscriber ready to receive its stages, and a way to report stage s of
// deployment d.
type stageTarget struct {
	n      int
	subs   []*stageSub
	want   []string // the stages a subscriber must see, in order
	report func(ctx context.Context, d, s int) error
	log    func() string  // the server's errors, if any
	noDB   bool           // the server uses no database: leave its CPU out
	reps   []*subsReplica // NebulaCtrl's replicas, A first; none for the relay
	close  func()
}

// queries counts the SQL statements the replicas have sent.
func (t *stageTarget) queries() int64 {
	var n int64
	for _, r := range t.reps {
		n += r.queries.n.Load()
	}
	return n
}

// subscribeAll connects n subscribers, 32 at a time, starts their read
// loops and waits until each is ready.
func subscribeAll(tb testing.TB, n int, dial func(ctx context.Context, i int) (*websocket.Conn, error), read func(*stageSub)) []*stageSub {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	subs := make([]*stageSub, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	dialing := make(chan struct{}, 32)
	for i := range n {
		wg.Go(func() {
			dialing <- struct{}{}
			defer func() { <-dialing }()
			c, err := dial(ctx, i)
			if err != nil {
				errs[i] = err
				return
			}
			subs[i] = newStageSub(c)
			go read(subs[i])
		})
	}
	wg.Wait()
	closeAll := func() {
		for _, s := range subs {
			if s != nil {
				s.c.Close()
				<-s.done
			}
		}
	}
	for i, err := range errs {
		if err != nil {
			closeAll()
			tb.Fatalf("subscriber %d: %v", i, err)
		}
	}
	for i, s := range subs {
		select {
		case <-s.ready:
		case <-ctx.Done():
			closeAll()
			tb.Fatalf("subscriber %d not ready after 2 minutes", i)
		}
		select {
		case <-s.done:
			err := s.err
			closeAll()
			tb.Fatalf("subscriber %d ended before the first report: %v (saw %v)", i, err, s.seen)
		default:
		}
	}
	return subs
}

func closeSubs(subs []*stageSub) {
	for _, s := range subs {
		s.c.Close()
	}
	for _, s := range subs {
		<-s.done
	}
}

// openNebulaStages starts k replicas on a fresh PostgreSQL database, seeds
// n deployments in DELIVERING on replica A and subscribes to each of their
// events on the last replica.
func openNebulaStages(tb testing.TB, k, n int) *stageTarget {
	tb.Helper()
	ctx := context.Background()
	url := pgtest.URL(tb)
	var reps []*subsReplica
	closeReps := func() {
		for i := len(reps) - 1; i >= 0; i-- {
			reps[i].close()
		}
	}
	for i := range k {
		reps = append(reps, openSubsReplica(tb, url, string(rune('a'+i))))
	}
	// Eleven environments per project, the last protected (its deployment
	// waits for approval), so ten deliver per project.
	start := time.Now()
	size := Size{Projects: (n + 9) / 10, Environments: 11, Deployments: 1}
	seed, err := Seed(ctx, reps[0].plane, size)
	if err != nil {
		closeReps()
		tb.Fatal(err)
	}
	var deps []*model.Deployment
	for _, d := range seed.Latest {
		if d.Deployment.Stage == model.StageDelivering {
			deps = append(deps, d.Deployment)
		}
	}
	slices.SortFunc(deps, func(a, b *model.Deployment) int { return strings.Compare(string(a.ID), string(b.ID)) })
	if len(deps) < n {
		closeReps()
		tb.Fatalf("seeded %d deployments in DELIVERING, want %d", len(deps), n)
	}
	deps = deps[:n]
	seeded := time.Since(start)

	on := reps[k-1]
	subs := subscribeAll(tb, n, func(ctx context.Context, i int) (*websocket.Conn, error) {
		return gqlSubscribe(ctx, on.wsURL(), seed.Secret, deploymentEventsQuery,
			map[string]any{"d": gid.Encode(gid.Deployment, deps[i].ID)})
	}, (*stageSub).readGraphQL)
	tb.Logf("replicas=%d: seeded %d deployments in %v, subscribed in %v", k, n,
		seeded.Round(time.Millisecond), (time.Since(start) - seeded).Round(time.Millisecond))

	side, err := reps[0].plane.Agents.AgentSideOf(context.Background(), deps[0].ClusterID)
	if err != nil {
		tb.Fatal(err)
	}
	return &stageTarget{
		n:    n,
		subs: subs,
		reps: reps,
		want: append([]string{"QUEUED", "DELIVERING"}, subsStages[:]...),
		report: func(ctx context.Context, d, s int) error {
			return side.Stage(ctx, hub.StageOf(&protocol.Stage{Deployment: string(deps[d].ID),
				Stage: subsStages[s], At: time.Now()}))
		},
		log: func() string {
			var out []string
			for _, r := range reps {
				if r.log.Count() > 0 {
					out = append(out, "replica "+r.name+": "+r.log.String())
				}
			}
			return strings.Join(out, "; ")
		},
		close: func() {
			closeSubs(subs)
			closeReps()
		},
	}
}

// openRelayStages starts the relay and subscribes to each of n made-up
// deployments.
func openRelayStages(tb testing.TB, n int) *stageTarget {
	tb.Helper()
	r := newRelay()
	srv := httptest.NewServer(r)
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/relay"
	deps := make([]string, n)
	for i := range deps {
		deps[i] = fmt.Sprintf("deployment-%04d", i)
	}
	subs := subscribeAll(tb, n, func(ctx context.Context, i int) (*websocket.Conn, error) {
		return relaySubscribe(ctx, wsURL, deps[i])
	}, (*stageSub).readRelay)
	return &stageTarget{
		n:    n,
		subs: subs,
		want: subsStages[:],
		report: func(_ context.Context, d, s int) error {
			// Stage s of a deployment is its event 3 + s, after QUEUED and
			// DELIVERING, as in NebulaCtrl.
			msg, err := json.Marshal(relayEvent{Deployment: deps[d], Stage: subsStages[s], Sequence: 3 + s, At: time.Now()})
			if err != nil {
				return err
			}
			r.Publish(deps[d], msg)
			return nil
		},
		log:  func() string { return "" },
		noDB: true,
		close: func() {
			closeSubs(subs)
			srv.Close()
		},
	}
}

// stageResult is one latency run.
type stageResult struct {
	lat             []time.Duration // report → subscriber, every delivered stage
	afterCall       []time.Duration // the report call's return → subscriber (negative when the frame came first)
	calls           []time.Duration // the report calls themselves
	sent, delivered int
	produced        time.Duration // first report due → last report returned
	cpu             subsCPU       // from the first report until every subscriber ended
	queries         int64         // SQL statements meanwhile, every replica
	problems        []string
}

// runStages reports the 5 stages of every deployment of t at rate reports a
// second, round by round (stage 1 of every deployment, then stage 2, …), so
// that a deployment's reports are n/rate apart. A time.Ticker paces the
// reports; when a report call takes longer than the interval, the reports
// that fell due meanwhile follow at once, so that the rate holds on
// average. Each report's wall time is noted just before its call; each
// subscriber notes when the frame of each stage arrived.
func runStages(tb testing.TB, t *stageTarget, rate int) stageResult {
	tb.Helper()
	ctx := context.Background()
	total := t.n * len(subsStages)
	sent := make([]time.Time, total)
	calls := make([]time.Duration, total)
	var problems []string
	interval := time.Second / time.Duration(rate)

	stopProfile := subsStartProfile(tb)
	cpu0, queries0 := readSubsCPU(), t.queries()
	start := time.Now()
	tick := time.NewTicker(interval)
	for i := 0; i < total; {
		<-tick.C
		due := int(time.Since(start) / interval)
		for ; i < total && i < due; i++ {
			d, s := i%t.n, i/t.n
			sent[i] = time.Now()
			err := t.report(ctx, d, s)
			calls[i] = time.Since(sent[i])
			if err != nil && len(problems) < 10 {
				problems = append(problems, fmt.Sprintf("reporting %s of deployment %d: %v", subsStages[s], d, err))
			}
		}
	}
	tick.Stop()
	produced := time.Since(start)

	// Every subscriber ends after its last stage (GraphQL completes the
	// subscription after SUCCEEDED); those that do not within a minute
	// are cut off and reported below.
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	cut := false
	for _, s := range t.subs {
		if !cut {
			select {
			case <-s.done:
				continue
			case <-timeout.C:
				cut = true
			}
		}
		s.c.Close()
		<-s.done
	}
	cpu := readSubsCPU().sub(cpu0)
	stopProfile()
	if t.noDB {
		cpu.dbKnown = false
	}

	r := stageResult{calls: calls, sent: total, produced: produced, cpu: cpu, queries: t.queries() - queries0}
	for d, sub := range t.subs {
		for s := range subsStages {
			if at := sub.at[s]; !at.IsZero() {
				i := s*t.n + d
				r.lat = append(r.lat, at.Sub(sent[i]))
				r.afterCall = append(r.afterCall, at.Sub(sent[i].Add(calls[i])))
				r.delivered++
			}
		}
		if !slices.Equal(sub.seen, t.want) || sub.dups > 0 || !sub.ended {
			if len(problems) < 10 {
				problems = append(problems, fmt.Sprintf("subscriber %d saw %v (%d duplicates), want %v; ended: %v, error: %v",
					d, sub.seen, sub.dups, t.want, sub.ended, sub.err))
			}
		}
	}
	if cut {
		problems = append(problems, "some subscribers had not ended a minute after the last report")
	}
	if l := t.log(); l != "" {
		problems = append(problems, l)
	}
	r.problems = problems
	return r
}

// stageResults gathers the runs of one benchmark.
type stageResults struct {
	lat, calls      []time.Duration
	sent, delivered int
	produced        time.Duration
	cpu             subsCPU
	queries         int64
	runs            int
}

func (rs *stageResults) add(tb testing.TB, r stageResult) {
	tb.Helper()
	for _, p := range r.problems {
		tb.Error(p)
	}
	rs.lat = append(rs.lat, r.lat...)
	rs.calls = append(rs.calls, r.calls...)
	rs.sent += r.sent
	rs.delivered += r.delivered
	rs.produced += r.produced
	rs.queries += r.queries
	if rs.runs == 0 {
		rs.cpu = r.cpu
	} else {
		rs.cpu = subsCPU{self: rs.cpu.self + r.cpu.self, db: rs.cpu.db + r.cpu.db, dbKnown: rs.cpu.dbKnown && r.cpu.dbKnown}
	}
	rs.runs++
	slices.Sort(r.lat)
	slices.Sort(r.calls)
	slices.Sort(r.afterCall)
	tb.Logf("%d reports in %v: delivered %d; report→subscriber p50 %v, p99 %v, max %v; report call p50 %v, p99 %v; "+
		"call returned→subscriber p50 %v, p99 %v; CPU %v; %d SQL statements",
		r.sent, r.produced.Round(time.Millisecond), r.delivered,
		subsPercentile(r.lat, 0.5), subsPercentile(r.lat, 0.99), subsPercentile(r.lat, 1),
		subsPercentile(r.calls, 0.5), subsPercentile(r.calls, 0.99),
		subsPercentile(r.afterCall, 0.5), subsPercentile(r.afterCall, 0.99), r.cpu, r.queries)
}

func (rs *stageResults) report(b *testing.B) {
	if rs.sent == 0 {
		return
	}
	slices.Sort(rs.lat)
	slices.Sort(rs.calls)
	b.ReportMetric(float64(subsPercentile(rs.lat, 0.50)), "p50-ns")
	b.ReportMetric(float64(subsPercentile(rs.lat, 0.99)), "p99-ns")
	b.ReportMetric(float64(subsPercentile(rs.lat, 1)), "max-ns")
	b.ReportMetric(float64(rs.delivered)/float64(rs.sent), "delivered/sent")
	b.ReportMetric(float64(rs.sent)/rs.produced.Seconds(), "reports/s")
	b.ReportMetric(float64(subsPercentile(rs.calls, 0.50)), "report-p50-ns")
	b.ReportMetric(float64(subsPercentile(rs.calls, 0.99)), "report-p99-ns")
	b.ReportMetric(float64(rs.cpu.self)/float64(rs.sent), "cpu-ns/report")
	if rs.cpu.dbKnown {
		b.ReportMetric(float64(rs.cpu.db)/float64(rs.sent), "db-cpu-ns/report")
		b.ReportMetric(float64(rs.queries)/float64(rs.sent), "queries/report")
	}
}

// idleOpts shape an idle run: n connections, a pause after the last one
// subscribed before the memory is read, and the window the CPU is read
// over (none in the test).
type idleOpts struct {
	n              int
	settle, window time.Duration
}

// idleResult is one idle run: the server's memory and goroutines with the
// subscribers connected, less before, and its CPU while they idle.
type idleResult struct {
	n            int
	connect      time.Duration
	heap, stack  int64
	goroutines   int
	cpu          subsCPU
	window       time.Duration
	queries      int64 // SQL statements over the window
	queriesKnown bool
	extra        int // messages the idle subscribers got after their first
	serverLive   int // the server's count of open subscriptions, connected
}

// idleNebula measures n idle clusterStatus subscriptions on one replica on
// a fresh PostgreSQL database.
func idleNebula(tb testing.TB, o idleOpts) idleResult {
	tb.Helper()
	ctx := context.Background()
	rep := openSubsReplica(tb, pgtest.URL(tb), "a")
	defer rep.close()
	seed, err := Seed(ctx, rep.plane, Size{Projects: 1, Environments: 1, Deployments: 1})
	if err != nil {
		tb.Fatal(err)
	}
	var cluster model.ClusterID
	for _, d := range seed.Latest {
		cluster = d.Deployment.ClusterID
	}
	q, _ := json.Marshal(map[string]any{"query": clusterStatusQuery, "variables": map[string]any{"c": gid.Encode(gid.Cluster, cluster)}})
	r := measureIdle(tb, o, "graphql", rep.wsURL(), func() int { return rep.plane.Bus().Following(bus.Cluster(string(cluster))) }, rep.queries.n.Load,
		envSubsToken+"="+seed.Secret, envSubsQuery+"="+string(q))
	if rep.log.Count() > 0 {
		tb.Errorf("%s", rep.log)
	}
	return r
}

// idleRelay measures n idle connections to the relay, all watching one
// deployment.
func idleRelay(tb testing.TB, o idleOpts) idleResult {
	tb.Helper()
	r := newRelay()
	srv := httptest.NewServer(r)
	defer srv.Close()
	res := measureIdle(tb, o, "relay", "ws"+strings.TrimPrefix(srv.URL, "http")+"/relay", r.Live, nil,
		envSubsKey+"=deployment-0000")
	res.cpu.dbKnown = false // no database here
	return res
}

// measureIdle connects o.n idle subscribers from a child process to the
// server at wsURL, reads this process's memory and goroutines before and
// after, and its CPU over o.window with them idle. live counts the
// server's open subscriptions; queries, if not nil, the SQL statements
// it has sent.
func measureIdle(tb testing.TB, o idleOpts, mode, wsURL string, live func() int, queries func() int64, env ...string) idleResult {
	tb.Helper()
	b, _ := tb.(*testing.B)
	heap0, stack0, g0 := subsHeap()
	if b != nil {
		b.StartTimer()
	}
	c := startSubsClients(tb, mode, wsURL, o.n, env...)
	connect, err := c.waitReady(10 * time.Minute)
	if b != nil {
		b.StopTimer()
	}
	if err != nil {
		c.stop(tb)
		tb.Fatalf("connecting %d subscribers: %v", o.n, err)
	}
	time.Sleep(o.settle) // idle time is what is measured: nothing to wait on
	r := idleResult{n: o.n, connect: connect, window: o.window, serverLive: live()}
	heap1, stack1, g1 := subsHeap()
	subsHeapProfile(tb)
	r.heap, r.stack, r.goroutines = int64(heap1)-int64(heap0), int64(stack1)-int64(stack0), g1-g0

	if o.window > 0 {
		stop := subsStartProfile(tb)
		cpu0 := readSubsCPU()
		var q0 int64
		if queries != nil {
			q0 = queries()
		}
		time.Sleep(o.window) // idle time is what is measured: nothing to wait on
		r.cpu = readSubsCPU().sub(cpu0)
		if queries != nil {
			r.queries, r.queriesKnown = queries()-q0, true
		}
		stop()
	}
	failed := c.err()
	r.extra = c.stop(tb)
	if failed != nil {
		tb.Errorf("an idle subscriber failed: %v", failed)
	}
	if r.serverLive != o.n {
		tb.Errorf("the server counted %d live subscriptions with %d subscribers connected", r.serverLive, o.n)
	}
	if r.extra > 0 {
		tb.Errorf("the idle subscribers got %d messages after their first", r.extra)
	}
	// The next run's "before" must not count this run's leftovers.
	if !subsWait(time.Minute, func() bool { return live() == 0 }) {
		tb.Errorf("%d subscriptions still open a minute after their clients left", live())
	}
	tb.Logf("%d %s subscribers: connected in %v; server heap+stacks %+d B (stacks %+d B), goroutines %+d; CPU over %v: %v, %d SQL statements",
		o.n, mode, connect.Round(time.Millisecond), r.heap+r.stack, r.stack, r.goroutines, o.window, r.cpu, r.queries)
	return r
}

// idleResults gathers the runs of one idle benchmark.
type idleResults struct{ runs []idleResult }

func (rs *idleResults) add(r idleResult) { rs.runs = append(rs.runs, r) }

func (rs *idleResults) report(b *testing.B) {
	if len(rs.runs) == 0 {
		return
	}
	var bytes, stack, g, cpu, db, window, queries float64
	dbKnown, queriesKnown := true, true
	for _, r := range rs.runs {
		n := float64(r.n)
		bytes += float64(r.heap+r.stack) / n
		stack += float64(r.stack) / n
		g += float64(r.goroutines) / n
		cpu += float64(r.cpu.self)
		db += float64(r.cpu.db)
		dbKnown = dbKnown && r.cpu.dbKnown
		queries += float64(r.queries)
		queriesKnown = queriesKnown && r.queriesKnown
		window += float64(r.window)
	}
	runs := float64(len(rs.runs))
	b.ReportMetric(bytes/runs, "bytes/subscription")
	b.ReportMetric(stack/runs, "stack-bytes/subscription")
	b.ReportMetric(g/runs, "goroutines/subscription")
	if window > 0 {
		b.ReportMetric(cpu/window, "idle-cores")
		if dbKnown {
			b.ReportMetric(db/window, "db-idle-cores")
		}
		if queriesKnown {
			b.ReportMetric(queries/(window/float64(time.Second)), "idle-queries/s")
		}
	}
}
