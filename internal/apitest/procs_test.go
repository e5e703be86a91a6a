package apitest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// Test parts for control planes run as processes: `nebula serve` as
// operators run it, a TCP load balancer in front of several, and a
// simulated agent speaking the channel's protocol.

var (
	nebulaOnce sync.Once
	nebulaBin  string
	nebulaErr  error
)

// nebulaBinary builds cmd/nebula once for the test binary.
func nebulaBinary(t *testing.T) string {
	t.Helper()
	nebulaOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nebula-apitest-bin-")
		if err != nil {
			nebulaErr = err
			return
		}
		nebulaBin = filepath.Join(dir, "nebula")
		build := exec.Command("go", "build", "-o", nebulaBin, "./cmd/nebula")
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			nebulaErr = fmt.Errorf("building nebula: %v\n%s", err, out)
		}
	})
	if nebulaErr != nil {
		t.Fatal(nebulaErr)
	}
	return nebulaBin
}

// serveProc is one `nebula serve` process, which the test may kill,
// stop and start again on the same address.
type serveProc struct {
	t    *testing.T
	name string
	addr string
	env  []string
	dir  string
	log  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	stdout bytes.Buffer
}

// startServe starts `nebula serve` with the settings in env (KEY=VALUE) on
// a free loopback port and waits until it is ready.
func startServe(t *testing.T, name string, env ...string) *serveProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	p := &serveProc{t: t, name: name, addr: addr, env: env, dir: dir, log: filepath.Join(dir, name+".log")}
	p.start()
	t.Cleanup(func() {
		p.stop(os.Interrupt)
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("--- %s log ---\n%s", name, b)
		}
	})
	return p
}

// base is the process's own URL.
func (p *serveProc) base() string { return "http://" + p.addr }

// output is what the process printed on stdout so far.
func (p *serveProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

// start runs the process (again) and waits until it answers /readyz.
func (p *serveProc) start() {
	p.t.Helper()
	cmd := exec.Command(nebulaBinary(p.t), "serve")
	cmd.Dir = p.dir
	cmd.Env = append(append(os.Environ(), "NEBULA_ADDR="+p.addr), p.env...)
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stderr = logf
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	testutil.Eventually(p.t, 60*time.Second, p.name+" is ready", func() (bool, string) {
		resp, err := http.Get(p.base() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true, ""
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(p.log)
			p.t.Fatalf("%s exited before it was ready:\n%s", p.name, b)
		default:
		}
		if err != nil {
			return false, err.Error()
		}
		return false, resp.Status
	})
}

// stop sends sig and waits for the process to exit (SIGKILL after 30 s).
func (p *serveProc) stop(sig os.Signal) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// kill ends the process at once, as a crash does (kill -9).
func (p *serveProc) kill() { p.stop(syscall.SIGKILL) }

// term asks the process to shut down as an orchestrator does in a rolling
// restart, and waits until it has.
func (p *serveProc) term() { p.stop(syscall.SIGTERM) }

// tcpProxy is a load balancer at the TCP level in front of replicas: each
// new connection goes to the next replica that accepts it; a connection
// ends when the replica's side does.
type tcpProxy struct {
	ln       net.Listener
	backends []string
	next     atomic.Uint64
}

func newTCPProxy(t *testing.T, backends ...string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, backends: backends}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *tcpProxy) base() string { return "http://" + p.ln.Addr().String() }

