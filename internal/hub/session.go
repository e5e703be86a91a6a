package hub

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/control/agents"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/wake"
)

const writeWait = 10 * time.Second

// session is one agent connection.
type session struct {
	hub  *Hub
	conn *websocket.Conn
	// side is the control plane as this cluster's agent sees it: every
	// report goes through it, translated from the protocol here.
	side    *agents.AgentSide
	cluster model.ClusterID
	token   model.ConnectTokenID

	wake      wake.Signal   // a newer revision or a command may exist
	done      chan struct{} // closed when the session ends
	closeOnce sync.Once
	sent      int64                    // newest revision sent; writer goroutine only
	delivered map[model.CommandID]bool // commands sent on this session; writer only
	// builds: the agent runs builds (builds.v1); lastBuilds is the set
	// last sent (writer only).
	builds     bool
	lastBuilds []byte
	// logs: the agent sends container logs (logs.v1); events its
	// Kubernetes events (events.v1); logResume asks where the stored log
	// of streams ends (log-resume.v1).
	logs, events, drift, logResume bool
	// answers are frames answering the agent's requests, for the writer
	// to send: the reader never writes.
	answers chan []byte

	mu sync.Mutex
	// handed is a state the recompile computed and handed over with its
	// publish: sending it needs no second compile.
	handed *protocol.Desired
	// commandsDue asks the writer to look for queued commands; tokenDue
	// to check the session's token again; buildsDue to send the builds.
	commandsDue bool
	tokenDue    bool
	buildsDue   bool
	// buildsAgain sends the builds even if unchanged (the agent needs
	// to hear where the log stands).
	buildsAgain bool
	// notes wakes the writer for a note of the cluster's topics on the bus
	// (a change made on any replica); set before the writer starts.
	notes <-chan struct{}
}

// maxAnswers bounds the answers waiting for the writer: past it, the
// reader waits for the writer, and so reads nothing more of an agent that
// asks faster than it reads (the connection's back-pressure).
const maxAnswers = 16

// noted wakes the session for a note from the bus (a change on any
// replica): a revision, a command or a revoked token of its cluster.
func (s *session) noted() {
	s.mu.Lock()
	s.commandsDue, s.tokenDue, s.buildsDue = true, true, true
	s.mu.Unlock()
	s.poke()
}

// hand gives the session a freshly compiled state to send.
func (s *session) hand(d *protocol.Desired) {
	s.mu.Lock()
	if s.handed == nil || d.Revision > s.handed.Revision {
		s.handed = d
	}
	s.mu.Unlock()
	s.poke()
}

// commands asks the session to deliver queued commands.
func (s *session) commands() {
	s.mu.Lock()
	s.commandsDue = true
	s.mu.Unlock()
	s.poke()
}

func (s *session) take() (d *protocol.Desired, commands, token, builds bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, commands, token, builds = s.handed, s.commandsDue, s.tokenDue, s.buildsDue
	s.handed, s.commandsDue, s.tokenDue, s.buildsDue = nil, false, false, false
	return d, commands, token, builds
}

// answerLogPositions answers where the stored log of the streams asked
// about ends, through the writer; false when the session ends instead.
func (s *session) answerLogPositions(ctx context.Context, m *protocol.LogPositions) bool {
	ats, err := s.side.LogPositions(ctx, LogStreamKeysOf(m))
	if err != nil {
		s.fail(ctx, "reading where logs end", err)
		return false
	}
	frame, err := protocol.Encode(protocol.TypeLogPositions, LogPositionsAnswer(m, ats))
	if err != nil {
		s.fail(ctx, "answering where logs end", err)
		return false
	}
	select {
	case s.answers <- frame:
		return true
	case <-s.done:
		return false
	}
}

// poke wakes the writer: a wake already pending covers this one, as one
// delivery covers both.
func (s *session) poke() { s.wake.Poke() }

// close ends the session with a close code and reason; safe from any
// goroutine, and idempotent.
func (s *session) close(code int, reason string) {
	s.closeOnce.Do(func() {
		msg := websocket.FormatCloseMessage(code, reason)
		_ = s.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(writeWait))
		close(s.done)
		_ = s.conn.Close()
		if code != websocket.CloseNormalClosure {
			s.hub.log.Info("agent session closed", logCluster, s.cluster, logCode, code, "reason", reason)
		}
	})
}

