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

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store"
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
	cluster, tok, err := h.plane.AuthenticateAgent(r.Context(), secret)
	if errors.Is(err, control.ErrAgentUnauthorized) {
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
	conn, err := h.up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	s := &session{hub: h, conn: conn, cluster: cluster.ID, token: tok.ID,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.run(context.WithoutCancel(r.Context()))
}

// Published wakes the sessions of clusters that got a new revision.
func (h *Hub) Published(bumped []control.Bumped) {
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
