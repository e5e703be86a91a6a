package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// FieldManager owns every field the agent applies (server-side apply).
const FieldManager = "nebula-agent"

// Labels on everything the agent manages. Pruning only ever considers
// objects that carry LabelManagedBy=ManagedBy and this cluster's LabelCluster.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "nebulactrl"
	LabelCluster   = "nebula.dev/cluster"
	LabelProject   = "nebula.dev/project"
	LabelEnv       = "nebula.dev/environment"
	LabelService   = "nebula.dev/service"
	LabelProcess   = "nebula.dev/process"
	LabelRelease   = "nebula.dev/release"
	// AnnotationEnv fingerprints a service's variables on its pod template
	// (secret values by their version only), so that a changed variable
	// rolls the pods.
	AnnotationEnv = "nebula.dev/env-version"
	// AnnotationApplied is the hash of the form the agent last applied to
	// an object: an object whose hash matches the desired form's (and
	// whose fields still hold it) is not written again.
	AnnotationApplied = "nebula.dev/applied"
	// AnnotationDeployment names, on a release's Deployments, the
	// deployment whose rollout they belong to, and AnnotationStarted when
	// that rollout began: a restarted agent, or the other replica, knows
	// from the cluster which rollouts began and how long ago.
	AnnotationDeployment = "nebula.dev/deployment"
	AnnotationStarted    = "nebula.dev/rollout-started"
)

// Applier makes the cluster match a desired state, writing only objects
// whose desired form differs from what runs: an object carries the hash of
// the form last applied (AnnotationApplied), and one whose hash matches and
// whose live fields still hold every value the agent sets is left alone. A
// change behind the agent's back (another field manager, kubectl edit)
// shows in the live fields, and the object is applied again. Reads come
// from the Cache; only writes reach the API server.
type Applier struct {
	Client kubernetes.Interface
	Cache  *Cache
	// Cluster is the cluster id the agent serves; states of others are
	// refused.
	Cluster string
	// Concurrency bounds the services applied at once (default 8 here; the
	// agent sets DefaultConcurrency).
	Concurrency int
	// Now stamps the start of a rollout on its Deployments (default
	// time.Now).
	Now func() time.Time
	// Drifted, when set, is told of an object found changed outside
	// NebulaCtrl before it is applied again: the fields that no longer
	// hold what the agent applied, and the other field managers of it.
	Drifted func(o object, live metaObject, fields, managers []string)

	mu sync.Mutex
	// Traffic names, per ServiceKey, the release a service's Services
	// route to while a newer release is started and probed; that release's
	// Deployments are kept. Without an entry, Services route to the
	// state's release.
	Traffic map[string]int
	// Pinned names, per ServiceKey, a release that stays in place of the
	// state's: its rollout failed and was rolled back, and the control
	// plane has not yet sent the state without it. Nothing of the state's
	// release is applied for the service.
	Pinned map[string]int
	// clashes are the objects two services of a namespace both make, as
	// the last whole pass found them: applied for neither.
	clashes map[object]bool

	// held remembers, per object, the resource version at which its live
	// form was last found to hold a desired hash (a heldAt): checking the
	// same version against the same hash again skips comparing its fields,
	// which is most of an unchanged pass's CPU.
	held sync.Map
}

type heldAt struct{ version, hash string }

// clashSet is the objects the last whole pass found two services making.
func (a *Applier) clashSet() map[object]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.clashes
}

// ServiceKey names a service in one namespace.
func ServiceKey(namespace, service string) string { return namespace + "/" + service }

// setRoute sets, for a service, the release its traffic stays on while
// its rollout is under way (0: the state's release) and the release
// pinned in place of the state's after a rollback (0: none).
func (a *Applier) setRoute(key string, traffic, pinned int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Traffic == nil {
		a.Traffic, a.Pinned = map[string]int{}, map[string]int{}
	}
	set := func(m map[string]int, v int) {
		if v == 0 {
			delete(m, key)
		} else {
			m[key] = v
		}
	}
	set(a.Traffic, traffic)
	set(a.Pinned, pinned)
}

