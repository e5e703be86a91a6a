//go:build linux

package loadrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
)

// subscriptionQuery is what a dashboard of one environment follows: each
// of its deployments as it reaches a new stage.
const subscriptionQuery = `subscription($e: ID!) { environmentDeployments(environmentId: $e) { id stage message release { number } } }`

// wsFrame is a graphql-transport-ws message.
type wsFrame struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// subscriber is one graphql-transport-ws client following one
// environment's deployments.
type subscriber struct {
	d     *driver
	index int
	env   int // index into Seeded.Envs
	conn  *websocket.Conn
}

// connect opens the websocket, authenticates in connection_init, waits for
// connection_ack and subscribes.
func (s *subscriber) connect(ctx context.Context, base, token string) error {
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second, Subprotocols: []string{"graphql-transport-ws"}}
	c, resp, err := dialer.DialContext(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql", nil)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			err = fmt.Errorf("%w: %s %s", err, resp.Status, bytes.TrimSpace(body))
		}
		return fmt.Errorf("dialing the GraphQL websocket: %w", err)
	}
	fail := func(what string, err error) error {
		c.Close()
		return fmt.Errorf("%s: %w", what, err)
	}
	init, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": map[string]string{"Authorization": "Bearer " + token}})
	if err := c.WriteMessage(websocket.TextMessage, init); err != nil {
		return fail("sending connection_init", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var m wsFrame
		if err := c.ReadJSON(&m); err != nil {
			return fail("waiting for connection_ack", err)
		}
		if m.Type == "connection_ack" {
			break
		}
		if m.Type != "ping" {
			return fail("waiting for connection_ack", fmt.Errorf("got %q", m.Type))
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	sub, _ := json.Marshal(map[string]any{"id": "1", "type": "subscribe",
		"payload": map[string]any{"query": subscriptionQuery, "variables": map[string]any{"e": s.d.seed.Envs[s.env].ID}}})
	if err := c.WriteMessage(websocket.TextMessage, sub); err != nil {
		return fail("subscribing", err)
	}
	s.conn = c
	return nil
}

// run reads the subscription until ctx ends, answering pings. Anything
// but a clean `next` is an error: an `error` or `complete` frame ends a
// subscription that should last the whole run.
func (s *subscriber) run(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { _ = s.conn.Close() })
	defer stop()
	defer s.conn.Close()
	fail := func(err error) {
		if ctx.Err() == nil {
			s.d.rec.fail(kindSubscriber, fmt.Errorf("subscriber %d: %w", s.index, err))
		}
	}
	for {
		_, frame, err := s.conn.ReadMessage()
		at := time.Now()
		if err != nil {
			fail(fmt.Errorf("reading: %w", err))
			return
		}
		var m wsFrame
		if err := json.Unmarshal(frame, &m); err != nil {
			fail(fmt.Errorf("decoding %.80q: %w", frame, err))
			return
		}
		switch m.Type {
		case "ping":
			if err := s.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`)); err != nil {
				fail(fmt.Errorf("answering a ping: %w", err))
				return
			}
		case "pong":
		case "next":
			var n struct {
				Data struct {
					EnvironmentDeployments *struct {
						ID    string `json:"id"`
						Stage string `json:"stage"`
					} `json:"environmentDeployments"`
				} `json:"data"`
				Errors []gqlError `json:"errors"`
			}
			if err := json.Unmarshal(m.Payload, &n); err != nil || len(n.Errors) > 0 || n.Data.EnvironmentDeployments == nil {
				fail(fmt.Errorf("next: %.300s (%v)", m.Payload, err))
				return
			}
			ev := n.Data.EnvironmentDeployments
			kind, raw, err := gid.Parse(ev.ID)
			if err != nil || kind != gid.Deployment {
				fail(fmt.Errorf("next: %q is not a deployment id", ev.ID))
				return
			}
			s.d.track.subscriberGot(s.index, model.DeploymentID(raw), model.DeploymentStage(ev.Stage), at)
			s.d.countIn(kindSubscriberEvent, at)
		default:
			fail(fmt.Errorf("got %.300s", frame))
			return
		}
	}
}
