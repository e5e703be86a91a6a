package fairgate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Sixty callers of six keys at once: never more than n hold, never two of
// one key, and every one gets in.
func TestAtMostNAndOnePerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New[int](2)
		var holding, most atomic.Int32
		var perKey [6]atomic.Int32
		var wg sync.WaitGroup
		var entered atomic.Int32
		for i := range 60 {
			wg.Go(func() {
				key := i % 6
				leave, err := g.Enter(context.Background(), key)
				if err != nil {
					t.Error(err)
					return
				}
				entered.Add(1)
				n := holding.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if k := perKey[key].Add(1); k > 1 {
					t.Errorf("key %d: %d callers hold at once", key, k)
				}
				time.Sleep(time.Millisecond) // fake time: the holder works
				perKey[key].Add(-1)
				holding.Add(-1)
				leave()
			})
		}
		wg.Wait()
		if most.Load() != 2 || entered.Load() != 60 {
			t.Errorf("at most %d held at once and %d entered, want 2 and 60", most.Load(), entered.Load())
		}
		if n := g.lanesOpen(); n != 0 {
			t.Errorf("%d lanes left open", n)
		}
	})
}

// A key with callers queued does not keep another key waiting behind
// them: the other key's caller gets the next slot.
func TestKeysTakeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New[string](1)
		leaveA1, err := g.Enter(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		entered := make(chan string, 3)
		enter := func(key, name string) {
			leave, err := g.Enter(context.Background(), key)
			if err != nil {
				t.Error(err)
				return
			}
			entered <- name
			leave()
		}
		go enter("a", "a2")
		go enter("a", "a3")
		synctest.Wait() // a2 and a3 wait behind a1 in a's lane
		go enter("b", "b1")
		synctest.Wait() // b1 waits for the slot
		leaveA1()
		if first := <-entered; first != "b1" {
			t.Errorf("after a1 the gate admitted %s first, want b1", first)
		}
		<-entered
		<-entered
	})
}

// A caller whose context ends while it waits gets the context's error and
// leaves nothing behind; the holder is not disturbed.
func TestWaitingEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New[string](1)
		leave, err := g.Enter(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 2)
		go func() { _, err := g.Enter(ctx, "a"); errs <- err }() // waits for a's lane
		go func() { _, err := g.Enter(ctx, "b"); errs <- err }() // waits for the slot
		synctest.Wait()
		cancel()
		for range 2 {
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Errorf("a waiting caller got %v, want context.Canceled", err)
			}
		}
		if n := g.lanesOpen(); n != 1 {
			t.Errorf("%d lanes open, want the holder's alone", n)
		}
		leave()
		if n := g.lanesOpen(); n != 0 {
			t.Errorf("%d lanes left open", n)
		}
		again, err := g.Enter(context.Background(), "b")
		if err != nil {
			t.Fatal(err)
		}
		again()
	})
}
