package agent

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are what the agent counts of its own work, served on
// --metrics-address (docs/agent-protocol.md lists them). A nil *Metrics
// counts nothing.
type Metrics struct {
	reg *prometheus.Registry

	throttle *prometheus.HistogramVec

	logFollowed prometheus.Gauge
	logOpen     prometheus.Gauge
	logQueued   prometheus.Gauge
	logOpens    *prometheus.CounterVec
	logRetries  prometheus.Counter
	logBytes    prometheus.Counter
	logDropped  prometheus.Counter
	logResumed  *prometheus.CounterVec
}

// NewMetrics registers the agent's metrics, and the Go runtime's and the
// process's, in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(),
		throttle: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nebula_agent_kube_throttle_seconds",
			Help:    "How long a request to the API server waited for its client's rate limit, by client (write, read, logs).",
			Buckets: []float64{0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30}}, []string{"client"}),
		logFollowed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nebula_agent_log_containers",
			Help: "Containers whose log is followed (started containers of managed pods), whether their stream is open or waits."}),
		logOpen: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nebula_agent_log_streams_open",
			Help: "Log streams open now."}),
		logQueued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nebula_agent_log_streams_queued",
			Help: "Containers waiting for a stream under the bound (--log-streams)."}),
		logOpens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nebula_agent_log_stream_opens_total",
			Help: "Log streams asked of the API server (pods/log), by result (ok, error)."}, []string{"result"}),
		logRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "nebula_agent_log_stream_retries_total",
			Help: "Log streams asked for again after one could not open or ended."}),
		logBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "nebula_agent_log_bytes_total",
			Help: "Bytes of container logs read from the API server."}),
		logDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "nebula_agent_log_lines_dropped_total",
			Help: "Log lines dropped by the per-pod rate cap."}),
		logResumed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nebula_agent_log_resumed_total",
			Help: "Streams started, by where they start: memory (the last line this process sent), control-plane (the last line it stored), start (the log's start)."},
			[]string{"from"}),
	}
	m.reg.MustRegister(m.throttle, m.logFollowed, m.logOpen, m.logQueued, m.logOpens, m.logRetries, m.logBytes, m.logDropped,
		m.logResumed, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// throttled observes the waits of one client's rate limit.
func (m *Metrics) throttled(client string) func(time.Duration) {
	if m == nil {
		return func(time.Duration) {}
	}
	h := m.throttle.WithLabelValues(client)
	return func(d time.Duration) { h.Observe(d.Seconds()) }
}

// The log follower's counts; each is a no-op on a nil *Metrics.

func (m *Metrics) followed(d float64) {
	if m != nil {
		m.logFollowed.Add(d)
	}
}

func (m *Metrics) open(d float64) {
	if m != nil {
		m.logOpen.Add(d)
	}
}

func (m *Metrics) queued(d float64) {
	if m != nil {
		m.logQueued.Add(d)
	}
}

func (m *Metrics) opened(ok bool) {
	if m == nil {
		return
	}
	result := "ok"
	if !ok {
		result = "error"
	}
	m.logOpens.WithLabelValues(result).Inc()
}

func (m *Metrics) retried() {
	if m != nil {
		m.logRetries.Inc()
	}
}

func (m *Metrics) read(n int) {
	if m != nil {
		m.logBytes.Add(float64(n))
	}
}

func (m *Metrics) dropped() {
	if m != nil {
		m.logDropped.Inc()
	}
}

func (m *Metrics) resumed(from string) {
	if m != nil {
		m.logResumed.WithLabelValues(from).Inc()
	}
}
