package resolvers

import (
	"context"
	"time"

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

// follow calls read once, then after every note of the topics (or every
// resyncEvery), until read says stop, it fails, or ctx ends. A change of
// the subscriber's own access (a note of their user) re-reads at once with
// a fresh authentication: a subscription whose user lost access ends.
func follow(ctx context.Context, b *bus.Bus, topics []string, read func(ctx context.Context) (stop bool, err error)) {
	sub := b.Subscribe(topics...)
	defer sub.Close()
	var access <-chan struct{}
	if a, err := authz.ActorFrom(ctx); err == nil && a.User != nil {
		us := b.Subscribe(bus.User(string(a.User.ID)))
		defer us.Close()
		access = us.C
	}
	tick := time.NewTicker(resyncEvery)
	defer tick.Stop()
	force := false
	for {
		rctx, err := refreshed(ctx, force)
		if err != nil {
			return
		}
		if stop, err := read(rctx); stop || err != nil {
			return
		}
		force = false
		select {
		case <-ctx.Done():
			return
		case <-sub.C:
		case <-access:
			force = true
		case <-tick.C:
		}
	}
}

// deploymentEvents streams a deployment's events after seq.
func deploymentEvents(ctx context.Context, p *control.Plane, id model.DeploymentID, seq int64) <-chan *model.DeploymentEvent {
	out := make(chan *model.DeploymentEvent)
	go func() {
		defer close(out)
		follow(ctx, p.Bus(), []string{bus.Deployment(string(id))}, func(ctx context.Context) (bool, error) {
			for {
				evs, err := p.DeploymentEvents(ctx, id, seq, 100)
				if err != nil {
					return true, err
				}
				for _, e := range evs {
					select {
					case out <- e:
						seq = e.Seq
					case <-ctx.Done():
						return true, nil
					}
				}
				if len(evs) < 100 {
					break
				}
			}
			d, err := p.Deployment(ctx, id)
			if err != nil {
				return true, err
			}
			// Once it ended and every event went out, there is nothing more.
			return d.Stage.Terminal() && seq >= d.LastSeq, nil
		})
	}()
	return out
}

// environmentDeployments streams the environment's deployments: first the
// ones under way (not ended), then each one that moves.
func environmentDeployments(ctx context.Context, p *control.Plane, env *model.Environment) <-chan *model.Deployment {
	out := make(chan *model.Deployment)
	seen := map[model.DeploymentID]int64{}
	first := true
	go func() {
		defer close(out)
		follow(ctx, p.Bus(), []string{bus.Environment(string(env.ID))}, func(ctx context.Context) (bool, error) {
			pages, err := p.DeploymentsOf(ctx, []model.Scope{env.Scope()}, []model.EnvironmentID{env.ID}, store.PageArgs{First: 50})
			if err != nil {
				return true, err
			}
			items := pages[string(env.ID)].Items
			for i := len(items) - 1; i >= 0; i-- { // oldest first
				d := items[i]
				last, known := seen[d.ID]
				seen[d.ID] = d.LastSeq
				if first && d.Stage.Terminal() || known && last >= d.LastSeq {
					continue
				}
				select {
				case out <- d:
				case <-ctx.Done():
					return true, nil
				}
			}
			first = false
			return false, nil
		})
	}()
	return out
}

// clusterStatus streams the cluster now and whenever what it shows moved.
func clusterStatus(ctx context.Context, p *control.Plane, id model.ClusterID) <-chan *model.Cluster {
	out := make(chan *model.Cluster)
	type shown struct {
		status           model.ClusterStatus
		heartbeat        *time.Time
		desired, applied int64
	}
	var last *shown
	go func() {
		defer close(out)
		follow(ctx, p.Bus(), []string{bus.Cluster(string(id))}, func(ctx context.Context) (bool, error) {
			c, err := p.Cluster(ctx, id)
			if err != nil {
				return true, err
			}
			now := shown{p.ClusterStatus(c), c.LastHeartbeatAt, c.DesiredRevision, c.AppliedRevision}
			if last != nil && last.status == now.status && last.desired == now.desired && last.applied == now.applied &&
				(last.heartbeat == nil) == (now.heartbeat == nil) && (now.heartbeat == nil || last.heartbeat.Equal(*now.heartbeat)) {
				return false, nil
			}
			last = &now
			select {
			case out <- c:
			case <-ctx.Done():
				return true, nil
			}
			return false, nil
		})
	}()
	return out
}