// routed is the release a service's Services select.
func (a *Applier) routed(ns string, svc desired.Service) int {
	key := ServiceKey(ns, svc.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.Pinned[key]; ok {
		return r
	}
	if r, ok := a.Traffic[key]; ok {
		return r
	}
	return svc.Release
}

// pinned tells whether a service's release is pinned (rolled back).
func (a *Applier) pinned(ns, service string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.Pinned[ServiceKey(ns, service)]
	return ok
}

// protected tells whether a Deployment of a service's release must stay
// though the state does not have it.
func (a *Applier) protected(ns, service, release string) bool {
	key := ServiceKey(ns, service)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range []map[string]int{a.Traffic, a.Pinned} {
		if r, ok := m[key]; ok && strconv.Itoa(r) == release {
			return true
		}
	}
	return false
}

// object names one Kubernetes object in errors and in the pruning set.
type object struct{ kind, namespace, name string }

func (o object) String() string {
	if o.namespace == "" {
		return o.kind + " " + o.name
	}
	return o.kind + " " + o.namespace + "/" + o.name
}

// Result is what applying a state did.
type Result struct {
	// Applied counts the objects that hold their desired form (written
	// now or already), Checked those compared with the cluster now (a
	// service left to the cache is not), Written those written now.
	Applied, Checked, Written int
	Pruned                    int
	Errors                    []protocol.ObjectError
}

func (r *Result) add(o Result) {
	r.Applied += o.Applied
	r.Checked += o.Checked
	r.Written += o.Written
	r.Pruned += o.Pruned
	r.Errors = append(r.Errors, o.Errors...)
}

func (r *Result) fail(o object, err error) {
	r.Errors = append(r.Errors, protocol.ObjectError{Object: o.String(), Message: err.Error()})
}

// Apply makes the cluster match st: namespaces first, then the services,
// several at once, each in dependency order (secret, deployments,
// services, ingress); the services new to the cluster have everything but
// their Deployments written before any service's Deployments. Each failure is reported for its object and the
// others still go ahead. Pruning runs only when every object applied: a
// partly applied state never deletes anything. Held services are neither
// applied nor pruned.
func (a *Applier) Apply(ctx context.Context, st desired.State) Result {
	return a.ApplyWith(ctx, st, a.ApplyService)
}

// ApplyWith is Apply with each service made to match by step (the agent's
// rollouts decide there where a service's traffic goes).
func (a *Applier) ApplyWith(ctx context.Context, st desired.State, step func(ctx context.Context, ns desired.Namespace, svc desired.Service) Result) Result {
	var res Result
	if string(st.Cluster) != a.Cluster {
		res.Errors = append(res.Errors, protocol.ObjectError{Object: "state",
			Message: fmt.Sprintf("the state is for cluster %s, this agent serves %s", st.Cluster, a.Cluster)})
		return res
	}
	keep := map[object]bool{}
	clashes := map[object]bool{}
	type job struct {
		ns  desired.Namespace
		svc desired.Service
	}
	var jobs []job
	for _, ns := range st.Namespaces {
		r := a.applyOne(ctx, object{"Namespace", "", ns.Name}, a.namespace(ns))
		res.add(r)
		if len(r.Errors) > 0 {
			continue // nothing inside can apply
		}
		// Two services can name an object alike (service "api" with
		// process "web-x", service "api-web" with process "x"): such an
		// object is applied for neither, and the failure says why.
		owners := map[object][]string{}
		for _, svc := range ns.Services {
			for _, o := range a.names(ns, svc) {
				owners[o] = append(owners[o], svc.Name)
				keep[o] = true
			}
			jobs = append(jobs, job{ns, svc})
		}
		for o, names := range owners {
			if len(names) > 1 {
				clashes[o] = true
				res.fail(o, fmt.Errorf("services %s both make this object; rename a service or a process",
					strings.Join(slices.Compact(names), " and ")))
			}
		}
	}
	a.mu.Lock()
	a.clashes = clashes
	a.mu.Unlock()

	each := func(jobs []job, f func(ctx context.Context, ns desired.Namespace, svc desired.Service) Result) {
		var mu sync.Mutex
		forEach(a.concurrency(), jobs, func(j job) {
			r := f(ctx, j.ns, j.svc)
			mu.Lock()
			res.add(r)
			mu.Unlock()
		})
	}
	// Services new to the cluster get their Secret, Services and Ingress
	// before any of their Deployments is written, as Helm and kubectl
	// order an install: a Deployment sets the cluster's controllers to
	// work (a ReplicaSet, pods to schedule and start, status updates),
	// which competes with the rest of the pass for the API server, and
	// its pods then start with their Secret and Services in place. The
	// step finds these objects holding their form and counts them; a
	// write that failed here is tried again, and reported, there.
	var fresh []job
	for _, j := range jobs {
		if a.isNew(j.ns, j.svc) {
			fresh = append(fresh, j)
		}
	}
	if len(fresh) > 0 {
		each(fresh, func(ctx context.Context, ns desired.Namespace, svc desired.Service) Result {
			r := a.applyObjects(ctx, ns, svc, func(o object) bool { return o.kind != "Deployment" })
			return Result{Written: r.Written}
		})
	}
	each(jobs, step)
	if len(res.Errors) > 0 {
		slices.SortFunc(res.Errors, func(x, y protocol.ObjectError) int { return cmp.Compare(x.Object, y.Object) })
		return res
	}
	pruned, errs := a.prune(ctx, st, keep)
	res.Pruned = pruned
	res.Errors = append(res.Errors, errs...)
	return res
}

// concurrency is how many services are applied, or objects pruned, at once.
func (a *Applier) concurrency() int {
	if a.Concurrency <= 0 {
		return 8
	}
	return a.Concurrency
}

// forEach calls f for each item, n at once, and returns when all returned.
func forEach[T any](n int, items []T, f func(T)) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(it)
		})
	}
	wg.Wait()
}

