package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// Tests of the GraphQL websocket transport (internal/server/ws.go) from a
// client's side: graphql-transport-ws and the legacy graphql-ws protocol,
// their close codes, and subscriptions streamed over them.

const (
	wsTransportWS = "graphql-transport-ws"
	wsLegacyWS    = "graphql-ws"

	// wsWait bounds every wait for a message that should come promptly.
	wsWait = 10 * time.Second
)

var wsProtocols = []string{wsTransportWS, wsLegacyWS}

// wsFrame is a message of either protocol.
type wsFrame struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (m wsFrame) String() string {
	return fmt.Sprintf("{type %q id %q payload %s}", m.Type, m.ID, m.Payload)
}

// wsURL is the websocket address of the server's GraphQL endpoint.
func wsURL(e *Env) string {
	return "ws" + strings.TrimPrefix(e.Server.URL, "http") + "/graphql"
}

// wsClient is one websocket connection, read by one goroutine at a time.
type wsClient struct {
	t     testing.TB
	c     *websocket.Conn
	proto string
	// wait bounds the wait for each message (wsWait when zero).
	wait time.Duration
}

// wsDial opens a websocket asking for the subprotocols (none when empty).
func wsDial(t testing.TB, e *Env, protos ...string) *wsClient {
	t.Helper()
	return wsDialWith(t, e, websocket.Dialer{}, protos...)
}

func wsDialWith(t testing.TB, e *Env, d websocket.Dialer, protos ...string) *wsClient {
	t.Helper()
	d.Subprotocols = protos
	d.HandshakeTimeout = wsWait
	c, resp, err := d.Dial(wsURL(e), nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dialling %s with %v: %v (HTTP %d)", wsURL(e), protos, err, status)
	}
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = c.Close() })
	want := ""
	if len(protos) > 0 {
		want = protos[0]
	}
	if got := c.Subprotocol(); got != want {
		t.Fatalf("negotiated subprotocol %q, want %q", got, want)
	}
	return &wsClient{t: t, c: c, proto: want}
}

func (w *wsClient) legacy() bool { return w.proto == wsLegacyWS }

// send writes a protocol message.
func (w *wsClient) send(typ, id string, payload any) {
	w.t.Helper()
	m := map[string]any{"type": typ}
	if id != "" {
		m["id"] = id
	}
	if payload != nil {
		m["payload"] = payload
	}
	b, err := json.Marshal(m)
	if err != nil {
		w.t.Fatalf("encoding %v: %v", m, err)
	}
	w.writeRaw(websocket.TextMessage, b)
}

func (w *wsClient) writeRaw(mt int, b []byte) {
	w.t.Helper()
	_ = w.c.SetWriteDeadline(time.Now().Add(wsWait))
	if err := w.c.WriteMessage(mt, b); err != nil {
		w.t.Fatalf("writing %s: %v", b, err)
	}
}

// readFrame reads one message, keep-alives included; the error is the
// connection's (a *websocket.CloseError once the server closed it).
func (w *wsClient) readFrame(timeout time.Duration) (wsFrame, error) {
	_ = w.c.SetReadDeadline(time.Now().Add(timeout))
	mt, b, err := w.c.ReadMessage()
	if err != nil {
		return wsFrame{}, err
	}
	var m wsFrame
	if mt != websocket.TextMessage {
		return m, fmt.Errorf("got a frame of type %d, want text", mt)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("decoding %s: %w", b, err)
	}
	return m, nil
}

// keepAlive tells the server's keep-alive messages (and their answers)
// from the rest.
func wsKeepAlive(m wsFrame) bool {
	return m.Type == "ka" || m.Type == "ping" || m.Type == "pong"
}

// next reads the next message that is not a keep-alive.
func (w *wsClient) next() wsFrame {
	w.t.Helper()
	wait := w.wait
	if wait == 0 {
		wait = wsWait
	}
	deadline := time.Now().Add(wait)
	for {
		m, err := w.readFrame(time.Until(deadline))
		if err != nil {
			w.t.Fatalf("reading a message: %v", err)
		}
		if !wsKeepAlive(m) {
			return m
		}
	}
}

