// Package hub holds the agent sessions of the clusters connected to this
// control plane process: one websocket per cluster at /agent/v1/connect,
// authenticated by the cluster's connect token before the upgrade. It sends
// each agent its cluster's whole desired state whenever a newer revision
// exists, and records heartbeats, inventory and acknowledgements.
//
// A session only ever touches the cluster its token is bound to. Every
// session has one reader (its run loop) and one writer goroutine, and one
// deferred cleanup.
package hub

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/control/agents"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/drain"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/wake"
)

// Log field names.
const (
	logCluster = "cluster_id"
	logError   = "error"
	logCode    = "close_code"
)

// Options tune the hub; zero values take the defaults.
type Options struct {
	// Heartbeat is the interval agents are asked to keep (default 15 s).
	Heartbeat time.Duration
	// HelloTimeout bounds the wait for the first message (default 10 s).
	HelloTimeout time.Duration
}

// Hub is the set of live agent sessions.
type Hub struct {
	plane *control.Plane
	log   *slog.Logger
	opts  Options
	up    websocket.Upgrader

	mu       sync.Mutex
	sessions map[model.ClusterID]*session
	opened   int64 // sessions welcomed since start
	// closed is set by Close: no session starts after it. running holds
	// every session whose connection is open, welcomed or not, for Close
	// to end them; drain counts them for Wait.
	closed  bool
	running map[*session]struct{}
	drain   drain.Drain

	deliveries deliveries
}

// New builds a hub; callers make it the plane's publisher.
func New(plane *control.Plane, log *slog.Logger, opts Options) *Hub {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.HelloTimeout <= 0 {
		opts.HelloTimeout = 10 * time.Second
	}
	return &Hub{
		plane: plane, log: log, opts: opts, sessions: map[model.ClusterID]*session{},
		up: websocket.Upgrader{
			ReadBufferSize: 16 << 10, WriteBufferSize: 16 << 10,
			// Agents are not browsers: a request that carries an Origin is
			// a page trying to borrow a token, and is refused.
			CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "" },
		},
	}
}

// ServeHTTP authenticates the connect token, then upgrades. A bad token
// never reaches the websocket: it gets 401 and a JSON error.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		http.Error(w, `{"error":"missing connect token: send Authorization: Bearer nbc_…"}`, http.StatusUnauthorized)
		return
	}
	side, err := h.plane.Agents.AuthenticateAgent(r.Context(), secret)
	if errors.Is(err, agents.ErrAgentUnauthorized) {
		http.Error(w, `{"error":"invalid, expired or revoked connect token"}`, http.StatusUnauthorized)
		return
	}
	if errors.Is(err, store.ErrUnavailable) {
		// Not the token's fault: the agent comes back after a while and
		// keeps running what it has meanwhile.
		h.log.WarnContext(r.Context(), "authenticating agent: database unavailable", logError, err)
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":"the control plane cannot check connect tokens right now; retry","code":"UNAVAILABLE"}`, http.StatusServiceUnavailable)
		return
	}
	if err != nil {
		h.log.ErrorContext(r.Context(), "authenticating agent", logError, err)
		http.Error(w, `{"error":"internal error"}`, http.StatusInternalServerError)
		return
	}
	s := &session{hub: h, side: side, cluster: side.Cluster(), token: side.Token(), wake: wake.New(), done: make(chan struct{}),
		answers: make(chan []byte, maxAnswers)}
	if !h.enter(s) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":"this replica is shutting down; reconnect","code":"UNAVAILABLE"}`, http.StatusServiceUnavailable)
		return
	}
	defer h.leave(s)
	conn, err := h.up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	h.mu.Lock()
	s.conn = conn
	closing := h.closed
	h.mu.Unlock()
	if closing { // Close came during the upgrade
		s.close(websocket.CloseGoingAway, "the control plane replica is shutting down; reconnect")
		return
	}
	// The session outlives the request's context on purpose: the server
	// ends it through Close, with a close code the agent understands.
	s.run(context.WithoutCancel(r.Context()))
}

// enter counts a session about to start; false once the hub is closed.
func (h *Hub) enter(s *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || !h.drain.Enter() {
		return false
	}
	if h.running == nil {
		h.running = map[*session]struct{}{}
	}
	h.running[s] = struct{}{}
	return true
}

func (h *Hub) leave(s *session) {
	h.mu.Lock()
	delete(h.running, s)
	h.mu.Unlock()
	h.drain.Leave()
}

// Close ends every session with 1001 (going away): the agents reconnect,
// through the load balancer, to another replica at once. No session
// starts after it. Wait tells when they are all gone.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.drain.Close()
	live := make([]*session, 0, len(h.running))
	for s := range h.running {
		if s.conn != nil { // one still upgrading closes itself
			live = append(live, s)
		}
	}
	h.mu.Unlock()
	for _, s := range live {
		s.close(websocket.CloseGoingAway, "the control plane replica is shutting down; reconnect")
	}
}

// Wait returns once every session ended after Close, or when ctx ends.
func (h *Hub) Wait(ctx context.Context) error { return h.drain.Wait(ctx) }

// Published wakes the sessions of clusters that got a new revision.
func (h *Hub) Published(bumped []core.Bumped) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range bumped {
		s := h.sessions[b.Cluster]
		switch {
		case s == nil:
		case b.State != nil:
			s.hand(&protocol.Desired{Revision: b.Revision, State: *b.State})
		default:
			s.poke()
		}
	}
}

// CommandQueued wakes the cluster's session to deliver its commands.
func (h *Hub) CommandQueued(c model.ClusterID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sessions[c]; s != nil {
		s.commands()
	}
}

// TokensRevoked closes the sessions that use a revoked token.
func (h *Hub) TokensRevoked(cluster model.ClusterID, tokens []model.ConnectTokenID) {
	h.mu.Lock()
	s := h.sessions[cluster]
	h.mu.Unlock()
	if s == nil {
		return
	}
	for _, t := range tokens {
		if s.token == t {
			s.close(protocol.CloseUnauthorized, "connect token revoked")
		}
	}
}

// Connected reports whether a cluster has a live session here.
func (h *Hub) Connected(c model.ClusterID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[c] != nil
}

// Stats are the hub's session counts, for metrics: the sessions live now
// and those opened since the process started.
func (h *Hub) Stats() (live int, opened int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions), h.opened
}

// register makes s the cluster's session, closing any older one: with two
// agent replicas only the newest leader's session lives.
func (h *Hub) register(s *session) {
	h.mu.Lock()
	old := h.sessions[s.cluster]
	h.sessions[s.cluster] = s
	h.opened++
	h.mu.Unlock()
	if old != nil {
		old.close(protocol.CloseSuperseded, "another session of this cluster took over")
	}
}

func (h *Hub) unregister(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.cluster] == s {
		delete(h.sessions, s.cluster)
	}
}