// ApplyService applies one service's objects that differ from their
// desired form (the Namespace must exist).
func (a *Applier) ApplyService(ctx context.Context, ns desired.Namespace, svc desired.Service) Result {
	return a.applyObjects(ctx, ns, svc, func(object) bool { return true })
}

// applyObjects applies those of a service's objects that which picks.
func (a *Applier) applyObjects(ctx context.Context, ns desired.Namespace, svc desired.Service, which func(object) bool) Result {
	var res Result
	a.mu.Lock()
	clashes := a.clashes
	a.mu.Unlock()
	for _, ac := range a.objects(ns, svc) {
		if clashes[ac.obj] || !which(ac.obj) || ctx.Err() != nil {
			continue
		}
		res.add(a.applyOne(ctx, ac.obj, ac))
	}
	return res
}

// isNew tells whether none of a service's objects is in the cluster yet.
func (a *Applier) isNew(ns desired.Namespace, svc desired.Service) bool {
	if a.Cache == nil {
		return false
	}
	for _, o := range a.names(ns, svc) {
		if a.Cache.Object(o) != nil {
			return false
		}
	}
	return true
}

// applyOne writes one object unless it holds its desired form already.
func (a *Applier) applyOne(ctx context.Context, o object, ac applyable) Result {
	var res Result
	body, err := json.Marshal(ac.config)
	if err != nil {
		res.fail(o, err)
		return res
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:12])
	res.Checked++
	if a.holds(o, hash, body) {
		res.Applied++
		return res
	}
	ac.stamp(hash)
	written, err := ac.apply(ctx, a.Client, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		res.fail(o, err)
		return res
	}
	if a.Cache != nil && written != nil {
		a.Cache.Observe(o, written)
	}
	res.Applied++
	res.Written++
	return res
}

