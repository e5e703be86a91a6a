package agent

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nebulactrl/nebula/internal/desired"
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
type rollout struct {
	deployment string
	namespace  string
	service    string
	target     int
	previous   int // the release traffic is on; 0 when none
	processes  []string
	started    time.Time
	stage      string // last reported
}

func (r *rollout) key() string { return ServiceKey(r.namespace, r.service) }

// Stage names as the protocol carries them.
const (
	stageStarting  = "STARTING"
	stageProbing   = "PROBING"
	stageSwitching = "SWITCHING_TRAFFIC"
	stageRetiring  = "RETIRING"
	stageSucceeded = "SUCCEEDED"
	stageFailed    = "FAILED"
	stageRolled    = "ROLLED_BACK"
)

// maxFinals bounds the final reports kept to send again after a reconnect.
const maxFinals = 200

// planRollouts compares the state with the rollouts under way before an
// apply: a service whose deployment is new starts a rollout, keeping
// traffic on the release its Services route to now. It returns the
// rollouts that start.
func (a *Agent) planRollouts(ctx context.Context, st desired.State) []*rollout {
	var started []*rollout
	live := map[string]bool{}
	for _, ns := range st.Namespaces {
		for _, svc := range ns.Services {
			key := ServiceKey(ns.Name, svc.Name)
			live[key] = true
			if svc.Deployment == "" {
				continue
			}
			dep := string(svc.Deployment)
			if r := a.rollouts[key]; r != nil && r.deployment == dep {
				continue
			}
			if pin, ok := a.pinned[key]; ok {
				if pin.deployment == dep {
					continue // rolled back; the control plane has not answered yet
				}
				delete(a.pinned, key)
			}
			if _, done := a.finals[dep]; done {
				continue
			}
			r := &rollout{deployment: dep, namespace: ns.Name, service: svc.Name, target: svc.Release, started: time.Now()}
			for _, p := range svc.Processes {
				r.processes = append(r.processes, p.Name)
			}
			r.previous = a.routedNow(ctx, ns.Name, svc.Name, svc.Release)
			a.rollouts[key] = r
			started = append(started, r)
		}
	}
	// A service gone from the state (deleted, held, moved) ends its rollout
	// without a report: its deployment ended on the control plane.
	for key := range a.rollouts {
		if !live[key] {
			delete(a.rollouts, key)
		}
	}
	for key := range a.pinned {
		if !live[key] {
			delete(a.pinned, key)
		}
	}
	return started
}

// routedNow is the release a service's traffic is on in the cluster: what
// its Services select, or else the newest other release it still runs; 0
// when it runs nothing.
func (a *Agent) routedNow(ctx context.Context, ns, service string, target int) int {
	sel := ManagedSelector(a.clusterID()) + "," + LabelService + "=" + service
	if l, err := a.kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
		for _, s := range l.Items {
			if r, err := strconv.Atoi(s.Spec.Selector[LabelRelease]); err == nil && r != target {
				return r
			}
		}
	}
	prev := 0
	if l, err := a.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
		for _, d := range l.Items {
			if r, err := strconv.Atoi(d.Labels[LabelRelease]); err == nil && r != target && r > prev {
				prev = r
			}
		}
	}
	return prev
}

// applier is the Applier for the current rollouts.
func (a *Agent) applier() *Applier {
	ap := &Applier{Client: a.kube, Cluster: a.clusterID(), Traffic: map[string]int{}, Pinned: map[string]int{}}
	for key, r := range a.rollouts {
		// Traffic stays on the previous release until the new one passed
		// its probes; from then on the state's release is routed.
		if r.previous != 0 && (r.stage == "" || r.stage == stageStarting || r.stage == stageProbing) {
			ap.Traffic[key] = r.previous
		}
	}
	for key, p := range a.pinned {
		ap.Pinned[key] = p.release
	}
	return ap
}

// pin is a rolled back rollout's release kept until the control plane
// sends the state without the failed one.
type pin struct {
	deployment string
	release    int
}

// report sends a rollout's stage (once per stage).
func (a *Agent) report(c *conn, r *rollout, stage, msg string) {
	if r.stage == stage {
		return
	}
	r.stage = stage
	s := protocol.Stage{Deployment: r.deployment, Stage: stage, Message: clipMessage(msg), At: time.Now().UTC()}
	if stage == stageSucceeded || stage == stageFailed || stage == stageRolled {
		if len(a.finals) >= maxFinals {
			for k := range a.finals { // drop any one: they are all final
				delete(a.finals, k)
				break
			}
		}
		a.finals[r.deployment] = s
	}
	a.log.Info("rollout", "deployment", r.deployment, "service", r.key(), "release", r.target, "stage", stage, "message", msg)
	if c != nil {
		if err := c.send(protocol.TypeStage, s); err != nil {
			a.log.Warn("sending a stage; it is sent again after reconnecting", "deployment", r.deployment, "error", err)
		}
	}
}

// resendFinals tells a new session how the rollouts it may have missed
// ended, and where the ones under way are.
func (a *Agent) resendFinals(c *conn) {
	for _, s := range a.finals {
		_ = c.send(protocol.TypeStage, s)
	}
	for _, r := range a.rollouts {
		if r.stage != "" {
			_ = c.send(protocol.TypeStage, protocol.Stage{Deployment: r.deployment, Stage: r.stage, At: time.Now().UTC(),
				Message: "still " + strings.ToLower(strings.ReplaceAll(r.stage, "_", " "))})
		}
	}
}

