package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// sseOpen opens an SSE subscription and returns its response (the body
// open, closed at cleanup).
func sseOpen(t *testing.T, e *Env, token string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": `subscription($e: ID!) { environmentDeployments(environmentId: $e) { id } }`,
		"variables": map[string]any{"e": "x"}})
	req, err := http.NewRequest(http.MethodPost, e.Server.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func wantTooMany(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	if resp == nil {
		t.Fatalf("%s: no answer, want HTTP 429", what)
	}
	var body struct{ Errors []GraphQLError }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusTooManyRequests || len(body.Errors) == 0 || body.Errors[0].Code() != "RATE_LIMITED" ||
		resp.Header.Get("Retry-After") == "" {
		t.Errorf("%s: HTTP %d, errors %+v, Retry-After %q; want 429 RATE_LIMITED with Retry-After", what, resp.StatusCode, body.Errors, resp.Header.Get("Retry-After"))
	}
}

// One token, or one address, cannot hold more long-lived connections than
// the settings allow, over any transport; a closed connection makes room.
func TestConnectionLimits(t *testing.T) {
	env := NewEnvWith(t, OpenSQLite(t), func(c *config.Config) {
		c.MaxConnsPerToken, c.MaxConnsPerAddress = 3, 6
	})
	f := env.NewFixture(t)
	token := f.Users[Viewer].Token

	t.Run("per token", func(t *testing.T) {
		var open []*wsClient
		for i := range 3 {
			w := wsDial(t, env, wsProtocols[i%2])
			w.init(token)
			open = append(open, w)
		}
		for _, proto := range wsProtocols {
			w := wsDial(t, env, proto)
			w.send("connection_init", "", map[string]any{"Authorization": "Bearer " + token})
			w.expectClose(4429, wsWait)
		}
		wantTooMany(t, "an SSE stream over the token's cap", sseOpen(t, env, token))

		// Another token of the same address is not held back.
		other := wsDial(t, env, wsTransportWS)
		other.init(f.Users[Editor].Token)
		other.c.Close()

		open[0].c.Close()
		// The server notices the close at its next read.
		testutil.Eventually(t, wsWait, "a new connection is accepted after closing one", func() (bool, string) {
			w := wsDial(t, env, wsTransportWS)
			w.send("connection_init", "", map[string]any{"Authorization": "Bearer " + token})
			m, err := w.readFrame(wsWait)
			if err == nil && m.Type == "connection_ack" {
				w.c.Close()
				return true, ""
			}
			return false, fmt.Sprint(m, err)
		})
		for _, w := range open[1:] {
			w.c.Close()
		}
	})

	t.Run("per address", func(t *testing.T) {
		// Connections not yet initialised count against the address: the
		// cap holds before any token is checked.
		deadline := time.Now().Add(wsWait)
		var open []*websocket.Conn
		for len(open) < 6 {
			c, resp, err := websocket.DefaultDialer.Dial(wsURL(env), http.Header{"Sec-WebSocket-Protocol": {wsTransportWS}})
			if err == nil {
				open = append(open, c)
				continue
			}
			// The closes of the last subtest may not have been read yet.
			if resp == nil || resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
				t.Fatalf("dialling connection %d: %v", len(open)+1, err)
			}
		}
		defer func() {
			for _, c := range open {
				c.Close()
			}
		}()
		_, resp, err := websocket.DefaultDialer.Dial(wsURL(env), http.Header{"Sec-WebSocket-Protocol": {wsTransportWS}})
		if err == nil {
			t.Fatal("a seventh websocket from the address was accepted")
		}
		wantTooMany(t, "a websocket over the address's cap", resp)
		wantTooMany(t, "an SSE stream over the address's cap", sseOpen(t, env, f.Users[Editor].Token))
	})
}