// holds tells whether the live object already has the desired form: the
// hash it was last applied with is the desired one, and every field the
// form sets still has the value it sets.
func (a *Applier) holds(o object, hash string, body []byte) bool {
	if a.Cache == nil {
		return false
	}
	live := a.Cache.Object(o)
	if live == nil || live.GetAnnotations()[AnnotationApplied] != hash {
		return false
	}
	// A version is one state of the object: if its fields held the form
	// once, they still do. (Without versions, as in a fake clientset,
	// every check compares.)
	at := heldAt{live.GetResourceVersion(), hash}
	if v, ok := a.held.Load(o); ok && at.version != "" && v.(heldAt) == at {
		return true
	}
	var want map[string]any
	if err := json.Unmarshal(body, &want); err != nil {
		return false
	}
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false
	}
	delete(want, "kind")
	delete(want, "apiVersion")
	if !subset(want, have) {
		// The hash says the agent applied this form, and its fields no
		// longer hold it: changed behind the agent's back.
		if a.Drifted != nil {
			fields := changedFields(want, have, "", nil)
			a.Drifted(o, live, fields, otherManagers(live, fields))
		}
		return false
	}
	a.held.Store(o, at)
	return true
}

// subset tells whether every value of want is in have: maps key by key;
// lists of named items (containers, ports) by name, other lists item by
// item; numbers by value, whatever their Go type. A zero value in want (0,
// "", false, an empty map or list) also matches a field have leaves out:
// the API server omits empty fields (omitempty), so a probe's
// initialDelaySeconds: 0 is never in the live object.
func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !subset(v, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok && len(w) == 0 && have == nil {
			return true
		}
		if !ok || len(h) != len(w) {
			return false
		}
		if named(w) && named(h) {
			byName := map[any]any{}
			for _, it := range h {
				byName[it.(map[string]any)["name"]] = it
			}
			for _, it := range w {
				if !subset(it, byName[it.(map[string]any)["name"]]) {
					return false
				}
			}
			return true
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	case float64:
		if w == 0 && have == nil {
			return true // a zero the API server leaves out (omitempty)
		}
		switch h := have.(type) {
		case float64:
			return w == h
		case int64:
			return w == float64(h)
		case int32:
			return w == float64(h)
		case int:
			return w == float64(h)
		}
		return false
	case nil:
		return have == nil
	case string:
		return want == have || w == "" && have == nil
	case bool:
		return want == have || !w && have == nil
	default:
		return want == have
	}
}

// named tells whether every item of a list is an object with a name.
func named(l []any) bool {
	for _, it := range l {
		m, ok := it.(map[string]any)
		if !ok || m["name"] == nil {
			return false
		}
	}
	return len(l) > 0
}

// applyable is one object of a service, ready to apply: its apply
// configuration (hashed and compared with the live object), how to stamp
// the hash on it, and the call that applies it.
type applyable struct {
	obj    object
	config any
	stamp  func(hash string)
	apply  func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) (metaObject, error)
}

// Object names come from the desired package, which the compiler (service
// addresses) and previews use too.
var (
	DeploymentName = desired.DeploymentName
	ServiceName    = desired.ServiceName
	SecretName     = desired.SecretName
	IngressName    = desired.IngressName
)

func (a *Applier) nsLabels(ns desired.Namespace) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelCluster: a.Cluster,
		LabelProject: ns.Project, LabelEnv: ns.Environment}
}

func (a *Applier) svcLabels(ns desired.Namespace, svc desired.Service) map[string]string {
	l := a.nsLabels(ns)
	l[LabelService] = svc.Name
	return l
}

func stampOf(set func(map[string]string)) func(string) {
	return func(h string) { set(map[string]string{AnnotationApplied: h}) }
}

