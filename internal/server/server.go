// Package server wires the HTTP surface of the control plane: GraphQL with
// its limits, authentication, GraphiQL, health, readiness and metrics. It
// holds no domain rules; those are in control.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/drain"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/install"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/resolvers"
)

// Log field names.
const (
	logRequestID = "request_id"
	logMethod    = "method"
	logPath      = "path"
	logStatus    = "status"
	logDuration  = "duration"
	logError     = "error"
)

// Server is the control plane's HTTP server.
type Server struct {
	// closing ends when the server begins to shut down: long-lived
	// streams and connections end with it. drain counts the GraphQL
	// websockets, which net/http's shutdown does not wait for.
	closing   context.Context
	beginStop context.CancelFunc
	drain     drain.Drain

	plane   *control.Plane
	cfg     config.Config
	log     *slog.Logger
	metrics *metrics
	hub     *hub.Hub
	handler http.Handler
	// persisted are the persisted queries (persisted.go), trusted the
	// trusted documents (trusted.go).
	persisted *persistedQueries
	trusted   trustedDocuments
}

// New builds the server, with the agent hub as the plane's publisher.
func New(plane *control.Plane, cfg config.Config, log *slog.Logger) *Server {
	s := &Server{plane: plane, cfg: cfg, log: log, metrics: newMetrics(),
		hub: hub.New(plane, log, hub.Options{Heartbeat: cfg.AgentHeartbeat})}
	s.closing, s.beginStop = context.WithCancel(context.Background())
	s.trusted = newTrustedDocuments(cfg.TrustedDocuments)
	s.persisted = newPersistedQueries(plane.Documents, s.trusted, log)
	s.metrics.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "nebula_agent_sessions", Help: "Agent sessions live on this process.",
		}, func() float64 { live, _ := s.hub.Stats(); return float64(live) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "nebula_agent_sessions_opened_total", Help: "Agent sessions welcomed since this process started.",
		}, func() float64 { _, opened := s.hub.Stats(); return float64(opened) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "nebula_job_passes_total", Help: "Passes of the background jobs (approvals, builds, retention…) finished by this process.",
		}, func() float64 { return float64(plane.JobPasses()) }))
	plane.SetPublisher(s.hub)
	s.handler = s.routes()
	return s
}

// Hub is the agent hub of this server.
func (s *Server) Hub() *hub.Hub { return s.hub }