// run is the session: hello, welcome, then heartbeats and acks until the
// connection ends. It returns when the session is over.
func (s *session) run(ctx context.Context) {
	h := s.hub
	defer h.unregister(s)
	defer s.close(websocket.CloseNormalClosure, "")
	s.conn.SetReadLimit(protocol.MaxMessageBytes)

	_ = s.conn.SetReadDeadline(time.Now().Add(h.opts.HelloTimeout))
	hello, ok := s.read()
	if !ok {
		return
	}
	hi, isHello := hello.(*protocol.Hello)
	if !isHello {
		s.close(protocol.CloseMalformed, "the first message must be hello")
		return
	}
	version, caps, ok := protocol.Negotiate(hi)
	if !ok {
		s.close(protocol.CloseUnsupported, "no protocol version in common; this control plane speaks 1")
		return
	}
	s.side.Named(hi.Agent)
	if err := s.report(ctx, hi.Inventory, hi.AppliedRevision, hi.AppliedHash); err != nil {
		s.fail(ctx, "recording hello", err)
		return
	}
	// Registered before the welcome: once an agent is welcomed, a revoke or
	// a publish finds its session, from this replica or (through the bus)
	// from another.
	h.register(s)
	c := string(s.cluster)
	sub := h.plane.Bus().Subscribe(bus.Revision(c), bus.Commands(c), bus.Tokens(c), bus.Builds(c))
	s.builds = slices.Contains(caps, protocol.CapBuilds)
	s.logs = slices.Contains(caps, protocol.CapLogs)
	s.events = slices.Contains(caps, protocol.CapEvents)
	s.drift = slices.Contains(caps, protocol.CapDrift)
	s.logResume = slices.Contains(caps, protocol.CapLogResume)
	defer sub.Close()
	s.notes = sub.C // the writer follows it
	s.side.Connected(ctx)
	welcome, err := protocol.Encode(protocol.TypeWelcome, protocol.Welcome{Protocol: version, Capabilities: caps,
		Cluster: string(s.cluster), HeartbeatSeconds: int(h.opts.Heartbeat / time.Second)})
	if err != nil || s.write(welcome) != nil {
		return
	}
	// The agent has what it applied; send only what is newer.
	s.sent = hi.AppliedRevision
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.writer(ctx) }()
	defer wg.Wait()
	// Runs before wg.Wait (defers run last-first): a session whose agent
	// left stops its writer and leaves the hub at once.
	defer s.close(websocket.CloseNormalClosure, "")
	s.mu.Lock()
	s.buildsDue = true // the builds it should run, after a reconnect too
	s.mu.Unlock()
	s.commands() // the state if newer, and any commands queued meanwhile

	for {
		// Three missed heartbeats end the session; the cluster then shows
		// DISCONNECTED once its last heartbeat is old enough.
		_ = s.conn.SetReadDeadline(time.Now().Add(3 * h.opts.Heartbeat))
		msg, ok := s.read()
		if !ok {
			return
		}
		switch m := msg.(type) {
		case *protocol.Heartbeat:
			// A heartbeat that cannot be recorded is logged, not fatal:
			// dropping every session when the database hiccups would
			// bring all agents back at once. The next one records again.
			if err := s.report(ctx, m.Inventory, m.AppliedRevision, m.AppliedHash); err != nil {
				h.log.WarnContext(ctx, "recording a heartbeat", logCluster, s.cluster, logError, err)
			}
		case *protocol.Ack:
			err = s.side.Ack(ctx, AppliedOf(m))
		case *protocol.CommandAck:
			err = s.side.CommandAck(ctx, CommandDoneOf(m))
		case *protocol.Stage:
			err = s.side.Stage(ctx, StageOf(m))
		case *protocol.BuildReport:
			err = s.buildReport(ctx, m)
		case *protocol.Logs:
			if !s.logs {
				s.close(protocol.CloseMalformed, "logs without the logs.v1 capability")
				return
			}
			_, err = s.side.Logs(ctx, LogsOf(m))
		case *protocol.Events:
			if !s.events {
				s.close(protocol.CloseMalformed, "events without the events.v1 capability")
				return
			}
			_, err = s.side.Events(ctx, EventsOf(m))
		case *protocol.LogPositions:
			if !s.logResume {
				s.close(protocol.CloseMalformed, "logPositions without the log-resume.v1 capability")
				return
			}
			if !s.answerLogPositions(ctx, m) {
				return
			}
		case *protocol.Drift:
			if !s.drift {
				s.close(protocol.CloseMalformed, "drift without the drift.v1 capability")
				return
			}
			err = s.side.Drift(ctx, agents.DriftIn{Kind: m.Kind, Namespace: m.Namespace, Name: m.Name, Fields: m.Fields,
				Managers: m.Managers, Environment: model.EnvironmentID(m.Environment), Service: model.ServiceID(m.Service), At: m.At})
		case *protocol.Hello:
			s.close(protocol.CloseMalformed, "hello may only open a session")
			return
		}
		if err != nil {
			s.fail(ctx, "recording agent report", err)
			return
		}
	}
}