func (a *Applier) namespace(ns desired.Namespace) applyable {
	cfg := corev1ac.Namespace(ns.Name).WithLabels(a.nsLabels(ns))
	return applyable{object{"Namespace", "", ns.Name}, cfg, stampOf(func(m map[string]string) { cfg.WithAnnotations(m) }),
		func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) (metaObject, error) {
			return c.CoreV1().Namespaces().Apply(ctx, cfg, opts)
		}}
}

// names lists the objects objects makes, without building them: what a
// pass keeps and checks for clashes for every service, changed or not.
func (a *Applier) names(ns desired.Namespace, svc desired.Service) []object {
	var out []object
	pinned := a.pinned(ns.Name, svc.Name)
	// A pinned service runs its pinned release (its Deployment and Secret
	// kept by prune): the release of the state gets neither.
	if len(svc.Env) > 0 && !pinned {
		out = append(out, object{"Secret", ns.Name, SecretName(svc.Name, svc.Release)})
	}
	for _, p := range svc.Processes {
		if !pinned {
			out = append(out, object{"Deployment", ns.Name, DeploymentName(svc.Name, p.Name, svc.Release)})
		}
		if p.Port != nil {
			out = append(out, object{"Service", ns.Name, ServiceName(svc.Name, p.Name)})
		}
	}
	if len(svc.Domains) > 0 {
		out = append(out, object{"Ingress", ns.Name, IngressName(svc.Name)})
	}
	return out
}

// objects builds the objects a service is made of, in the order they are
// applied.
func (a *Applier) objects(ns desired.Namespace, svc desired.Service) []applyable {
	var out []applyable
	base := a.svcLabels(ns, svc)
	pinned := a.pinned(ns.Name, svc.Name)
	if len(svc.Env) > 0 && !pinned {
		data := make(map[string][]byte, len(svc.Env))
		for _, e := range svc.Env {
			data[e.Name] = []byte(e.Value)
		}
		name := SecretName(svc.Name, svc.Release)
		sec := corev1ac.Secret(name, ns.Name).WithLabels(with(base, LabelRelease, strconv.Itoa(svc.Release))).
			WithType(corev1.SecretTypeOpaque).WithData(data)
		out = append(out, applyable{object{"Secret", ns.Name, name}, sec,
			stampOf(func(m map[string]string) { sec.WithAnnotations(m) }),
			func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) (metaObject, error) {
				return c.CoreV1().Secrets(ns.Name).Apply(ctx, sec, opts)
			}})
	}
	envVersion := envFingerprint(svc.Env)
	for _, p := range svc.Processes {
		if !pinned {
			out = append(out, a.deployment(ns, svc, p, base, envVersion))
		}
		if p.Port == nil {
			continue
		}
		name := ServiceName(svc.Name, p.Name)
		labels := with(base, LabelProcess, p.Name)
		service := corev1ac.Service(name, ns.Name).WithLabels(labels).WithSpec(corev1ac.ServiceSpec().
			WithSelector(with(selectorOf(svc.Name, p.Name), LabelRelease, strconv.Itoa(a.routed(ns.Name, svc)))).
			WithPorts(corev1ac.ServicePort().WithName("http").WithProtocol(corev1.ProtocolTCP).
				WithPort(int32(*p.Port)).WithTargetPort(intstr.FromInt32(int32(*p.Port)))))
		out = append(out, applyable{object{"Service", ns.Name, name}, service,
			stampOf(func(m map[string]string) { service.WithAnnotations(m) }),
			func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) (metaObject, error) {
				return c.CoreV1().Services(ns.Name).Apply(ctx, service, opts)
			}})
	}
	if len(svc.Domains) > 0 {
		spec := networkingv1ac.IngressSpec()
		for _, d := range svc.Domains {
			spec.WithRules(networkingv1ac.IngressRule().WithHost(d.Host).WithHTTP(
				networkingv1ac.HTTPIngressRuleValue().WithPaths(networkingv1ac.HTTPIngressPath().
					WithPath("/").WithPathType(networkingv1.PathTypePrefix).
					WithBackend(networkingv1ac.IngressBackend().WithService(
						networkingv1ac.IngressServiceBackend().WithName(ServiceName(svc.Name, d.Process)).
							WithPort(networkingv1ac.ServiceBackendPort().WithNumber(int32(d.Port))))))))
		}
		ing := networkingv1ac.Ingress(IngressName(svc.Name), ns.Name).WithLabels(base).WithSpec(spec)
		out = append(out, applyable{object{"Ingress", ns.Name, IngressName(svc.Name)}, ing,
			stampOf(func(m map[string]string) { ing.WithAnnotations(m) }),
			func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) (metaObject, error) {
				return c.NetworkingV1().Ingresses(ns.Name).Apply(ctx, ing, opts)
			}})
	}
	return out
}

