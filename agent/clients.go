package agent

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clients are the agent's three ways to the API server. Each has its own
// client-side rate limit and its own connections, so that following what
// the cluster reports never delays changing it, and the fan-out of log
// streams (one per container: at 1,500 pods, thousands of requests in a
// rollout's first minutes, queued for their budget) never delays a
// heartbeat's inventory or the events watch (docs/agent-protocol.md,
// "Client settings").
type Clients struct {
	// Write changes the cluster and reads what deciding a change needs:
	// applies and prunes, the cache's watches of the managed objects
	// (rollouts read their pods and Deployments there), the Lease, the
	// state ConfigMap, build Jobs and commands.
	Write kubernetes.Interface
	// Read follows what the cluster reports, a few requests at a time:
	// the inventory (version, nodes) of every heartbeat, the events watch,
	// diagnostics, a build's pod.
	Read kubernetes.Interface
	// Logs follows container and build logs, a stream each.
	Logs kubernetes.Interface
}

// Same is one client used for all three (tests with a fake clientset, the
// simulated cluster of `nebula dev`).
func Same(c kubernetes.Interface) Clients { return Clients{Write: c, Read: c, Logs: c} }

// Limits bound one client's requests: QPS a second on average, Burst above
// it at once.
type Limits struct {
	QPS   float32
	Burst int
}

// Defaults of the three clients. Writing: a 3,000-object cluster is
// written in about 15 s at 200 requests a second. Reading: two requests a
// heartbeat, a watch, a command's few. Logs: following 1,500 pods opens at
// most 1,500 streams at the start (30 s at 50 a second) and then, with each
// container's backoff, a few a second (docs/benchmarks.md).
var (
	DefaultWriteLimits = Limits{QPS: DefaultKubeQPS, Burst: DefaultKubeBurst}
	DefaultReadLimits  = Limits{QPS: 20, Burst: 50}
	DefaultLogsLimits  = Limits{QPS: 50, Burst: 100}
)

// NewClients builds the three clients over one configuration. Each gets a
// token bucket of its own (the waits it causes observed in m) and a
// transport of its own: a custom dialer keeps client-go from sharing the
// connection pool between them, so a connection carrying a thousand log
// streams never carries a write.
func NewClients(rc *rest.Config, write, read, logs Limits, m *Metrics) (Clients, error) {
	build := func(name string, l Limits) (kubernetes.Interface, error) {
		if l.QPS <= 0 || l.Burst <= 0 {
			return nil, fmt.Errorf("the %s client's rate (%g a second) and burst (%d) must be positive", name, l.QPS, l.Burst)
		}
		c := rest.CopyConfig(rc)
		c.QPS, c.Burst = l.QPS, l.Burst
		c.RateLimiter = observed{flowcontrol.NewTokenBucketRateLimiter(l.QPS, l.Burst), m.throttled(name)}
		if c.Dial == nil {
			d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
			c.Dial = d.DialContext
		}
		return kubernetes.NewForConfig(c)
	}
	w, err := build("write", write)
	if err != nil {
		return Clients{}, err
	}
	r, err := build("read", read)
	if err != nil {
		return Clients{}, err
	}
	l, err := build("logs", logs)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Write: w, Read: r, Logs: l}, nil
}

// observed is a rate limiter that reports how long each request waited
// for it.
type observed struct {
	flowcontrol.RateLimiter
	wait func(time.Duration)
}

func (o observed) Wait(ctx context.Context) error {
	start := time.Now()
	err := o.RateLimiter.Wait(ctx)
	o.wait(time.Since(start))
	return err
}

func (o observed) Accept() {
	start := time.Now()
	o.RateLimiter.Accept()
	o.wait(time.Since(start))
}
