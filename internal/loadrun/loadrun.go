//go:build linux

package loadrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// Scale is the size of a run.
type Scale struct {
	// Agents is the number of clusters, one agent each, shared by
	// Tenants tenants.
	Agents, Tenants int
	Subscribers     int
	// Mutations and Queries are the open-loop rates, per second.
	Mutations, Queries float64
	// Heartbeat is the interval the replicas ask agents to heartbeat at.
	Heartbeat time.Duration
	// StageDelay is how long a simulated rollout takes from STARTING to
	// SUCCEEDED.
	StageDelay time.Duration
	// Warmup runs the load before the window, ramping up over its first
	// half; nothing in it is measured except errors.
	Warmup, Duration time.Duration
}

// The operation kinds of a report, in its order.
const (
	kindNested           = "query: nested (projects → environments → latest deployment)"
	kindDeployment       = "query: deployment by id"
	kindClusters         = "query: cluster list (50)"
	kindDeploy           = "mutation: deploy"
	kindSetVariable      = "mutation: setVariable (environment scope)"
	kindSubscriberDeploy = "subscription: deploy sent → first event of it, per subscriber"
	kindSubscriberStage  = "subscription: agent's SUCCEEDED report → event, per subscriber"
	kindSubscriberEvent  = "subscription: events received"
	kindAgentDeploy      = "agent: deploy sent → desired state naming it"
	kindAgentVariable    = "agent: setVariable sent → desired state holding it"
	kindAgentHeartbeat   = "agent: heartbeats sent"
	kindAgentAck         = "agent: acks sent"
	kindAgentStage       = "agent: stage reports sent"
	kindAgentSession     = "agent sessions"
	kindSubscriber       = "subscriber sessions"
	kindQueries          = "queries (scheduling)"
	kindMutations        = "mutations (scheduling)"
)

var kindOrder = []string{kindNested, kindDeployment, kindClusters, kindDeploy, kindSetVariable,
	kindSubscriberDeploy, kindSubscriberStage, kindSubscriberEvent, kindAgentDeploy, kindAgentVariable,
	kindAgentHeartbeat, kindAgentAck, kindAgentStage}

// MeasuredKinds are the kinds every run must have measured at least once.
var MeasuredKinds = kindOrder

// Setup is what a run drives.
type Setup struct {
	Scale
	Seeded   *Seeded
	Replicas []*Replica
	// Procs are measured besides the replicas and the driver itself
	// (PostgreSQL).
	Procs []Proc
	// Progress, when set, is told what the run is doing.
	Progress func(format string, args ...any)
}

// window is the measured stretch of time: an operation counts when it
// started inside it.
type window struct{ start, end atomic.Int64 } // Unix ns; 0: not yet

func (w *window) in(t time.Time) bool {
	s, e, n := w.start.Load(), w.end.Load(), t.UnixNano()
	return s != 0 && n >= s && (e == 0 || n < e)
}

type driver struct {
	scale    Scale
	seed     *Seeded
	replicas []*Replica
	rec      *recorder
	track    *tracker
	win      window
	http     *http.Client
	recent   *ring
	timeline timeline
	// subsOf lists the subscribers of each environment.
	subsOf map[int][]int
}

func (d *driver) countIn(kind string, at time.Time) {
	if d.win.in(at) {
		d.rec.count(kind)
	}
}

// Report is what a run measured.
type Report struct {
	Scale    Scale
	Started  time.Time // when the window opened
	Window   time.Duration
	Replicas int
	// ConnectAgents and ConnectSubscribers are how long connecting the
	// clients took, before the warm-up.
	ConnectAgents, ConnectSubscribers time.Duration
	Ops                               []Op
	Usage                             []Usage
	Machine                           Machine
	Queries, Mutations                lateness
	// Timeline is the window in tenths.
	Timeline []Slice
	Joined   joined
	// Converged is how long after the load stopped every agent held its
	// cluster's desired revision, acknowledged; ConvergeErr says why it
	// did not.
	Converged   time.Duration
	ConvergeErr string
	// Logs counts each replica's log lines by level; Messages by level
	// and message.
	Logs     map[string]map[string]int
	Messages map[string]map[string]int
}