func (a *Applier) deployment(ns desired.Namespace, svc desired.Service, p desired.Process, base map[string]string, envVersion string) applyable {
	name := DeploymentName(svc.Name, p.Name, svc.Release)
	selector := with(selectorOf(svc.Name, p.Name), LabelRelease, strconv.Itoa(svc.Release))
	labels := with(with(base, LabelProcess, p.Name), LabelRelease, strconv.Itoa(svc.Release))
	ctr := corev1ac.Container().WithName(p.Name).WithImage(svc.Image)
	if len(p.Command) > 0 {
		ctr.WithCommand(p.Command...)
	}
	if len(svc.Env) > 0 {
		ctr.WithEnvFrom(corev1ac.EnvFromSource().WithSecretRef(corev1ac.SecretEnvSource().WithName(SecretName(svc.Name, svc.Release))))
	}
	if p.Port != nil {
		ctr.WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(int32(*p.Port)).WithProtocol(corev1.ProtocolTCP))
	}
	if pb := p.Probe; pb != nil {
		probe := corev1ac.Probe().WithInitialDelaySeconds(int32(pb.InitialDelaySeconds)).WithPeriodSeconds(int32(pb.PeriodSeconds))
		if pb.Path != nil {
			probe.WithHTTPGet(corev1ac.HTTPGetAction().WithPath(*pb.Path).WithPort(intstr.FromInt32(int32(pb.Port))))
		} else {
			probe.WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromInt32(int32(pb.Port))))
		}
		ctr.WithReadinessProbe(probe)
	}
	dep := appsv1ac.Deployment(name, ns.Name).WithLabels(labels).WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(int32(p.Replicas)).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
			WithAnnotations(map[string]string{AnnotationEnv: envVersion}).
			WithSpec(corev1ac.PodSpec().WithContainers(ctr))))
	if svc.Deployment != "" {
		// The rollout this release's Deployments belong to, and when it
		// began: kept from the live object while it is the same rollout.
		started := a.now().UTC().Format(time.RFC3339)
		if a.Cache != nil {
			if live := a.Cache.Object(object{"Deployment", ns.Name, name}); live != nil &&
				live.GetAnnotations()[AnnotationDeployment] == string(svc.Deployment) && live.GetAnnotations()[AnnotationStarted] != "" {
				started = live.GetAnnotations()[AnnotationStarted]
			}
		}
		dep.WithAnnotations(map[string]string{AnnotationDeployment: string(svc.Deployment), AnnotationStarted: started})
	}
	return applyable{object{"Deployment", ns.Name, name}, dep, stampOf(func(m map[string]string) { dep.WithAnnotations(m) }),
		func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) (metaObject, error) {
			return c.AppsV1().Deployments(ns.Name).Apply(ctx, dep, opts)
		}}
}

func (a *Applier) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func selectorOf(svc, proc string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelService: svc, LabelProcess: proc}
}

func with(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for key, val := range m {
		out[key] = val
	}
	out[k] = v
	return out
}

