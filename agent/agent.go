package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

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
	// Version and Image are reported in the inventory.
	Version, Image string
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
	kube kubernetes.Interface
	log  *slog.Logger

	// serving is held by the one session loop of this replica: a lost
	// and regained lease never runs two.
	serving sync.Mutex

	mu      sync.Mutex
	cluster string            // learnt from the welcome
	state   *protocol.Desired // the newest state received, re-applied on resync
	acked   map[int64]string  // the result last reported per revision
	floor   int64             // the newest revision applied (persisted)
	done    map[string]protocol.CommandAck

	// Rollouts under way, releases pinned after a rollback, and the final
	// stage of finished rollouts: the worker goroutine's only.
	rollouts map[string]*rollout
	pinned   map[string]pin
	finals   map[string]protocol.Stage
}

func (a *Agent) clusterID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cluster
}

// KubeConfig loads the Kubernetes client configuration: the kubeconfig
// when one is given, the pod's service account otherwise.
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
	rc.QPS, rc.Burst = 50, 100
	rc.UserAgent = "nebula-agent"
	return rc, nil
}

// New builds an agent over a Kubernetes client.
func New(cfg Config, kube kubernetes.Interface, log *slog.Logger) *Agent {
	cfg.defaults()
	return &Agent{cfg: cfg, kube: kube, log: log, acked: map[int64]string{}, done: map[string]protocol.CommandAck{},
		rollouts: map[string]*rollout{}, pinned: map[string]pin{}, finals: map[string]protocol.Stage{}}
}

// Run campaigns for the Lease and, while leading, holds the session with
// the control plane. It returns when ctx ends, or with an error the agent
// cannot get past by retrying (no protocol version in common).
func (a *Agent) Run(ctx context.Context) error {
	a.floor = a.loadFloor(ctx)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: a.cfg.Namespace, Name: a.cfg.LeaseName},
		Client:     a.kube.CoordinationV1(),
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

func (a *Agent) loadFloor(ctx context.Context) int64 {
	cm, err := a.kube.CoreV1().ConfigMaps(a.cfg.Namespace).Get(ctx, a.stateConfigMap(), metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			a.log.Warn("reading the applied revision", "error", err)
		}
		return 0
	}
	n, _ := strconv.ParseInt(cm.Data["appliedRevision"], 10, 64)
	return n
}

func (a *Agent) saveFloor(ctx context.Context, cluster string, rev int64) {
	cm := corev1ac.ConfigMap(a.stateConfigMap(), a.cfg.Namespace).
		WithLabels(map[string]string{LabelManagedBy: ManagedBy}).
		WithData(map[string]string{"appliedRevision": strconv.FormatInt(rev, 10), "cluster": cluster})
	if _, err := a.kube.CoreV1().ConfigMaps(a.cfg.Namespace).Apply(ctx, cm,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		a.log.Warn("recording the applied revision", "revision", rev, "error", err)
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
