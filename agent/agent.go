package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// Config is how one agent replica runs. Zero durations take the defaults.
type Config struct {
	// Server is the control plane's base URL (http or https).
	Server string
	// TokenFile holds the connect token (the mounted Secret). It is read
	// again before every connection, so a rotated Secret takes effect
	// without a restart. The token is never logged.
	TokenFile string
	// Kubeconfig, when set, is used instead of the in-cluster service
	// account.
	Kubeconfig string
	// Namespace holds the Lease and the agent's state ConfigMap.
	Namespace string
	// LeaseName is shared by the replicas; Identity is this replica's.
	LeaseName, Identity string
	// Lease timing (client-go leader election).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Resync re-applies the whole state this often, correcting drift.
	Resync time.Duration
	// RolloutTimeout is how long a new release's pods have to become
	// Ready before its rollout is rolled back (or fails).
	RolloutTimeout time.Duration
	// BackoffMin and BackoffMax bound the jittered reconnect delay.
	BackoffMin, BackoffMax time.Duration
	// KubeQPS and KubeBurst bound the requests that change the cluster
	// (Clients.Write), KubeReadQPS and KubeReadBurst those that follow
	// what it reports (Clients.Read), KubeLogsQPS and KubeLogsBurst the
	// log streams (Clients.Logs), client side; Concurrency is how many
	// services are applied, or rollouts moved on, at once. See `nebula
	// agent --help` for what each costs.
	KubeQPS, KubeReadQPS, KubeLogsQPS       float32
	KubeBurst, KubeReadBurst, KubeLogsBurst int
	Concurrency                             int
	// LogStreams bounds the container log streams open at once;
	// LogBackoffMin and LogBackoffMax bound the wait before a stream that
	// could not open, or ended, is asked for again (logs.go).
	LogStreams                   int
	LogBackoffMin, LogBackoffMax time.Duration
	// Metrics counts the agent's work (nil: counted nowhere anyone reads).
	Metrics *Metrics
	// Version and Image are reported in the inventory.
	Version, Image string
	// CAFile is a PEM bundle of certificate authorities trusted for the
	// control plane's certificate, besides the system's ("" for the
	// system's only).
	CAFile string
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.LeaseDuration, 15*time.Second)
	def(&c.RenewDeadline, 10*time.Second)
	def(&c.RetryPeriod, 2*time.Second)
	def(&c.Resync, 5*time.Minute)
	def(&c.RolloutTimeout, 5*time.Minute)
	def(&c.BackoffMin, time.Second)
	def(&c.BackoffMax, time.Minute)
	def(&c.LogBackoffMin, DefaultLogBackoffMin)
	def(&c.LogBackoffMax, DefaultLogBackoffMax)
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.LogStreams <= 0 {
		c.LogStreams = DefaultLogStreams
	}
	if c.Namespace == "" {
		c.Namespace = "nebula-system"
	}
	if c.LeaseName == "" {
		c.LeaseName = "nebula-agent"
	}
	if c.Identity == "" {
		c.Identity, _ = os.Hostname()
	}
}