// Handler is the whole HTTP surface, for tests and benchmarks.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	gql := s.graphQL()
	// CORS first (a preflight is answered before anything else), then
	// compression around the whole GraphQL answer (cors.go, compress.go).
	api := corsPolicy{origins: s.cfg.CORSOrigins}.wrap(compressed(httpSpec(s.authenticate(s.idempotent(gql)))))
	mux.Handle("POST /graphql", api)
	// A websocket authenticates in its connection_init message, not with
	// the upgrade request: browsers cannot set headers on websockets.
	mux.Handle("GET /graphql", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if websocket.IsWebSocketUpgrade(r) {
			gql.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	}))
	mux.Handle("/graphql", api) // preflights (OPTIONS); other methods: 405 with a GraphQL error
	pages(mux)
	s.authRoutes(mux)
	mux.Handle("GET /agent/v1/connect", s.hub)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.plane.Ping(ctx); err != nil {
			s.log.WarnContext(ctx, "readiness check failed", logError, err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database unreachable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	// A hook reads its own body, up to its own limit, so that an oversized
	// delivery is recorded as refused rather than cut off unseen.
	root := http.NewServeMux()
	root.Handle("POST /hooks/{id}", s.observe(http.HandlerFunc(s.receiveHook)))
	root.Handle("/", s.observe(s.limitBody(mux)))
	return root
}

// graphQL builds the gqlgen server with the limits of the configuration.
func (s *Server) graphQL() http.Handler {
	es := graph.NewExecutableSchema(graph.Config{Resolvers: &resolvers.Resolver{Plane: s.plane,
		InstallSettings: install.Settings{Server: s.cfg.PublicURL, Repository: s.cfg.AgentImageRepository, Version: s.cfg.Version,
			Digest: s.cfg.AgentImageDigest, CABundle: s.cfg.AgentCABundle}}, Complexity: complexity()})
	srv := handler.New(es)
	// Subscriptions: websockets (token in connection_init) and SSE (POST
	// with Accept: text/event-stream, token in the Authorization header).
	limits := newConnLimits(s.cfg.MaxConnsPerToken, s.cfg.MaxConnsPerAddress)
	srv.AddTransport(newWSTransport(WSOptions{Origins: append(slices.Clone(s.cfg.AllowedOrigins), s.cfg.CORSOrigins...), Ping: s.cfg.WSPing}, limits, &s.drain, s.closing, s.plane.Bus(), s.authenticateAs, s.log))
	srv.AddTransport(sseTransport{ping: 15 * time.Second, write: 10 * time.Second, closing: s.closing, log: s.log, limits: limits})
	srv.AddTransport(httpTransport{})
	docs := lru.New[*ast.QueryDocument](1000)
	srv.SetQueryCache(docs)
	srv.SetParserTokenLimit(s.cfg.MaxTokens)
	if s.cfg.Introspection {
		srv.Use(extension.Introspection{})
	} else {
		// Without introspection, "Did you mean …?" must not give the
		// schema away either.
		srv.SetDisableSuggestion(true)
		srv.SetValidationRulesFn(rulesWithoutSuggestions)
	}
	srv.Use(s.persisted)
	srv.Use(s.trusted)
	// After the persisted query is known, before gqlgen validates it.
	// A document over a cost limit is refused no sooner than 25 ms after
	// it arrived (pacing.go).
	srv.Use(heldParams{limit: newSelectionLimit(orDefault(s.cfg.MaxSelections, config.DefaultMaxSelections), s.cfg.MaxTokens, docs)})
	srv.Use(heldOperation{limit: depthLimit{max: s.cfg.MaxDepth}})
	srv.Use(previewLimit{max: orDefault(s.cfg.MaxPreviews, config.DefaultMaxPreviews)})
	srv.Use(incrementalRules{})
	srv.Use(heldOperation{limit: extension.FixedComplexityLimit(s.cfg.MaxComplexity)})
	srv.AroundOperations(resolvers.Loaders(s.plane))
	srv.AroundOperations(s.metrics.operations)
	srv.AroundResponses(reportCost)
	srv.SetErrorPresenter(graph.Presenter(s.log, RequestID))
	srv.SetRecoverFunc(graph.Recover(s.log, RequestID))
	return srv
}

// reportCost adds the query's cost to the response extensions so that
// clients can see how close they are to the limit.
func reportCost(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	// Requests refused before parsing have no operation to price; a
	// subscription's updates, and a deferred fragment's parts, would
	// repeat the same price each time.
	if resp == nil || !graphql.HasOperationContext(ctx) || len(resp.Path) > 0 {
		return resp
	}
	if op := graphql.GetOperationContext(ctx); op.Operation != nil && op.Operation.Operation == ast.Subscription {
		return resp
	}
	if st := extension.GetComplexityStats(ctx); st != nil {
		if resp.Extensions == nil {
			resp.Extensions = map[string]any{}
		}
		resp.Extensions["cost"] = map[string]int{"complexity": st.Complexity, "limit": st.ComplexityLimit}
	}
	return resp
}

// authenticate puts the caller's actor in the context; requests without a
// valid token get 401 and a GraphQL error with code UNAUTHENTICATED.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		token, ok := bearer(r)
		cookie := false
		if !ok {
			// A person signed in: the session cookie, from this control
			// plane's own pages only.
			if token = sessionSecret(r); token != "" {
				if !sameOrigin(r) {
					writeJSON(w, http.StatusForbidden, gqlErrors("cross-site request refused: a signed-in browser's requests must come from this control plane's pages", "FORBIDDEN"))
					return
				}
				ok, cookie = true, true
			}
		}
		if !ok {
			unauthenticated(w, "missing token: send Authorization: Bearer <token>")
			return
		}
		actor, err := s.authenticateAs(ctx, token, clientAddress(r), cookie)
		switch {
		case errors.Is(err, authz.ErrUnauthenticated):
			unauthenticated(w, "invalid, expired or revoked token")
			return
		case err != nil:
			id := RequestID(ctx)
			if errors.Is(err, store.ErrUnavailable) {
				s.log.WarnContext(ctx, "authenticating: database unavailable", logRequestID, id, logError, err)
				writeUnavailable(w, mediaOf(r), id)
				return
			}
			s.log.ErrorContext(ctx, "authenticating", logRequestID, id, logError, err)
			writeJSON(w, http.StatusInternalServerError, gqlErrors("internal error (request id "+id+")", "INTERNAL"))
			return
		}
		ctx = authz.WithActor(ctx, actor)
		// A subscription over SSE reads each update as its caller again.
		addr := clientAddress(r)
		ctx = resolvers.WithRefresh(ctx, func(ctx context.Context, _ bool) (context.Context, error) {
			a, err := s.authenticateAs(ctx, token, addr, cookie)
			if err != nil {
				return nil, err
			}
			return authz.WithActor(ctx, a), nil
		})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// authenticateAs authenticates a secret as what it came as: a session's
// from the cookie it was set as, an API token from anywhere else.
func (s *Server) authenticateAs(ctx context.Context, secret, origin string, cookie bool) (*authz.Actor, error) {
	if cookie {
		return s.plane.People.AuthenticateSession(ctx, secret, origin)
	}
	return s.plane.People.Authenticate(ctx, secret, origin)
}

// requireJSON refuses POST bodies that are not JSON with a GraphQL error
// rather than gqlgen's uncoded "transport not supported".
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "application/json" && mt != "application/graphql-response+json" {
			writeJSON(w, http.StatusUnsupportedMediaType, gqlErrors("Content-Type must be application/json", "BAD_USER_INPUT"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !equalFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return h[len(prefix):], true
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func unauthenticated(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="nebula"`)
	writeJSON(w, http.StatusUnauthorized, gqlErrors(msg, "UNAUTHENTICATED"))
}

func gqlErrors(msg, code string) map[string]any {
	return map[string]any{"errors": []map[string]any{{"message": msg, "extensions": map[string]string{"code": code}}}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// clientAddress is the peer's IP; proxies are not trusted by default.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limitBody caps request bodies: a declared length over the limit is
// refused here with 413; a chunked body is cut at the limit and the read
// error reaches the client as BAD_USER_INPUT.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.cfg.MaxBodyBytes {
			writeProblem(w, mediaOf(r), http.StatusRequestEntityTooLarge,
				"request body exceeds "+strconv.FormatInt(s.cfg.MaxBodyBytes, 10)+" bytes", "BAD_USER_INPUT")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

type requestIDKey struct{}

// RequestID returns the request id of ctx.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush lets SSE responses stream through the metrics wrapper.
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// observe gives every request an id, logs it and counts it.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := newRequestID()
		w.Header().Set("X-Request-Id", id)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		inner := r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		inFlight := s.metrics.inFlight.WithLabelValues(r.Method)
		inFlight.Inc()
		next.ServeHTTP(sw, inner)
		inFlight.Dec()
		d := time.Since(start)
		route := inner.Pattern // set by the mux
		if route == "" {
			route = "unmatched"
		}
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
		s.metrics.duration.WithLabelValues(route).Observe(d.Seconds())
		s.log.DebugContext(r.Context(), "request", logRequestID, id, logMethod, r.Method, logPath, r.URL.Path,
			logStatus, sw.status, logDuration, d)
	})
}

type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ops      *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nebula_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "nebula_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nebula_graphql_operations_total", Help: "GraphQL operations by type and outcome.",
		}, []string{"type", "outcome"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "nebula_http_requests_in_flight", Help: "HTTP requests being served (websockets and SSE streams included), by method.",
		}, []string{"method"}),
	}
	m.reg.MustRegister(m.requests, m.duration, m.ops, m.inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) operations(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx)
	typ := "unknown"
	if op != nil && op.Operation != nil {
		typ = string(op.Operation.Operation)
	}
	h := next(ctx)
	return func(ctx context.Context) *graphql.Response {
		resp := h(ctx)
		outcome := "ok"
		if resp != nil && len(resp.Errors) > 0 {
			outcome = "error"
		}
		m.ops.WithLabelValues(typ, outcome).Inc()
		return resp
	}
}

// Run serves until ctx ends, then shuts down in order: it stops accepting
// connections, closes websockets (GraphQL and agents) with 1001 so that
// their clients reconnect to another replica at once, ends SSE streams,
// and lets requests in flight (and queries and mutations on websockets)
// finish within the grace period (NEBULA_SHUTDOWN_GRACE). It returns once
// all of that is over; what the server uses (jobs, the listener, the
// store) is its caller's to stop afterwards.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	// Runs once the listeners are closed: nothing new arrives.
	hs.RegisterOnShutdown(s.stopLongLived)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.stopLongLived()
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: no new connections; websockets closed with 1001; waiting for requests in flight", "grace", s.cfg.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownGrace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if werr := s.waitLongLived(sctx); werr != nil && err == nil {
		err = fmt.Errorf("waiting for websockets: %w", werr)
	}
	if err != nil {
		s.log.Warn("the grace period ended before every connection did; closing the rest", "error", err)
		_ = hs.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return nil
}

// stopLongLived ends what outlives a request: GraphQL websockets and SSE
// streams (through closing), agent sessions.
func (s *Server) stopLongLived() {
	s.drain.Close()
	if s.beginStop != nil {
		s.beginStop()
	}
	if s.hub != nil {
		s.hub.Close()
	}
}

// waitLongLived waits for the websockets stopLongLived closed.
func (s *Server) waitLongLived(ctx context.Context) error {
	err := s.drain.Wait(ctx)
	if s.hub != nil {
		err = errors.Join(err, s.hub.Wait(ctx))
	}
	return err
}

// shuttingDown answers a connection that arrives while the server shuts
// down (it was accepted just before): 503, retry at once elsewhere.
func shuttingDown(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "0")
	writeJSON(w, http.StatusServiceUnavailable, gqlErrors("this replica is shutting down; retry", "UNAVAILABLE"))
}
