// Package fairgate admits work that must not take the whole machine: at
// most n holders at once and one per key, the keys taking turns. A key's
// callers queue in their own lane and only the head of each lane waits for
// a slot, so the slots go round the keys in order of arrival: one key with
// a hundred callers waiting delays another's by one holder. A slot given
// back rests as long as it was held before it admits the next, so the work
// gets at most half of each slot's time and the rest is left to everything
// else. The control plane's previews take turns per tenant through one.
package fairgate

import (
	"context"
	"sync"
	"time"
)

// Gate admits at most n holders at once and one per key.
type Gate[K comparable] struct {
	slots chan struct{}
	mu    sync.Mutex
	lanes map[K]*lane
}

type lane struct {
	head  chan struct{} // held by the key's caller that waits for or holds a slot
	users int
}

// New is a gate of n slots (at least one).
func New[K comparable](n int) *Gate[K] {
	return &Gate[K]{slots: make(chan struct{}, max(n, 1)), lanes: map[K]*lane{}}
}

// Enter waits for key's turn and a slot, or for ctx to end; leave gives
// both back (the slot after its rest).
func (g *Gate[K]) Enter(ctx context.Context, key K) (leave func(), err error) {
	g.mu.Lock()
	l := g.lanes[key]
	if l == nil {
		l = &lane{head: make(chan struct{}, 1)}
		g.lanes[key] = l
	}
	l.users++
	g.mu.Unlock()
	done := func() {
		g.mu.Lock()
		if l.users--; l.users == 0 {
			delete(g.lanes, key)
		}
		g.mu.Unlock()
	}
	select {
	case l.head <- struct{}{}:
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		<-l.head
		done()
		return nil, ctx.Err()
	}
	start := time.Now()
	return func() {
		<-l.head
		done()
		// The timer owns the slot until its rest is over.
		time.AfterFunc(time.Since(start), func() { <-g.slots })
	}, nil
}

// lanesOpen is how many keys have callers waiting or holding (for tests).
func (g *Gate[K]) lanesOpen() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.lanes)
}
