package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
)

// Applier applies a cluster's whole desired state and prunes what the
// agent manages but the state no longer has.
type Applier struct {
	Client  kubernetes.Interface
	Cluster string // the cluster id the agent serves; states of others are refused
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
}

// ServiceKey names a service in one namespace.
func ServiceKey(namespace, service string) string { return namespace + "/" + service }

// routed is the release a service's Services select.
func (a *Applier) routed(ns string, svc desired.Service) int {
	key := ServiceKey(ns, svc.Name)
	if r, ok := a.Pinned[key]; ok {
		return r
	}
	if r, ok := a.Traffic[key]; ok {
		return r
	}
	return svc.Release
}

// protected tells whether a Deployment of a service's release must stay
// though the state does not have it.
func (a *Applier) protected(ns, service, release string) bool {
	key := ServiceKey(ns, service)
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
	Applied int
	Pruned  int
	Errors  []protocol.ObjectError
}

// Apply makes the cluster match st. Objects are applied in dependency
// order (namespaces, secrets, deployments, services, ingresses); each
// failure is reported for its object and the others still go ahead.
// Pruning runs only when every object applied: a partly applied state
// never deletes anything. Held services are neither applied nor pruned.
func (a *Applier) Apply(ctx context.Context, st desired.State) Result {
	var res Result
	if string(st.Cluster) != a.Cluster {
		res.Errors = append(res.Errors, protocol.ObjectError{Object: "state",
			Message: fmt.Sprintf("the state is for cluster %s, this agent serves %s", st.Cluster, a.Cluster)})
		return res
	}
	keep := map[object]bool{}
	fail := func(o object, err error) {
		res.Errors = append(res.Errors, protocol.ObjectError{Object: o.String(), Message: err.Error()})
	}
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	for _, ns := range st.Namespaces {
		o := object{"Namespace", "", ns.Name}
		_, err := a.Client.CoreV1().Namespaces().Apply(ctx, corev1ac.Namespace(ns.Name).WithLabels(a.nsLabels(ns)), opts)
		if err != nil {
			fail(o, err)
			continue // nothing inside can apply
		}
		res.Applied++
		// Two services can name an object alike (service "api" with
		// process "web-x", service "api-web" with process "x"): such an
		// object is applied for neither, and the failure says why.
		owners := map[object][]string{}
		var all []applyable
		for _, svc := range ns.Services {
			for _, ac := range a.objects(ns, svc) {
				owners[ac.obj] = append(owners[ac.obj], svc.Name)
				all = append(all, ac)
			}
		}
		for _, ac := range all {
			keep[ac.obj] = true
			if o := owners[ac.obj]; len(o) > 1 {
				fail(ac.obj, fmt.Errorf("services %s both make this object; rename a service or a process", strings.Join(slices.Compact(o), " and ")))
				delete(owners, ac.obj) // reported once
				continue
			} else if o == nil {
				continue // a clash already reported
			}
			if err := ac.apply(ctx, a.Client, opts); err != nil {
				fail(ac.obj, err)
				continue
			}
			res.Applied++
		}
	}
	if len(res.Errors) > 0 {
		return res
	}
	pruned, errs := a.prune(ctx, st, keep)
	res.Pruned = pruned
	res.Errors = append(res.Errors, errs...)
	return res
}

// applyable is one object of a service, ready to apply.
type applyable struct {
	obj   object
	apply func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) error
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

