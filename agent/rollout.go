package agent

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// A rollout moves one service to the release of a deployment: the new
// release's Deployments start beside the old ones (STARTING), their pods
// must pass their readiness probes (PROBING), then the Services route to
// them (SWITCHING_TRAFFIC) and the old release's Deployments go
// (RETIRING); SUCCEEDED. Pods that are not all Ready within the rollout
// timeout end it: with an earlier release to return to, the new
// Deployments are removed and traffic never left the old one
// (ROLLED_BACK); without one, FAILED. Every stage is reported to the
// control plane with what happened.
//
// Where a rollout stands is read from the cluster, never kept only in
// memory: the new release's Deployments carry the deployment they belong
// to and when its rollout began (AnnotationDeployment, AnnotationStarted),
// the Services say which release has the traffic, and the Deployments of
// other releases say whether retiring is done. A resync, a restarted agent
// and the other replica after a leader change all find a finished rollout
// finished and one under way where it is; none starts one again. The
// releases pinned after a rollback are kept in the state ConfigMap.

// Stage names as the protocol carries them (the model's vocabulary).
const (
	stageStarting  = string(model.StageStarting)
	stageProbing   = string(model.StageProbing)
	stageSwitching = string(model.StageSwitchingTraffic)
	stageRetiring  = string(model.StageRetiring)
	stageSucceeded = string(model.StageSucceeded)
	stageFailed    = string(model.StageFailed)
	stageRolled    = string(model.StageRolledBack)
)

// final tells whether a stage ends the rollout.
func final(stage string) bool { return model.DeploymentStage(stage).Terminal() }

// rank orders the stages a rollout reaches; "" (nothing reported) first.
func rank(stage string) int {
	if stage == "" {
		return -1
	}
	return model.DeploymentStage(stage).Rank()
}

// pin is a rolled back rollout's release kept until the control plane
// sends the state without the failed one.
type pin struct {
	Deployment string `json:"deployment"`
	Release    int    `json:"release"`
}

// rollouts is what the agent keeps of rollouts between passes: the stage
// it last reported for each deployment of the state (to report each stage
// once), and the pins.
type rollouts struct {
	mu       sync.Mutex
	reported map[string]protocol.Stage
	pins     map[string]pin
}