// envFingerprint identifies a service's variables: plain values by their
// value, secrets by their version, so the annotation gives nothing away.
func envFingerprint(env []desired.EnvVar) string {
	h := sha256.New()
	for _, e := range env {
		v := e.Value
		if e.Secret {
			v = e.Version
		}
		// The kind is part of each entry: a plain value never reads like
		// a secret's version.
		fmt.Fprintf(h, "%q\x00%t\x00%q\n", e.Name, e.Secret, v)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ManagedSelector selects every object this agent manages for cluster.
func ManagedSelector(cluster string) string {
	return LabelManagedBy + "=" + ManagedBy + "," + LabelCluster + "=" + cluster
}

// managed is ManagedSelector as a selector.
func managed(cluster string, more ...string) labels.Selector {
	set := labels.Set{LabelManagedBy: ManagedBy, LabelCluster: cluster}
	for i := 0; i+1 < len(more); i += 2 {
		set[more[i]] = more[i+1]
	}
	return labels.SelectorFromSet(set)
}

// prune deletes the managed objects the state no longer has, except those
// of held services: everything of a service that left the state (the
// Deployment its traffic was on included) and of an environment that left
// it. Namespaces are never deleted: one may hold more than what the agent
// put there. What exists comes from the cache; the deletes run
// Concurrency at once (within the write client's budget).
func (a *Applier) prune(ctx context.Context, st desired.State, keep map[object]bool) (int, []protocol.ObjectError) {
	held := map[[2]string]bool{}
	present := map[string]bool{} // by ServiceKey
	for _, ns := range st.Namespaces {
		for _, h := range ns.Held {
			held[[2]string{ns.Name, h.Name}] = true
		}
		for _, s := range ns.Services {
			present[ServiceKey(ns.Name, s.Name)] = true
		}
	}
	// The routes of services that left the state go with them: their
	// traffic has nowhere to stay.
	a.forgetRoutes(present)
	type found struct {
		obj     object
		service string
		release string
	}
	var all []found
	sel := managed(a.Cluster)
	for _, o := range a.Cache.Deployments("", sel) {
		all = append(all, found{object{"Deployment", o.Namespace, o.Name}, o.Labels[LabelService], o.Labels[LabelRelease]})
	}
	for _, o := range a.Cache.Services("", sel) {
		all = append(all, found{object{"Service", o.Namespace, o.Name}, o.Labels[LabelService], ""})
	}
	for _, o := range a.Cache.Ingresses("", sel) {
		all = append(all, found{object{"Ingress", o.Namespace, o.Name}, o.Labels[LabelService], ""})
	}
	for _, o := range a.Cache.Secrets("", sel) {
		all = append(all, found{object{"Secret", o.Namespace, o.Name}, o.Labels[LabelService], o.Labels[LabelRelease]})
	}
	gone := slices.DeleteFunc(all, func(f found) bool {
		return keep[f.obj] || held[[2]string{f.obj.namespace, f.service}] ||
			// A release's Deployment and its variables' Secret stay while
			// its traffic or pin does.
			(f.obj.kind == "Deployment" || f.obj.kind == "Secret" && f.release != "") &&
				present[ServiceKey(f.obj.namespace, f.service)] && a.protected(f.obj.namespace, f.service, f.release)
	})
	var mu sync.Mutex
	pruned := 0
	var errs []protocol.ObjectError
	forEach(a.concurrency(), gone, func(f found) {
		err := a.delete(ctx, f.obj)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, protocol.ObjectError{Object: f.obj.String(), Message: "pruning: " + err.Error()})
			return
		}
		pruned++
	})
	slices.SortFunc(errs, func(x, y protocol.ObjectError) int { return cmp.Compare(x.Object, y.Object) })
	return pruned, errs
}

// forgetRoutes drops the routes and pins of the services not present.
func (a *Applier) forgetRoutes(present map[string]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range []map[string]int{a.Traffic, a.Pinned} {
		maps.DeleteFunc(m, func(key string, _ int) bool { return !present[key] })
	}
}

