package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/gorilla/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/drain"
	"github.com/nebulactrl/nebula/resolvers"
)

// The GraphQL websocket transport: graphql-transport-ws (the graphql-ws
// library's protocol) and the legacy graphql-ws protocol of
// subscriptions-transport-ws, written here rather than taken from gqlgen so
// that it closes with the protocol's codes and bounds what a slow client
// can hold.
const (
	protoTransportWS = "graphql-transport-ws"
	protoLegacyWS    = "graphql-ws"
)

// Close codes (graphql-transport-ws; the legacy protocol uses the same).
const (
	closeBadRequest      = 4400 // a message that is not one the protocol knows
	closeUnauthorized    = 4401 // subscribe before connection_ack
	closeForbidden       = 4403 // connection_init without a valid token, or the token was revoked
	closeNoSubprotocol   = 4406 // no subprotocol this server speaks
	closeInitTimeout     = 4408 // no connection_init in time
	closeSubscriberExist = 4409 // an operation id already in use
	closeTooManyInits    = 4429 // a second connection_init; also: too many connections for this token
	// closeTryAgain (1013 "try again later") cuts off a client that does
	// not read, and answers a connection_init while tokens cannot be
	// checked (the database is unavailable): the client reconnects with
	// backoff and resumes from its last cursor.
	closeTryAgain = 1013
)

// WSOptions tune the transport; zero values take the defaults.
type WSOptions struct {
	// InitTimeout bounds the wait for connection_init (default 10 s).
	InitTimeout time.Duration
	// Queue is how many messages a connection may have waiting to be
	// written before it counts as too slow (default 256).
	Queue int
	// Recheck is how often the connection's token is checked again
	// (default 60 s) besides right after its user's access changed: a
	// revoked token ends the connection with 4403.
	Recheck time.Duration
	// Ping is the keep-alive interval (default 15 s).
	Ping time.Duration
	// MaxOperations bounds the operations one connection runs at once
	// (default 100): one client cannot hold the server's work for many.
	MaxOperations int
	// Origins are the allowed Origin headers; a request without one (not
	// a browser) is always allowed, one from the server's own host too.
	Origins []string
}

func (o *WSOptions) defaults() {
	if o.InitTimeout <= 0 {
		o.InitTimeout = 10 * time.Second
	}
	if o.Queue <= 0 {
		o.Queue = 256
	}
	if o.Recheck <= 0 {
		o.Recheck = time.Minute
	}
	if o.Ping <= 0 {
		o.Ping = 15 * time.Second
	}
	if o.MaxOperations <= 0 {
		o.MaxOperations = 100
	}
}

// wsTransport serves GraphQL over websockets.
type wsTransport struct {
	opts   WSOptions
	limits *connLimits
	// drain counts the open connections; closing ends when the server
	// shuts down, and with it every connection (code 1001).
	drain   *drain.Drain
	closing context.Context
	bus     *bus.Bus // notes of access changes; nil in tests without one
	auth    func(ctx context.Context, token, origin string, cookie bool) (*authz.Actor, error)
	up      websocket.Upgrader
	log     *slog.Logger
}

func newWSTransport(opts WSOptions, limits *connLimits, d *drain.Drain, closing context.Context, b *bus.Bus,
	auth func(ctx context.Context, token, origin string, cookie bool) (*authz.Actor, error), log *slog.Logger) *wsTransport {
	opts.defaults()
	t := &wsTransport{opts: opts, limits: limits, drain: d, closing: closing, bus: b, auth: auth, log: log}
	t.up = websocket.Upgrader{
		Subprotocols: []string{protoTransportWS, protoLegacyWS},
		CheckOrigin:  t.originAllowed,
		// An idle connection holds a 1 KiB read buffer and no write
		// buffer: a message takes one from the pool while it is written.
		// (gorilla's reuse of net/http's buffers does not apply: it keeps
		// the 4 KiB reader, and its check for the writer never matches.)
		ReadBufferSize:  1024,
		WriteBufferPool: &sync.Pool{},
	}
	return t
}

func (t *wsTransport) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, o := range t.opts.Origins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	host := strings.TrimPrefix(strings.TrimPrefix(origin, "https://"), "http://")
	return strings.EqualFold(host, r.Host)
}

// sameOriginSession is the session cookie of an upgrade from this control
// plane's own page; a page of another site (even an allowed origin) never
// rides on the person's session.
func sameOriginSession(r *http.Request) string {
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(r) {
		return ""
	}
	return sessionSecret(r)
}