// Validate reports what is missing or wrong, for the command line.
func (c Config) Validate() error {
	var errs []string
	if c.Server == "" {
		errs = append(errs, "the control plane URL is required (--server or NEBULA_AGENT_SERVER)")
	} else if !strings.HasPrefix(c.Server, "http://") && !strings.HasPrefix(c.Server, "https://") {
		errs = append(errs, fmt.Sprintf("the control plane URL %q must start with http:// or https://", c.Server))
	}
	if c.TokenFile == "" {
		errs = append(errs, "the token file is required (--token-file or NEBULA_AGENT_TOKEN_FILE)")
	}
	if c.KubeQPS < 0 || c.KubeBurst < 0 || c.KubeReadQPS < 0 || c.KubeReadBurst < 0 || c.KubeLogsQPS < 0 || c.KubeLogsBurst < 0 ||
		c.Concurrency < 0 || c.LogStreams < 0 {
		errs = append(errs, "the request rates, bursts, concurrency and log streams must not be negative")
	}
	if c.LogBackoffMin > 0 && c.LogBackoffMax > 0 && c.LogBackoffMin > c.LogBackoffMax {
		errs = append(errs, "the log backoff's minimum must not be over its maximum")
	}
	if c.LeaseDuration > 0 && c.RenewDeadline >= c.LeaseDuration {
		errs = append(errs, "the renew deadline must be shorter than the lease duration")
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Agent is one replica.
type Agent struct {
	cfg  Config
	kube Clients
	log  *slog.Logger

	// serving is held by the one session loop of this replica: a lost
	// and regained lease never runs two.
	serving sync.Mutex

	mu      sync.Mutex
	cluster string            // learnt from the welcome
	state   *protocol.Desired // the newest state received, re-applied on resync
	// logSince is the time of the last log line sent per container stream,
	// for the next session.
	logSince logSince
	// redacting keeps the desired state's secret values as a replacer,
	// per revision (secretValues).
	redacting struct {
		mu  sync.Mutex
		rev int64
		r   *strings.Replacer
	}
	acked map[int64]string // the result last reported per revision
	floor int64            // the newest revision applied (persisted)
	// floorHash is the hash of the state applied at floor (persisted),
	// which heartbeats carry.
	floorHash appliedHash
	done      map[string]protocol.CommandAck

	// While leading: the cache of the managed objects, the queue of
	// services to reconcile after a change in the cluster, and the
	// applier once the cluster is known (under mu).
	cache   *Cache
	queue   workqueue.TypedDelayingInterface[string]
	applier *Applier
	// index is the held state's services by ServiceKey (under mu); conn
	// the session's connection, nil between sessions (under mu).
	index map[string]indexed
	conn  sender
	// sessionCaps are the capabilities of the session (under mu); drifts
	// when each drift was last told (driftQuiet).
	sessionCaps []string
	drifts      map[string]time.Time
	// pending is, during a pass, the services it has yet to step, each
	// with whether a change in the cluster was left to the pass (under
	// mu).
	pending map[string]bool
	// settled is, per ServiceKey, the desired form each service was last
	// reconciled to without an error in this session (under mu; nil
	// until the session's first pass, emptied by a whole pass).
	settled map[string]settledAs
	// ro keeps the stages reported and the pinned releases.
	ro rollouts
	// locks serialize the reconciles of one service.
	locks sync.Map // ServiceKey → *sync.Mutex
	// reconciling counts the reconciles taken from the queue and not yet
	// done.
	reconciling atomic.Int32
}

// sender is a session's connection as rollouts report on it.
type sender interface {
	send(typ string, body any) error
}

// indexed is one service of the held state.
type indexed struct {
	ns  desired.Namespace
	svc desired.Service
}

// Defaults for the settings that scale with the cluster: a 3,000-object
// cluster is written in about 15 s at 200 requests/s, and 16 services at
// once (16 requests in flight at most) keep a change of one service's 50
// environments near a second while the API server is busy rolling pods
// (docs/benchmarks.md, "Agent at scale": 8 took twice as long).
const (
	DefaultKubeQPS     = 200
	DefaultKubeBurst   = 400
	DefaultConcurrency = 16
)

func (a *Agent) clusterID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cluster
}

// KubeConfig loads the Kubernetes client configuration: the kubeconfig
// when one is given, the pod's service account otherwise. NewClients makes
// the agent's two clients of it, each with its own rate limit.
func KubeConfig(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	rc.UserAgent = "nebula-agent"
	// Protobuf, as the cluster's own controllers talk: the API server
	// encodes the answers and the watch events of every object the agent
	// manages at a fraction of JSON's cost. (Server-side apply bodies stay
	// JSON; only what comes back changes.)
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return rc, nil
}

// New builds an agent over its Kubernetes clients.
func New(cfg Config, kube Clients, log *slog.Logger) *Agent {
	cfg.defaults()
	return &Agent{cfg: cfg, kube: kube, log: log, acked: map[int64]string{}, done: map[string]protocol.CommandAck{},
		ro: rollouts{reported: map[string]protocol.Stage{}, pins: map[string]pin{}}}
}

// Run campaigns for the Lease and, while leading, holds the session with
// the control plane. It returns when ctx ends, or with an error the agent
// cannot get past by retrying (no protocol version in common).
func (a *Agent) Run(ctx context.Context) error {
	a.loadState(ctx)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: a.cfg.Namespace, Name: a.cfg.LeaseName},
		Client:     a.kube.Write.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: a.cfg.Identity},
	}
	fatal := make(chan error, 1)
	for ctx.Err() == nil {
		lctx, cancel := context.WithCancel(ctx)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			Name:            a.cfg.LeaseName,
			LeaseDuration:   a.cfg.LeaseDuration,
			RenewDeadline:   a.cfg.RenewDeadline,
			RetryPeriod:     a.cfg.RetryPeriod,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					a.log.Info("leading: holding the control plane session", "identity", a.cfg.Identity)
					if err := a.serve(ctx); err != nil {
						select {
						case fatal <- err:
						default:
						}
						cancel()
					}
				},
				OnStoppedLeading: func() { a.log.Info("not leading", "identity", a.cfg.Identity) },
				OnNewLeader: func(id string) {
					if id != a.cfg.Identity {
						a.log.Info("another replica leads", "leader", id)
					}
				},
			},
		})
		if err != nil {
			cancel()
			return fmt.Errorf("leader election: %w", err)
		}
		le.Run(lctx) // returns when the lease is lost or ctx ends
		cancel()
		select {
		case err := <-fatal:
			return err
		default:
		}
	}
	return nil
}