// reconcile moves one service toward its desired state as far as its
// rollout allows now, and reports how far the rollout got. It is the one
// step of a whole pass (a new state, a resync) and of a reaction to a
// change in the cluster (a pod got Ready, someone edited an object).
// Callers hold the service's lock.
func (a *Agent) reconcile(ctx context.Context, ap *Applier, ns desired.Namespace, svc desired.Service) Result {
	key := ServiceKey(ns.Name, svc.Name)
	dep := string(svc.Deployment)
	a.ro.mu.Lock()
	p, pinned := a.ro.pins[key]
	if pinned && p.Deployment != dep {
		delete(a.ro.pins, key) // the control plane moved on from the failed one
		pinned = false
		a.ro.mu.Unlock()
		a.savePins(ctx)
	} else {
		a.ro.mu.Unlock()
	}
	if pinned {
		ap.setRoute(key, 0, p.Release)
		return ap.ApplyService(ctx, ns, svc)
	}

	// The route is set once, never cleared on the way: a prune running
	// beside this reconcile must always see the release traffic is on.
	v := a.inspect(ap.Cluster, ns.Name, svc)
	began := v.began(dep) // before this apply: a rollout that began earlier
	prev := v.previous(svc.Release)
	route := svc.Release
	if !v.ready && prev != 0 && !v.switched(svc.Release) {
		route = prev // traffic stays until the new release passed its probes
	}
	ap.setRoute(key, route, 0)
	res := ap.ApplyService(ctx, ns, svc)
	if dep == "" || len(res.Errors) > 0 {
		return res
	}
	if last := a.lastReported(dep); final(last) {
		return res
	}

	// How far the rollout is, and what to say at each stage reached.
	reached := []protocol.Stage{}
	say := func(stage, msg string) {
		reached = append(reached, protocol.Stage{Deployment: dep, Stage: stage, Message: clipMessage(msg), At: time.Now().UTC()})
	}
	processes := make([]string, len(svc.Processes))
	for i, p := range svc.Processes {
		processes[i] = p.Name
	}
	say(stageStarting, fmt.Sprintf("started release %d of %s: %s", svc.Release, svc.Name, strings.Join(processes, ", ")))
	after := a.inspect(ap.Cluster, ns.Name, svc) // as just applied
	if !after.ready {
		say(stageProbing, "waiting for readiness probes: "+after.detail)
		startedAt := after.startedAt(dep)
		if left := a.cfg.RolloutTimeout - time.Since(startedAt); left > 0 {
			a.recheck(key, left)
			a.tell(began, reached)
			return res
		}
		a.tell(began, reached)
		a.fail(ctx, ap, key, ns.Name, svc, prev, after.detail)
		return res
	}
	say(stageProbing, "readiness probes passed: "+after.detail)
	say(stageSwitching, fmt.Sprintf("routing %s to release %d", svc.Name, svc.Release))
	retiring := "no earlier release to retire"
	if prev != 0 {
		retiring = fmt.Sprintf("retiring release %d", prev)
	}
	say(stageRetiring, retiring)
	retired := []object{}
	for _, d := range after.others {
		retired = append(retired, object{"Deployment", d.Namespace, d.Name})
	}
	// The variables of the releases retired go with them (and a Secret of
	// the service from before releases had their own).
	for _, sec := range a.cache.Secrets(ns.Name, managed(ap.Cluster, LabelService, svc.Name)) {
		if sec.Labels[LabelRelease] != strconv.Itoa(svc.Release) {
			retired = append(retired, object{"Secret", sec.Namespace, sec.Name})
		}
	}
	for _, o := range retired {
		if err := ap.delete(ctx, o); err != nil {
			a.log.Warn("retiring the previous release", "service", key, "error", err)
			a.tell(began, reached)
			a.recheck(key, time.Second)
			return res
		}
	}
	say(stageSucceeded, fmt.Sprintf("release %d is live: %s", svc.Release, after.detail))
	a.tell(began, reached)
	return res
}

// tell reports the stages reached that were not reported yet, in order.
// A rollout this process did not see begin (began before a restart, or on
// the other replica) is reported at the stage it reached only: the stages
// before were told by whoever saw them, and the control plane fills gaps.
func (a *Agent) tell(began bool, reached []protocol.Stage) {
	if len(reached) == 0 {
		return
	}
	dep := reached[0].Deployment
	last := a.lastReported(dep)
	if began && last == "" {
		reached = reached[len(reached)-1:]
		if reached[0].Stage == stageStarting {
			reached = nil // it began and nothing moved since: no news
		}
	}
	for _, s := range reached {
		if rank(s.Stage) <= rank(last) {
			continue
		}
		a.report(s)
		last = s.Stage
	}
}

// lastReported is the stage this process last reported for a deployment.
func (a *Agent) lastReported(dep string) string {
	a.ro.mu.Lock()
	defer a.ro.mu.Unlock()
	return a.ro.reported[dep].Stage
}

// report sends a stage and remembers it, to send again on the next
// session if this one is gone.
func (a *Agent) report(s protocol.Stage) {
	a.ro.mu.Lock()
	a.ro.reported[s.Deployment] = s
	a.ro.mu.Unlock()
	a.log.Info("rollout", "deployment", s.Deployment, "stage", s.Stage, "message", s.Message)
	a.mu.Lock()
	c := a.conn
	a.mu.Unlock()
	if c == nil {
		return
	}
	if err := c.send(protocol.TypeStage, s); err != nil {
		a.log.Warn("sending a stage; it is sent again after reconnecting", "deployment", s.Deployment, "error", err)
	}
}

