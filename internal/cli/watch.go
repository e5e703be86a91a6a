package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Khan/genqlient/graphql"

	"github.com/nebulactrl/nebula/internal/client"
)

// stageEvent is one stage a deployment reached, as -o json shows it.
type stageEvent struct {
	Sequence int       `json:"sequence"`
	Stage    string    `json:"stage"`
	Blocker  string    `json:"blocker,omitempty"`
	Message  string    `json:"message"`
	At       time.Time `json:"at"`
}

// outcome is how a wait for a deployment ended.
type outcome struct {
	Deployment string       `json:"deployment"`
	Stage      string       `json:"stage"`
	Message    string       `json:"message"`
	Events     []stageEvent `json:"events"`
	Seconds    float64      `json:"seconds"`
	TimedOut   bool         `json:"timedOut,omitempty"`
}

// endings maps the stages a deployment ends at to the exit code a wait
// ends with.
var endings = map[client.DeploymentStage]int{
	client.DeploymentStageSucceeded:  0,
	client.DeploymentStageFailed:     exitFailed,
	client.DeploymentStageRolledBack: exitRolledBack,
	client.DeploymentStageCancelled:  exitCancelled,
	client.DeploymentStageSuperseded: exitSuperseded,
}

// wait follows a deployment's stages live until it ends or timeout
// passes, printing each as it comes (a line each; on a terminal the
// stage it is at is redrawn with the time it has taken). A dropped
// connection or a control plane restarting is followed through: the
// subscription resumes after the last stage seen. The error is an
// *ExitError for any end but SUCCEEDED.
func (r *remote) wait(ctx context.Context, c *client.Client, id string, timeout time.Duration) (outcome, error) {
	start := time.Now()
	out := outcome{Deployment: id, Events: []stageEvent{}}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := r.progress(start)
	defer p.stop()
	var cursor *string
	var last client.DeploymentEventsDeploymentEventsDeploymentEvent
	err := client.Follow(ctx, c,
		func(ctx context.Context, ws graphql.WebSocketClient) (chan client.DeploymentEventsWsResponse, string, error) {
			return client.DeploymentEvents(ctx, ws, id, cursor)
		},
		func(res client.DeploymentEventsWsResponse) (bool, error) {
			if err := client.Refusal(res.Errors); err != nil {
				return false, err
			}
			ev := res.Data.DeploymentEvents
			if last.Sequence >= ev.Sequence {
				return false, nil // a replay's overlap: never twice
			}
			cursor, last = &ev.Cursor, ev
			se := stageEvent{Sequence: ev.Sequence, Stage: string(ev.Stage), Message: ev.Message, At: ev.At}
			if ev.Blocker != nil {
				se.Blocker = strings.ToLower(string(*ev.Blocker))
			}
			out.Events = append(out.Events, se)
			p.event(se)
			_, ended := endings[ev.Stage]
			return ended, nil
		},
		func(why error, wait time.Duration) {
			p.note(fmt.Sprintf("lost the connection (%v); following again in %s", why, wait.Round(100*time.Millisecond)))
		})
	out.Seconds = time.Since(start).Round(time.Millisecond).Seconds()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return out, explained(err)
	}
	if _, ended := endings[last.Stage]; !ended {
		// No ending seen: the time ran out, or the stream completed early.
		d, qerr := client.Deployment(context.WithoutCancel(ctx), c.GQL, id)
		if qerr == nil {
			if dep, ok := nodeAs[*client.DeploymentNodeDeployment](d.Node); ok {
				last.Stage, last.Message = dep.Stage, dep.Message
			}
		}
	}
	out.Stage, out.Message = string(last.Stage), last.Message
	code, ended := endings[last.Stage]
	if !ended {
		out.TimedOut = true
		return out, &ExitError{Code: exitTimeout, Err: fmt.Errorf("timed out after %s waiting for deployment %s, at %s; it goes on (nebula status)",
			timeout, id, last.Stage)}
	}
	if code != 0 {
		return out, &ExitError{Code: code, Err: fmt.Errorf("deployment %s ended %s: %s", id, last.Stage, last.Message)}
	}
	return out, nil
}

// progress shows a wait: plain lines for logs and scripts; on a
// terminal, a last line redrawn each second with the stage and the time.
type progress struct {
	r     *remote
	start time.Time
	mu    sync.Mutex
	stage string
	since time.Time
	live  bool // a redrawn line is on screen
	done  chan struct{}
	wg    sync.WaitGroup
}

func (r *remote) progress(start time.Time) *progress {
	p := &progress{r: r, start: start, done: make(chan struct{})}
	if r.terminal() {
		p.wg.Go(p.tick)
	}
	return p
}

func (p *progress) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.mu.Lock()
			if p.stage != "" {
				fmt.Fprintf(p.r.stdout, "\r\033[K  … %s for %s (%s in all)", p.stage, time.Since(p.since).Round(time.Second),
					time.Since(p.start).Round(time.Second))
				p.live = true
			}
			p.mu.Unlock()
		}
	}
}

// clear removes the redrawn line; p.mu held.
func (p *progress) clear() {
	if p.live {
		fmt.Fprint(p.r.stdout, "\r\033[K")
		p.live = false
	}
}

func (p *progress) event(e stageEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stage, p.since = e.Stage, time.Now()
	if p.r.json() {
		return
	}
	p.clear()
	fmt.Fprintf(p.r.stdout, "%s  %-17s %s\n", e.At.Local().Format("15:04:05"), e.Stage, e.Message)
	if why := blockerSaid(e.Blocker); why != "" {
		fmt.Fprintf(p.r.stdout, "%s  %-17s %s\n", "        ", "", why)
	}
}

// note says something about the wait itself (a reconnect) on stderr.
func (p *progress) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintln(p.r.stderr, "nebula: "+s)
}

func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
	p.mu.Lock()
	p.clear()
	p.mu.Unlock()
}

// blockerSaid explains what a stage waits for.
func blockerSaid(blocker string) string {
	switch blocker {
	case "":
		return ""
	case "approval":
		return "waiting for approval by a project manager or tenant admin (nebula approve)"
	case "delivery":
		return "waiting for the cluster's agent to connect"
	case "build":
		return "waiting for the build of the release's image"
	case "stalled":
		return "no progress for a while: the rollout may be stuck (nebula logs)"
	}
	return "waiting for " + blocker
}
