//go:build unix

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The clients of the subscription benchmarks: graphql-transport-ws
// subscribers of NebulaCtrl and subscribers of the raw relay, all real
// gorilla/websocket clients over loopback. The latency benchmarks run them
// in the benchmark's process; the idle benchmarks run them in a child
// process (TestSubsClients), so that the memory and goroutines the
// benchmark reads are the server's alone.

// wsMsg is a graphql-transport-ws message.
type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

var wsDialer = websocket.Dialer{HandshakeTimeout: time.Minute, Subprotocols: []string{"graphql-transport-ws"}}

// gqlSubscribe opens a graphql-transport-ws connection, sends
// connection_init with the token, waits for connection_ack and subscribes
// with id "1". Reading the subscription's messages is the caller's.
func gqlSubscribe(ctx context.Context, wsURL, token, query string, vars map[string]any) (*websocket.Conn, error) {
	c, resp, err := wsDialer.DialContext(ctx, wsURL, nil)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			err = fmt.Errorf("%w: %s %s", err, resp.Status, bytes.TrimSpace(body))
		}
		return nil, fmt.Errorf("dialing: %w", err)
	}
	fail := func(err error) (*websocket.Conn, error) {
		c.Close()
		return nil, err
	}
	init, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": map[string]string{"Authorization": "Bearer " + token}})
	if err := c.WriteMessage(websocket.TextMessage, init); err != nil {
		return fail(fmt.Errorf("connection_init: %w", err))
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		var m wsMsg
		if err := c.ReadJSON(&m); err != nil {
			return fail(fmt.Errorf("waiting for connection_ack: %w", err))
		}
		if m.Type == "connection_ack" {
			break
		}
		if m.Type != "ping" {
			return fail(fmt.Errorf("got %q, want connection_ack", m.Type))
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	sub, _ := json.Marshal(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}})
	if err := c.WriteMessage(websocket.TextMessage, sub); err != nil {
		return fail(fmt.Errorf("subscribe: %w", err))
	}
	return c, nil
}