// errFatal marks an error that reconnecting cannot fix.
var errFatal = errors.New("fatal")

// serve keeps a session open with capped, jittered backoff between tries,
// until ctx ends (the lease is lost).
func (a *Agent) serve(ctx context.Context) error {
	a.serving.Lock()
	defer a.serving.Unlock()
	stop, err := a.watch(ctx)
	if err != nil {
		return nil // the lease is lost, or the agent stops
	}
	defer stop()
	b := backoff{min: a.cfg.BackoffMin, max: a.cfg.BackoffMax}
	for ctx.Err() == nil {
		welcomed, err := a.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errFatal) {
			a.log.Error("stopping: the control plane cannot be served by this agent", "error", err)
			return err
		}
		if welcomed {
			b.reset()
		}
		wait := b.next()
		if welcomed && errors.Is(err, errGoingAway) {
			// A rolling restart: another replica is up behind the same
			// URL. Come back within a quarter second (jittered, so that
			// a fleet does not arrive at once), not after a backoff step.
			wait = rand.N(goingAwayJitter)
		}
		a.log.Warn("session ended; reconnecting", "error", err, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return nil
}

// goingAwayJitter bounds the wait before reconnecting after a replica went
// away.
const goingAwayJitter = 250 * time.Millisecond

// backoff doubles from min to max with "equal jitter": each wait is
// uniformly between half and all of the current step, so that a fleet of
// agents that lost the control plane together does not return together.
type backoff struct {
	min, max time.Duration
	n        int
}

func (b *backoff) next() time.Duration {
	// Doubling stops at max; checking before each shift means it never
	// overflows, whatever min and max are.
	d := b.min
	for i := 0; i < b.n && d < b.max; i++ {
		if d > b.max/2 {
			d = b.max
			break
		}
		d *= 2
	}
	if d > b.max || d <= 0 {
		d = b.max
	}
	b.n++
	return d/2 + rand.N(d/2+1)
}

func (b *backoff) reset() { b.n = 0 }

// stateConfigMap keeps the newest applied revision across restarts and
// replicas, so that no replica ever applies an older state after it. It is
// named after the Lease, as it belongs to the replicas that share it.
func (a *Agent) stateConfigMap() string { return a.cfg.LeaseName + "-state" }

// loadState reads the newest applied revision and the pinned releases.
func (a *Agent) loadState(ctx context.Context) {
	cm, err := a.kube.Write.CoreV1().ConfigMaps(a.cfg.Namespace).Get(ctx, a.stateConfigMap(), metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			a.log.Warn("reading the applied revision", "error", err)
		}
		return
	}
	n, _ := strconv.ParseInt(cm.Data["appliedRevision"], 10, 64)
	a.mu.Lock()
	a.floor = n
	if h := cm.Data["appliedHash"]; h != "" {
		a.floorHash = appliedHash{n, h}
	}
	a.mu.Unlock()
	if p := cm.Data["pins"]; p != "" {
		pins := map[string]pin{}
		if err := json.Unmarshal([]byte(p), &pins); err != nil {
			a.log.Warn("reading the pinned releases", "error", err)
			return
		}
		a.ro.mu.Lock()
		a.ro.pins = pins
		a.ro.mu.Unlock()
	}
}

// appliedHash is the hash of the state applied at a revision.
type appliedHash struct {
	revision int64
	hash     string
}