func (t *wsTransport) Supports(r *http.Request) bool {
	return r.Method == http.MethodGet && websocket.IsWebSocketUpgrade(r)
}

// wsMessage is a frame of either protocol.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// frame is m in JSON, as encoding/json writes it but for the payload,
// which goes in as it is: it is JSON already (a response's envelope around
// gqlgen's data, or encoded errors), and encoding/json would check and
// compact all of it again.
func (m wsMessage) frame() ([]byte, error) {
	id, err := json.Marshal(m.ID)
	if err != nil {
		return nil, err
	}
	typ, err := json.Marshal(m.Type)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(id)+len(typ)+len(m.Payload)+len(`{"id":,"type":,"payload":}`))
	b = append(b, '{')
	if m.ID != "" {
		b = append(append(append(b, `"id":`...), id...), ',')
	}
	b = append(append(b, `"type":`...), typ...)
	if len(m.Payload) > 0 {
		b = append(append(b, `,"payload":`...), m.Payload...)
	}
	return append(b, '}'), nil
}

func (t *wsTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if !t.originAllowed(r) {
		writeJSON(w, http.StatusForbidden, gqlErrors("origin not allowed", "FORBIDDEN"))
		return
	}
	release, ok := t.limits.address(clientAddress(r))
	if !ok {
		tooMany(w, "from this address", t.limits.perAddress)
		return
	}
	if !t.drain.Enter() {
		release()
		shuttingDown(w)
		return
	}
	ws, err := t.up.Upgrade(w, r, nil)
	if err != nil {
		t.drain.Leave()
		release()
		return // the upgrader answered
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &wsConn{t: t, ws: ws, exec: exec, proto: ws.Subprotocol(), origin: clientAddress(r), cookie: sameOriginSession(r),
		done: ctx.Done(), cancel: cancel, ops: map[string]*wsOp{}}
	ws.SetReadLimit(1 << 20)
	if c.proto == "" {
		c.close(closeNoSubprotocol, "Subprotocol not acceptable: use graphql-transport-ws or graphql-ws")
		_ = ws.Close()
		cancel()
		t.drain.Leave()
		release()
		return
	}
	// The connection is read on a goroutine of its own and this handler
	// returns: net/http's goroutine (its stack grown by the request's
	// path) and what it held for the request are let go for the life of
	// the connection.
	go func() {
		defer release()
		defer t.drain.Leave()
		defer cancel()
		stop := context.AfterFunc(t.closing, c.shutdown)
		defer stop()
		c.run(ctx)
	}()
}

// wsConn is one client connection.
type wsConn struct {
	t      *wsTransport
	ws     *websocket.Conn
	exec   graphql.GraphExecutor
	proto  string
	origin string
	// cookie is the session secret of a signed-in person's browser, when
	// the upgrade came from this control plane's own page: used when
	// connection_init carries no token.
	cookie string

	done      <-chan struct{}
	cancel    context.CancelFunc // ends the connection's context: done, and every operation
	closeOnce sync.Once

	// The messages waiting to be written: bounded by Queue, a client
	// that lets more wait is cut off. No goroutine waits on them: a
	// send that finds none writing starts one, which writes until the
	// queue is empty and returns.
	wmu     sync.Mutex
	queue   [][]byte
	writing bool
	slow    bool

	mu       sync.Mutex
	draining bool // the server is shutting down: no new operation starts
	ops      map[string]*wsOp
	token    string // kept to check again; never logged
	// viaCookie: the token is the session cookie's (connection_init
	// carried none).
	viaCookie bool
	acked     bool
	// fresh is the actor last authenticated for the subscriptions' reads,
	// and when: reused for a moment, so that a burst of updates does not
	// authenticate once per update.
	fresh   *authz.Actor
	freshAt time.Time
}

type wsOp struct {
	stop context.CancelFunc
	done chan struct{} // closed when the operation ended
	// subscription is known once the operation is parsed.
	subscription bool
}

// shutdown ends the connection of a server going away: subscriptions stop
// at once (their clients resume elsewhere from their cursor), queries and
// mutations under way finish and send their result (the server's grace
// period bounds them), then the connection closes with 1001, which
// clients retry at once.
func (c *wsConn) shutdown() {
	c.mu.Lock()
	c.draining = true
	var running []<-chan struct{}
	for _, op := range c.ops {
		if op.subscription {
			op.stop()
		} else {
			running = append(running, op.done)
		}
	}
	c.mu.Unlock()
	for _, done := range running {
		select {
		case <-done:
		case <-c.done:
		}
	}
	c.close(websocket.CloseGoingAway, "the server is shutting down: reconnect, and resume subscriptions from your last cursor")
}

func (c *wsConn) legacy() bool { return c.proto == protoLegacyWS }

// close ends the connection with a code and reason; safe from anywhere.
func (c *wsConn) close(code int, reason string) { c.closeWithin(code, reason, time.Second) }

func (c *wsConn) closeWithin(code int, reason string, d time.Duration) {
	c.closeOnce.Do(func() {
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(d))
		c.cancel()
		// The reader closes the connection on the client's close frame
		// (or soon without one): closing now would reset a connection
		// whose client is still sending, and lose the close frame.
		_ = c.ws.SetReadDeadline(time.Now().Add(2 * time.Second))
	})
}

