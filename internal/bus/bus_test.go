package bus

import (
	"slices"
	"sync"
	"testing"
)

// Observers see every delivery and every resync (nil), while
// subscriptions get their wake; publishers never block (run with -race).
func TestObserveAndDeliver(t *testing.T) {
	b := New()
	var mu sync.Mutex
	var seen [][]string
	b.Observe(func(topics []string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, slices.Clone(topics))
	})
	sub := b.Subscribe(User("u1"))
	defer sub.Close()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				b.Deliver(User("u1"), Cluster("c"))
			}
		})
	}
	wg.Wait()
	select {
	case <-sub.C:
	default:
		t.Fatal("the subscription was not woken")
	}
	b.Resync()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 401 {
		t.Fatalf("observed %d deliveries, want 401", len(seen))
	}
	if seen[400] != nil {
		t.Errorf("a resync was observed as %v, want nil", seen[400])
	}
	if !slices.Equal(seen[0], []string{User("u1"), Cluster("c")}) {
		t.Errorf("first delivery observed as %v", seen[0])
	}
}

// A function subscription is called once per delivery of its topics and
// per resync, never for other topics, and not after Close.
func TestSubscribeFunc(t *testing.T) {
	b := New()
	calls := 0
	sub := b.SubscribeFunc(func() { calls++ }, Cluster("a"), Cluster("b")) // under the bus's lock
	b.Deliver(Cluster("a"))
	b.Deliver(Cluster("b"), Cluster("other"))
	b.Deliver(Cluster("other"))
	b.Resync()
	if calls != 3 {
		t.Errorf("called %d times, want 3 (two deliveries, one resync)", calls)
	}
	if n := b.Following(Cluster("a")); n != 1 {
		t.Errorf("%d follow cluster a, want 1", n)
	}
	sub.Close()
	b.Deliver(Cluster("a"))
	b.Resync()
	if calls != 3 {
		t.Errorf("called after Close: %d calls", calls)
	}
	if n := b.Subscriptions(); n != 0 {
		t.Errorf("%d subscriptions after Close, want 0", n)
	}
}
