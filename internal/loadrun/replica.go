//go:build linux

package loadrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Replica is one `nebula serve` process on a loopback port.
type Replica struct {
	Name string
	// URL is its base URL, http://127.0.0.1:port.
	URL    string
	cmd    *exec.Cmd
	cancel context.CancelFunc // asks it to stop
	log    string             // its stdout and stderr
	// exited is closed once the process has been waited for.
	exited  chan struct{}
	waitErr error
}

// ReplicaConfig is what every replica of a run shares.
type ReplicaConfig struct {
	// Bin is the nebula binary.
	Bin string
	// Dir is a directory of the run's own: each replica works in a
	// subdirectory (so no .env of the developer's is read) and logs there.
	Dir         string
	DatabaseURL string
	MasterKey   string
	Heartbeat   time.Duration
	// Env is added to the replicas' environment.
	Env []string
}

// StartReplica starts `nebula serve` on a loopback port of the kernel's
// choosing (NEBULA_ADDR=127.0.0.1:0), reads which from its "serving" log
// line and waits until it answers /readyz. The process gets a fresh environment with only
// PATH, HOME and the NEBULA_ settings below, so that settings of the shell
// that runs the load cannot change what is measured.
func StartReplica(ctx context.Context, cfg ReplicaConfig, name string) (*Replica, error) {
	dir := filepath.Join(cfg.Dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	r := &Replica{Name: name, log: filepath.Join(dir, "nebula.log"), exited: make(chan struct{})}
	logf, err := os.Create(r.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	// Cancelling asks for a graceful shutdown; exec kills the process if
	// it has not exited 10 s later.
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.cmd = exec.CommandContext(life, cfg.Bin, "serve")
	r.cmd.Cancel = func() error { return r.cmd.Process.Signal(syscall.SIGTERM) }
	r.cmd.WaitDelay = 10 * time.Second
	r.cmd.Dir = dir
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"NEBULA_ADDR=127.0.0.1:0",
		"NEBULA_DATABASE_URL=" + cfg.DatabaseURL,
		"NEBULA_MASTER_KEY=" + cfg.MasterKey,
		"NEBULA_AGENT_HEARTBEAT=" + cfg.Heartbeat.String(),
		"NEBULA_LOG_FORMAT=json",
		"NEBULA_SHUTDOWN_GRACE=2s",
	}, cfg.Env...)
	// The kernel kills the replica if the driver dies before its cleanup.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		r.waitErr = r.cmd.Wait()
		close(r.exited)
	}()
	if err := r.waitReady(ctx); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// PID is the replica's process id.
func (r *Replica) PID() int { return r.cmd.Process.Pid }

func (r *Replica) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if r.URL == "" {
			r.URL = r.servingAt()
		}
		if r.URL != "" && r.ready(ctx) {
			return nil
		}
		select {
		case <-r.exited:
			return fmt.Errorf("%s exited before it was ready (%v); its log ends:\n%s", r.Name, r.waitErr, r.logTail())
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready within a minute; its log ends:\n%s", r.Name, r.logTail())
		case <-tick.C:
		}
	}
}

// servingAt is the replica's base URL once its log says where it serves.
func (r *Replica) servingAt() string {
	f, err := os.Open(r.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "serving" && l.Addr != "" {
			return "http://" + l.Addr
		}
	}
	return ""
}

func (r *Replica) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// logTail is the end of the replica's log, for an error message.
func (r *Replica) logTail() string {
	b, err := os.ReadFile(r.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// Stop asks the replica to shut down (SIGTERM), kills it if it has not
// exited 10 s later, and waits for it. It is safe to call more than once.
func (r *Replica) Stop() {
	r.cancel()
	<-r.exited
}

// Exited tells whether the process has ended.
func (r *Replica) Exited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// LogLevels counts the replica's log lines by level, and by level and
// message (the msg field, with the error field for warnings and errors:
// a log line never holds a secret, but the report quotes as little as it
// needs).
func (r *Replica) LogLevels() (levels map[string]int, messages map[string]int, err error) {
	f, err := os.Open(r.log)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	levels, messages = map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Error string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Level == "" {
			continue // the banner printed on start
		}
		levels[l.Level]++
		m := l.Level + " " + l.Msg
		if l.Error != "" && (l.Level == "WARN" || l.Level == "ERROR") {
			m += ": " + l.Error
		}
		if len(m) > 300 {
			m = m[:300] + "…"
		}
		messages[m]++
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return levels, messages, err
	}
	return levels, messages, nil
}