// relaySubscribe connects to the relay for a deployment and waits for its
// acknowledgement.
func relaySubscribe(ctx context.Context, relayURL, dep string) (*websocket.Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: time.Minute}
	c, _, err := d.DialContext(ctx, relayURL+"?deployment="+url.QueryEscape(dep), nil)
	if err != nil {
		return nil, fmt.Errorf("dialing: %w", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	_, frame, err := c.ReadMessage()
	_ = c.SetReadDeadline(time.Time{})
	if err != nil || !bytes.Equal(frame, relaySubscribed) {
		c.Close()
		return nil, fmt.Errorf("waiting for the relay's acknowledgement: got %q, %v", frame, err)
	}
	return c, nil
}

// gqlNext is the data of a deploymentEvents `next`, and any errors.
type gqlNext struct {
	Data struct {
		DeploymentEvents *struct {
			Stage    string `json:"stage"`
			Sequence int    `json:"sequence"`
		} `json:"deploymentEvents"`
	} `json:"data"`
	Errors []gqlError `json:"errors"`
}

// relayEvent is what the relay's producer publishes.
type relayEvent struct {
	Deployment string    `json:"deployment"`
	Stage      string    `json:"stage"`
	Sequence   int       `json:"sequence"`
	At         time.Time `json:"at"`
}

// stageSub is one latency subscriber: it notes when each agent stage of
// its deployment arrived. Its fields are written by its read loop only and
// read once done is closed.
type stageSub struct {
	c     *websocket.Conn
	at    [len(subsStages)]time.Time
	seen  []string // every stage received, in order
	dups  int
	err   error
	ended bool // the server completed the subscription (GraphQL) or SUCCEEDED arrived (relay)

	ready     chan struct{} // closed once the subscriber is waiting for the agent's stages
	readyOnce sync.Once
	arrived   chan struct{} // gets a value for each agent stage that arrived (if not full)
	done      chan struct{} // closed when the read loop returned
}

func newStageSub(c *websocket.Conn) *stageSub {
	return &stageSub{c: c, ready: make(chan struct{}), done: make(chan struct{}),
		arrived: make(chan struct{}, len(subsStages))}
}

func (s *stageSub) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

// got notes a stage received at at.
func (s *stageSub) got(stage string, at time.Time) {
	s.seen = append(s.seen, stage)
	for i, st := range subsStages {
		if st == stage {
			if !s.at[i].IsZero() {
				s.dups++
				return
			}
			s.at[i] = at
			select {
			case s.arrived <- struct{}{}:
			default:
			}
		}
	}
}

// readGraphQL reads a deploymentEvents subscription until it completes:
// QUEUED and DELIVERING first (the replay that makes it ready), then the
// agent's stages. It answers pings as graphql-ws clients do.
func (s *stageSub) readGraphQL() {
	defer close(s.done)
	defer s.markReady() // a subscriber that failed must not hold up the start
	for {
		_, frame, err := s.c.ReadMessage()
		at := time.Now()
		if err != nil {
			s.err = fmt.Errorf("reading: %w", err)
			return
		}
		var m wsMsg
		if err := json.Unmarshal(frame, &m); err != nil {
			s.err = fmt.Errorf("decoding %q: %w", frame, err)
			return
		}
		switch m.Type {
		case "ping":
			_ = s.c.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`))
		case "next":
			var n gqlNext
			if err := json.Unmarshal(m.Payload, &n); err != nil || len(n.Errors) > 0 || n.Data.DeploymentEvents == nil {
				s.err = fmt.Errorf("next: %s (%v)", m.Payload, err)
				return
			}
			s.got(n.Data.DeploymentEvents.Stage, at)
			if n.Data.DeploymentEvents.Stage == "DELIVERING" {
				s.markReady()
			}
		case "complete":
			s.ended = true
			return
		default:
			s.err = fmt.Errorf("got %s", frame)
			return
		}
	}
}

// readRelay reads the relay's messages until SUCCEEDED.
func (s *stageSub) readRelay() {
	defer close(s.done)
	s.markReady() // relaySubscribe waited for the acknowledgement
	for {
		_, frame, err := s.c.ReadMessage()
		at := time.Now()
		if err != nil {
			s.err = fmt.Errorf("reading: %w", err)
			return
		}
		var e relayEvent
		if err := json.Unmarshal(frame, &e); err != nil {
			s.err = fmt.Errorf("decoding %q: %w", frame, err)
			return
		}
		s.got(e.Stage, at)
		if e.Stage == subsStages[len(subsStages)-1] {
			s.ended = true
			return
		}
	}
}

// The child process of the idle benchmarks: TestSubsClients, started by
// startSubsClients with these variables.
const (
	envSubsURL   = "NEBULA_SUBS_URL"   // websocket URL
	envSubsMode  = "NEBULA_SUBS_MODE"  // "graphql" or "relay"
	envSubsN     = "NEBULA_SUBS_N"     // connections
	envSubsToken = "NEBULA_SUBS_TOKEN" // graphql: the API token
	envSubsQuery = "NEBULA_SUBS_QUERY" // graphql: {"query": …, "variables": …}
	envSubsKey   = "NEBULA_SUBS_KEY"   // relay: the deployment every connection watches
)

// subsClients is the child process as the benchmark sees it. The child
// writes one line per fact to its stdout:
//
//	R <ns>        every connection is subscribed and got its first message, <ns> after the start
//	E <i> <err>   connection i failed or ended
//	X <n>         at exit: messages received after the first, pings and pongs aside
type subsClients struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	ready  chan time.Duration
	ended  chan struct{}
	failed chan struct{}
	fail   sync.Once

	mu      sync.Mutex
	failure string
	extra   int
}

// startSubsClients starts n idle subscribers in a child process.
func startSubsClients(tb testing.TB, mode, wsURL string, n int, env ...string) *subsClients {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	c := &subsClients{ready: make(chan time.Duration, 1), ended: make(chan struct{}), failed: make(chan struct{})}
	c.cmd = exec.Command(exe, "-test.run=^TestSubsClients$", "-test.count=1", "-test.timeout=0")
	c.cmd.Env = append(os.Environ(), append(env, envSubsURL+"="+wsURL, envSubsMode+"="+mode, envSubsN+"="+strconv.Itoa(n))...)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go c.read(out)
	return c
}

func (c *subsClients) read(r io.Reader) {
	defer close(c.ended)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "R":
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			c.ready <- time.Duration(ns)
		case len(f) >= 2 && f[0] == "E":
			c.fail.Do(func() {
				c.mu.Lock()
				c.failure = "client " + strings.Join(f[1:], " ")
				c.mu.Unlock()
				close(c.failed)
			})
		case len(f) == 2 && f[0] == "X":
			n, _ := strconv.Atoi(f[1])
			c.mu.Lock()
			c.extra = n
			c.mu.Unlock()
		}
	}
}

// waitReady returns how long the child took to subscribe every connection.
func (c *subsClients) waitReady(timeout time.Duration) (time.Duration, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case d := <-c.ready:
		return d, nil
	case <-c.failed:
		return 0, c.err()
	case <-c.ended:
		return 0, fmt.Errorf("the clients process ended: %s", c.stderr.String())
	case <-t.C:
		return 0, fmt.Errorf("the clients were not all subscribed after %v", timeout)
	}
}

// err is the first failure a client reported, or nil.
func (c *subsClients) err() error {
	select {
	case <-c.failed:
		c.mu.Lock()
		defer c.mu.Unlock()
		return errors.New(c.failure)
	default:
		return nil
	}
}

// stop closes the child's stdin, which closes every connection and ends
// the process; it returns the messages the clients got after their first.
func (c *subsClients) stop(tb testing.TB) int {
	tb.Helper()
	_ = c.stdin.Close()
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	select {
	case <-c.ended:
	case <-t.C:
		tb.Errorf("the clients process did not end within a minute; killing it")
		_ = c.cmd.Process.Kill()
		<-c.ended
	}
	_ = c.cmd.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.extra
}

// TestSubsClients is the child process of the idle benchmarks: n real
// websocket clients, each subscribed once and then idle, answering pings,
// until stdin closes.
func TestSubsClients(t *testing.T) {
	wsURL := os.Getenv(envSubsURL)
	if wsURL == "" {
		t.Skip("the clients process of BenchmarkIdleSubscriptions and BenchmarkRawRelay; it runs only when they start it")
	}
	n, err := strconv.Atoi(os.Getenv(envSubsN))
	if err != nil {
		t.Fatal(err)
	}
	mode := os.Getenv(envSubsMode)
	var q struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if mode == "graphql" {
		if err := json.Unmarshal([]byte(os.Getenv(envSubsQuery)), &q); err != nil {
			t.Fatal(err)
		}
	}
	var outMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	line := func(s string) {
		outMu.Lock()
		defer outMu.Unlock()
		_, _ = out.WriteString(s + "\n")
		_ = out.Flush()
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	var extra atomic.Int64
	var subscribed sync.WaitGroup
	subscribed.Add(n)
	var wg sync.WaitGroup
	dialing := make(chan struct{}, 64) // 64 dials at a time
	for i := range n {
		wg.Go(func() {
			fail := func(err error) {
				if ctx.Err() == nil {
					line(fmt.Sprintf("E %d %v", i, err))
				}
			}
			dialing <- struct{}{}
			var c *websocket.Conn
			var err error
			if mode == "graphql" {
				c, err = gqlSubscribe(ctx, wsURL, os.Getenv(envSubsToken), q.Query, q.Variables)
			} else {
				c, err = relaySubscribe(ctx, wsURL, os.Getenv(envSubsKey))
			}
			<-dialing
			if err != nil {
				subscribed.Done()
				fail(err)
				return
			}
			defer context.AfterFunc(ctx, func() { _ = c.Close() })()
			defer c.Close()
			first := mode != "graphql" // the relay's first message was its acknowledgement
			if first {
				subscribed.Done()
			}
			for {
				typ, frame, err := c.ReadMessage()
				if err != nil {
					if !first {
						subscribed.Done()
					}
					fail(fmt.Errorf("reading: %w", err))
					return
				}
				if mode == "graphql" {
					var m wsMsg
					if typ != websocket.TextMessage || json.Unmarshal(frame, &m) != nil {
						fail(fmt.Errorf("got %.80q", frame))
						continue
					}
					switch m.Type {
					case "ping":
						_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`))
						continue
					case "pong":
						continue
					case "next":
						if bytes.Contains(m.Payload, []byte(`"errors"`)) {
							fail(fmt.Errorf("next with errors: %s", m.Payload))
						}
					default:
						fail(fmt.Errorf("got %.200s", frame))
					}
				}
				if !first {
					first = true
					subscribed.Done()
					continue
				}
				extra.Add(1)
			}
		})
	}
	go func() {
		subscribed.Wait()
		line(fmt.Sprintf("R %d", time.Since(start).Nanoseconds()))
	}()
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
	cancel()
	wg.Wait()
	line(fmt.Sprintf("X %d", extra.Load()))
}