// expectClose reads until the connection ends and asserts that the server
// closed it with code within the time; it returns the messages that came
// before (keep-alives left out).
func (w *wsClient) expectClose(code int, within time.Duration) []wsFrame {
	w.t.Helper()
	deadline := time.Now().Add(within)
	var seen []wsFrame
	for {
		m, err := w.readFrame(time.Until(deadline))
		if err == nil {
			if !wsKeepAlive(m) {
				seen = append(seen, m)
			}
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) {
			w.t.Fatalf("connection ended with %v, want a close with %d (after %s)", err, code, wsSummary(seen))
		}
		if ce.Code != code {
			w.t.Fatalf("closed with %d %q, want %d (after %s)", ce.Code, ce.Text, code, wsSummary(seen))
		}
		return seen
	}
}

// wsSummary shortens a list of messages for a failure.
func wsSummary(ms []wsFrame) string {
	if len(ms) <= 5 {
		return fmt.Sprint(ms)
	}
	return fmt.Sprintf("%d messages, the last %v", len(ms), ms[len(ms)-1])
}

// init sends connection_init with the token as a bearer credential and
// waits for connection_ack.
func (w *wsClient) init(token string) {
	w.t.Helper()
	w.send("connection_init", "", map[string]any{"Authorization": "Bearer " + token})
	if m := w.next(); m.Type != "connection_ack" {
		w.t.Fatalf("after connection_init got %v, want connection_ack", m)
	}
}

// subscribe starts an operation: subscribe (graphql-transport-ws) or
// start (graphql-ws).
func (w *wsClient) subscribe(id, query string, vars map[string]any) {
	w.t.Helper()
	typ := "subscribe"
	if w.legacy() {
		typ = "start"
	}
	w.send(typ, id, map[string]any{"query": query, "variables": vars})
}

// result reads the next message, which must be a result (next, or data
// for graphql-ws) of operation id without errors, and returns its data.
func (w *wsClient) result(id string) map[string]any {
	w.t.Helper()
	data, err := wsResult(w.proto, w.next(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return data
}

// wsResult checks that m is a result of operation id without errors, and
// returns its data.
func wsResult(proto string, m wsFrame, id string) (map[string]any, error) {
	want := "next"
	if proto == wsLegacyWS {
		want = "data"
	}
	if m.Type != want || m.ID != id {
		return nil, fmt.Errorf("got %v, want a %s message of operation %q", m, want, id)
	}
	var p struct {
		Data   map[string]any `json:"data"`
		Errors []GraphQLError `json:"errors"`
	}
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return nil, fmt.Errorf("decoding the payload of %v: %w", m, err)
	}
	if len(p.Errors) > 0 || p.Data == nil {
		return nil, fmt.Errorf("got %v, want data without errors", m)
	}
	return p.Data, nil
}

// complete reads the next message, which must be the end of operation id.
func (w *wsClient) complete(id string) {
	w.t.Helper()
	if m := w.next(); m.Type != "complete" || m.ID != id {
		w.t.Fatalf("got %v, want complete of operation %q", m, id)
	}
}

// nothing asserts that no message other than keep-alives arrives for a
// while (and that the connection stays open).
func (w *wsClient) nothing(d time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for {
		m, err := w.readFrame(time.Until(deadline))
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return
		}
		if err != nil {
			w.t.Fatalf("got %v, want the connection to stay open", err)
		}
		if !wsKeepAlive(m) {
			w.t.Fatalf("got %v, want nothing", m)
		}
	}
}

const wsEventsSubscription = `subscription($d: ID!, $after: String) {
	deploymentEvents(deploymentId: $d, after: $after) { deployment { id } stage sequence cursor message }
}`

// wsEvent is a deploymentEvents result.
type wsEvent struct {
	DeploymentID string
	Stage        string
	Sequence     int
	Cursor       string
	Message      string
}

