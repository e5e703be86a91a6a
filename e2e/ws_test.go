package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// subscriber is a graphql-transport-ws client of the control plane, as a
// dashboard holds one: every message of every operation, in order of
// arrival, read by a goroutine of its own.
type subscriber struct {
	t    *testing.T
	conn *websocket.Conn
	wmu  sync.Mutex

	mu   sync.Mutex
	msgs map[string][]wsMessage // by operation id
	err  error                  // how reading ended
	more chan struct{}          // closed and replaced when a message comes
}

type wsMessage struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	at      time.Time
}

// subscribe connects to the control plane's GraphQL websocket with its
// token.
func (cp *controlPlane) subscriber(t *testing.T) *subscriber {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 10 * time.Second}
	conn, resp, err := d.Dial(strings.Replace(cp.url, "http", "ws", 1)+"/graphql", http.Header{})
	if err != nil {
		t.Fatalf("dialing the GraphQL websocket: %v (%v)", err, resp)
	}
	s := &subscriber{t: t, conn: conn, msgs: map[string][]wsMessage{}, more: make(chan struct{})}
	t.Cleanup(func() { conn.Close() })
	s.send(wsMessage{Type: "connection_init", Payload: mustJSON(map[string]any{"Authorization": "Bearer " + cp.token})})
	var ack wsMessage
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := conn.ReadJSON(&ack); err != nil || ack.Type != "connection_ack" {
		t.Fatalf("connection_init: %v %v", ack, err)
	}
	conn.SetReadDeadline(time.Time{})
	go s.read()
	return s
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (s *subscriber) send(m wsMessage) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.conn.WriteJSON(m); err != nil {
		s.t.Errorf("websocket write: %v", err)
	}
}

func (s *subscriber) read() {
	for {
		var m wsMessage
		err := s.conn.ReadJSON(&m)
		s.mu.Lock()
		if err != nil {
			s.err = err
		} else if m.Type == "ping" {
			go s.send(wsMessage{Type: "pong"})
		} else {
			m.at = time.Now()
			s.msgs[m.ID] = append(s.msgs[m.ID], m)
		}
		close(s.more)
		s.more = make(chan struct{})
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// start subscribes operation id.
func (s *subscriber) start(id, query string, vars map[string]any) {
	s.send(wsMessage{Type: "subscribe", ID: id, Payload: mustJSON(map[string]any{"query": query, "variables": vars})})
}

// until waits until the messages of operation id satisfy ok, and returns
// them; an error message fails the test.
func (s *subscriber) until(id, what string, timeout time.Duration, ok func([]wsMessage) bool) []wsMessage {
	s.t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		ms, err, more := append([]wsMessage(nil), s.msgs[id]...), s.err, s.more
		s.mu.Unlock()
		for _, m := range ms {
			if m.Type == "error" {
				s.t.Fatalf("operation %s: %s", id, m.Payload)
			}
		}
		if ok(ms) {
			return ms
		}
		if err != nil {
			s.t.Fatalf("waiting for %s: the websocket ended: %v", what, err)
		}
		select {
		case <-more:
		case <-deadline:
			s.t.Fatalf("timed out after %v waiting for %s; operation %s got %d messages", timeout, what, id, len(ms))
		}
	}
}

// data decodes the payloads of an operation's next messages into field.
func data[T any](t *testing.T, ms []wsMessage, field string) []T {
	t.Helper()
	var out []T
	for _, m := range ms {
		if m.Type != "next" {
			continue
		}
		var p struct {
			Data   map[string]json.RawMessage `json:"data"`
			Errors []any                      `json:"errors"`
		}
		if err := json.Unmarshal(m.Payload, &p); err != nil || len(p.Errors) > 0 {
			t.Fatalf("a result %s: %v", m.Payload, err)
		}
		var v T
		if err := json.Unmarshal(p.Data[field], &v); err != nil {
			t.Fatalf("decoding %s: %v", p.Data[field], err)
		}
		out = append(out, v)
	}
	return out
}

func completed(ms []wsMessage) bool {
	return len(ms) > 0 && ms[len(ms)-1].Type == "complete"
}

func (m wsMessage) String() string { return fmt.Sprintf("%s %s %s", m.Type, m.ID, m.Payload) }