// of is the hash if it is revision's, "" otherwise.
func (h appliedHash) of(revision int64) string {
	if revision == 0 || h.revision != revision {
		return ""
	}
	return h.hash
}

// saveState records the applied revision and the pinned releases. Both
// go in one apply: the agent owns every key of the ConfigMap.
func (a *Agent) saveState(ctx context.Context) {
	a.mu.Lock()
	cluster, rev, hash := a.cluster, a.floor, a.floorHash.of(a.floor)
	a.mu.Unlock()
	a.ro.mu.Lock()
	pins, _ := json.Marshal(a.ro.pins)
	a.ro.mu.Unlock()
	cm := corev1ac.ConfigMap(a.stateConfigMap(), a.cfg.Namespace).
		WithLabels(map[string]string{LabelManagedBy: ManagedBy}).
		WithData(map[string]string{"appliedRevision": strconv.FormatInt(rev, 10), "appliedHash": hash, "cluster": cluster,
			"pins": string(pins)})
	if _, err := a.kube.Write.CoreV1().ConfigMaps(a.cfg.Namespace).Apply(ctx, cm,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		a.log.Warn("recording the applied revision and pinned releases", "revision", rev, "error", err)
	}
}

func (a *Agent) savePins(ctx context.Context) { a.saveState(ctx) }

// watch starts, for as long as ctx (the lease) lasts, the cache of the
// managed objects and the workers that reconcile a service when something
// of it changes; stop ends them. It fails only when ctx ends first.
func (a *Agent) watch(ctx context.Context) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	queue := workqueue.NewTypedDelayingQueue[string]()
	c := NewCache(a.kube.Write, func(ns, service string) {
		if service == "" {
			return
		}
		key := ServiceKey(ns, service)
		a.mu.Lock()
		_, known := a.index[key]
		a.mu.Unlock()
		if known {
			queue.Add(key)
		}
	})
	for ctx.Err() == nil {
		if err = c.Start(ctx); err == nil {
			break
		}
		a.log.Warn("watching the managed objects", "error", err)
	}
	if ctx.Err() != nil {
		cancel()
		queue.ShutDown()
		c.Shutdown()
		return nil, ctx.Err()
	}
	a.mu.Lock()
	a.cache, a.queue = c, queue
	a.mu.Unlock()
	var wg sync.WaitGroup
	for range a.cfg.Concurrency {
		wg.Go(func() {
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				a.reconciling.Add(1)
				a.reconcileKey(ctx, key)
				queue.Done(key)
				a.reconciling.Add(-1)
			}
		})
	}
	return func() {
		cancel()
		queue.ShutDown()
		wg.Wait()
		c.Shutdown()
		a.mu.Lock()
		a.cache, a.queue, a.applier, a.settled = nil, nil, nil, nil
		a.mu.Unlock()
	}, nil
}

// recheck reconciles a service again after d (a rollout's timeout, a
// failed step).
func (a *Agent) recheck(key string, d time.Duration) {
	a.mu.Lock()
	q := a.queue
	a.mu.Unlock()
	if q != nil {
		q.AddAfter(key, d)
	}
}

// lock serializes the work on one service.
func (a *Agent) lock(key string) func() {
	m, _ := a.locks.LoadOrStore(key, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// reconcileKey reconciles one service of the held state after a change in
// the cluster.
func (a *Agent) reconcileKey(ctx context.Context, key string) {
	a.mu.Lock()
	it, ok := a.index[key]
	ap := a.applier
	_, later := a.pending[key]
	if later {
		a.pending[key] = true
	}
	a.mu.Unlock()
	if !ok || ap == nil || later {
		return
	}
	defer a.lock(key)()
	if res := a.reconcileNoted(ctx, ap, it.ns, it.svc); len(res.Errors) > 0 {
		a.log.Warn("reconciling a service", "service", key, "errors", len(res.Errors),
			"first", res.Errors[0].Object+": "+res.Errors[0].Message)
		a.recheck(key, 5*time.Second)
	}
}

// readToken reads the connect token from its file.
func (a *Agent) readToken() (string, error) {
	b, err := os.ReadFile(a.cfg.TokenFile)
	if err != nil {
		return "", fmt.Errorf("reading the connect token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("the connect token file %s is empty", a.cfg.TokenFile)
	}
	return tok, nil
}