func (p *tcpProxy) serve(c net.Conn) {
	defer c.Close()
	start := p.next.Add(1)
	var b net.Conn
	for i := range len(p.backends) {
		var err error
		b, err = net.DialTimeout("tcp", p.backends[(int(start)+i)%len(p.backends)], time.Second)
		if err == nil {
			break
		}
	}
	if b == nil {
		return
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	<-done // either side ended: so does the connection
}

// simAgent is a cluster's agent reduced to its protocol: it connects,
// acknowledges every desired state and reports every deployment in it as
// rolled out. Like the real agent it comes back within a quarter second
// after a 1001 and with a short backoff otherwise, and it says hello with
// revision 0, so that each session gets the whole state again.
type simAgent struct {
	url, token string
	// step is the time between two stages of a rollout.
	step time.Duration

	mu sync.Mutex
	// gaps are the times from a session's end to the next welcome, with
	// the close code that ended it (0: the connection broke).
	gaps     []reconnect
	sessions int
}

type reconnect struct {
	code int
	took time.Duration
}

func (a *simAgent) run(ctx context.Context) {
	var lost time.Time
	lostCode := 0
	for ctx.Err() == nil {
		err := a.session(ctx, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.sessions++
			if !lost.IsZero() {
				a.gaps = append(a.gaps, reconnect{lostCode, time.Since(lost)})
			}
		})
		lost, lostCode = time.Now(), 0
		var ce *websocket.CloseError
		wait := 100 * time.Millisecond
		if errors.As(err, &ce) {
			lostCode = ce.Code
			if ce.Code == websocket.CloseGoingAway {
				wait = rand.N(250 * time.Millisecond)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

func (a *simAgent) session(ctx context.Context, welcomed func()) error {
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, _, err := d.DialContext(ctx, "ws"+strings.TrimPrefix(a.url, "http")+"/agent/v1/connect",
		http.Header{"Authorization": {"Bearer " + a.token}})
	if err != nil {
		return err
	}
	defer ws.Close()
	context.AfterFunc(ctx, func() { ws.Close() })
	var wmu sync.Mutex
	send := func(typ string, v any) error {
		frame, err := protocol.Encode(typ, v)
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		_ = ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
		return ws.WriteMessage(websocket.TextMessage, frame)
	}
	if err := send(protocol.TypeHello, protocol.Hello{Protocols: []int{protocol.Version}, Capabilities: protocol.Known}); err != nil {
		return err
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := ws.ReadMessage()
	if err != nil {
		return err
	}
	first, err := protocol.DecodeServer(b)
	w, ok := first.(*protocol.Welcome)
	if err != nil || !ok {
		return fmt.Errorf("expected a welcome, got %s", b)
	}
	welcomed()
	sessionDone := make(chan struct{})
	defer close(sessionDone)
	rolling := map[model.DeploymentID]bool{} // rollouts this session reports
	var applied atomic.Int64
	hb := time.Duration(w.HeartbeatSeconds) * time.Second
	go func() {
		tick := time.NewTicker(hb)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if send(protocol.TypeHeartbeat, protocol.Heartbeat{AppliedRevision: applied.Load(), SentAt: time.Now()}) != nil {
					return
				}
			}
		}
	}()
	for {
		_ = ws.SetReadDeadline(time.Now().Add(3*hb + 5*time.Second))
		_, b, err := ws.ReadMessage()
		if err != nil {
			return err
		}
		msg, err := protocol.DecodeServer(b)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *protocol.Desired:
			if err := send(protocol.TypeAck, protocol.Ack{Revision: m.Revision, Result: protocol.ResultApplied}); err != nil {
				return err
			}
			applied.Store(m.Revision)
			for _, ns := range m.State.Namespaces {
				for _, svc := range ns.Services {
					if svc.Deployment == "" || rolling[svc.Deployment] {
						continue
					}
					rolling[svc.Deployment] = true
					// A rollout takes a while: its stages are reported
					// a step apart, so that faults find rollouts under way.
					go func() {
						for _, st := range []string{"STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED"} {
							select {
							case <-sessionDone:
								return
							case <-time.After(a.step):
							}
							if send(protocol.TypeStage, protocol.Stage{Deployment: string(svc.Deployment), Stage: st,
								Message: "simulated " + strings.ToLower(st), At: time.Now()}) != nil {
								return
							}
						}
					}()
				}
			}
		case *protocol.Command:
			if err := send(protocol.TypeCommandAck, protocol.CommandAck{ID: m.ID, Result: protocol.ResultApplied}); err != nil {
				return err
			}
		}
	}
}