func (w *wsClient) event(id string) wsEvent {
	w.t.Helper()
	e, err := wsParseEvent(w.proto, w.next(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

// wsParseEvent reads a deploymentEvents result of operation id.
func wsParseEvent(proto string, m wsFrame, id string) (wsEvent, error) {
	data, err := wsResult(proto, m, id)
	if err != nil {
		return wsEvent{}, err
	}
	e, _ := data["deploymentEvents"].(map[string]any)
	if e == nil {
		return wsEvent{}, fmt.Errorf("got data %v, want deploymentEvents", data)
	}
	seq, _ := e["sequence"].(float64)
	out := wsEvent{Sequence: int(seq)}
	out.DeploymentID, _ = dig(e, "deployment.id").(string)
	out.Stage, _ = e["stage"].(string)
	out.Cursor, _ = e["cursor"].(string)
	out.Message, _ = e["message"].(string)
	if out.Stage == "" || out.Sequence == 0 || out.Cursor == "" {
		return out, fmt.Errorf("event %v lacks a stage, sequence or cursor", e)
	}
	return out, nil
}

// wsDeploy deploys a new release of the fixture service to the fixture's
// unprotected environment as the owner, and returns the deployment's
// global and raw ids.
func wsDeploy(t testing.TB, f *Fixture) (string, model.DeploymentID) {
	t.Helper()
	r := f.MustDo(t, `mutation($s: ID!, $e: ID!, $d: String!) {
		deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
			deployment { id stage } userErrors { field message code } }
	}`, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(1_000_000 + f.Env.Next())})
	id := r.Str("deploy.deployment.id")
	raw, err := gid.Decode[model.DeploymentID](gid.Deployment, id)
	if err != nil {
		t.Fatalf("decoding deployment id %q: %v", id, err)
	}
	return id, raw
}

// wsStage reports a stage of a deployment as the fixture cluster's agent.
func wsStage(t testing.TB, f *Fixture, dep model.DeploymentID, stage string) {
	t.Helper()
	wsStageWith(t, f, dep, stage, "agent: "+strings.ToLower(stage))
}

// wsStageWith is wsStage with the agent's message.
func wsStageWith(t testing.TB, f *Fixture, dep model.DeploymentID, stage, msg string) {
	t.Helper()
	cl, err := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
	if err != nil {
		t.Fatalf("decoding cluster id: %v", err)
	}
	err = f.Env.AgentSide(t, cl).Stage(context.Background(), hub.StageOf(&protocol.Stage{
		Deployment: string(dep), Stage: stage, Message: msg, At: time.Now()}))
	if err != nil {
		t.Fatalf("reporting stage %s: %v", stage, err)
	}
}

// wsRevoke revokes a token as the fixture owner.
func wsRevoke(t testing.TB, f *Fixture, tokenID string) {
	t.Helper()
	f.MustDo(t, `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { apiToken { id } userErrors { field message code } } }`,
		map[string]any{"id": tokenID})
}

func TestWSNoSubprotocol(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	for _, protos := range [][]string{nil, {"graphql-sse"}, {"graphql-transport-ws-v2", "graphql"}} {
		t.Run(fmt.Sprint(protos), func(t *testing.T) {
			d := websocket.Dialer{Subprotocols: protos, HandshakeTimeout: wsWait}
			c, resp, err := d.Dial(wsURL(env), nil)
			if err != nil {
				t.Fatalf("dialling: %v", err)
			}
			_ = resp.Body.Close()
			t.Cleanup(func() { _ = c.Close() })
			if got := c.Subprotocol(); got != "" {
				t.Fatalf("negotiated %q, want none", got)
			}
			w := &wsClient{t: t, c: c}
			if seen := w.expectClose(4406, wsWait); len(seen) != 0 {
				t.Errorf("before the close got %v, want nothing", seen)
			}
		})
	}
}

func TestWSInitTimeout(t *testing.T) {
	t.Parallel() // waits the default 10 s
	env := NewEnv(t, OpenSQLite(t))
	for _, proto := range wsProtocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			w := wsDial(t, env, proto)
			start := time.Now()
			w.expectClose(4408, 15*time.Second)
			if d := time.Since(start); d < 9*time.Second {
				t.Errorf("closed for no connection_init after %v, want about 10 s", d)
			}
		})
	}
}