// Failures is every error and missed event of the run, with the first
// error texts; empty when the run was clean.
func (r *Report) Failures() []string {
	var out []string
	for _, op := range r.Ops {
		if op.Errors > 0 {
			out = append(out, fmt.Sprintf("%s: %d errors, e.g. %s", op.Kind, op.Errors, strings.Join(op.ErrorTexts, "; ")))
		}
		if op.Missed > 0 {
			out = append(out, fmt.Sprintf("%s: %d expected events never arrived", op.Kind, op.Missed))
		}
	}
	if r.ConvergeErr != "" {
		out = append(out, r.ConvergeErr)
	}
	return out
}

// Drive connects the agents and subscribers, runs the load through the
// warm-up and the window, waits for the fleet to converge and reports.
// Every connection it opened is closed when it returns; the replicas and
// PostgreSQL are the caller's.
func Drive(ctx context.Context, s Setup) (*Report, error) {
	progress := s.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if s.Agents > len(s.Seeded.Clusters) {
		return nil, fmt.Errorf("%d agents asked for, but %d clusters seeded", s.Agents, len(s.Seeded.Clusters))
	}
	d := &driver{scale: s.Scale, seed: s.Seeded, replicas: s.Replicas, rec: newRecorder(), track: newTracker(),
		recent: newRing(s.Seeded.Deployments, 1000), subsOf: map[int][]int{},
		http: &http.Client{Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}}}
	defer d.http.CloseIdleConnections()
	rep := &Report{Scale: s.Scale, Replicas: len(s.Replicas)}

	// Sessions live until Drive returns.
	sessions, endSessions := context.WithCancel(ctx)
	var live sync.WaitGroup
	defer live.Wait()
	defer endSessions()

	progress("connecting %d agents", s.Agents)
	t0 := time.Now()
	agents := make([]*agent, s.Agents)
	if err := connectAll(sessions, s.Agents, func(i int) error {
		a := &agent{d: d, index: i, current: map[model.ServiceID]model.DeploymentID{}}
		hb, err := a.connect(sessions, d.replicas[i%len(d.replicas)].URL, s.Seeded.Clusters[i].Token)
		if err != nil {
			return fmt.Errorf("agent %d: %w", i, err)
		}
		agents[i] = a
		live.Go(func() { a.run(sessions, hb) })
		return nil
	}); err != nil {
		return nil, err
	}
	rep.ConnectAgents = time.Since(t0)

	progress("connecting %d subscribers", s.Subscribers)
	t0 = time.Now()
	for i := range s.Subscribers {
		env := i % len(s.Seeded.Envs)
		d.subsOf[env] = append(d.subsOf[env], i)
	}
	if err := connectAll(sessions, s.Subscribers, func(i int) error {
		sub := &subscriber{d: d, index: i, env: i % len(s.Seeded.Envs)}
		if err := sub.connect(sessions, d.replicas[i%len(d.replicas)].URL, s.Seeded.Tenants[s.Seeded.tenantOf(sub.env)].Token); err != nil {
			return fmt.Errorf("subscriber %d: %w", i, err)
		}
		live.Go(func() { sub.run(sessions) })
		return nil
	}); err != nil {
		return nil, err
	}
	rep.ConnectSubscribers = time.Since(t0)

	procs := []Proc{{Name: "driver (this process)", PID: os.Getpid()}}
	for _, r := range s.Replicas {
		procs = append(procs, Proc{Name: r.Name, PID: r.PID()})
	}
	m := newMeter(append(procs, s.Procs...))

	load, stopLoad := context.WithCancel(sessions)
	defer stopLoad()
	var loops sync.WaitGroup
	loops.Go(func() { rep.Queries = d.openLoop(load, kindQueries, s.Queries, s.Warmup/2, queryMix, 1) })
	loops.Go(func() { rep.Mutations = d.openLoop(load, kindMutations, s.Mutations, s.Warmup/2, mutationMix, 2) })
	loops.Go(func() { sampleMemory(load, m) })

	progress("warming up for %v", s.Warmup)
	if err := wait(ctx, s.Warmup); err != nil {
		return nil, err
	}
	if err := m.start(); err != nil {
		return nil, err
	}
	rep.Started = time.Now()
	d.win.start.Store(rep.Started.UnixNano())
	progress("measuring for %v", s.Duration)
	if err := wait(ctx, s.Duration); err != nil {
		return nil, err
	}
	d.win.end.Store(time.Now().UnixNano())
	rep.Window = time.Since(rep.Started)
	usage, mach, err := m.stop()
	if err != nil {
		return nil, err
	}
	rep.Usage, rep.Machine = usage, mach
	stopLoad()
	progress("waiting for the requests in flight")
	loops.Wait()

	progress("waiting for every agent to hold its cluster's desired revision")
	stopped := time.Now()
	if err := d.converge(ctx, agents); err != nil {
		rep.ConvergeErr = err.Error()
	} else {
		rep.Converged = time.Since(stopped)
	}
	// The last SUCCEEDED reports go out StageDelay after their state
	// arrived; then wait (30 s at most) until every event expected has
	// reached its subscribers, so that a slow machine is not taken for a
	// missed event.
	subsOf := func(env int) []int { return d.subsOf[env] }
	if err := wait(ctx, s.StageDelay+200*time.Millisecond); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		scratch := newRecorder()
		d.track.join(scratch, &d.win, subsOf)
		if len(scratch.missed) == 0 {
			break
		}
		if err := wait(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	rep.Joined = d.track.join(d.rec, &d.win, subsOf)
	for _, r := range s.Replicas {
		if r.Exited() {
			d.rec.fail(r.Name, errors.New("the replica exited during the run"))
		}
	}
	rep.Ops = d.rec.ops(kindOrder)
	rep.Timeline = d.timeline.slices(rep.Window, 10)
	endSessions()
	live.Wait()

	rep.Logs, rep.Messages = map[string]map[string]int{}, map[string]map[string]int{}
	for _, r := range s.Replicas {
		levels, messages, err := r.LogLevels()
		if err != nil {
			return nil, fmt.Errorf("reading the log of %s: %w", r.Name, err)
		}
		rep.Logs[r.Name], rep.Messages[r.Name] = levels, messages
	}
	return rep, nil
}