// resendStages tells a new session the stage last reported of every
// deployment of the state: one may have been lost with the last session.
func (a *Agent) resendStages(c sender, st desired.State) {
	live := map[string]bool{}
	for _, ns := range st.Namespaces {
		for _, svc := range ns.Services {
			live[string(svc.Deployment)] = true
		}
	}
	a.ro.mu.Lock()
	var out []protocol.Stage
	for dep, s := range a.ro.reported {
		if !live[dep] {
			delete(a.ro.reported, dep) // its deployment left the state: bounded by the state
			continue
		}
		out = append(out, s)
	}
	a.ro.mu.Unlock()
	for _, s := range out {
		_ = c.send(protocol.TypeStage, s)
	}
}

// fail ends a rollout whose pods did not all become Ready in time.
func (a *Agent) fail(ctx context.Context, ap *Applier, key, ns string, svc desired.Service, prev int, detail string) {
	dep := string(svc.Deployment)
	why := fmt.Sprintf("readiness probes did not pass within %s: %s", a.cfg.RolloutTimeout, detail)
	if prev == 0 {
		a.report(protocol.Stage{Deployment: dep, Stage: stageFailed, At: time.Now().UTC(),
			Message: clipMessage(why + "; there is no earlier release to return to")})
		return
	}
	failed := managed(ap.Cluster, LabelService, svc.Name, LabelRelease, strconv.Itoa(svc.Release))
	gone := []object{}
	for _, d := range a.cache.Deployments(ns, failed) {
		gone = append(gone, object{"Deployment", d.Namespace, d.Name})
	}
	// Its variables go with it (the release rolled back to reads its own).
	for _, sec := range a.cache.Secrets(ns, failed) {
		gone = append(gone, object{"Secret", sec.Namespace, sec.Name})
	}
	for _, o := range gone {
		if err := ap.delete(ctx, o); err != nil {
			a.log.Warn("removing the failed release", "service", key, "error", err)
			a.recheck(key, time.Second)
			return
		}
	}
	a.ro.mu.Lock()
	a.ro.pins[key] = pin{Deployment: dep, Release: prev}
	a.ro.mu.Unlock()
	a.savePins(ctx)
	a.report(protocol.Stage{Deployment: dep, Stage: stageRolled, At: time.Now().UTC(),
		Message: clipMessage(fmt.Sprintf("%s; traffic stayed on release %d and release %d was removed", why, prev, svc.Release))})
}

// view is one service as the cache shows it now.
type view struct {
	target   []*appsv1.Deployment // the desired release's, one per process present
	others   []*appsv1.Deployment // other releases'
	services []*corev1.Service
	ready    bool
	detail   string
}

// inspect reads a service's objects from the cache.
func (a *Agent) inspect(cluster, ns string, svc desired.Service) view {
	var v view
	for _, d := range a.cache.Deployments(ns, managed(cluster, LabelService, svc.Name)) {
		if d.Labels[LabelRelease] == strconv.Itoa(svc.Release) {
			v.target = append(v.target, d)
		} else {
			v.others = append(v.others, d)
		}
	}
	v.services = a.cache.Services(ns, managed(cluster, LabelService, svc.Name))
	v.ready, v.detail = a.readiness(v.target, len(svc.Processes))
	return v
}

// began tells whether the rollout of dep began already: its release's
// Deployments carry it.
func (v view) began(dep string) bool {
	for _, d := range v.target {
		if d.Annotations[AnnotationDeployment] == dep {
			return true
		}
	}
	return false
}

// startedAt is when the rollout of dep began, as its Deployments say.
func (v view) startedAt(dep string) time.Time {
	for _, d := range v.target {
		if d.Annotations[AnnotationDeployment] != dep {
			continue
		}
		if t, err := time.Parse(time.RFC3339, d.Annotations[AnnotationStarted]); err == nil {
			return t
		}
	}
	return time.Now()
}