func TestWSInitForbidden(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	revoked := f.NewCaller(t, "revoked", "MEMBER")
	wsRevoke(t, f, revoked.TokenID)
	valid := f.Users[Viewer].Token

	cases := []struct {
		name    string
		payload any
	}{
		{"wrong token", map[string]any{"Authorization": "Bearer nbt_" + strings.Repeat("A", 43)}},
		{"garbage token", map[string]any{"token": "garbage"}},
		{"no payload", nil},
		{"empty payload", map[string]any{}},
		{"token without scheme", map[string]any{"Authorization": valid}},
		{"revoked token", map[string]any{"Authorization": "Bearer " + revoked.Token}},
		{"revoked token in token", map[string]any{"token": revoked.Token}},
	}
	for _, proto := range wsProtocols {
		for _, c := range cases {
			t.Run(proto+"/"+c.name, func(t *testing.T) {
				w := wsDial(t, env, proto)
				w.send("connection_init", "", c.payload)
				seen := w.expectClose(4403, wsWait)
				if proto == wsLegacyWS {
					if len(seen) != 1 || seen[0].Type != "connection_error" {
						t.Errorf("before the close got %v, want one connection_error", seen)
					}
				} else if len(seen) != 0 {
					t.Errorf("before the close got %v, want nothing", seen)
				}
				for _, m := range seen {
					if strings.Contains(string(m.Payload), "nbt_") {
						t.Errorf("the refusal echoes a token: %v", m)
					}
				}
			})
		}
		// The accepted forms, for contrast.
		for _, payload := range []map[string]any{
			{"Authorization": "Bearer " + valid},
			{"authorization": "bearer " + valid},
			{"token": valid},
		} {
			t.Run(proto+"/accepted", func(t *testing.T) {
				w := wsDial(t, env, proto)
				w.send("connection_init", "", payload)
				if m := w.next(); m.Type != "connection_ack" {
					t.Fatalf("got %v, want connection_ack", m)
				}
			})
		}
	}
}

func TestWSSubscribeBeforeInit(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	for _, proto := range wsProtocols {
		t.Run(proto, func(t *testing.T) {
			w := wsDial(t, env, proto)
			w.subscribe("1", wsEventsSubscription, map[string]any{"d": f.DeploymentID})
			if seen := w.expectClose(4401, wsWait); len(seen) != 0 {
				t.Errorf("before the close got %v, want nothing", seen)
			}
		})
	}
}

func TestWSSecondInit(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	for _, proto := range wsProtocols {
		t.Run(proto, func(t *testing.T) {
			w := wsDial(t, env, proto)
			w.init(f.Users[Viewer].Token)
			w.send("connection_init", "", map[string]any{"Authorization": "Bearer " + f.Users[Viewer].Token})
			w.expectClose(4429, wsWait)
		})
	}
}

func TestWSDuplicateOperationID(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	for _, proto := range wsProtocols {
		t.Run(proto, func(t *testing.T) {
			w := wsDial(t, env, proto)
			w.init(f.Users[Viewer].Token)
			// The fixture's deployment is still delivering: its events go on.
			vars := map[string]any{"d": f.DeploymentID}
			w.subscribe("op", wsEventsSubscription, vars)
			if e := w.event("op"); e.Sequence != 1 || e.Stage != "QUEUED" {
				t.Fatalf("first event %+v, want 1 QUEUED", e)
			}
			if e := w.event("op"); e.Sequence != 2 || e.Stage != "DELIVERING" {
				t.Fatalf("second event %+v, want 2 DELIVERING", e)
			}
			// Another id is fine alongside.
			w.subscribe("other", wsEventsSubscription, vars)
			if e := w.event("other"); e.Sequence != 1 {
				t.Fatalf("first event of the second operation %+v, want sequence 1", e)
			}
			w.event("other")
			w.subscribe("op", wsEventsSubscription, vars)
			w.expectClose(4409, wsWait)
		})
	}
}

// An id is free again once its operation was stopped by the client: the
// new operation with that id must live on, whether it starts right after
// the stop or once the stopped one wound down.
func TestWSOperationIDReuseAfterStop(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	for _, proto := range wsProtocols {
		for _, pause := range []time.Duration{0, 500 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/pause %v", proto, pause), func(t *testing.T) {
				dep, raw := wsDeploy(t, f)
				w := wsDial(t, env, proto)
				w.init(f.Users[Viewer].Token)
				stop := "complete"
				if w.legacy() {
					stop = "stop"
				}
				vars := map[string]any{"d": dep}
				w.subscribe("op", wsEventsSubscription, vars)
				w.event("op")
				w.event("op")
				w.send(stop, "op", nil)
				time.Sleep(pause) // the variable: nothing tells the client when the stopped one wound down
				w.subscribe("op", wsEventsSubscription, vars)
				m, err := w.readFrame(5 * time.Second)
				if err != nil {
					t.Fatalf("the new operation %q sent nothing (%v): it was cancelled along with the stopped one", "op", err)
				}
				if e, err := wsParseEvent(proto, m, "op"); err != nil || e.Sequence != 1 {
					t.Fatalf("first event of the new operation %+v (%v), want sequence 1", e, err)
				}
				if e := w.event("op"); e.Sequence != 2 {
					t.Fatalf("second event of the new operation %+v, want sequence 2", e)
				}
				wsStage(t, f, raw, "STARTING")
				if e := w.event("op"); e.Sequence != 3 || e.Stage != "STARTING" {
					t.Fatalf("event after the stop %+v, want 3 STARTING", e)
				}
			})
		}
	}
}

