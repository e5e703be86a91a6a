package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/wake"
)

const writeTimeout = 10 * time.Second

// conn is one websocket session, safe for concurrent writers.
type conn struct {
	ws *websocket.Conn
	mu sync.Mutex
}

func (c *conn) send(typ string, body any) error {
	frame, err := protocol.Encode(typ, body)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteMessage(websocket.TextMessage, frame)
}

// connectURL turns the control plane's base URL into the channel's.
func connectURL(server string) string {
	u := strings.TrimRight(server, "/") + "/agent/v1/connect"
	if rest, ok := strings.CutPrefix(u, "https://"); ok {
		return "wss://" + rest
	}
	return "ws://" + strings.TrimPrefix(u, "http://")
}

// trust is the TLS configuration for the control plane: the system's
// certificate authorities and the CA bundle's, read again before every
// connection (a replaced bundle takes effect without a restart).
func (a *Agent) trust() (*tls.Config, error) {
	if a.cfg.CAFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(a.cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the CA bundle: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the CA bundle %s holds no PEM certificate", a.cfg.CAFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// session runs one connection: hello, welcome, then heartbeats, desired
// states and commands until it ends. welcomed tells the caller the control
// plane accepted the agent (the backoff starts over).
func (a *Agent) session(ctx context.Context) (welcomed bool, err error) {
	token, err := a.readToken()
	if err != nil {
		return false, err
	}
	trust, err := a.trust()
	if err != nil {
		return false, err
	}
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second, Proxy: http.ProxyFromEnvironment, TLSClientConfig: trust}
	ws, resp, err := dialer.DialContext(ctx, connectURL(a.cfg.Server), http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return false, errors.New("the control plane refused the connect token (wrong, revoked or past its grace window); the token file is read again before the next try")
		}
		if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
			// Its database is away for a moment: the token is fine.
			return false, errors.New("the control plane is unavailable for a moment (503); what runs is left as it is")
		}
		return false, fmt.Errorf("connecting: %w", err)
	}
	c := &conn{ws: ws}
	defer ws.Close()
	ws.SetReadLimit(64 << 20) // a whole desired state can be large

	inv := a.inventory(ctx)
	a.mu.Lock()
	held := int64(0)
	if a.state != nil {
		held = a.state.Revision
	}
	heldHash := a.floorHash.of(held)
	a.mu.Unlock()
	// appliedRevision in the hello is the state this process holds: a new
	// process says 0 and gets the whole state, which it applies in full.
	if err := c.send(protocol.TypeHello, protocol.Hello{Protocols: []int{protocol.Version},
		Capabilities: capabilities, AppliedRevision: held, AppliedHash: heldHash, Inventory: inv, Agent: a.cfg.Identity}); err != nil {
		return false, fmt.Errorf("sending hello: %w", err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(15 * time.Second))
	msg, err := readServer(ws)
	if err != nil {
		return false, err
	}
	w, ok := msg.(*protocol.Welcome)
	if !ok {
		return false, fmt.Errorf("the control plane answered the hello with %T, not a welcome", msg)
	}
	a.mu.Lock()
	if a.cluster != "" && a.cluster != w.Cluster {
		// The token now belongs to another cluster: nothing held applies.
		a.state = nil
	}
	a.cluster = w.Cluster
	// Every session acknowledges afresh: an ack lost with the last
	// connection is sent again (the control plane ignores duplicates).
	a.acked = map[int64]string{}
	a.settled = nil // the session's first pass looks at every service
	if a.applier == nil || a.applier.Cluster != w.Cluster {
		a.applier = &Applier{Client: a.kube.Write, Cache: a.cache, Cluster: w.Cluster, Concurrency: a.cfg.Concurrency,
			Drifted: a.reportDrift}
	}
	a.conn = c // stages of rollouts moved on by a change in the cluster go here
	a.sessionCaps = w.Capabilities
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.conn == sender(c) {
			a.conn = nil
		}
		a.mu.Unlock()
	}()
	a.log.Info("connected", "cluster", w.Cluster, "protocol", w.Protocol, "capabilities", w.Capabilities)

	hb := time.Duration(w.HeartbeatSeconds) * time.Second
	deadline := func() { _ = ws.SetReadDeadline(time.Now().Add(3 * hb)) }
	ws.SetPingHandler(func(data string) error {
		deadline()
		c.mu.Lock()
		defer c.mu.Unlock()
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeTimeout))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := newWork()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(2)
	go func() { defer wg.Done(); a.heartbeats(ctx, c, hb) }()
	go func() { defer wg.Done(); a.worker(ctx, c, work) }()
	var builds *builder
	if slices.Contains(w.Capabilities, protocol.CapBuilds) {
		builds = newBuilder(a.kube, a.log, func(r protocol.BuildReport) error { return c.send(protocol.TypeBuildReport, r) })
		wg.Add(1)
		go func() { defer wg.Done(); builds.run(ctx) }()
	}
	var resume *logResume
	if slices.Contains(w.Capabilities, protocol.CapLogs) {
		logs := newLogFollower(a.kube.Logs, a.log, a.cfg.Metrics, a.logSettings(), &a.logSince, a.logTargets,
			func(m protocol.Logs) error { return c.send(protocol.TypeLogs, m) })
		logs.redact = a.secretValues
		if slices.Contains(w.Capabilities, protocol.CapLogResume) {
			resume = newLogResume(func(m protocol.LogPositions) error { return c.send(protocol.TypeLogPositions, m) })
			logs.resume = resume
		}
		wg.Add(1)
		go func() { defer wg.Done(); logs.run(ctx) }()
	}
	if slices.Contains(w.Capabilities, protocol.CapEvents) {
		evs := newEventWatcher(a.kube.Read, a.log, a.eventAttribution, func(m protocol.Events) error { return c.send(protocol.TypeEvents, m) })
		wg.Add(1)
		go func() { defer wg.Done(); evs.run(ctx, a.eventsReady) }()
	}
	go func() {
		<-ctx.Done() // the lease was lost or the agent stops: end the session now
		c.mu.Lock()
		_ = ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, "agent stopping"), time.Now().Add(time.Second))
		c.mu.Unlock()
		_ = ws.Close()
	}()
	// A reconnecting agent re-applies what it holds: a full resync.
	if held > 0 {
		work.resync()
	}
	for {
		deadline()
		msg, err := readServer(ws)
		if err != nil {
			return true, err
		}
		switch m := msg.(type) {
		case *protocol.Desired:
			a.mu.Lock()
			stale := m.Revision < a.floor || a.state != nil && m.Revision < a.state.Revision
			if !stale {
				a.state = m
			}
			floor := a.floor
			a.mu.Unlock()
			if stale {
				a.log.Warn("ignoring a desired state older than the one applied", "revision", m.Revision, "applied", floor)
				continue
			}
			work.changed()
		case *protocol.Command:
			work.command(*m)
		case *protocol.Builds:
			if builds != nil {
				builds.set(*m)
			}
		case *protocol.LogPositions:
			if resume != nil {
				resume.answer(m)
			}
		case *protocol.Welcome:
			return true, fmt.Errorf("%w: a second welcome", protocol.ErrMalformed)
		}
	}
}