// objects builds the apply configurations of one service: a Secret of its
// variables, a Deployment per process of its release, a Service per
// process with a port, and an Ingress for its domains.
func (a *Applier) objects(ns desired.Namespace, svc desired.Service) []applyable {
	var out []applyable
	base := a.svcLabels(ns, svc)
	if len(svc.Env) > 0 {
		data := make(map[string][]byte, len(svc.Env))
		for _, e := range svc.Env {
			data[e.Name] = []byte(e.Value)
		}
		sec := corev1ac.Secret(SecretName(svc.Name), ns.Name).WithLabels(base).
			WithType(corev1.SecretTypeOpaque).WithData(data)
		out = append(out, applyable{object{"Secret", ns.Name, SecretName(svc.Name)},
			func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) error {
				_, err := c.CoreV1().Secrets(ns.Name).Apply(ctx, sec, opts)
				return err
			}})
	}
	envVersion := envFingerprint(svc.Env)
	_, pinned := a.Pinned[ServiceKey(ns.Name, svc.Name)]
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
		out = append(out, applyable{object{"Service", ns.Name, name},
			func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) error {
				_, err := c.CoreV1().Services(ns.Name).Apply(ctx, service, opts)
				return err
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
		out = append(out, applyable{object{"Ingress", ns.Name, IngressName(svc.Name)},
			func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) error {
				_, err := c.NetworkingV1().Ingresses(ns.Name).Apply(ctx, ing, opts)
				return err
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
		ctr.WithEnvFrom(corev1ac.EnvFromSource().WithSecretRef(corev1ac.SecretEnvSource().WithName(SecretName(svc.Name))))
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
	return applyable{object{"Deployment", ns.Name, name},
		func(ctx context.Context, c kubernetes.Interface, opts metav1.ApplyOptions) error {
			_, err := c.AppsV1().Deployments(ns.Name).Apply(ctx, dep, opts)
			return err
		}}
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

// prune deletes the managed objects the state no longer has, except those
// of held services. Namespaces are never deleted: one may hold more than
// what the agent put there.
func (a *Applier) prune(ctx context.Context, st desired.State, keep map[object]bool) (int, []protocol.ObjectError) {
	held := map[[2]string]bool{}
	for _, ns := range st.Namespaces {
		for _, h := range ns.Held {
			held[[2]string{ns.Name, h.Name}] = true
		}
	}
	list := metav1.ListOptions{LabelSelector: ManagedSelector(a.Cluster)}
	type found struct {
		obj     object
		service string
		release string
	}
	var all []found
	var errs []protocol.ObjectError
	listErr := func(kind string, err error) {
		errs = append(errs, protocol.ObjectError{Object: kind + "s", Message: "listing for pruning: " + err.Error()})
	}
	if l, err := a.Client.AppsV1().Deployments("").List(ctx, list); err != nil {
		listErr("Deployment", err)
	} else {
		for _, o := range l.Items {
			all = append(all, found{object{"Deployment", o.Namespace, o.Name}, o.Labels[LabelService], o.Labels[LabelRelease]})
		}
	}
	if l, err := a.Client.CoreV1().Services("").List(ctx, list); err != nil {
		listErr("Service", err)
	} else {
		for _, o := range l.Items {
			all = append(all, found{object{"Service", o.Namespace, o.Name}, o.Labels[LabelService], ""})
		}
	}
	if l, err := a.Client.NetworkingV1().Ingresses("").List(ctx, list); err != nil {
		listErr("Ingress", err)
	} else {
		for _, o := range l.Items {
			all = append(all, found{object{"Ingress", o.Namespace, o.Name}, o.Labels[LabelService], ""})
		}
	}
	if l, err := a.Client.CoreV1().Secrets("").List(ctx, list); err != nil {
		listErr("Secret", err)
	} else {
		for _, o := range l.Items {
			all = append(all, found{object{"Secret", o.Namespace, o.Name}, o.Labels[LabelService], ""})
		}
	}
	if len(errs) > 0 {
		return 0, errs // an incomplete picture prunes nothing
	}
	slices.SortFunc(all, func(x, y found) int { return cmp.Compare(x.obj.String(), y.obj.String()) })
	pruned := 0
	background := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &background}
	for _, f := range all {
		if keep[f.obj] || held[[2]string{f.obj.namespace, f.service}] ||
			f.obj.kind == "Deployment" && a.protected(f.obj.namespace, f.service, f.release) {
			continue
		}
		var err error
		switch f.obj.kind {
		case "Deployment":
			err = a.Client.AppsV1().Deployments(f.obj.namespace).Delete(ctx, f.obj.name, del)
		case "Service":
			err = a.Client.CoreV1().Services(f.obj.namespace).Delete(ctx, f.obj.name, del)
		case "Ingress":
			err = a.Client.NetworkingV1().Ingresses(f.obj.namespace).Delete(ctx, f.obj.name, del)
		case "Secret":
			err = a.Client.CoreV1().Secrets(f.obj.namespace).Delete(ctx, f.obj.name, del)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, protocol.ObjectError{Object: f.obj.String(), Message: "pruning: " + err.Error()})
			continue
		}
		pruned++
	}
	return pruned, errs
}

// Workloads lists the managed Deployments for the inventory.
func (a *Applier) Workloads(ctx context.Context) ([]protocol.Workload, error) {
	l, err := a.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector(a.Cluster)})
	if err != nil {
		return nil, err
	}
	out := make([]protocol.Workload, 0, len(l.Items))
	for _, d := range l.Items {
		out = append(out, protocol.Workload{Namespace: d.Namespace, Name: d.Name,
			Replicas: int(ptrOr(d.Spec.Replicas, 1)), ReadyReplicas: int(d.Status.ReadyReplicas)})
	}
	slices.SortFunc(out, func(x, y protocol.Workload) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	return out, nil
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
