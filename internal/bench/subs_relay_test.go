//go:build unix

package bench

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// relay is the baseline of the subscription benchmarks: the least a
// websocket server can do to push a deployment's stages to its watchers.
// No GraphQL, no database, no authentication, no authorization: a client
// connects to /relay?deployment=<id>, is acknowledged with
// {"type":"subscribed"}, and from then on gets whatever Publish addresses to
// that deployment. Each connection is served like gorilla/websocket's chat
// example: the handler's goroutine reads (to see pongs and the close), a
// writer goroutine drains a queue of 256 messages and pings at the
// interval NebulaCtrl's transport uses (15 s). A full queue drops the
// client, as NebulaCtrl's does. The upgrader keeps gorilla's default
// buffers (those of the HTTP server's connection), as NebulaCtrl's does.
type relay struct {
	up   websocket.Upgrader
	ping time.Duration

	mu    sync.Mutex
	conns map[string]map[*relayConn]struct{}
	live  atomic.Int64
}

type relayConn struct {
	ws   *websocket.Conn
	out  chan []byte
	done chan struct{}
	once sync.Once
}

var relaySubscribed = []byte(`{"type":"subscribed"}`)

func newRelay() *relay {
	return &relay{ping: 15 * time.Second, conns: map[string]map[*relayConn]struct{}{}}
}

func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	dep := req.URL.Query().Get("deployment")
	if dep == "" {
		http.Error(w, "?deployment= is required", http.StatusBadRequest)
		return
	}
	ws, err := r.up.Upgrade(w, req, nil)
	if err != nil {
		return // the upgrader answered
	}
	c := &relayConn{ws: ws, out: make(chan []byte, 256), done: make(chan struct{})}
	r.mu.Lock()
	if r.conns[dep] == nil {
		r.conns[dep] = map[*relayConn]struct{}{}
	}
	r.conns[dep][c] = struct{}{}
	r.mu.Unlock()
	r.live.Add(1)
	defer func() {
		r.mu.Lock()
		delete(r.conns[dep], c)
		if len(r.conns[dep]) == 0 {
			delete(r.conns, dep)
		}
		r.mu.Unlock()
		c.close()
		r.live.Add(-1)
	}()
	go c.writer(r.ping)
	c.send(relaySubscribed)

	ws.SetReadLimit(4096)
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			return
		}
	}
}

func (c *relayConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

// send queues a message; a client whose queue is full is dropped.
func (c *relayConn) send(b []byte) {
	select {
	case <-c.done:
	case c.out <- b:
	default:
		c.close()
	}
}

func (c *relayConn) writer(every time.Duration) {
	ping := time.NewTicker(every)
	defer ping.Stop()
	for {
		select {
		case <-c.done:
			return
		case b := <-c.out:
			_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
				c.close()
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(10*time.Second)); err != nil {
				c.close()
				return
			}
		}
	}
}

// Publish sends msg to every connection watching the deployment.
func (r *relay) Publish(dep string, msg []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns[dep] {
		c.send(msg)
	}
}

// Live counts the open connections.
func (r *relay) Live() int { return int(r.live.Load()) }