// errGoingAway: the control plane replica is shutting down (1001); another
// one takes the agent at once.
var errGoingAway = errors.New("the control plane replica is going away")

// readServer reads one message from the control plane. A close frame
// becomes an error that says what the agent does next.
func readServer(ws *websocket.Conn) (any, error) {
	typ, frame, err := ws.ReadMessage()
	if err != nil {
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			switch ce.Code {
			case protocol.CloseUnsupported:
				return nil, fmt.Errorf("%w: the control plane speaks no protocol version of this agent (%s); upgrade the agent", errFatal, ce.Text)
			case protocol.CloseUnauthorized:
				return nil, fmt.Errorf("the connect token stopped being valid (%s); the token file is read again before the next try", ce.Text)
			case protocol.CloseSuperseded:
				return nil, fmt.Errorf("superseded by another session of this cluster (%s)", ce.Text)
			case websocket.CloseGoingAway:
				return nil, fmt.Errorf("%w (%s)", errGoingAway, ce.Text)
			}
			return nil, fmt.Errorf("closed by the control plane: %d %s", ce.Code, ce.Text)
		}
		return nil, err
	}
	if typ != websocket.TextMessage {
		return nil, fmt.Errorf("%w: a binary frame", protocol.ErrMalformed)
	}
	return protocol.DecodeServer(frame)
}

func (a *Agent) heartbeats(ctx context.Context, c *conn, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.mu.Lock()
		floor, hash := a.floor, a.floorHash.of(a.floor)
		a.mu.Unlock()
		hb := protocol.Heartbeat{Inventory: a.inventory(ctx), AppliedRevision: floor, AppliedHash: hash, SentAt: time.Now().UTC()}
		if err := c.send(protocol.TypeHeartbeat, hb); err != nil {
			return // the read loop sees the broken connection
		}
	}
}

