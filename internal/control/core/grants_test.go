package core

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
)

// fakeGrants is the grants table: a loader that counts its reads, and a
// hook that runs inside a read (to change the table under it).
type fakeGrants struct {
	mu     sync.Mutex
	role   model.TenantRole
	reads  int
	during func()
}

func (f *fakeGrants) load(context.Context, model.UserID) (*model.Grants, error) {
	f.mu.Lock()
	f.reads++
	g := &model.Grants{Tenants: map[model.TenantID]model.TenantRole{"t": f.role}}
	during := f.during
	f.during = nil
	f.mu.Unlock()
	if during != nil {
		during()
	}
	return g, nil
}

func (f *fakeGrants) set(r model.TenantRole) { f.mu.Lock(); f.role = r; f.mu.Unlock() }

func TestGrantCache(t *testing.T) {
	ctx := context.Background()
	newCache := func() (*grantCache, *fakeGrants, *time.Time) {
		f := &fakeGrants{role: model.TenantAdmin}
		now := time.Unix(1_000_000, 0)
		return &grantCache{load: f.load, now: func() time.Time { return now }, kept: newGrantEntries()}, f, &now
	}
	role := func(t *testing.T, c *grantCache) model.TenantRole {
		t.Helper()
		g, err := c.get(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		return g.Tenants["t"]
	}

	t.Run("kept between changes", func(t *testing.T) {
		c, f, _ := newCache()
		role(t, c)
		role(t, c)
		if f.reads != 1 {
			t.Errorf("two checks read the grants %d times, want 1", f.reads)
		}
	})
	t.Run("a note of the user drops them", func(t *testing.T) {
		c, f, _ := newCache()
		role(t, c)
		f.set(model.TenantMember)
		c.noted([]string{bus.Cluster("c"), bus.User("u")})
		if got := role(t, c); got != model.TenantMember {
			t.Errorf("after the note: %s, want MEMBER", got)
		}
	})
	t.Run("a note of another user keeps them", func(t *testing.T) {
		c, f, _ := newCache()
		role(t, c)
		c.noted([]string{bus.User("someone-else")})
		role(t, c)
		if f.reads != 1 {
			t.Errorf("reads %d, want 1", f.reads)
		}
	})
	t.Run("a resync drops everything", func(t *testing.T) {
		c, f, _ := newCache()
		role(t, c)
		f.set(model.TenantMember)
		c.noted(nil)
		if got := role(t, c); got != model.TenantMember {
			t.Errorf("after a resync: %s, want MEMBER", got)
		}
	})
	t.Run("no older than the bound without a note", func(t *testing.T) {
		c, f, now := newCache()
		role(t, c)
		f.set(model.TenantMember)
		*now = now.Add(GrantTTL)
		if got := role(t, c); got != model.TenantMember {
			t.Errorf("a second later, without a note: %s, want MEMBER", got)
		}
	})
	t.Run("a read that overlapped a change is not kept", func(t *testing.T) {
		c, f, _ := newCache()
		// The change commits and its note arrives while the read is under
		// way: what the read returns may predate it.
		f.during = func() { f.set(model.TenantMember); c.noted([]string{bus.User("u")}) }
		role(t, c)
		if got := role(t, c); got != model.TenantMember {
			t.Errorf("after a read that overlapped the change: %s, want MEMBER", got)
		}
	})
	t.Run("checks that miss together read once", func(t *testing.T) {
		c, f, _ := newCache()
		// The first read waits until the other checks are waiting on it.
		const checks = 8
		release := make(chan struct{})
		f.during = func() { <-release }
		var wg sync.WaitGroup
		for range checks {
			wg.Go(func() { role(t, c) })
		}
		// The others find the read under way and wait on it (had they
		// missed it, they would read themselves: f.during is spent).
		for joined := 0; joined < checks-1; {
			c.mu.Lock()
			if l := c.loading["u"]; l != nil {
				joined = l.joined
			}
			c.mu.Unlock()
			runtime.Gosched()
		}
		close(release)
		wg.Wait()
		if f.reads != 1 {
			t.Errorf("%d checks missing at once read the grants %d times, want 1", checks, f.reads)
		}
	})
	t.Run("a check after a drop does not join the read before it", func(t *testing.T) {
		c, f, _ := newCache()
		release := make(chan struct{})
		f.during = func() { <-release }
		done := make(chan struct{})
		go func() { defer close(done); role(t, c) }() // the read from before the change
		waitLoading(c)
		f.set(model.TenantMember)
		c.noted([]string{bus.User("u")})
		if got := role(t, c); got != model.TenantMember {
			t.Errorf("a check after the change's note: %s, want MEMBER", got)
		}
		close(release)
		<-done
		if f.reads != 2 {
			t.Errorf("reads %d, want 2: the one before the change and one after", f.reads)
		}
	})
}

// waitLoading waits until a read of user u's grants is under way.
func waitLoading(c *grantCache) {
	for {
		c.mu.Lock()
		l := c.loading["u"]
		c.mu.Unlock()
		if l != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