func TestWSBadMessages(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	token := f.Users[Viewer].Token
	type frame struct {
		mt   int
		data string
	}
	text := func(s string) frame { return frame{websocket.TextMessage, s} }
	query := `{"query":"subscription { clusterStatus(clusterId: \"x\") { id } }"}`
	cases := []struct {
		name   string
		protos []string
		init   bool
		frame  frame
	}{
		{"unknown type", wsProtocols, true, text(`{"type":"bogus"}`)},
		{"unknown type before init", wsProtocols, false, text(`{"type":"bogus"}`)},
		{"no type", wsProtocols, true, text(`{"id":"1","payload":{}}`)},
		{"empty type", wsProtocols, true, text(`{"type":""}`)},
		{"non-JSON text", wsProtocols, true, text(`hello`)},
		{"non-JSON text before init", wsProtocols, false, text(`{"type":`)},
		{"JSON that is not an object", wsProtocols, true, text(`["connection_init"]`)},
		{"binary frame", wsProtocols, true, frame{websocket.BinaryMessage, `{"type":"ping"}`}},
		{"binary frame before init", wsProtocols, false, frame{websocket.BinaryMessage, `{"type":"connection_init"}`}},
		{"subscribe without id", []string{wsTransportWS}, true, text(`{"type":"subscribe","payload":` + query + `}`)},
		{"start without id", []string{wsLegacyWS}, true, text(`{"type":"start","payload":` + query + `}`)},
		{"subscribe with a payload that is not a request", []string{wsTransportWS}, true, text(`{"type":"subscribe","id":"1","payload":"query"}`)},
		{"legacy start on graphql-transport-ws", []string{wsTransportWS}, true, text(`{"type":"start","id":"1","payload":` + query + `}`)},
		{"legacy stop on graphql-transport-ws", []string{wsTransportWS}, true, text(`{"type":"stop","id":"1"}`)},
		{"connection_terminate on graphql-transport-ws", []string{wsTransportWS}, true, text(`{"type":"connection_terminate"}`)},
		{"subscribe on graphql-ws", []string{wsLegacyWS}, true, text(`{"type":"subscribe","id":"1","payload":` + query + `}`)},
		{"complete from the client on graphql-ws", []string{wsLegacyWS}, true, text(`{"type":"complete","id":"1"}`)},
	}
	for _, c := range cases {
		for _, proto := range c.protos {
			t.Run(proto+"/"+c.name, func(t *testing.T) {
				w := wsDial(t, env, proto)
				if c.init {
					w.init(token)
				}
				w.writeRaw(c.frame.mt, []byte(c.frame.data))
				if seen := w.expectClose(4400, wsWait); len(seen) != 0 {
					t.Errorf("before the close got %v, want nothing", seen)
				}
			})
		}
	}
	t.Run("graphql-ws/connection_terminate", func(t *testing.T) {
		w := wsDial(t, env, wsLegacyWS)
		w.init(token)
		w.send("connection_terminate", "", nil)
		w.expectClose(websocket.CloseNormalClosure, wsWait)
	})
}