// work is what the worker has to do: the newest state (one slot, the
// newest wins) and commands in order. One worker per session applies and
// runs commands one at a time.
type work struct {
	kick  wake.Signal
	mu    sync.Mutex
	apply bool
	// full asks the next apply to check every service against the
	// cluster; without it, a new state reconciles only the services it
	// changed (the cache reconciles the others when the cluster changes).
	full     bool
	commands []protocol.Command
}

func newWork() *work { return &work{kick: wake.New()} }

// resync asks for a whole pass over the state held.
func (w *work) resync() {
	w.mu.Lock()
	w.apply, w.full = true, true
	w.mu.Unlock()
	w.poke()
}

// changed asks for a pass over the services a new state changed.
func (w *work) changed() {
	w.mu.Lock()
	w.apply = true
	w.mu.Unlock()
	w.poke()
}

func (w *work) command(c protocol.Command) {
	w.mu.Lock()
	w.commands = append(w.commands, c)
	w.mu.Unlock()
	w.poke()
}

func (w *work) poke() { w.kick.Poke() }

func (w *work) take() (apply, full bool, cmds []protocol.Command) {
	w.mu.Lock()
	defer w.mu.Unlock()
	apply, full, cmds = w.apply, w.full, w.commands
	w.apply, w.full, w.commands = false, false, nil
	return apply, full, cmds
}

func (a *Agent) worker(ctx context.Context, c *conn, w *work) {
	// A resync reads the cluster from the cache and writes only what
	// differs; rollouts move on as the cluster changes (Cache, reconcileKey).
	resync := time.NewTicker(a.cfg.Resync)
	defer resync.Stop()
	a.mu.Lock()
	held := a.state
	a.mu.Unlock()
	if held != nil {
		a.resendStages(c, held.State)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick.C():
		case <-resync.C:
			w.resync()
		}
		apply, full, cmds := w.take()
		if apply {
			a.applyHeld(ctx, c, full)
		}
		for _, cmd := range cmds {
			if ctx.Err() != nil {
				return
			}
			ack := a.runCommand(ctx, cmd)
			if err := c.send(protocol.TypeCommandAck, ack); err != nil {
				return
			}
		}
	}
}

// applyHeld applies the newest state held and acknowledges it when its
// result is news: the first result for a revision, or a change of result
// (a failed revision that a resync got through).
func (a *Agent) applyHeld(ctx context.Context, c *conn, full bool) {
	a.mu.Lock()
	d, ap := a.state, a.applier
	a.mu.Unlock()
	if d == nil || ap == nil {
		return
	}
	start := time.Now()
	res := a.applyState(ctx, ap, d.State, full)
	if ctx.Err() != nil {
		return // the session ended mid-apply; the next one applies again
	}
	ack := protocol.Ack{Revision: d.Revision, Result: protocol.ResultApplied}
	if len(res.Errors) > 0 {
		ack.Result, ack.Errors = protocol.ResultFailed, res.Errors
		a.log.Warn("applying failed", "revision", d.Revision, "errors", len(res.Errors), "first", res.Errors[0].Object+": "+res.Errors[0].Message)
	} else {
		a.log.Info("applied", "revision", d.Revision, "objects", res.Applied, "checked", res.Checked, "written", res.Written, "pruned", res.Pruned,
			"took", time.Since(start).Round(time.Millisecond))
		a.mu.Lock()
		raised := d.Revision > a.floor
		if raised {
			a.floor = d.Revision
		}
		hashed := d.Revision == a.floor && a.floorHash.revision != d.Revision
		a.mu.Unlock()
		if hashed {
			// What the heartbeat says runs: computed once per revision
			// applied, not on every resync.
			h := d.State.Hash()
			a.mu.Lock()
			if a.floor == d.Revision {
				a.floorHash = appliedHash{d.Revision, h}
			}
			a.mu.Unlock()
		}
		if raised || hashed {
			a.saveState(ctx)
		}
	}
	a.mu.Lock()
	news := a.acked[d.Revision] != ack.Result
	a.acked = map[int64]string{d.Revision: ack.Result}
	a.mu.Unlock()
	if news {
		if err := c.send(protocol.TypeAck, ack); err != nil {
			a.log.Warn("sending the ack; it is sent again on the next session", "revision", d.Revision, "error", err)
			a.mu.Lock()
			delete(a.acked, d.Revision)
			a.mu.Unlock()
		}
	}
}