// send queues a message; a client whose queue is full is cut off.
func (c *wsConn) send(m wsMessage) {
	b, err := m.frame()
	if err != nil {
		return
	}
	select {
	case <-c.done:
		return
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	switch {
	case c.slow:
	case len(c.queue) >= c.t.opts.Queue:
		c.slow, c.queue = true, nil
		// Not in the sender's goroutine: the close frame may take its
		// deadline to get through to a client that does not read.
		go c.closeWithin(closeTryAgain, fmt.Sprintf("too slow: %d messages waiting; reconnect and resume from your last cursor", c.t.opts.Queue), 10*time.Second)
	default:
		c.queue = append(c.queue, b)
		if !c.writing {
			c.writing = true
			go c.write()
		}
	}
}

// write writes the queued messages, then returns; one runs at a time.
// Once the connection ended it returns with writing still set: send
// queues nothing more then.
func (c *wsConn) write() {
	for {
		c.wmu.Lock()
		batch := c.queue
		c.queue = nil
		if len(batch) == 0 || c.slow {
			c.writing = false
			c.wmu.Unlock()
			return
		}
		c.wmu.Unlock()
		for _, b := range batch {
			select {
			case <-c.done:
				return
			default:
			}
			_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
				c.close(websocket.CloseGoingAway, "write failed") // ends the connection
				return
			}
		}
	}
}

// keepAlive pings every Ping and checks the token again every Recheck
// and whenever the user's access changed, on timers and the bus's
// callback rather than a goroutine of the connection's; it stops when the
// connection ends.
func (c *wsConn) keepAlive(ctx context.Context) {
	var ping, recheck *time.Timer
	// A callback running as the connection ends must not arm its timer
	// again: it checks ctx after its work (Stop has run, or runs next).
	ping = time.AfterFunc(c.t.opts.Ping, func() {
		typ := "ping"
		if c.legacy() {
			typ = "ka"
		}
		c.send(wsMessage{Type: typ})
		if ctx.Err() == nil {
			ping.Reset(c.t.opts.Ping)
		}
	})
	recheck = time.AfterFunc(c.t.opts.Recheck, func() {
		c.checkToken(ctx)
		if ctx.Err() == nil {
			recheck.Reset(c.t.opts.Recheck)
		}
	})
	context.AfterFunc(ctx, func() {
		ping.Stop()
		recheck.Stop()
	})
}

// accessChanged drops the authentication kept for the subscriptions and
// checks the token at once.
func (c *wsConn) accessChanged(ctx context.Context) {
	c.mu.Lock()
	c.fresh = nil
	c.mu.Unlock()
	c.checkToken(ctx)
}

func (c *wsConn) run(ctx context.Context) {
	defer func() { _ = c.ws.Close() }()
	defer c.close(websocket.CloseNormalClosure, "")
	c.keepAlive(ctx)
	init := time.AfterFunc(c.t.opts.InitTimeout, func() {
		c.mu.Lock()
		acked := c.acked
		c.mu.Unlock()
		if !acked {
			c.close(closeInitTimeout, "Connection initialisation timeout")
		}
	})
	defer init.Stop()
	for {
		typ, frame, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		select {
		case <-c.done:
			continue // closing: wait for the client's close frame
		default:
		}
		var m wsMessage
		if typ != websocket.TextMessage || json.Unmarshal(frame, &m) != nil || m.Type == "" {
			c.close(closeBadRequest, "Invalid message: a JSON text frame with a type is expected")
			continue
		}
		c.handle(ctx, m)
	}
}