func TestWSPingPong(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	payloads := []any{nil, map[string]any{"k": "v", "n": 7.0}, "text"}
	check := func(t *testing.T, w *wsClient, payload any) {
		t.Helper()
		w.send("ping", "", payload)
		m, err := w.readFrame(wsWait)
		if err != nil {
			t.Fatalf("reading the pong: %v", err)
		}
		if m.Type != "pong" {
			t.Fatalf("got %v, want pong", m)
		}
		var got any
		if len(m.Payload) > 0 {
			if err := json.Unmarshal(m.Payload, &got); err != nil {
				t.Fatalf("decoding %v: %v", m, err)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(payload) {
			t.Errorf("pong payload %v, want %v", got, payload)
		}
	}
	t.Run("before init", func(t *testing.T) {
		w := wsDial(t, env, wsTransportWS)
		for _, p := range payloads {
			check(t, w, p)
		}
	})
	t.Run("after init", func(t *testing.T) {
		w := wsDial(t, env, wsTransportWS)
		w.init(f.Users[Viewer].Token)
		for _, p := range payloads {
			check(t, w, p)
		}
		// A pong from the client is allowed and answered with nothing: the
		// server answers messages in order, so the next message is the
		// answer to a ping sent after it.
		w.send("pong", "", nil)
		check(t, w, "after the pong")
	})
}

// TestWSDeploymentEvents follows a deployment from its request to its end
// over both protocols, then resumes from a cursor.
func TestWSDeploymentEvents(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		for _, proto := range wsProtocols {
			t.Run(proto, func(t *testing.T) {
				dep, raw := wsDeploy(t, f)
				w := wsDial(t, env, proto)
				w.init(f.Users[Viewer].Token)
				w.subscribe("ev", wsEventsSubscription, map[string]any{"d": dep})

				var got []wsEvent
				want := []string{"QUEUED", "DELIVERING"}
				for range want {
					got = append(got, w.event("ev"))
				}
				for _, stage := range []string{"STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"} {
					wsStage(t, f, raw, stage)
					want = append(want, stage)
					e := w.event("ev")
					if e.Message != "agent: "+strings.ToLower(stage) {
						t.Errorf("event %d: message %q, want the agent's", e.Sequence, e.Message)
					}
					got = append(got, e)
				}
				w.complete("ev")
				wsCheckEvents(t, dep, got, want, 1)

				// Resume after the third event: events 4 to the end, then complete.
				w.subscribe("again", wsEventsSubscription, map[string]any{"d": dep, "after": got[2].Cursor})
				var rest []wsEvent
				for range want[3:] {
					rest = append(rest, w.event("again"))
				}
				w.complete("again")
				wsCheckEvents(t, dep, rest, want[3:], 4)
				for i, e := range rest {
					if e.Cursor != got[3+i].Cursor {
						t.Errorf("resumed event %d: cursor %q, want %q as the first time", e.Sequence, e.Cursor, got[3+i].Cursor)
					}
				}
				// Resuming after the last event of an ended deployment has nothing left.
				w.subscribe("end", wsEventsSubscription, map[string]any{"d": dep, "after": got[len(got)-1].Cursor})
				w.complete("end")
				w.nothing(200 * time.Millisecond)
			})
		}
	})
}

// wsCheckEvents asserts the events are of the deployment, in order with
// consecutive sequence numbers from first, with the stages of want and
// distinct cursors.
func wsCheckEvents(t *testing.T, dep string, got []wsEvent, want []string, first int) {
	t.Helper()
	var stages []string
	cursors := map[string]bool{}
	for i, e := range got {
		stages = append(stages, e.Stage)
		if e.Sequence != first+i {
			t.Errorf("event %d has sequence %d, want %d", i, e.Sequence, first+i)
		}
		if e.DeploymentID != dep {
			t.Errorf("event %d is of deployment %q, want %q", e.Sequence, e.DeploymentID, dep)
		}
		if cursors[e.Cursor] {
			t.Errorf("event %d repeats cursor %q", e.Sequence, e.Cursor)
		}
		cursors[e.Cursor] = true
	}
	if !slices.Equal(stages, want) {
		t.Errorf("stages %v, want %v", stages, want)
	}
}

// A token revoked while its connection is open ends the connection at the
// next check (10 s by default), and its subscriptions read nothing more.
func TestWSTokenRevokedWhileSubscribed(t *testing.T) {
	t.Parallel() // waits up to the default recheck interval of 10 s
	env := NewEnv(t, OpenSQLite(t))
	for _, proto := range wsProtocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			// A fixture each: a sibling's deploy to the same service would
			// supersede this deployment, and its event could be read just
			// before the revocation and arrive after it.
			f := env.NewFixture(t)
			dep, raw := wsDeploy(t, f)
			tokenID, secret := f.MintToken(t, f.Users[Viewer].UserID)
			w := wsDial(t, env, proto)
			w.init(secret)
			acked := time.Now()
			w.subscribe("ev", wsEventsSubscription, map[string]any{"d": dep})
			w.event("ev")
			w.event("ev")

			wsRevoke(t, f, tokenID)
			// A stage after the revocation must not reach the revoked caller.
			wsStage(t, f, raw, "STARTING")
			seen := w.expectClose(4403, 15*time.Second)
			took := time.Since(acked)
			t.Logf("closed %v after connection_ack; before the close: %s", took.Round(time.Millisecond), wsSummary(seen))
			if took > 12*time.Second {
				t.Errorf("closed %v after connection_ack, want within the 10 s recheck interval", took)
			}
			for _, m := range seen {
				if m.Type == "next" || m.Type == "data" {
					t.Errorf("after the revocation got %v, want no data", m)
				}
			}
		})
	}
}

