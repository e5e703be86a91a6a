package core

import (
	"context"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// GrantTTL bounds how long a user's grants are trusted without a note. A
// change of access notes bus.User in its transaction, and every replica
// drops the entry when the note arrives (within milliseconds); the bound
// only covers notes that could not arrive, e.g. while a replica's
// PostgreSQL listener reconnects. It is also how late, at worst, a role
// change takes effect on a replica.
const GrantTTL = time.Second

// maxGrantEntries bounds the cache; past it, it starts again empty.
const maxGrantEntries = 10_000

// grantCache keeps users' grants for authorization checks between the
// changes of their access. Every check of every request, websocket
// operation and subscription update reads the grants through it, so a
// long-lived connection is authorized with the grants in force when each
// operation runs and each update is sent, at the cost of about one query
// per user per second.
type grantCache struct {
	load func(ctx context.Context, u model.UserID) (*model.Grants, error)
	now  func() time.Time

	mu sync.Mutex
	// kept are the grants read lately, by user (accessCache: a load that
	// overlapped a drop is not kept).
	kept AccessCache[model.UserID, *model.Grants]
	// loading are the reads under way, one per user: the checks that miss
	// while one is under way wait for it rather than read again (when a
	// user's entry expires, every request of theirs in flight misses at
	// once). A read is joined only within the epoch it started in.
	loading map[model.UserID]*grantLoad
}

type grantLoad struct {
	epoch uint64
	// joined counts the checks waiting on this read besides its own.
	joined int
	done   chan struct{} // closed when g and err are set
	g      *model.Grants
	err    error
}

func newGrantCache(st *store.Store) *grantCache {
	return &grantCache{
		load: func(ctx context.Context, u model.UserID) (*model.Grants, error) {
			return store.GrantsOf(ctx, st.Q(), u)
		},
		// Real time, not the plane's clock: tests move that one by hours.
		now:  time.Now,
		kept: newGrantEntries(),
	}
}

func newGrantEntries() AccessCache[model.UserID, *model.Grants] {
	return NewAccessCache(maxGrantEntries, func(u model.UserID, _ *model.Grants) model.UserID { return u })
}

// get returns the user's grants, read at most GrantTTL ago and not
// changed since. Callers must not modify them.
func (c *grantCache) get(ctx context.Context, u model.UserID) (*model.Grants, error) {
	c.mu.Lock()
	epoch := c.kept.Epoch()
	if g, ok := c.kept.Get(u, c.now()); ok {
		c.mu.Unlock()
		return g, nil
	}
	if l := c.loading[u]; l != nil && l.epoch == epoch {
		l.joined++
		c.mu.Unlock()
		select {
		case <-l.done:
			return l.g, l.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	l := &grantLoad{epoch: epoch, done: make(chan struct{})}
	if c.loading == nil {
		c.loading = map[model.UserID]*grantLoad{}
	}
	c.loading[u] = l
	c.mu.Unlock()

	at := c.now()
	// Not cancelled with this caller: others may be waiting on the read.
	l.g, l.err = c.load(context.WithoutCancel(ctx), u)
	close(l.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loading[u] == l {
		delete(c.loading, u)
	}
	if l.err != nil {
		return nil, l.err
	}
	c.kept.Put(u, l.g, at, epoch)
	return l.g, nil
}

// noted drops the grants of the users among the topics of a delivery;
// nil (a resync) drops them all.
func (c *grantCache) noted(topics []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kept.Noted(topics)
}

// GrantsOf is the actor's grants: its person's (cached, as every check
// reads them), or its token's.
func (p *Plane) GrantsOf(ctx context.Context, a *authz.Actor) (*model.Grants, error) {
	return a.Grants(ctx, p.grants.get)
}

// Subject is the caller's subject in the policy for scope (the role it acts
// with there).
func (p *Plane) Subject(ctx context.Context, scope model.Scope) (string, error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return "", err
	}
	return p.authz.Subject(ctx, a, scope)
}
