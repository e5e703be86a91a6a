package apitest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// A session writes a cluster's inventory when it changed, and otherwise
// only every five minutes; the rest of each report is written every time.
func TestHeartbeatWritesTheInventoryWhenItChanged(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		ctx := context.Background()
		cid, _ := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
		side := env.AgentSide(t, cid)
		row := func() *model.Cluster {
			c, err := store.Clusters.Get(ctx, env.Store.Q(), cid)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		// Another writer's inventory, which a rewrite replaces: it tells
		// whether a report wrote the inventory.
		mark := func() {
			if err := store.RecordHeartbeat(ctx, env.Store.Q(), cid, env.Clock.Now(), new(`{"marked":true}`), 0, ""); err != nil {
				t.Fatal(err)
			}
		}
		var last time.Time // the previous report's time
		report := func(inv string) *model.Cluster {
			t.Helper()
			env.Clock.Advance(15 * time.Second)
			if err := side.Report(ctx, []byte(inv), 0, ""); err != nil {
				t.Fatal(err)
			}
			c := row()
			if c.LastHeartbeatAt == nil || c.LastHeartbeatAt.Sub(last) < 15*time.Second {
				t.Fatalf("the heartbeat's time was not recorded: %v, the one before %v", c.LastHeartbeatAt, last)
			}
			last = *c.LastHeartbeatAt
			return c
		}
		if c := report(`{"nodes":1}`); c.Inventory != `{"nodes":1}` {
			t.Fatalf("the first report's inventory: %q", c.Inventory)
		}
		mark()
		if c := report(`{"nodes":1}`); c.Inventory != `{"marked":true}` {
			t.Fatalf("an unchanged inventory was written again: %q", c.Inventory)
		}
		if c := report(`{"nodes":2}`); c.Inventory != `{"nodes":2}` {
			t.Fatalf("a changed inventory was not written: %q", c.Inventory)
		}
		mark()
		env.Clock.Advance(5 * time.Minute)
		if c := report(`{"nodes":2}`); c.Inventory != `{"nodes":2}` {
			t.Fatalf("an unchanged inventory five minutes old was not written again: %q", c.Inventory)
		}
	})
}

// Agents reporting at the same moment are written together (a round, see
// control/heartbeats.go), and each report returns once it is stored.
func TestHeartbeatsAtOnceAreAllStored(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		ctx := context.Background()
		ids := []string{f.ClusterID}
		for range 7 {
			ids = append(ids, f.NewCluster(t))
		}
		var wg sync.WaitGroup
		errs := make([]error, len(ids))
		start := make(chan struct{})
		for i, id := range ids {
			cid, _ := gid.Decode[model.ClusterID](gid.Cluster, id)
			side := env.AgentSide(t, cid)
			wg.Go(func() {
				<-start
				errs[i] = side.Report(ctx, []byte(fmt.Sprintf(`{"agent":%d}`, i)), 0, "")
				if errs[i] != nil {
					return
				}
				// Stored by the time it returns.
				c, err := store.Clusters.Get(ctx, env.Store.Q(), cid)
				if err != nil {
					errs[i] = err
				} else if want := fmt.Sprintf(`{"agent":%d}`, i); c.Inventory != want || c.LastHeartbeatAt == nil {
					errs[i] = fmt.Errorf("cluster %d after its report: inventory %q, heartbeat %v; want %q", i, c.Inventory, c.LastHeartbeatAt, want)
				}
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("agent %d: %v", i, err)
			}
		}
	})
}