// progress moves every rollout as far as the cluster allows now.
func (a *Agent) progress(ctx context.Context, c *conn) {
	for _, key := range sortedKeys(a.rollouts) {
		r := a.rollouts[key]
		if ctx.Err() != nil {
			return
		}
		a.step(ctx, c, r)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// step moves one rollout on.
func (a *Agent) step(ctx context.Context, c *conn, r *rollout) {
	if r.stage == "" {
		a.report(c, r, stageStarting, fmt.Sprintf("started release %d of %s: %s", r.target, r.service, strings.Join(r.processes, ", ")))
	}
	ready, detail, err := a.readiness(ctx, r)
	if err != nil {
		a.log.Warn("reading rollout readiness", "service", r.key(), "error", err)
		return
	}
	if !ready {
		if r.stage == stageStarting {
			a.report(c, r, stageProbing, "waiting for readiness probes: "+detail)
		}
		if time.Since(r.started) < a.cfg.RolloutTimeout {
			return
		}
		a.fail(ctx, c, r, detail)
		return
	}
	if r.stage == stageStarting {
		a.report(c, r, stageProbing, "readiness probes passed: "+detail)
	}
	a.report(c, r, stageSwitching, fmt.Sprintf("routing %s to release %d", r.service, r.target))
	r.stage = stageSwitching
	if err := a.route(ctx, r); err != nil {
		a.log.Warn("switching traffic", "service", r.key(), "error", err)
		return // tried again at the next step
	}
	retiring := "no earlier release to retire"
	if r.previous != 0 {
		retiring = fmt.Sprintf("retiring release %d", r.previous)
	}
	a.report(c, r, stageRetiring, retiring)
	if err := a.retire(ctx, r, func(release string) bool { return release != strconv.Itoa(r.target) }); err != nil {
		a.log.Warn("retiring the previous release", "service", r.key(), "error", err)
		return
	}
	a.report(c, r, stageSucceeded, fmt.Sprintf("release %d is live: %s", r.target, detail))
	delete(a.rollouts, r.key())
}

// fail ends a rollout whose pods did not all become Ready in time.
func (a *Agent) fail(ctx context.Context, c *conn, r *rollout, detail string) {
	why := fmt.Sprintf("readiness probes did not pass within %s: %s", a.cfg.RolloutTimeout, detail)
	if r.previous == 0 {
		a.report(c, r, stageFailed, why+"; there is no earlier release to return to")
		delete(a.rollouts, r.key())
		return
	}
	if err := a.retire(ctx, r, func(release string) bool { return release == strconv.Itoa(r.target) }); err != nil {
		a.log.Warn("removing the failed release", "service", r.key(), "error", err)
		return // tried again at the next step
	}
	a.pinned[r.key()] = pin{deployment: r.deployment, release: r.previous}
	delete(a.rollouts, r.key())
	a.report(c, r, stageRolled, fmt.Sprintf("%s; traffic stayed on release %d and release %d was removed", why, r.previous, r.target))
}

// readiness tells whether every Deployment of the rollout's release is
// rolled out with all its pods Ready, and says how far each is.
func (a *Agent) readiness(ctx context.Context, r *rollout) (bool, string, error) {
	sel := ManagedSelector(a.clusterID()) + "," + LabelService + "=" + r.service + "," + LabelRelease + "=" + strconv.Itoa(r.target)
	l, err := a.kube.AppsV1().Deployments(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return false, "", err
	}
	if len(l.Items) < len(r.processes) {
		return false, fmt.Sprintf("%d of %d processes created", len(l.Items), len(r.processes)), nil
	}
	all := true
	var parts []string
	for _, d := range l.Items {
		want := ptrOr(d.Spec.Replicas, 1)
		ok := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want && d.Status.ReadyReplicas == want
		parts = append(parts, fmt.Sprintf("%s %d/%d ready", d.Labels[LabelProcess], d.Status.ReadyReplicas, want))
		if !ok {
			all = false
			if why := a.unreadyPod(ctx, &d); why != "" {
				parts[len(parts)-1] += " (" + why + ")"
			}
		}
	}
	slices.Sort(parts)
	return all, strings.Join(parts, ", "), nil
}

// unreadyPod says why one pod of a Deployment is not Ready.
func (a *Agent) unreadyPod(ctx context.Context, d *appsv1.Deployment) string {
	sel := metav1.FormatLabelSelector(d.Spec.Selector)
	pods, err := a.kube.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 20})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				return fmt.Sprintf("pod %s: %s", p.Name, strings.TrimSpace(c.Reason+" "+c.Message))
			}
		}
	}
	return ""
}

// route points the service's Services at the rollout's release.
func (a *Agent) route(ctx context.Context, r *rollout) error {
	sel := ManagedSelector(a.clusterID()) + "," + LabelService + "=" + r.service
	l, err := a.kube.CoreV1().Services(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	for _, s := range l.Items {
		if s.Spec.Selector[LabelRelease] == strconv.Itoa(r.target) {
			continue
		}
		patch := fmt.Appendf(nil, `{"spec":{"selector":{%q:%q}}}`, LabelRelease, strconv.Itoa(r.target))
		if _, err := a.kube.CoreV1().Services(r.namespace).Patch(ctx, s.Name, "application/merge-patch+json", patch,
			metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("routing Service %s: %w", s.Name, err)
		}
	}
	return nil
}

// retire deletes the service's Deployments whose release matches.
func (a *Agent) retire(ctx context.Context, r *rollout, match func(release string) bool) error {
	sel := ManagedSelector(a.clusterID()) + "," + LabelService + "=" + r.service
	l, err := a.kube.AppsV1().Deployments(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	background := metav1.DeletePropagationBackground
	for _, d := range l.Items {
		if !match(d.Labels[LabelRelease]) {
			continue
		}
		err := a.kube.AppsV1().Deployments(r.namespace).Delete(ctx, d.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Deployment %s: %w", d.Name, err)
		}
	}
	return nil
}
