package server

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// connLimits counts the long-lived connections (GraphQL websockets, SSE
// streams) open on this replica, per API token and per client address,
// so that one caller cannot hold the server's memory and goroutines for
// everyone. Each replica counts its own: behind a load balancer the caps
// apply per replica.
type connLimits struct {
	perToken, perAddress int

	mu   sync.Mutex
	open map[string]int
}

func newConnLimits(perToken, perAddress int) *connLimits {
	return &connLimits{perToken: perToken, perAddress: perAddress, open: map[string]int{}}
}

// take counts one more connection under key if that stays within max, and
// returns its release (idempotent); ok is false over the cap.
func (l *connLimits) take(key string, max int) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if max > 0 && l.open[key] >= max {
		return nil, false
	}
	l.open[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[key]--; l.open[key] <= 0 {
				delete(l.open, key)
			}
		})
	}, true
}

// address counts a connection from the client address addr.
func (l *connLimits) address(addr string) (func(), bool) {
	return l.take("addr:"+addr, l.perAddress)
}

// token counts a connection authenticated by the API token id.
func (l *connLimits) token(id string) (func(), bool) {
	return l.take("token:"+id, l.perToken)
}

// tooMany answers a connection over a cap before it is upgraded or
// streamed: HTTP 429 with the code RATE_LIMITED.
func tooMany(w http.ResponseWriter, what string, max int) {
	w.Header().Set("Retry-After", strconv.Itoa(10))
	writeJSON(w, http.StatusTooManyRequests, gqlErrors(
		fmt.Sprintf("too many connections open %s (at most %d): close one, or share one connection between subscriptions", what, max), "RATE_LIMITED"))
}