// delete removes one managed object (gone already is fine).
func (a *Applier) delete(ctx context.Context, o object) error {
	background := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &background}
	rv := ""
	if live := a.Cache.Object(o); live != nil {
		rv = live.GetResourceVersion()
	}
	var err error
	switch o.kind {
	case "Deployment":
		err = a.Client.AppsV1().Deployments(o.namespace).Delete(ctx, o.name, del)
	case "Service":
		err = a.Client.CoreV1().Services(o.namespace).Delete(ctx, o.name, del)
	case "Ingress":
		err = a.Client.NetworkingV1().Ingresses(o.namespace).Delete(ctx, o.name, del)
	case "Secret":
		err = a.Client.CoreV1().Secrets(o.namespace).Delete(ctx, o.name, del)
	default:
		return fmt.Errorf("cannot delete a %s", o.kind)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	a.Cache.Deleted(o, rv)
	a.held.Delete(o)
	return nil
}

// Workloads lists the managed Deployments for the inventory.
func (a *Applier) Workloads() []protocol.Workload {
	deps := a.Cache.Deployments("", managed(a.Cluster))
	out := make([]protocol.Workload, 0, len(deps))
	for _, d := range deps {
		out = append(out, protocol.Workload{Namespace: d.Namespace, Name: d.Name,
			Replicas: int(ptrOr(d.Spec.Replicas, 1)), ReadyReplicas: int(d.Status.ReadyReplicas)})
	}
	slices.SortFunc(out, func(x, y protocol.Workload) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	return out
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// changedFields lists the dotted paths (at most 50) where have no longer
// holds want, as subset compares them; a named list item shows as
// path[name].
func changedFields(want, have any, path string, out []string) []string {
	if len(out) >= 50 {
		return out
	}
	w, okW := want.(map[string]any)
	h, okH := have.(map[string]any)
	if okW && okH {
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if !subset(w[k], h[k]) {
				out = changedFields(w[k], h[k], join(path, k), out)
			}
		}
		return out
	}
	wl, okW := want.([]any)
	hl, okH := have.([]any)
	if okW && okH && len(wl) == len(hl) && named(wl) && named(hl) {
		byName := map[any]any{}
		for _, it := range hl {
			byName[it.(map[string]any)["name"]] = it
		}
		for _, it := range wl {
			name := it.(map[string]any)["name"]
			if !subset(it, byName[name]) {
				out = changedFields(it, byName[name], fmt.Sprintf("%s[%v]", path, name), out)
			}
		}
		return out
	}
	return append(out, path)
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// otherManagers names the field managers other than the agent's that own
// a changed field (by its path in their managedFields), or, when none is
// found that way, every other manager of the object.
func otherManagers(live metaObject, fields []string) []string {
	var own, all []string
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == FieldManager || mf.Manager == "" {
			continue
		}
		if !slices.Contains(all, mf.Manager) {
			all = append(all, mf.Manager)
		}
		if mf.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(mf.FieldsV1.Raw, &set) != nil {
			continue
		}
		for _, f := range fields {
			if owns(set, f) && !slices.Contains(own, mf.Manager) {
				own = append(own, mf.Manager)
			}
		}
	}
	if len(own) > 0 {
		return own
	}
	if all == nil {
		return []string{}
	}
	return all
}

// owns tells whether a managed fields set (FieldsV1) holds the field at
// path: a.b.c is f:a → f:b → f:c, a named list item list[name] is
// f:list → k:{"name":"name"}.
func owns(set map[string]any, path string) bool {
	cur := set
	for _, seg := range strings.Split(path, ".") {
		name, item, hasItem := strings.Cut(seg, "[")
		next, ok := cur["f:"+name].(map[string]any)
		if !ok {
			return false
		}
		if hasItem {
			key := `k:{"name":"` + strings.TrimSuffix(item, "]") + `"}`
			if next, ok = next[key].(map[string]any); !ok {
				return false
			}
		}
		cur = next
	}
	return true
}