// fail ends the session after an error of the control plane: 1013 (try
// again later) when its database is unavailable, so the agent comes back
// and reports again once it is; 1011 for anything else.
func (s *session) fail(ctx context.Context, doing string, err error) {
	if errors.Is(err, store.ErrUnavailable) {
		s.hub.log.WarnContext(ctx, doing+": database unavailable", logCluster, s.cluster, logError, err)
		s.close(closeTryAgain, "the control plane's database is unavailable; reconnect")
		return
	}
	s.hub.log.ErrorContext(ctx, doing, logCluster, s.cluster, logError, err)
	s.close(websocket.CloseInternalServerErr, "internal error")
}

// closeTryAgain is websocket's 1013 "try again later".
const closeTryAgain = 1013

// read returns the next decoded message, or false when the session ended
// (closing it with the reason if the frame was bad).
func (s *session) read() (any, bool) {
	typ, frame, err := s.conn.ReadMessage()
	if err != nil {
		switch {
		case errors.Is(err, websocket.ErrReadLimit):
			s.close(websocket.CloseMessageTooBig, "message over the size limit")
		case isTimeout(err):
			s.close(protocol.CloseTimeout, "no message in time")
		}
		return nil, false
	}
	if typ != websocket.TextMessage {
		s.close(protocol.CloseMalformed, "messages are JSON text frames")
		return nil, false
	}
	msg, err := protocol.Decode(frame)
	if err != nil {
		reason := err.Error()
		if len(reason) > 120 { // a close reason fits in 123 bytes
			reason = reason[:120]
		}
		s.close(protocol.CloseMalformed, reason)
		return nil, false
	}
	return msg, true
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

func (s *session) write(frame []byte) error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(writeWait))
	err := s.conn.WriteMessage(websocket.TextMessage, frame)
	if err != nil {
		s.close(websocket.CloseGoingAway, "write failed")
	}
	return err
}

// writer delivers desired state when woken, pings to keep the connection
// alive, and checks the token still holds (a regenerated token's grace
// window ends while connected).
func (s *session) writer(ctx context.Context) {
	h := s.hub
	tick := time.NewTicker(h.opts.Heartbeat)
	defer tick.Stop()
	// The session's token as last read: it was valid at connect.
	checked := tokenCheck{at: time.Now()}
	if !s.tokenValid(ctx, &checked) {
		return
	}
	for {
		select {
		case <-s.done:
			return
		case <-s.notes:
			s.noted()
		case a := <-s.answers:
			if s.write(a) != nil {
				return
			}
		case <-s.wake.C():
			handed, commands, token, builds := s.take()
			if token && !s.tokenValid(ctx, &checked) {
				return
			}
			err := s.deliver(ctx, handed)
			if err == nil && commands {
				err = s.deliverCommands(ctx)
			}
			if err == nil && builds {
				s.mu.Lock()
				if s.buildsAgain {
					s.lastBuilds, s.buildsAgain = nil, false
				}
				s.mu.Unlock()
				err = s.deliverBuilds(ctx)
			}
			if err != nil {
				s.fail(ctx, "delivering desired state", err)
				return
			}
		case <-tick.C:
			// A revocation or a new expiry (a regenerated token's grace
			// window) is noted on the bus, and read above; the expiry
			// known is checked here, and the token re-read only every
			// tokenReread, in case a note went astray.
			if s.side.TokenExpired(checked.expires) || time.Since(checked.at) >= tokenReread {
				if !s.tokenValid(ctx, &checked) {
					return
				}
			}
			if err := s.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				s.close(websocket.CloseGoingAway, "ping failed")
				return
			}
		}
	}
}

