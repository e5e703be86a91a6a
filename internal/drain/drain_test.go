package drain

import (
	"context"
	"testing"
	"time"
)

func TestDrain(t *testing.T) {
	var d Drain
	if !d.Enter() || !d.Enter() {
		t.Fatal("Enter refused before Close")
	}
	d.Close()
	if d.Enter() {
		t.Error("Enter allowed after Close")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := d.Wait(ctx); err == nil {
		t.Error("Wait returned with two connections still in")
	}
	done := make(chan error, 1)
	go func() { done <- d.Wait(context.Background()) }()
	d.Leave()
	select {
	case <-done:
		t.Fatal("Wait returned with one connection still in")
	default:
	}
	d.Leave()
	if err := <-done; err != nil {
		t.Errorf("Wait after the last left: %v", err)
	}
	if err := d.Wait(context.Background()); err != nil {
		t.Errorf("Wait on an empty, closed drain: %v", err)
	}
}
