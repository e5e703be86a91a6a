package resolvers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nebulactrl/nebula/internal/control/agents"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Subscriptions follow topics of the bus and, on every note, read again
// from where they got to, as the subscriber — with a fresh actor, so that
// a revoked token or a lost role ends them. A note only says "look again":
// nothing is lost to coalesced or duplicated notes, and resync re-reads
// after a missed one.

// resyncEvery re-reads even without a note. Notes are not lost in memory,
// and a PostgreSQL listener that reconnects resyncs everyone; this only
// bounds how long anything unforeseen could go unnoticed.
const resyncEvery = 5 * time.Minute

// While the database is unavailable a subscription keeps its place and
// reads again, backing off from retryFirst to retryMax, for up to
// retryFor; only then does it end, with an error that says to retry.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
	retryFor   = 60 * time.Second
)

type refreshKey struct{}

// Refresh returns the context to read an update in: the subscriber's
// actor authenticated again (force: not from a recent authentication).
type Refresh func(ctx context.Context, force bool) (context.Context, error)

// WithRefresh gives subscriptions a way to re-authenticate their caller.
func WithRefresh(ctx context.Context, f Refresh) context.Context {
	return context.WithValue(ctx, refreshKey{}, f)
}

// refreshed is ctx with a freshly authenticated actor; without a Refresh
// (tests of resolvers), ctx itself.
func refreshed(ctx context.Context, force bool) (context.Context, error) {
	if f, ok := ctx.Value(refreshKey{}).(Refresh); ok {
		return f(ctx, force)
	}
	return ctx, nil
}

// Ready is how a transport learns that a subscription's channel is about
// to carry its next value, or its end, so that no goroutine of its own
// waits on the channel of an idle subscription: the transport reads the
// channel once per call of fn. A transport that offers one and sees it
// unclaimed after the operation started (a resolver that does not
// follow, or one that failed before it could) reads the channel as any
// other.
type Ready struct {
	fn      func()
	claimed atomic.Bool
}

type readyKey struct{}

// WithReady offers fn to the subscriptions started in ctx.
func WithReady(ctx context.Context, fn func()) (context.Context, *Ready) {
	r := &Ready{fn: fn}
	return context.WithValue(ctx, readyKey{}, r), r
}

// Claimed tells whether a subscription took fn: it calls it before every
// value it sends and before it closes its channel.
func (r *Ready) Claimed() bool { return r.claimed.Load() }

// readyFrom claims the transport's Ready of ctx; without one, a no-op.
func readyFrom(ctx context.Context) func() {
	if r, ok := ctx.Value(readyKey{}).(*Ready); ok && r.claimed.CompareAndSwap(false, true) {
		return r.fn
	}
	return func() {}
}

type logKey struct{}

// WithLogger gives subscriptions the logger of their request (its id
// among the fields), for what they go through on their own.
func WithLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, logKey{}, log)
}

