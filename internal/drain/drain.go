// Package drain counts the connections a server must wait for when it shuts
// down but net/http does not (hijacked websockets): once closed, no new one
// enters, and Wait returns when the last one left. It never closes a
// connection itself; its owner does, with the close code it chooses.
package drain

import (
	"context"
	"sync"
)

// Drain is a count of open connections; the zero value is ready.
type Drain struct {
	mu     sync.Mutex
	closed bool
	n      int
	idle   chan struct{} // closed when n reaches 0 after close
}

// Enter counts one more connection; false once the drain is closed.
func (d *Drain) Enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.n++
	return true
}

// Leave uncounts a connection that entered.
func (d *Drain) Leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n--
	if d.closed && d.n == 0 && d.idle != nil {
		close(d.idle)
		d.idle = nil
	}
}

// Close lets no new connection in.
func (d *Drain) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	if d.n > 0 {
		d.idle = make(chan struct{})
	}
}

// Wait returns when every connection left after close, or ctx ended.
func (d *Drain) Wait(ctx context.Context) error {
	d.mu.Lock()
	idle := d.idle
	d.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