// previous is the release the service's traffic is on, when not target:
// what its Services select, or else the newest other release it runs; 0
// when there is none.
func (v view) previous(target int) int {
	for _, s := range v.services {
		if r, err := strconv.Atoi(s.Spec.Selector[LabelRelease]); err == nil && r != target {
			return r
		}
	}
	prev := 0
	for _, d := range v.others {
		if r, err := strconv.Atoi(d.Labels[LabelRelease]); err == nil && r > prev {
			prev = r
		}
	}
	return prev
}

// switched tells whether every Service routes to target already.
func (v view) switched(target int) bool {
	for _, s := range v.services {
		if s.Spec.Selector[LabelRelease] != strconv.Itoa(target) {
			return false
		}
	}
	return len(v.services) > 0
}

// readiness tells whether every process's Deployment of the release is
// rolled out with all its pods Ready, and says how far each is.
func (a *Agent) readiness(deps []*appsv1.Deployment, processes int) (bool, string) {
	if len(deps) < processes {
		return false, fmt.Sprintf("%d of %d processes created", len(deps), processes)
	}
	all := true
	var parts []string
	for _, d := range deps {
		want := ptrOr(d.Spec.Replicas, 1)
		ok := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want && d.Status.ReadyReplicas == want
		ready := d.Status.ReadyReplicas
		if !ok {
			ready, ok = a.podsReady(d, want)
		}
		part := fmt.Sprintf("%s %d/%d ready", d.Labels[LabelProcess], ready, want)
		if !ok {
			all = false
			if why := a.unreadyPod(d); why != "" {
				part += " (" + why + ")"
			}
		}
		parts = append(parts, part)
	}
	slices.Sort(parts)
	return all, strings.Join(parts, ", ")
}

// podsReady reads a Deployment's rollout from its pods, as they change,
// rather than from its status: the Deployment's status follows its pods
// through the ReplicaSet and Deployment controllers, seconds behind when
// the cluster is busy. It is rolled out when as many pods of its current
// template as it wants are Ready and no pod of an earlier template runs.
// (Within one release a template changes only with the service's
// variables, whose fingerprint it carries, and its image.)
func (a *Agent) podsReady(d *appsv1.Deployment, want int32) (int32, bool) {
	sel, err := metaSelector(d)
	if err != nil {
		return 0, false
	}
	var ready, stale int32
	for _, p := range a.cache.Pods(d.Namespace, sel) {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if !ofTemplate(p, &d.Spec.Template) {
			stale++
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, ready == want && stale == 0
}

// ofTemplate tells whether a pod was made from the template: the same
// variables' fingerprint and the same images.
func ofTemplate(p *corev1.Pod, t *corev1.PodTemplateSpec) bool {
	if p.Annotations[AnnotationEnv] != t.Annotations[AnnotationEnv] || len(p.Spec.Containers) != len(t.Spec.Containers) {
		return false
	}
	for i, c := range t.Spec.Containers {
		if p.Spec.Containers[i].Image != c.Image {
			return false
		}
	}
	return true
}

// unreadyPod says why one pod of a Deployment is not Ready.
func (a *Agent) unreadyPod(d *appsv1.Deployment) string {
	sel, err := metaSelector(d)
	if err != nil {
		return ""
	}
	pods := a.cache.Pods(d.Namespace, sel)
	slices.SortFunc(pods, func(x, y *corev1.Pod) int { return strings.Compare(x.Name, y.Name) })
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				return fmt.Sprintf("pod %s: %s", p.Name, strings.TrimSpace(c.Reason+" "+c.Message))
			}
		}
	}
	return ""
}

func metaSelector(d *appsv1.Deployment) (labels.Selector, error) {
	if d.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	return labels.SelectorFromSet(d.Spec.Selector.MatchLabels), nil
}