// connectAll runs connect for 0…n-1, 16 at a time, and returns the first
// error after every started connect has returned.
func connectAll(ctx context.Context, n int, connect func(i int) error) error {
	slots := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range n {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := connect(i); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return cmp.Or(first, ctx.Err())
}

// converge waits until every cluster's applied revision is its desired
// one, as the API shows it, and every agent holds that revision.
func (d *driver) converge(ctx context.Context, agents []*agent) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		rows, err := d.clusters(ctx, d.replicas[0].URL)
		if err != nil {
			return fmt.Errorf("listing the clusters after the load: %w", err)
		}
		var behind, down []string
		for i, c := range rows {
			if i < len(agents) && (c.AppliedRevision != c.DesiredRevision || agents[indexOf(d.seed, c)].applied() != c.DesiredRevision) {
				behind = append(behind, fmt.Sprintf("%s (desired %d, applied %d)", c.Name, c.DesiredRevision, c.AppliedRevision))
			}
			if c.Status != "CONNECTED" {
				down = append(down, c.Name+" "+c.Status)
			}
		}
		if len(behind) == 0 && len(down) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("a minute after the load stopped, clusters behind: %s; not connected: %s", describe(behind), describe(down))
		case <-tick.C:
		}
	}
}

// indexOf is the seeded index of the cluster a row shows (load-0007 is 7).
func indexOf(sd *Seeded, c clusterRow) int {
	var i int
	if _, err := fmt.Sscanf(c.Name, "load-%d", &i); err != nil || i >= len(sd.Clusters) {
		return 0
	}
	return i
}

// sampleMemory samples the trees' memory every second until ctx ends.
func sampleMemory(ctx context.Context, m *meter) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if m.t0 != (time.Time{}) {
				m.sample()
			}
		}
	}
}