func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(logKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// End holds why a subscription stopped before its documented end (the
// deployment ended; nothing else ends one). A transport reports it as an
// error of the operation, never as complete: a client must not take a
// subscription that could not go on for one that is over.
type End struct {
	mu  sync.Mutex
	err error
}

type endKey struct{}

// WithEnd gives the subscriptions of ctx a place to say why they stopped.
func WithEnd(ctx context.Context) (context.Context, *End) {
	e := &End{}
	return context.WithValue(ctx, endKey{}, e), e
}

// Err is the reason the subscription stopped early; nil when it reached
// its end or was stopped by its client.
func (e *End) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func endWith(ctx context.Context, err error) {
	if e, ok := ctx.Value(endKey{}).(*End); ok && err != nil && ctx.Err() == nil {
		e.mu.Lock()
		e.err = err
		e.mu.Unlock()
	}
}

// follow calls read once, then after every note of the topics (or every
// resyncEvery), until read says stop, it fails, or ctx ends; then it calls
// done. A change of the subscriber's own access (a note of their user)
// re-reads at once with a fresh authentication: a subscription whose user
// lost access ends, with the reason (not found, unauthenticated). An
// unavailable database is waited out (see retryFor), the place kept: read
// resumes where it was.
//
// follow returns at once. No goroutine waits for a note: the bus's
// callback starts one that reads and returns, so an idle subscription
// costs its state and no stack. One read runs at a time; notes that come
// during a read make one more read after it.
func follow(ctx context.Context, b *bus.Bus, topics []string, read func(ctx context.Context) (stop bool, err error), done func()) {
	f := newFollower(ctx, func(ctx context.Context, _ hinted) (bool, error) { return read(ctx) }, done)
	f.sub = b.SubscribeFunc(func() { f.kick(false) }, topics...)
	f.start(b)
}

// hinted is what a read of followHinted is given: the hints of the notes
// since the last read, and whether it must read all the same (the first
// read, a note without a hint, a resync, too many hints to keep).
type hinted struct {
	hints []string
	read  bool
}

// maxHints bounds the hints a follower keeps between reads; past it, the
// next read reads.
const maxHints = 32

// followHinted is follow with the hints of the notes of its one topic
// (see the bus's hints): read may serve them instead of reading.
func followHinted(ctx context.Context, b *bus.Bus, topic string, read func(ctx context.Context, h hinted) (stop bool, err error), done func()) {
	f := newFollower(ctx, read, done)
	f.sub = b.SubscribeHints(f.hint, topic)
	f.start(b)
}

// newFollower is a follower whose first read is about to start, on the
// goroutine start starts: a note that comes before it asks for one more.
func newFollower(ctx context.Context, read func(ctx context.Context, h hinted) (bool, error), done func()) *follower {
	return &follower{ctx: ctx, read: read, done: done, wait: retryFirst, pending: true, running: true, mustRead: true}
}

// start follows the subscriber's own access and the re-read timer, and
// starts the first read.
func (f *follower) start(b *bus.Bus) {
	if a, err := authz.ActorFrom(f.ctx); err == nil && a.User != nil {
		f.access = b.SubscribeFunc(func() { f.kick(true) }, bus.User(string(a.User.ID)))
	}
	f.tick = time.AfterFunc(resyncEvery, f.resync)
	f.stop = context.AfterFunc(f.ctx, func() { f.kick(false) })
	go f.loop()
}

// follower is the state of one follow between reads.
type follower struct {
	ctx  context.Context
	read func(ctx context.Context, h hinted) (stop bool, err error)
	done func()
	sub  *bus.Sub
	// access follows the subscriber's user; nil without one.
	access *bus.Sub
	tick   *time.Timer // the periodic re-read
	retry  *time.Timer // the next try while the database is away
	stop   func() bool // unregisters the context's callback

	mu      sync.Mutex
	running bool // a goroutine is in loop
	pending bool // read again: a note came (or this is the first read)
	force   bool // the next read authenticates afresh
	ended   bool
	// hints are those of the notes since the last read; mustRead: the
	// next read reads whatever they say.
	hints    []string
	mustRead bool

	// Touched only by loop, one at a time.
	failingSince time.Time
	wait         time.Duration
}

// kick asks for a read, starting a goroutine for it unless one runs (which
// then reads once more).
func (f *follower) kick(force bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	f.pending, f.force, f.mustRead = true, f.force || force, true
	if !f.running {
		f.running = true
		go f.loop()
	}
}

// hint is kick for a note of the followed topic: its hint is kept for the
// next read ("" asks for a read).
func (f *follower) hint(h string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	switch {
	case h == "" || len(f.hints) >= maxHints:
		f.mustRead, f.hints = true, nil
	case !f.mustRead:
		f.hints = append(f.hints, h)
	}
	f.pending = true
	if !f.running {
		f.running = true
		go f.loop()
	}
}

func (f *follower) resync() {
	f.kick(false)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.ended { // else end stopped the timer, or is about to: not again
		f.tick.Reset(resyncEvery)
	}
}

// loop reads while reads are asked for, then returns; it ends the follow
// when a read says so.
func (f *follower) loop() {
	for {
		f.mu.Lock()
		if !f.pending {
			f.running = false
			f.mu.Unlock()
			return
		}
		// While the database is away, only a read tells it is back.
		force, h := f.force, hinted{hints: f.hints, read: f.mustRead || !f.failingSince.IsZero()}
		f.pending, f.force, f.hints, f.mustRead = false, false, nil, false
		f.mu.Unlock()
		if end, err := f.step(force, h); end {
			f.end(err)
			return
		}
	}
}

// step reads once; end says the follow is over, with err why (nil: read's
// own end, or the context's).
func (f *follower) step(force bool, h hinted) (end bool, err error) {
	ctx := f.ctx
	if ctx.Err() != nil {
		return true, nil
	}
	rctx, err := refreshed(ctx, force)
	if err == nil {
		var stop bool
		if stop, err = f.read(rctx, h); stop && err == nil {
			return true, nil
		}
	}
	switch {
	case ctx.Err() != nil:
		return true, nil
	case err == nil:
		if !f.failingSince.IsZero() {
			logger(ctx).InfoContext(ctx, "subscription resumed: the database is back", "after", time.Since(f.failingSince).Round(time.Millisecond))
		}
		f.failingSince, f.wait = time.Time{}, retryFirst
	case !errors.Is(err, store.ErrUnavailable):
		return true, err
	default:
		if f.failingSince.IsZero() {
			f.failingSince = time.Now()
			logger(ctx).WarnContext(ctx, "subscription waiting for the database; it keeps its place", "error", err)
		} else if time.Since(f.failingSince) > retryFor {
			return true, err
		}
		if f.retry == nil {
			f.retry = time.AfterFunc(f.wait, func() { f.kick(false) })
		} else {
			f.retry.Reset(f.wait)
		}
		f.wait = min(2*f.wait, retryMax)
	}
	return false, nil
}

// end stops what follows and says why, once.
func (f *follower) end(err error) {
	f.mu.Lock()
	f.ended, f.running = true, false
	f.tick.Stop()
	f.mu.Unlock()
	f.sub.Close()
	if f.access != nil {
		f.access.Close()
	}
	if f.retry != nil {
		f.retry.Stop()
	}
	f.stop()
	endWith(f.ctx, err)
	f.done()
}

// stream is a subscription's channel, kept in step with the transport's
// Ready (see readyFrom): each value and the end are announced before they
// are sent.
type stream[T any] struct {
	c     chan T
	ready func()
}

func newStream[T any](ctx context.Context) *stream[T] {
	return &stream[T]{c: make(chan T), ready: readyFrom(ctx)}
}

// send sends v; false when ctx ended first.
func (s *stream[T]) send(ctx context.Context, v T) bool {
	s.ready()
	select {
	case s.c <- v:
		return true
	case <-ctx.Done():
		return false
	}
}

// close ends the stream: the subscription is over.
func (s *stream[T]) close() {
	s.ready()
	close(s.c)
}

// deploymentEvents streams a deployment's events after seq.
func deploymentEvents(ctx context.Context, p *control.Plane, id model.DeploymentID, seq int64) <-chan *model.DeploymentEvent {
	out := newStream[*model.DeploymentEvent](ctx)
	followHinted(ctx, p.Bus(), bus.Deployment(string(id)), func(ctx context.Context, h hinted) (bool, error) {
		// The events the notes carried, when they are all there is to
		// send and the subscriber may read them: no read.
		if !h.read {
			if he, ok := p.Delivery.DeploymentEventsHinted(ctx, id, seq, h.hints); ok {
				for _, e := range he.Events {
					if !out.send(ctx, e) {
						return true, nil
					}
					seq = e.Seq
				}
				return he.Ended, nil
			}
		}
		// The deployment read before the first page of events: if it had
		// ended, the events up to its last are all there is.
		var d *model.Deployment
		for {
			read, evs, err := p.Delivery.DeploymentAndEvents(ctx, id, seq, 100)
			if err != nil {
				return true, err
			}
			if d == nil {
				d = read
			}
			for _, e := range evs {
				if !out.send(ctx, e) {
					return true, nil
				}
				seq = e.Seq
			}
			if len(evs) < 100 {
				break
			}
		}
		// Once it ended and every event went out, there is nothing more.
		return d.Stage.Terminal() && seq >= d.LastSeq, nil
	}, out.close)
	return out.c
}

// environmentDeployments streams the environment's deployments: first the
// ones under way (not ended), then each one that moves.
func environmentDeployments(ctx context.Context, p *control.Plane, env *model.Environment) <-chan *model.Deployment {
	out := newStream[*model.Deployment](ctx)
	seen := map[model.DeploymentID]int64{}
	open := map[model.DeploymentID]bool{} // seen, not yet ended: they may move
	var newest model.DeploymentID         // seen
	first := true
	follow(ctx, p.Bus(), []string{bus.Environment(string(env.ID))}, func(ctx context.Context) (bool, error) {
		items, err := changedDeployments(ctx, p, env, first, floor(newest, open))
		if err != nil {
			return true, err
		}
		for i := len(items) - 1; i >= 0; i-- { // oldest first
			d := items[i]
			last, known := seen[d.ID]
			seen[d.ID], newest = d.LastSeq, max(newest, d.ID)
			if d.Stage.Terminal() {
				delete(open, d.ID)
			} else {
				open[d.ID] = true
			}
			if first && d.Stage.Terminal() || known && last >= d.LastSeq {
				continue
			}
			if !out.send(ctx, d) {
				return true, nil
			}
		}
		first = false
		return false, nil
	}, out.close)
	return out.c
}

// Environment subscriptions read an environment's newest deployments: the
// first time a page of maxRead, afterwards pages of readPage, newest first,
// back to the floor and at least one page, at most maxRead in all. The page
// beyond the floor covers a deployment whose id sorts a little before one
// seen (ids come from the clock of the replica that made them).
const (
	readPage = 10
	maxRead  = 50
)

// floor is the oldest deployment a re-read must reach: the oldest seen that
// may still move, else the newest seen ("" before any).
func floor(newest model.DeploymentID, open map[model.DeploymentID]bool) model.DeploymentID {
	var oldestOpen model.DeploymentID
	for id := range open {
		if oldestOpen == "" || id < oldestOpen {
			oldestOpen = id
		}
	}
	if oldestOpen != "" {
		return oldestOpen
	}
	return newest
}

// changedDeployments reads what a subscription of env must look at, newest
// first, back to the deployment back (see readPage and floor).
func changedDeployments(ctx context.Context, p *control.Plane, env *model.Environment, first bool, back model.DeploymentID) ([]*model.Deployment, error) {
	n := readPage
	if first {
		n = maxRead
	}
	var items []*model.Deployment
	after := ""
	for {
		pages, err := p.Delivery.DeploymentsOf(ctx, []model.Scope{env.Scope()}, []model.EnvironmentID{env.ID}, store.PageArgs{First: n, After: after}, 0)
		if err != nil {
			return nil, err
		}
		page := pages[string(env.ID)]
		items = append(items, page.Items...)
		if first || !page.HasNext || len(items) >= maxRead || items[len(items)-1].ID <= back {
			return items, nil
		}
		after, n = string(items[len(items)-1].ID), min(readPage, maxRead-len(items))
	}
}

// clusterStatus streams the cluster now and whenever what it shows moved.
func clusterStatus(ctx context.Context, p *control.Plane, id model.ClusterID) <-chan *model.Cluster {
	out := newStream[*model.Cluster](ctx)
	type shown struct {
		status           model.ClusterStatus
		heartbeat        *time.Time
		desired, applied int64
		drift            int64
	}
	var last *shown
	follow(ctx, p.Bus(), []string{bus.Cluster(string(id))}, func(ctx context.Context) (bool, error) {
		c, err := p.Clusters.Cluster(ctx, id)
		if err != nil {
			return true, err
		}
		drift, err := p.Agents.ClusterDriftMark(ctx, id)
		if err != nil {
			return true, err
		}
		now := shown{p.Clusters.ClusterStatus(c), c.LastHeartbeatAt, c.DesiredRevision, c.AppliedRevision, drift}
		if last != nil && last.status == now.status && last.desired == now.desired && last.applied == now.applied && last.drift == now.drift &&
			(last.heartbeat == nil) == (now.heartbeat == nil) && (now.heartbeat == nil || last.heartbeat.Equal(*now.heartbeat)) {
			return false, nil
		}
		last = &now
		return !out.send(ctx, c), nil
	}, out.close)
	return out.c
}

// buildLog streams a build's log lines after line after.
func buildLog(ctx context.Context, p *control.Plane, id model.BuildID, after int64) <-chan *model.BuildLogLine {
	out := newStream[*model.BuildLogLine](ctx)
	follow(ctx, p.Bus(), []string{bus.Build(string(id))}, func(ctx context.Context) (bool, error) {
		b, err := p.Builds.Build(ctx, id)
		if err != nil {
			return true, err
		}
		for {
			lines, err := p.Builds.BuildLog(ctx, b, after, 500)
			if err != nil {
				return true, err
			}
			for i := range lines {
				if !out.send(ctx, &lines[i]) {
					return true, nil
				}
				after = lines[i].Seq
			}
			if len(lines) < 500 {
				break
			}
		}
		// Read before the lines: a build that had ended then wrote
		// every line it has by then.
		return b.Status.Ended() && after >= b.LogLines, nil
	}, out.close)
	return out.c
}

// serviceLogs streams a service's lines in an environment after
// read.After, each as it is stored; access is checked again on every read,
// so a removed member's subscription ends.
func serviceLogs(ctx context.Context, p *control.Plane, svc model.ServiceID, env model.EnvironmentID, read agents.LogRead) <-chan *model.LogLine {
	out := newStream[*model.LogLine](ctx)
	follow(ctx, p.Bus(), []string{bus.Logs(string(env), string(svc))}, func(ctx context.Context) (bool, error) {
		for {
			lines, err := p.Agents.ServiceLogs(ctx, svc, env, read)
			if err != nil {
				return true, err
			}
			for i := range lines {
				if !out.send(ctx, &lines[i]) {
					return true, nil
				}
				read.After = lines[i].Seq
			}
			if len(lines) < read.Limit {
				return false, nil
			}
		}
	}, out.close)
	return out.c
}

// kubeEvents streams an environment's (or a service's) events after
// read.After, each as it is stored; access is checked on every read.
func kubeEvents(ctx context.Context, p *control.Plane, read agents.EventRead) <-chan *model.KubeEvent {
	out := newStream[*model.KubeEvent](ctx)
	follow(ctx, p.Bus(), []string{bus.Events(string(read.Environment))}, func(ctx context.Context) (bool, error) {
		for {
			evs, err := p.Agents.KubeEvents(ctx, read)
			if err != nil {
				return true, err
			}
			for i := range evs {
				if !out.send(ctx, &evs[i]) {
					return true, nil
				}
				read.After = evs[i].ID
			}
			if len(evs) < read.Limit {
				return false, nil
			}
		}
	}, out.close)
	return out.c
}