// handle acts on one message; false ends the connection.
func (c *wsConn) handle(ctx context.Context, m wsMessage) bool {
	switch m.Type {
	case "connection_init":
		return c.connectionInit(ctx, m)
	case "ping":
		if !c.legacy() {
			c.send(wsMessage{Type: "pong", Payload: m.Payload})
		}
		return true
	case "pong", "ka":
		return true
	case "subscribe", "start":
		if (m.Type == "subscribe") == c.legacy() {
			break
		}
		c.mu.Lock()
		acked := c.acked
		c.mu.Unlock()
		if !acked {
			c.close(closeUnauthorized, "Unauthorized: connection_init first")
			return false
		}
		if m.ID == "" {
			c.close(closeBadRequest, "Invalid message: "+m.Type+" needs an id")
			return false
		}
		return c.subscribe(ctx, m)
	case "complete", "stop":
		if (m.Type == "complete") == c.legacy() {
			break
		}
		c.mu.Lock()
		if op := c.ops[m.ID]; op != nil {
			op.stop()
			delete(c.ops, m.ID)
		}
		c.mu.Unlock()
		return true
	case "connection_terminate":
		if c.legacy() {
			c.close(websocket.CloseNormalClosure, "terminated")
			return false
		}
	}
	c.close(closeBadRequest, fmt.Sprintf("Invalid message: unknown type %q", clipText(m.Type)))
	return false
}

