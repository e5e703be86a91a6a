package agent

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nebulactrl/nebula/internal/protocol"
)

// Command kinds the agent runs (the control plane's CommandKind values).
const (
	CommandRestartProcess     = "RESTART_PROCESS"
	CommandResync             = "RESYNC"
	CommandCollectDiagnostics = "COLLECT_DIAGNOSTICS"
)

// AnnotationRestartedAt on a pod template rolls its pods, as `kubectl
// rollout restart` does. It is written by its own field manager, so the
// agent's applies leave it alone.
const AnnotationRestartedAt = "nebula.dev/restartedAt"

const restartManager = "nebula-agent-restart"

// maxMessage keeps a command's answer within the protocol's limit.
const maxMessage = 4000

// runCommand does one command. A command id done before is answered with
// the same result and not done again: the control plane delivers a command
// again after a reconnect until it hears the answer.
func (a *Agent) runCommand(ctx context.Context, cmd protocol.Command) protocol.CommandAck {
	a.mu.Lock()
	prev, seen := a.done[cmd.ID]
	a.mu.Unlock()
	if seen {
		return prev
	}
	var msg string
	var err error
	switch cmd.Kind {
	case CommandRestartProcess:
		msg, err = a.restart(ctx, cmd.Args["namespace"], cmd.Args["service"], cmd.Args["process"])
	case CommandResync:
		msg, err = a.resyncNow(ctx)
	case CommandCollectDiagnostics:
		msg, err = a.diagnostics(ctx)
	default:
		err = fmt.Errorf("this agent does not know the command kind %q", cmd.Kind)
	}
	ack := protocol.CommandAck{ID: cmd.ID, Result: protocol.ResultApplied, Message: clipMessage(msg)}
	if err != nil {
		ack.Result, ack.Message = protocol.ResultFailed, clipMessage(err.Error())
	}
	a.log.Info("command", "id", cmd.ID, "kind", cmd.Kind, "result", ack.Result)
	a.mu.Lock()
	a.done[cmd.ID] = ack
	a.mu.Unlock()
	return ack
}

func clipMessage(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage] + "…"
}

// restart rolls the pods of one process of one service, touching only
// Deployments the agent manages for this cluster.
func (a *Agent) restart(ctx context.Context, namespace, service, process string) (string, error) {
	if namespace == "" || service == "" || process == "" {
		return "", fmt.Errorf("restarting a process needs namespace, service and process")
	}
	a.mu.Lock()
	cluster := a.cluster
	a.mu.Unlock()
	sel := ManagedSelector(cluster) + "," + LabelService + "=" + service + "," + LabelProcess + "=" + process
	l, err := a.kube.Write.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return "", fmt.Errorf("listing deployments: %w", err)
	}
	if len(l.Items) == 0 {
		return "", fmt.Errorf("no deployment of process %s of service %s is managed in namespace %s", process, service, namespace)
	}
	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`,
		AnnotationRestartedAt, time.Now().UTC().Format(time.RFC3339Nano))
	var names []string
	for _, d := range l.Items {
		if _, err := a.kube.Write.AppsV1().Deployments(namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{FieldManager: restartManager}); err != nil {
			return "", fmt.Errorf("restarting deployment %s/%s: %w", namespace, d.Name, err)
		}
		names = append(names, d.Name)
	}
	return "restarted " + strings.Join(names, ", "), nil
}

// resyncNow applies the whole state held, now.
func (a *Agent) resyncNow(ctx context.Context) (string, error) {
	a.mu.Lock()
	d, ap := a.state, a.applier
	a.mu.Unlock()
	if d == nil || ap == nil {
		return "no desired state received yet: nothing to apply", nil
	}
	res := a.applyState(ctx, ap, d.State, true)
	if len(res.Errors) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "revision %d: %d objects failed:", d.Revision, len(res.Errors))
		for _, e := range res.Errors {
			fmt.Fprintf(&b, " %s: %s;", e.Object, e.Message)
		}
		return "", fmt.Errorf("%s", b.String())
	}
	return fmt.Sprintf("revision %d applied again: %d objects, %d written, %d pruned", d.Revision, res.Applied, res.Written, res.Pruned), nil
}

// diagnostics summarises the cluster and what the agent manages: nodes,
// each managed Deployment's replicas and conditions, and recent warning
// events in the managed namespaces.
func (a *Agent) diagnostics(ctx context.Context) (string, error) {
	var b strings.Builder
	inv := a.inventory(ctx)
	ready := 0
	for _, n := range inv.Nodes {
		if n.Ready {
			ready++
		}
	}
	fmt.Fprintf(&b, "kubernetes %s; nodes %d/%d ready; agent %s (%s)\n", inv.KubernetesVersion, ready, len(inv.Nodes), inv.AgentVersion, a.cfg.Identity)
	a.mu.Lock()
	cluster, floor := a.cluster, a.floor
	a.mu.Unlock()
	fmt.Fprintf(&b, "applied revision %d\n", floor)
	l, err := a.kube.Read.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector(cluster)})
	if err != nil {
		return "", fmt.Errorf("listing managed deployments: %w", err)
	}
	namespaces := map[string]bool{}
	for _, d := range l.Items {
		namespaces[d.Namespace] = true
		fmt.Fprintf(&b, "%s/%s: %d/%d ready", d.Namespace, d.Name, d.Status.ReadyReplicas, ptrOr(d.Spec.Replicas, 1))
		for _, c := range d.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, "; %s=%s %s", c.Type, c.Status, c.Message)
			}
		}
		b.WriteString("\n")
	}
	var warnings []corev1.Event
	for ns := range namespaces {
		ev, err := a.kube.Read.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
		if err != nil {
			fmt.Fprintf(&b, "events of %s: %v\n", ns, err)
			continue
		}
		warnings = append(warnings, ev.Items...)
	}
	slices.SortFunc(warnings, func(x, y corev1.Event) int { return cmp.Compare(y.LastTimestamp.Unix(), x.LastTimestamp.Unix()) })
	for i, e := range warnings {
		if i == 10 {
			break
		}
		fmt.Fprintf(&b, "warning %s/%s %s: %s\n", e.Namespace, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	return b.String(), nil
}

// inventory reports the cluster as the heartbeat carries it. What cannot
// be read is left out and logged, never invented.
func (a *Agent) inventory(ctx context.Context) protocol.Inventory {
	inv := protocol.Inventory{AgentVersion: a.cfg.Version, AgentImage: a.cfg.Image, Capabilities: capabilities,
		Nodes: []protocol.Node{}, Workloads: []protocol.Workload{}}
	if v, err := a.kube.Read.Discovery().ServerVersion(); err == nil {
		inv.KubernetesVersion = v.GitVersion
	} else {
		a.log.Warn("reading the Kubernetes version", "error", err)
	}
	if nodes, err := a.kube.Read.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			ready := false
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = c.Status == corev1.ConditionTrue
				}
			}
			inv.Nodes = append(inv.Nodes, protocol.Node{Name: n.Name, Ready: ready})
		}
	} else {
		a.log.Warn("listing nodes", "error", err)
	}
	a.mu.Lock()
	ap := a.applier
	a.mu.Unlock()
	if ap != nil && ap.Cache != nil {
		inv.Workloads = ap.Workloads()
	}
	return inv
}