// tokenReread bounds how long a session goes without reading its token
// again; revocations and new expiries are noted at once.
const tokenReread = 5 * time.Minute

// tokenCheck is what a session last read of its token.
type tokenCheck struct {
	at      time.Time
	expires *time.Time
}

// tokenValid reads the session's token again and closes the session when
// it no longer holds (a read that fails keeps it: the database may be
// away for a moment, and the next tick reads again).
func (s *session) tokenValid(ctx context.Context, c *tokenCheck) bool {
	ok, expires, err := s.side.TokenStillValid(ctx)
	if err != nil {
		return true
	}
	if !ok {
		s.close(protocol.CloseUnauthorized, "connect token expired or revoked")
		return false
	}
	c.at, c.expires = time.Now(), expires
	return true
}

// deliver sends the whole desired state if a revision newer than the last
// one sent exists: the state handed over with a publish when there is one,
// else the stored revision compiled afresh.
func (s *session) deliver(ctx context.Context, handed *protocol.Desired) error {
	d := handed
	if d == nil || d.Revision <= s.sent {
		rev, st, err := s.hub.Desired(ctx, s.side, s.sent)
		if err != nil || st == nil {
			return err
		}
		d = &protocol.Desired{Revision: rev, State: *st}
	}
	frame, err := protocol.Encode(protocol.TypeDesired, *d)
	if err != nil {
		return err
	}
	if err := s.write(frame); err != nil {
		return nil // the session is closing
	}
	s.sent = d.Revision
	return nil
}

// deliverCommands sends the commands the agent has not acknowledged yet.
// A command already delivered on this session is not sent twice; one
// delivered on an earlier session is, as its ack may have been lost.
func (s *session) deliverCommands(ctx context.Context) error {
	cmds, err := s.side.PendingCommands(ctx)
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if s.delivered[c.ID] {
			continue
		}
		frame, err := protocol.Encode(protocol.TypeCommand, protocol.Command{ID: string(c.ID), Kind: string(c.Kind), Args: c.Args})
		if err != nil {
			return err
		}
		if err := s.write(frame); err != nil {
			return nil // the session is closing; the command stays pending
		}
		if s.delivered == nil {
			s.delivered = map[model.CommandID]bool{}
		}
		s.delivered[c.ID] = true
		if err := s.side.CommandDelivered(ctx, c.ID); err != nil {
			return err
		}
	}
	return nil
}

// deliverBuilds sends the builds the agent should run when the set differs
// from the one it last got on this session.
func (s *session) deliverBuilds(ctx context.Context) error {
	if !s.builds {
		return nil
	}
	js, err := s.side.Builds(ctx)
	if err != nil {
		return err
	}
	if len(js) == 0 && s.lastBuilds == nil {
		// Nothing to run and nothing sent: an agent starts with no build.
		// (A Job left from a build that ended while the agent was away
		// stops at its own deadline.)
		return nil
	}
	frame, err := protocol.Encode(protocol.TypeBuilds, BuildsOf(js))
	if err != nil {
		return err
	}
	if bytes.Equal(frame, s.lastBuilds) {
		return nil
	}
	if err := s.write(frame); err != nil {
		return nil // the session is closing
	}
	s.lastBuilds = frame
	return nil
}

// buildReport records a build report. Lines that do not follow the stored
// ones are not an error of the session: the agent gets the builds again,
// saying where the control plane's log stands.
func (s *session) buildReport(ctx context.Context, m *protocol.BuildReport) error {
	if !s.builds {
		s.close(protocol.CloseMalformed, "buildReport without the builds.v1 capability")
		return nil
	}
	_, err := s.side.BuildReport(ctx, BuildReportOf(m))
	if errors.Is(err, agents.ErrBuildLogGap) {
		s.hub.log.InfoContext(ctx, "a build report skipped log lines; sending the builds again", logCluster, s.cluster,
			"build", m.ID)
		s.mu.Lock()
		s.buildsDue, s.buildsAgain = true, true
		s.mu.Unlock()
		s.poke()
		return nil
	}
	return err
}