func clipText(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// connectionInit authenticates the token of the payload: {"Authorization":
// "Bearer nbt_…"} (any case) or {"token": "nbt_…"}.
func (c *wsConn) connectionInit(ctx context.Context, m wsMessage) bool {
	c.mu.Lock()
	if c.token != "" || c.acked {
		c.mu.Unlock()
		c.close(closeTooManyInits, "Too many initialisation requests")
		return false
	}
	c.mu.Unlock()
	var payload map[string]any
	_ = json.Unmarshal(m.Payload, &payload)
	token := ""
	for k, v := range payload {
		s, _ := v.(string)
		switch strings.ToLower(k) {
		case "authorization":
			if len(s) > 7 && strings.EqualFold(s[:7], "bearer ") {
				token = s[7:]
			}
		case "token":
			token = s
		}
	}
	viaCookie := false
	if token == "" {
		token, viaCookie = c.cookie, true
	}
	actor, err := c.t.auth(ctx, token, c.origin, viaCookie)
	if err != nil && !errors.Is(err, authz.ErrUnauthenticated) {
		// The token could not be checked (the database is away): not a
		// bad token. 1013 tells clients to come back, 4403 never to.
		c.t.log.WarnContext(ctx, "authenticating a websocket: database unavailable", logRequestID, RequestID(ctx), logError, err)
		c.close(closeTryAgain, "Try again later: the control plane cannot check tokens right now")
		return false
	}
	if err != nil {
		if c.legacy() {
			b, _ := json.Marshal(map[string]string{"message": "Forbidden: a valid API token is required"})
			c.send(wsMessage{Type: "connection_error", Payload: b})
			time.Sleep(50 * time.Millisecond) // let the reason out before the close
		}
		c.close(closeForbidden, "Forbidden: a valid API token is required in connection_init")
		return false
	}
	release, ok := c.t.limits.token(actor.Credential())
	if !ok {
		c.close(closeTooManyInits, fmt.Sprintf("Too many connections for this token: at most %d", c.t.limits.perToken))
		return false
	}
	context.AfterFunc(ctx, release)
	c.mu.Lock()
	c.token, c.viaCookie, c.acked = token, viaCookie, true
	c.mu.Unlock()
	if actor.User != nil && c.t.bus != nil {
		// A change of this user's access (a role, a membership, a revoked
		// token) is checked at once, on whichever replica it happened.
		sub := c.t.bus.SubscribeFunc(func() { go c.accessChanged(ctx) }, bus.User(string(actor.User.ID)))
		context.AfterFunc(ctx, sub.Close)
	}
	c.send(wsMessage{Type: "connection_ack"})
	if c.legacy() {
		c.send(wsMessage{Type: "ka"})
	}
	return true
}

// checkToken ends the connection when its token stopped being valid.
func (c *wsConn) checkToken(ctx context.Context) {
	c.mu.Lock()
	token, viaCookie := c.token, c.viaCookie
	c.mu.Unlock()
	if token == "" {
		return
	}
	if _, err := c.t.auth(ctx, token, c.origin, viaCookie); errors.Is(err, authz.ErrUnauthenticated) {
		c.close(closeForbidden, "Forbidden: the token was revoked or expired")
	}
}

// refresh re-authenticates the token: subscriptions read each update
// through authorization with fresh grants.
func (c *wsConn) refresh(ctx context.Context, force bool) (context.Context, error) {
	a, err := c.authenticated(ctx, force)
	if err != nil {
		return nil, err
	}
	return authz.WithActor(ctx, a), nil
}

// authenticated is the connection's actor, authenticated within freshFor
// (force: now). A revoked or expired token closes the connection with
// 4403 (found by a subscription before the periodic check: the client
// learns why at once, not from a subscription that just ends).
func (c *wsConn) authenticated(ctx context.Context, force bool) (*authz.Actor, error) {
	c.mu.Lock()
	if !force && c.fresh != nil && time.Since(c.freshAt) < freshFor {
		a := c.fresh
		c.mu.Unlock()
		return a, nil
	}
	token, viaCookie := c.token, c.viaCookie
	c.mu.Unlock()
	a, err := c.t.auth(ctx, token, c.origin, viaCookie)
	if errors.Is(err, authz.ErrUnauthenticated) {
		c.close(closeForbidden, "Forbidden: the token was revoked or expired")
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.fresh, c.freshAt = a, time.Now()
	c.mu.Unlock()
	return a, nil
}

// freshFor is how long an authentication serves the subscriptions' reads.
// A change of the user's access does not wait for it: the note clears it.
const freshFor = 2 * time.Second

func (c *wsConn) subscribe(ctx context.Context, m wsMessage) bool {
	var params graphql.RawParams
	// Numbers stay json.Number, as the HTTP transports decode them: an Int
	// variable read as a float64 would not coerce.
	dec := json.NewDecoder(bytes.NewReader(m.Payload))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		c.close(closeBadRequest, "Invalid message: the payload is not a GraphQL request")
		return false
	}
	c.mu.Lock()
	if c.ops[m.ID] != nil {
		c.mu.Unlock()
		c.close(closeSubscriberExist, "Subscriber for "+clipText(m.ID)+" already exists")
		return false
	}
	if len(c.ops) >= c.t.opts.MaxOperations {
		c.mu.Unlock()
		c.sendErrors(m.ID, "error", gqlerror.List{{
			Message:    fmt.Sprintf("too many operations on this connection: at most %d at once; complete one or open another connection", c.t.opts.MaxOperations),
			Extensions: map[string]any{"code": "TOO_MANY_OPERATIONS"},
		}})
		return true
	}
	if c.draining {
		c.mu.Unlock()
		c.sendErrors(m.ID, "error", gqlerror.List{{
			Message:    "the server is shutting down: reconnect and send the operation again",
			Extensions: map[string]any{"code": "UNAVAILABLE", "retryable": true},
		}})
		return true
	}
	opCtx, stop := context.WithCancel(ctx)
	op := &wsOp{stop: stop, done: make(chan struct{})}
	c.ops[m.ID] = op
	c.mu.Unlock()
	params.ReadTime = graphql.TraceTiming{Start: graphql.Now(), End: graphql.Now()}
	go c.operate(opCtx, op, m.ID, &params)
	return true
}

// operate runs one operation to its end and says so. The operation runs
// as the connection's token authenticated afresh, and every check it makes
// reads the grants in force when it makes it: a connection opened before
// a role was lowered runs its next operation with the lower role.
//
// A subscription that follows the bus (resolvers.Ready) is read only when
// it has something to send: operate returns once it started, and each
// value is written by a goroutine that lives for that value (opStream).
func (c *wsConn) operate(ctx context.Context, op *wsOp, id string, params *graphql.RawParams) {
	st := &opStream{c: c, op: op, id: id, ctx: ctx, first: true}
	handedOver := false
	defer func() {
		if !handedOver {
			st.finish()
		}
	}()
	// Afresh, and kept as the connection's fresh authentication: the
	// subscription's first updates read as it, and it is the one
	// actor the connection holds.
	actor, err := c.authenticated(ctx, true)
	if errors.Is(err, authz.ErrUnauthenticated) {
		return // closed with 4403
	}
	if err != nil {
		c.sendErrors(id, "error", c.exec.DispatchError(ctx, gqlerror.List{{Err: err, Message: err.Error()}}).Errors)
		return
	}
	ctx = resolvers.WithRefresh(authz.WithActor(ctx, actor), c.refresh)
	ctx = resolvers.WithLogger(ctx, c.t.log.With(logRequestID, RequestID(ctx)))
	ctx, st.end = resolvers.WithEnd(ctx)
	ctx, ready := resolvers.WithReady(ctx, st.ready)
	rc, errs := c.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		c.sendErrors(id, "error", resp.Errors)
		return
	}
	ctx = graphql.WithOperationContext(ctx, rc)
	responses, ctx := c.exec.DispatchOperation(ctx, rc)
	st.ctx = ctx
	st.subscription = rc.Operation != nil && rc.Operation.Operation == ast.Subscription
	c.mu.Lock()
	op.subscription = st.subscription
	draining := c.draining
	c.mu.Unlock()
	if st.subscription && draining {
		return // the connection closes with 1001; the client subscribes elsewhere
	}
	if st.subscription && ready.Claimed() {
		handedOver = true
		st.start(responses)
		return
	}
	for st.next(responses) {
	}
}

