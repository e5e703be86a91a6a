package wake

import "testing"

// Pokes while the waiter is busy coalesce into one wake, and a poke never
// blocks.
func TestPokesCoalesce(t *testing.T) {
	s := New()
	select {
	case <-s.C():
		t.Fatal("a new signal is already pending")
	default:
	}
	for range 3 {
		s.Poke() // would block on the second without coalescing
	}
	<-s.C()
	select {
	case <-s.C():
		t.Fatal("three pokes woke the waiter twice")
	default:
	}
	s.Poke()
	select {
	case <-s.C():
	default:
		t.Fatal("a poke after the wake made no new wake")
	}
}