// wait waits for d, or returns ctx's error.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Markdown is the report as docs/benchmarks.md shows it.
func (r *Report) Markdown() string {
	var b strings.Builder
	sc := r.Scale
	fmt.Fprintf(&b, "Window %v from %s, after a %v warm-up; %d replicas, %d agents (heartbeat %v) in %d tenants, %d subscribers, %.0f mutations/s, %.0f queries/s.\n\n",
		r.Window.Round(time.Second), r.Started.UTC().Format("2006-01-02 15:04:05 UTC"), sc.Warmup, r.Replicas, sc.Agents, sc.Heartbeat,
		sc.Tenants, sc.Subscribers, sc.Mutations, sc.Queries)
	var rows [][]string
	for _, op := range r.Ops {
		p50, p99, mx := "—", "—", "—"
		if op.HasLatency {
			p50, p99, mx = ms(op.P50), ms(op.P99), ms(op.Max)
		}
		rows = append(rows, []string{op.Kind, fmt.Sprint(op.Count), p50, p99, mx, fmt.Sprint(op.Errors), fmt.Sprint(op.Missed)})
	}
	table(&b, []string{"operation", "count", "p50", "p99", "max", "errors", "missed"}, rows)
	b.WriteString("\n")
	rows = nil
	for _, u := range r.Usage {
		if u.Tree {
			rows = append(rows, []string{u.Name, fmt.Sprintf("%.2f", u.Cores), mib(u.RSS) + " (Pss; Rss summed " + mib(u.SumRSS) + ")", mib(u.Peak) + " (Pss, sampled)"})
			continue
		}
		rows = append(rows, []string{u.Name, fmt.Sprintf("%.2f", u.Cores), mib(u.RSS), mib(u.Peak)})
	}
	table(&b, []string{"process", "CPU (cores, window average)", "memory at the end (VmRSS)", "peak (VmHWM)"}, rows)
	ours := 0.0
	for _, u := range r.Usage {
		ours += u.Cores
	}
	fmt.Fprintf(&b, "\nThe whole machine: %.2f cores busy, %.2f of them by other work than the processes above; load average %s at the start, %s at the end.\n\n",
		r.Machine.Cores, r.Machine.Cores-ours, r.Machine.LoadStart, r.Machine.LoadEnd)
	rows = nil
	for _, sl := range r.Timeline {
		sum := func(s Summary) []string {
			return []string{fmt.Sprint(s.Count), ms(s.P50), ms(s.P99), fmt.Sprint(s.Errors)}
		}
		row := append([]string{fmt.Sprintf("%.3g–%.3g s", sl.From.Seconds(), sl.To.Seconds())}, sum(sl.Queries)...)
		rows = append(rows, append(row, sum(sl.Mutations)...))
	}
	table(&b, []string{"window", "queries", "p50", "p99", "errors", "mutations", "p50", "p99", "errors"}, rows)
	b.WriteString("\n")
	for _, l := range []struct {
		name string
		l    lateness
	}{{"queries", r.Queries}, {"mutations", r.Mutations}} {
		fmt.Fprintf(&b, "- %s: %d scheduled in the window (%.1f/s), %d started over %v late (max %v)\n", l.name, l.l.Scheduled,
			float64(l.l.Scheduled)/r.Window.Seconds(), l.l.Late, lateAfter, l.l.Max.Round(time.Millisecond))
	}
	j := r.Joined
	fmt.Fprintf(&b, "- subscriber events that arrived before their deploy's response: %d of %d\n", j.beforeResponse, j.subscriberEvents)
	fmt.Fprintf(&b, "- mutations whose state reached the agent only inside a newer one (coalesced): %d; SUCCEEDED reports overtaken by a newer deploy (SUPERSEDED): %d\n", j.coalesced, j.superseded)
	fmt.Fprintf(&b, "- connecting: agents %v, subscribers %v\n", r.ConnectAgents.Round(time.Millisecond), r.ConnectSubscribers.Round(time.Millisecond))
	if r.ConvergeErr != "" {
		fmt.Fprintf(&b, "- convergence FAILED: %s\n", r.ConvergeErr)
	} else {
		fmt.Fprintf(&b, "- every agent held its cluster's desired revision %v after the load stopped\n", r.Converged.Round(time.Millisecond))
	}
	names := make([]string, 0, len(r.Logs))
	for n := range r.Logs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		levels := make([]string, 0, len(r.Logs[n]))
		for lv, c := range r.Logs[n] {
			levels = append(levels, fmt.Sprintf("%s %d", lv, c))
		}
		slices.Sort(levels)
		fmt.Fprintf(&b, "- %s log lines: %s\n", n, strings.Join(levels, ", "))
		msgs := make([]string, 0, len(r.Messages[n]))
		for m := range r.Messages[n] {
			msgs = append(msgs, m)
		}
		// The most frequent first; every warning and error, at most 5 others.
		sort.Slice(msgs, func(i, j int) bool {
			a, b := r.Messages[n][msgs[i]], r.Messages[n][msgs[j]]
			return a > b || a == b && msgs[i] < msgs[j]
		})
		shown := 0
		for _, m := range msgs {
			notable := strings.HasPrefix(m, "WARN") || strings.HasPrefix(m, "ERROR")
			if notable || shown < 5 {
				fmt.Fprintf(&b, "  - %d × %s\n", r.Messages[n][m], m)
				shown++
			}
		}
	}
	return b.String()
}