// opStream writes one operation's responses and ends it.
type opStream struct {
	c     *wsConn
	op    *wsOp
	id    string
	ctx   context.Context
	end   *resolvers.End
	first bool
	// subscription is set, with ctx, before the first response is read.
	subscription bool

	mu        sync.Mutex
	responses graphql.ResponseHandler // set once the operation started
	pending   int                     // values (or the end) announced and not yet read
	running   bool                    // a goroutine is reading them
}

// ready is the subscription's word that one value, or its end, is coming.
func (st *opStream) ready() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pending++
	st.run()
}

// start hands the stream the operation's responses; values announced
// before it are read now.
func (st *opStream) start(responses graphql.ResponseHandler) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.responses = responses
	st.run()
}

// run starts a reader when there is something to read and none runs;
// under st.mu.
func (st *opStream) run() {
	if st.responses != nil && st.pending > 0 && !st.running {
		st.running = true
		go st.drain()
	}
}

// drain reads the announced values, then returns, or ends the operation
// with its last.
func (st *opStream) drain() {
	for {
		st.mu.Lock()
		if st.pending == 0 {
			st.running = false
			st.mu.Unlock()
			return
		}
		st.pending--
		responses := st.responses
		st.mu.Unlock()
		if !st.next(responses) {
			st.finish()
			return
		}
	}
}

// next reads and sends one response; false when the operation is over
// (and what ends it was sent).
func (st *opStream) next(responses graphql.ResponseHandler) bool {
	c, ctx, id := st.c, st.ctx, st.id
	resp := responses(ctx)
	if resp == nil || ctx.Err() != nil {
		if ctx.Err() != nil {
			return false
		}
		if err := st.end.Err(); err != nil {
			// It stopped before its end (access lost, the database gone for
			// too long): an error that says why, and whether to retry.
			c.sendErrors(id, "error", c.exec.DispatchError(ctx, gqlerror.List{{Err: err, Message: err.Error()}}).Errors)
			return false
		}
		c.send(wsMessage{ID: id, Type: "complete"})
		return false
	}
	first := st.first
	st.first = false
	if st.subscription && first && len(resp.Errors) > 0 && isNull(resp.Data) {
		// The subscription could not start (not found, database
		// unavailable): the protocol's error, not a result and a
		// complete that would read as "it is over".
		c.sendErrors(id, "error", resp.Errors)
		return false
	}
	var b []byte
	if resp.HasNext == nil {
		// The envelope written around gqlgen's data, as over HTTP.
		b, _ = appendResponse(nil, resp, true)
	} else {
		b, _ = deferredPart(resp, first) // @defer (deferred.go)
	}
	typ := "next"
	if c.legacy() {
		typ = "data"
	}
	c.send(wsMessage{ID: id, Type: typ, Payload: b})
	return true
}

// finish ends the operation: it leaves the connection's operations.
func (st *opStream) finish() {
	c, op := st.c, st.op
	op.stop()
	c.mu.Lock()
	if c.ops[st.id] == op {
		delete(c.ops, st.id)
	}
	c.mu.Unlock()
	close(op.done)
}

func isNull(data json.RawMessage) bool {
	return len(data) == 0 || string(data) == "null"
}

func (c *wsConn) sendErrors(id, typ string, errs gqlerror.List) {
	b, _ := json.Marshal(errs)
	// Both protocols end the operation with this message: no complete
	// follows (graphql-ws clients take the payload, a list of errors, as
	// the operation's error).
	c.send(wsMessage{ID: id, Type: typ, Payload: b})
}
