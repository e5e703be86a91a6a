// Package wake is the one wake-up primitive of the control plane and the
// agent: a waiter sleeps on C until something may have changed, and the
// changes that come while it is busy make one wake, not a queue. A poke
// never blocks, so it is safe under a lock and from any goroutine; what
// changed is kept by the poker (a flag, a topic, a list), never in the
// signal.
package wake

// Signal is a coalescing wake-up. The zero value is not usable; use New.
type Signal struct{ c chan struct{} }

// New returns a signal with no wake pending.
func New() Signal { return Signal{c: make(chan struct{}, 1)} }

// Poke makes a wake pending, if none is: one pending wake covers every
// poke since the waiter last woke.
func (s Signal) Poke() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// C is what the waiter receives from.
func (s Signal) C() <-chan struct{} { return s.c }