func TestWSOrigin(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	dial := func(origin string) (*websocket.Conn, *http.Response, error) {
		d := websocket.Dialer{Subprotocols: []string{wsTransportWS}, HandshakeTimeout: wsWait}
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		return d.Dial(wsURL(env), h)
	}
	for _, origin := range []string{"https://evil.example", "http://evil.example", "null",
		"http://" + strings.TrimPrefix(env.Server.URL, "http://") + ".evil.example"} {
		t.Run("refused "+origin, func(t *testing.T) {
			c, resp, err := dial(origin)
			if err == nil {
				_ = c.Close()
				t.Fatalf("the upgrade from origin %s succeeded, want HTTP 403", origin)
			}
			if resp == nil {
				t.Fatalf("no HTTP answer: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("got HTTP %d, want 403", resp.StatusCode)
			}
			if resp.Header.Get("Upgrade") != "" || resp.Header.Get("Sec-Websocket-Accept") != "" {
				t.Errorf("the refusal carries upgrade headers: %v", resp.Header)
			}
			if !strings.Contains(string(body), "FORBIDDEN") {
				t.Errorf("body %s, want a FORBIDDEN error", body)
			}
		})
	}
	for _, origin := range []string{"", env.Server.URL} {
		t.Run("allowed "+origin, func(t *testing.T) {
			c, resp, err := dial(origin)
			if err != nil {
				t.Fatalf("dialling from origin %q: %v", origin, err)
			}
			_ = resp.Body.Close()
			_ = c.Close()
		})
	}
}

// wsRaceEnabled tells whether the test binary was built with -race.
func wsRaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, st := range bi.Settings {
		if st.Key == "-race" {
			return st.Value == "true"
		}
	}
	return false
}

