package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/nebulactrl/nebula/agent"
)

// agentCommand is `nebula agent`: the in-cluster agent. Flags take their
// defaults from NEBULA_AGENT_* variables (the install manifests set those),
// and it reads none of the control plane's settings.
func agentCommand(stderr io.Writer) *cobra.Command {
	env := func(k, def string) string {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			return v
		}
		return def
	}
	var cfg agent.Config
	var qps, readQPS, logsQPS float64
	var logLevel, metricsAddr string
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the in-cluster agent",
		Long: `Run the in-cluster agent: it connects outbound to the control plane with the cluster's connect
token, applies the desired state it is sent and reports back (docs/agent-protocol.md). Every
flag has a NEBULA_AGENT_* variable; the install manifests set those. None of the control
plane's settings (or its .env) apply to it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.KubeQPS, cfg.KubeReadQPS, cfg.KubeLogsQPS = float32(qps), float32(readQPS), float32(logsQPS)
			return runAgent(cmd.Context(), cfg, logLevel, metricsAddr, stderr)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&cfg.Server, "server", env("NEBULA_AGENT_SERVER", ""), "the control plane's URL (NEBULA_AGENT_SERVER)")
	fs.StringVar(&cfg.TokenFile, "token-file", env("NEBULA_AGENT_TOKEN_FILE", "/var/run/secrets/nebula/token"), "file holding the connect token (NEBULA_AGENT_TOKEN_FILE)")
	fs.StringVar(&cfg.CAFile, "ca-file", env("NEBULA_AGENT_CA_FILE", ""), "a PEM bundle of certificate authorities to trust for the control plane's certificate, besides the system's (NEBULA_AGENT_CA_FILE)")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", env("KUBECONFIG", ""), "kubeconfig to use instead of the in-cluster service account (KUBECONFIG)")
	fs.StringVar(&cfg.Namespace, "namespace", env("NEBULA_AGENT_NAMESPACE", "nebula-system"), "namespace of the Lease and the agent's state (NEBULA_AGENT_NAMESPACE)")
	fs.StringVar(&cfg.LeaseName, "lease", env("NEBULA_AGENT_LEASE", "nebula-agent"), "Lease the replicas share (NEBULA_AGENT_LEASE)")
	fs.StringVar(&cfg.Identity, "identity", env("POD_NAME", ""), "this replica's identity in the Lease (POD_NAME; default the hostname)")
	fs.StringVar(&cfg.Image, "image", env("NEBULA_AGENT_IMAGE", ""), "the agent's image, reported in the inventory (NEBULA_AGENT_IMAGE)")
	fs.DurationVar(&cfg.LeaseDuration, "lease-duration", 15*time.Second, "how long a lease holds without renewal")
	fs.DurationVar(&cfg.RenewDeadline, "renew-deadline", 10*time.Second, "how long the leader tries to renew before giving up")
	fs.DurationVar(&cfg.RetryPeriod, "retry-period", 2*time.Second, "how often replicas try to take or renew the lease")
	fs.DurationVar(&cfg.Resync, "resync", 5*time.Minute,
		"how often the whole state is compared with the cluster again; it reads the agent's cache and writes only what differs")
	fs.DurationVar(&cfg.RolloutTimeout, "rollout-timeout", 5*time.Minute, "how long a new release's pods have to become Ready before it is rolled back")
	fs.DurationVar(&cfg.BackoffMax, "backoff-max", time.Minute, "the longest wait between reconnects")
	fs.Float64Var(&qps, "kube-qps", envFloat("NEBULA_AGENT_KUBE_QPS", agent.DefaultKubeQPS),
		"requests per second to the API server that change the cluster or decide a change (applies, prunes, the watches of the managed objects, the Lease), client side (NEBULA_AGENT_KUBE_QPS); a first apply writes each managed object once, so 200/s applies 3,000 objects in about 15 s")
	fs.IntVar(&cfg.KubeBurst, "kube-burst", int(envFloat("NEBULA_AGENT_KUBE_BURST", agent.DefaultKubeBurst)),
		"requests allowed above --kube-qps in a burst (NEBULA_AGENT_KUBE_BURST)")
	fs.Float64Var(&readQPS, "kube-read-qps", envFloat("NEBULA_AGENT_KUBE_READ_QPS", float64(agent.DefaultReadLimits.QPS)),
		"requests per second that follow what the cluster reports (the inventory of every heartbeat, the events watch, diagnostics), client side, on connections of their own: they never delay a write (NEBULA_AGENT_KUBE_READ_QPS)")
	fs.IntVar(&cfg.KubeReadBurst, "kube-read-burst", int(envFloat("NEBULA_AGENT_KUBE_READ_BURST", float64(agent.DefaultReadLimits.Burst))),
		"requests allowed above --kube-read-qps in a burst (NEBULA_AGENT_KUBE_READ_BURST)")
	fs.Float64Var(&logsQPS, "kube-logs-qps", envFloat("NEBULA_AGENT_KUBE_LOGS_QPS", float64(agent.DefaultLogsLimits.QPS)),
		"log streams asked for per second (pods/log), client side, on connections of their own: following thousands of containers never delays a write or a heartbeat (NEBULA_AGENT_KUBE_LOGS_QPS)")
	fs.IntVar(&cfg.KubeLogsBurst, "kube-logs-burst", int(envFloat("NEBULA_AGENT_KUBE_LOGS_BURST", float64(agent.DefaultLogsLimits.Burst))),
		"log streams allowed above --kube-logs-qps in a burst (NEBULA_AGENT_KUBE_LOGS_BURST)")
	fs.IntVar(&cfg.LogStreams, "log-streams", int(envFloat("NEBULA_AGENT_LOG_STREAMS", agent.DefaultLogStreams)),
		"container log streams open at once; the other started containers wait for a slot (NEBULA_AGENT_LOG_STREAMS)")
	fs.DurationVar(&cfg.LogBackoffMax, "log-backoff-max", agent.DefaultLogBackoffMax,
		"the longest wait before a container's log that could not be read, or ended, is asked for again (it starts at 1 s and doubles; a container starting again ends the wait)")
	fs.IntVar(&cfg.Concurrency, "concurrency", int(envFloat("NEBULA_AGENT_CONCURRENCY", agent.DefaultConcurrency)),
		"services applied, or rollouts moved on, at once (NEBULA_AGENT_CONCURRENCY); each holds one request to the API server at a time")
	fs.StringVar(&metricsAddr, "metrics-address", env("NEBULA_AGENT_METRICS_ADDRESS", ""),
		"serve Prometheus metrics on this address, e.g. :9090 (NEBULA_AGENT_METRICS_ADDRESS; the install manifests set :9090); empty serves none")
	fs.StringVar(&logLevel, "log-level", env("NEBULA_LOG_LEVEL", "info"), "debug, info, warn or error")
	return cmd
}

// runAgent runs the agent with its flags parsed.
func runAgent(ctx context.Context, cfg agent.Config, logLevel, metricsAddr string, stderr io.Writer) error {
	cfg.Version = Version
	if err := cfg.Validate(); err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("log level %q: %w", logLevel, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	if limit := memoryLimit(); limit > 0 {
		log.Info("the garbage collector keeps the heap under 90% of the container's memory limit", "limit", limit)
	}
	// client-go's own logging (leader election) goes the same way.
	klog.SetSlogLogger(log.With("component", "client-go"))
	rc, err := agent.KubeConfig(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.Metrics = agent.NewMetrics()
	kube, err := agent.NewClients(rc, agent.Limits{QPS: cfg.KubeQPS, Burst: cfg.KubeBurst},
		agent.Limits{QPS: cfg.KubeReadQPS, Burst: cfg.KubeReadBurst}, agent.Limits{QPS: cfg.KubeLogsQPS, Burst: cfg.KubeLogsBurst},
		cfg.Metrics)
	if err != nil {
		return fmt.Errorf("kubernetes clients: %w", err)
	}
	if metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", cfg.Metrics.Handler())
		_, stop, err := serveOn(metricsAddr, "--metrics-address", "the agent's metrics", mux, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	log.Info("nebula agent starting", "version", Version, "server", cfg.Server, "namespace", cfg.Namespace)
	return agent.New(cfg, kube, log).Run(ctx)
}

// memoryLimit sets the Go runtime's soft memory limit to 90% of the
// container's (NEBULA_AGENT_MEMORY_LIMIT, in bytes, which the install
// manifests take from the pod's resources) unless GOMEMLIMIT sets one: the
// collector then works harder as the heap nears the limit instead of the
// process being killed at it. It returns the limit set, 0 for none.
func memoryLimit() int64 {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0
	}
	n, err := strconv.ParseInt(os.Getenv("NEBULA_AGENT_MEMORY_LIMIT"), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	limit := n / 10 * 9
	debug.SetMemoryLimit(limit)
	return limit
}

// envFloat reads a number from the environment, def when unset or not one.
func envFloat(key string, def float64) float64 {
	if v, ok := os.LookupEnv(key); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return def
}
