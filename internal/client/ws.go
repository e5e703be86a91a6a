package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/Khan/genqlient/graphql"
	"github.com/gorilla/websocket"
)

// socket is a graphql-transport-ws connection for genqlient's typed
// subscriptions (it implements graphql.WebSocketClient). genqlient ships
// one, but it takes the server's keep-alive pings for errors (the control
// plane pings every 15 s), cannot decode an operation's "error" message,
// and leaves a subscription's channel open when the connection drops.
// This one answers pings, hands an "error" to its subscription as GraphQL
// errors and completes it, and when the connection ends closes every
// subscription's channel and keeps why (Err).
//
// A subscription's channel must be read until it closes: the connection's
// reader hands each message over in turn.
type socket struct {
	url    string
	header http.Header
	params map[string]any
	dialer *websocket.Dialer

	write sync.Mutex // one writer at a time (gorilla's rule)
	conn  *websocket.Conn

	mu     sync.Mutex
	subs   map[string]wsSub
	nextID int
	err    error
	errc   chan error
}

type wsSub struct {
	ch      any
	forward graphql.ForwardDataFunction
}

// socket is a new, unstarted connection to the control plane's GraphQL
// websocket, authenticated with the token in connection_init.
func (c *Client) socket() *socket {
	u := *c.base
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.Path += "/graphql"
	d := &websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 10 * time.Second,
		Proxy: http.ProxyFromEnvironment}
	if c.tls != nil {
		// Its own copy: net/http adds h2 to the one its transport holds,
		// which a websocket must not offer.
		d.TLSClientConfig = c.tls.Clone()
	}
	return &socket{url: u.String(), header: http.Header{"User-Agent": {c.agent}}, dialer: d,
		params: map[string]any{"Authorization": "Bearer " + c.token}, subs: map[string]wsSub{}, errc: make(chan error, 1)}
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Start dials, sends connection_init and waits for connection_ack.
func (s *socket) Start(ctx context.Context) (chan error, error) {
	conn, resp, err := s.dialer.DialContext(ctx, s.url, s.header)
	if err != nil {
		if resp != nil {
			return nil, &DialError{Status: resp.StatusCode, Err: err}
		}
		return nil, &DialError{Err: err}
	}
	s.conn = conn
	params, _ := json.Marshal(s.params)
	if err := s.send(wsMessage{Type: "connection_init", Payload: params}); err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		var m wsMessage
		if err := conn.ReadJSON(&m); err != nil {
			conn.Close()
			return nil, closed(err)
		}
		if m.Type == "connection_ack" {
			break
		}
		if m.Type == "ping" {
			_ = s.send(wsMessage{Type: "pong"})
		}
	}
	_ = conn.SetReadDeadline(time.Time{})
	go s.read()
	return s.errc, nil
}

func (s *socket) send(m wsMessage) error {
	s.write.Lock()
	defer s.write.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return s.conn.WriteJSON(m)
}

// read hands each message to its subscription until the connection ends.
func (s *socket) read() {
	var err error
	for {
		var m wsMessage
		if err = s.conn.ReadJSON(&m); err != nil {
			break
		}
		switch m.Type {
		case "ping":
			err = s.send(wsMessage{Type: "pong", Payload: m.Payload})
		case "next":
			if sub, ok := s.sub(m.ID, false); ok {
				err = sub.forward(sub.ch, m.Payload)
			}
		case "error":
			// The payload is the operation's GraphQL errors: hand them over
			// as a response's, then the operation is over.
			if sub, ok := s.sub(m.ID, true); ok {
				err = sub.forward(sub.ch, json.RawMessage(`{"errors":`+string(m.Payload)+`}`))
				reflect.ValueOf(sub.ch).Close()
			}
		case "complete":
			if sub, ok := s.sub(m.ID, true); ok {
				reflect.ValueOf(sub.ch).Close()
			}
		}
		if err != nil {
			break
		}
	}
	s.conn.Close()
	s.mu.Lock()
	s.err = closed(err)
	subs := s.subs
	s.subs = map[string]wsSub{}
	s.mu.Unlock()
	s.errc <- s.err
	for _, sub := range subs {
		reflect.ValueOf(sub.ch).Close()
	}
}

// sub finds a subscription, removing it when done.
func (s *socket) sub(id string, done bool) (wsSub, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[id]
	if done {
		delete(s.subs, id)
	}
	return sub, ok
}

// Err is why the connection ended; nil while it is open.
func (s *socket) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Subscribe starts an operation whose messages go to interfaceChan.
func (s *socket) Subscribe(req *graphql.Request, interfaceChan any, forward graphql.ForwardDataFunction) (string, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return "", s.err
	}
	s.nextID++
	id := strconv.Itoa(s.nextID)
	s.subs[id] = wsSub{ch: interfaceChan, forward: forward}
	s.mu.Unlock()
	return id, s.send(wsMessage{ID: id, Type: "subscribe", Payload: payload})
}

// Unsubscribe completes an operation; its channel closes with the
// connection.
func (s *socket) Unsubscribe(id string) error {
	return s.send(wsMessage{ID: id, Type: "complete"})
}

// Close ends the connection normally; every subscription's channel closes.
func (s *socket) Close() error {
	if s.conn == nil {
		return nil
	}
	s.write.Lock()
	_ = s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(time.Second))
	s.write.Unlock()
	return s.conn.Close()
}

// DialError is a websocket that could not be opened: the control plane
// unreachable, or its HTTP answer to the upgrade.
type DialError struct {
	Status int
	Err    error
}

func (e *DialError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("opening the GraphQL websocket: HTTP %d", e.Status)
	}
	return "opening the GraphQL websocket: " + e.Err.Error()
}

func (e *DialError) Unwrap() error { return e.Err }

// ClosedError is a connection the control plane closed, with its code.
type ClosedError struct {
	Code int
	Text string
}

func (e *ClosedError) Error() string {
	return fmt.Sprintf("the control plane closed the connection: %d %s", e.Code, e.Text)
}

// closed is a connection's end as an error: a *ClosedError for a close
// frame.
func closed(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return &ClosedError{Code: ce.Code, Text: ce.Text}
	}
	return err
}