// A client that does not read is cut off with 1013 once its queue is full;
// another client of the same deployment keeps receiving.
//
// The queue only fills once the TCP buffers between server and client are
// full (about 4.5 MB on loopback here), so the slow client opens many
// subscriptions with large results: 1000 subscriptions of a deployment
// whose third event has a 4 kB message, read four times over (aliases),
// so about 16 kB a subscription, 16 MB in all. It sends them in batches
// the writer could keep up with, so that only not reading makes the queue
// overflow.
func TestWSSlowConsumer(t *testing.T) {
	if wsRaceEnabled() {
		// Under the race detector the server produces the results so much
		// slower that the client's buffers never fill within the server's
		// 10 s write deadline: nothing would overflow.
		t.Skip("too slow under the race detector to overflow a client's queue")
	}
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	dep, raw := wsDeploy(t, f)
	token := f.Users[Viewer].Token
	big := func(stage string) string { return stage + ": " + strings.Repeat("x", 4000) }
	wsStageWith(t, f, raw, "STARTING", big("STARTING"))

	good := wsDial(t, env, wsTransportWS)
	good.init(token)
	good.subscribe("ev", wsEventsSubscription, map[string]any{"d": dep})
	for range 3 {
		good.event("ev")
	}
	// The reading client reads all along, in the background.
	type arrival struct {
		m   wsFrame
		at  time.Time
		err error
	}
	arrivals := make(chan arrival, 16)
	go func() {
		for {
			m, err := good.readFrame(2 * time.Minute)
			if err != nil {
				arrivals <- arrival{err: err}
				return
			}
			if !wsKeepAlive(m) {
				arrivals <- arrival{m: m, at: time.Now()}
			}
		}
	}()
	goodEvent := func(seq int, stage string, since time.Time) {
		t.Helper()
		select {
		case a := <-arrivals:
			if a.err != nil {
				t.Fatalf("the reading client: %v", a.err)
			}
			e, err := wsParseEvent(wsTransportWS, a.m, "ev")
			if err != nil {
				t.Fatalf("the reading client: %v", err)
			}
			if e.Sequence != seq || e.Stage != stage {
				t.Fatalf("the reading client got %+v, want %d %s", e, seq, stage)
			}
			t.Logf("the reading client got %s %v after it was reported", stage, a.at.Sub(since).Round(time.Millisecond))
		case <-time.After(time.Minute):
			t.Fatalf("the reading client got no %s", stage)
		}
	}

	// At most 100 operations run on one connection: each repeats the 4 kB
	// message 40 times, so that 100 of them overflow the queue.
	const subs, batch = 100, 10
	var aliases strings.Builder
	for i := range 40 {
		fmt.Fprintf(&aliases, " m%d: message", i)
	}
	query := `subscription($d: ID!) { deploymentEvents(deploymentId: $d) { stage sequence cursor` + aliases.String() + ` } }`
	slow := wsDialWith(t, env, websocket.Dialer{ReadBufferSize: 1024}, wsTransportWS)
	slow.init(token)
	sent := 0
	for i := range subs {
		if i > 0 && i%batch == 0 {
			time.Sleep(100 * time.Millisecond) // paces the load: the client must not read, so nothing tells it the writer kept up
		}
		b, _ := json.Marshal(map[string]any{"type": "subscribe", "id": fmt.Sprintf("s%d", i),
			"payload": map[string]any{"query": query, "variables": map[string]any{"d": dep}}})
		_ = slow.c.SetWriteDeadline(time.Now().Add(wsWait))
		if err := slow.c.WriteMessage(websocket.TextMessage, b); err != nil {
			break // cut off already
		}
		sent++
	}
	// The deployment moves on while the slow client does not read. The
	// stall must outlast filling the buffers and the queue, and stay
	// under the server's 10 s write deadline (past it, nothing more can
	// be written to the client, a close frame neither).
	const stall = 3 * time.Second
	probing := time.Now()
	wsStageWith(t, f, raw, "PROBING", big("PROBING"))
	time.Sleep(stall - time.Since(probing)) // time is the variable: the server cuts the client off unseen until it reads

	// Resuming reading, the slow client finds what was queued for it,
	// then the close.
	start := time.Now()
	seen := slow.expectClose(1013, 30*time.Second)
	t.Logf("%d subscriptions sent; the slow client then read %d messages and the close in %v",
		sent, len(seen), time.Since(start).Round(time.Millisecond))
	if len(seen) >= 4*sent {
		t.Errorf("the slow client got all %d messages, want to be cut off before", len(seen))
	}

	goodEvent(4, "PROBING", probing)
	switching := time.Now()
	wsStage(t, f, raw, "SWITCHING_TRAFFIC")
	goodEvent(5, "SWITCHING_TRAFFIC", switching)
}

// One connection runs at most 100 operations at once: the 101st gets an
// error naming the limit, the connection stays open, and completing one
// makes room.
func TestWSOperationLimit(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	w := wsDial(t, env, wsTransportWS)
	w.init(f.Users[Viewer].Token)
	vars := map[string]any{"d": f.DeploymentID} // still delivering: every subscription stays open
	for i := range 100 {
		w.subscribe(fmt.Sprintf("s%d", i), wsEventsSubscription, vars)
	}
	w.subscribe("over", wsEventsSubscription, vars)
	for {
		m := w.next()
		if m.ID != "over" {
			continue // the events of the 100
		}
		if m.Type != "error" || !strings.Contains(string(m.Payload), "TOO_MANY_OPERATIONS") ||
			!strings.Contains(string(m.Payload), "at most 100") {
			t.Fatalf("the 101st operation got %s, want an error naming the limit", m)
		}
		break
	}
	w.send("complete", "s0", nil) // the client stops it
	// The completed operation's room is free once its goroutine ended.
	attempt := 0
	testutil.Eventually(t, wsWait, "there is room after completing an operation", func() (bool, string) {
		attempt++
		id := fmt.Sprintf("again%d", attempt)
		w.subscribe(id, wsEventsSubscription, vars)
		for {
			if m := w.next(); m.ID == id {
				return m.Type == "next", fmt.Sprint(m)
			}
		}
	})
}