// applyState makes the cluster match a state, each service as far as its
// rollout allows now, and makes its services the ones a change in the
// cluster reconciles. Unless full, a service the agent last reconciled
// to the same desired form without an error is left to the cache: the
// cluster changing under it reconciles it again (reconcileKey), so a new
// state costs work in proportion to the services it changed.
func (a *Agent) applyState(ctx context.Context, ap *Applier, st desired.State, full bool) Result {
	index := map[string]indexed{}
	for _, ns := range st.Namespaces {
		for _, svc := range ns.Services {
			index[ServiceKey(ns.Name, svc.Name)] = indexed{ns, svc}
		}
	}
	// Until the pass steps a service, a change in the cluster does not
	// reconcile it: the step will, reading the cache after the change,
	// even if the state left the service as it was. (Without this the
	// pass's own first writes of new services would reconcile them from
	// the queue, Deployments and all, before the pass gets to them.)
	pending := make(map[string]bool, len(index))
	for key := range index {
		pending[key] = false
	}
	a.mu.Lock()
	a.index = index
	a.pending = pending
	if a.settled == nil {
		a.settled = map[string]settledAs{}
	}
	a.mu.Unlock()
	// A pinned release of a service that left the state goes with it.
	a.ro.mu.Lock()
	n := len(a.ro.pins)
	maps.DeleteFunc(a.ro.pins, func(key string, _ pin) bool { _, ok := index[key]; return !ok })
	unpinned := len(a.ro.pins) < n
	a.ro.mu.Unlock()
	if unpinned {
		a.savePins(ctx)
	}
	defer func() {
		// A service the pass did not step (its namespace failed, the
		// session ended) gets the changes it missed from the queue.
		a.mu.Lock()
		left := a.pending
		a.pending = nil
		a.mu.Unlock()
		for key, missed := range left {
			if missed {
				a.recheck(key, 0)
			}
		}
	}()
	before := ap.clashSet()
	return ap.ApplyWith(ctx, st, func(ctx context.Context, ns desired.Namespace, svc desired.Service) Result {
		key := ServiceKey(ns.Name, svc.Name)
		defer a.lock(key)()
		a.mu.Lock()
		missed := a.pending[key]
		delete(a.pending, key)
		a.mu.Unlock()
		// (An object two services both make, or no longer make, changes
		// what either may apply: then every service is looked at.)
		if !full && !missed {
			if n, ok := a.settledAt(key, ns, svc); ok && maps.Equal(before, ap.clashSet()) {
				return Result{Applied: n}
			}
		}
		return a.reconcileNoted(ctx, ap, ns, svc)
	})
}

// settledAs is the desired form a service was last reconciled to without
// an error, and how many objects it has.
type settledAs struct {
	it      indexed
	objects int
}

// header is a namespace without its services: what of it a service's
// objects depend on.
func header(ns desired.Namespace) desired.Namespace {
	ns.Services = nil
	return ns
}

// settledAt tells whether the service was last reconciled, without an
// error, to this very desired form, and how many objects it has.
func (a *Agent) settledAt(key string, ns desired.Namespace, svc desired.Service) (int, bool) {
	a.mu.Lock()
	s, ok := a.settled[key]
	a.mu.Unlock()
	if !ok || !reflect.DeepEqual(s.it, indexed{header(ns), svc}) {
		return 0, false
	}
	return s.objects, true
}

// reconcileNoted reconciles a service and notes whether it settled.
func (a *Agent) reconcileNoted(ctx context.Context, ap *Applier, ns desired.Namespace, svc desired.Service) Result {
	res := a.reconcile(ctx, ap, ns, svc)
	key := ServiceKey(ns.Name, svc.Name)
	a.mu.Lock()
	if a.settled != nil {
		if len(res.Errors) == 0 && ctx.Err() == nil {
			a.settled[key] = settledAs{indexed{header(ns), svc}, res.Applied}
		} else {
			delete(a.settled, key)
		}
	}
	a.mu.Unlock()
	return res
}

// capabilities are the protocol capabilities this agent implements.
var capabilities = []string{protocol.CapDesiredState, protocol.CapAcks, protocol.CapInventory, protocol.CapCommands,
	protocol.CapStages, protocol.CapBuilds, protocol.CapLogs, protocol.CapEvents, protocol.CapDrift, protocol.CapLogResume}

// logSettings are the log follower's knobs from the configuration.
func (a *Agent) logSettings() logSettings {
	return logSettings{rate: DefaultLogRate, burst: DefaultLogBurst, lineBytes: DefaultLogLineBytes, streams: a.cfg.LogStreams,
		backoffMin: a.cfg.LogBackoffMin, backoffMax: a.cfg.LogBackoffMax}
}
