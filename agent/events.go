package agent

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// Kubernetes events (events.v1): the agent watches the events of the
// namespaces it manages (an informer, not polling) and sends each new
// occurrence — an event's uid with a count higher than the one sent
// before — attributed to the environment of its namespace and, for a
// pod, a Deployment or a ReplicaSet, to its service. COLLECT_DIAGNOSTICS
// stays for dumps on demand.

// eventWatcher runs one session's watch of events.
type eventWatcher struct {
	kube kubernetes.Interface
	log  *slog.Logger
	send func(protocol.Events) error
	// attribute names the environment and service of an event's object;
	// ok is false for objects the agent does not manage.
	attribute func(ev *corev1.Event) (env, service string, ok bool)

	batchEvery time.Duration
	queue      chan protocol.Event
	mu         sync.Mutex
	sent       map[string]int32 // by uid: the highest count sent
}

func newEventWatcher(kube kubernetes.Interface, log *slog.Logger, attribute func(*corev1.Event) (string, string, bool),
	send func(protocol.Events) error) *eventWatcher {
	return &eventWatcher{kube: kube, log: log, send: send, attribute: attribute, batchEvery: 500 * time.Millisecond,
		queue: make(chan protocol.Event, 1000), sent: map[string]int32{}}
}

// run watches until ctx ends, from when ready says the desired state and
// the cache are there to attribute events with.
func (w *eventWatcher) run(ctx context.Context, ready func() bool) {
	for !ready() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	factory := informers.NewSharedInformerFactory(w.kube, 0)
	inf := factory.Core().V1().Events().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.observe(ctx, o) },
		UpdateFunc: func(_, o any) { w.observe(ctx, o) },
	}); err != nil {
		w.log.Warn("watching events", "error", err)
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	t := time.NewTicker(w.batchEvery)
	defer t.Stop()
	var batch []protocol.Event
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-w.queue:
			batch = append(batch, e)
			if len(batch) < protocol.MaxEvents {
				continue
			}
		case <-t.C:
		}
		if len(batch) == 0 {
			continue
		}
		if err := w.send(protocol.Events{Events: batch}); err != nil {
			w.log.Warn("sending events", "error", err)
			return
		}
		batch = nil
	}
}

// observe queues an event's occurrence when it is new and of a managed
// object.
func (w *eventWatcher) observe(ctx context.Context, o any) {
	ev, ok := o.(*corev1.Event)
	if !ok {
		return
	}
	count := ev.Count
	if ev.Series != nil && ev.Series.Count > count {
		count = ev.Series.Count
	}
	count = max(count, 1)
	w.mu.Lock()
	seen := w.sent[string(ev.UID)] >= count
	w.mu.Unlock()
	if seen {
		return
	}
	env, svc, ok := w.attribute(ev)
	if !ok {
		return
	}
	first, last := ev.FirstTimestamp.Time, ev.LastTimestamp.Time
	if last.IsZero() {
		last = ev.EventTime.Time
	}
	if last.IsZero() {
		last = ev.CreationTimestamp.Time
	}
	if first.IsZero() {
		first = last
	}
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	e := protocol.Event{UID: string(ev.UID), Count: count, Type: ev.Type, Reason: clip(ev.Reason, 256), Message: clip(ev.Message, 8<<10),
		Namespace: ev.InvolvedObject.Namespace, ObjectKind: ev.InvolvedObject.Kind, ObjectName: ev.InvolvedObject.Name,
		Source: clip(source, 256), FirstAt: first.UTC(), LastAt: last.UTC(), Environment: env, Service: svc}
	select {
	case w.queue <- e:
		w.mu.Lock()
		w.sent[string(ev.UID)] = max(w.sent[string(ev.UID)], count)
		w.mu.Unlock()
	case <-ctx.Done():
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// attributeEvent names the environment of an event's namespace in the
// desired state and, for a pod, Deployment or ReplicaSet the agent
// manages, its service.
func attributeEvent(st *desired.State, c *Cache, ev *corev1.Event) (env, service string, ok bool) {
	obj := ev.InvolvedObject
	var ns *desired.Namespace
	for i := range st.Namespaces {
		if st.Namespaces[i].Name == obj.Namespace {
			ns = &st.Namespaces[i]
		}
	}
	if ns == nil {
		return "", "", false
	}
	var labels map[string]string
	switch obj.Kind {
	case "Pod":
		if o := c.Object(object{"Pod", obj.Namespace, obj.Name}); o != nil {
			labels = o.GetLabels()
		}
	case "Deployment":
		if o := c.Object(object{"Deployment", obj.Namespace, obj.Name}); o != nil {
			labels = o.GetLabels()
		}
	case "ReplicaSet":
		// <deployment>-<pod-template-hash>
		if i := strings.LastIndexByte(obj.Name, '-'); i > 0 {
			if o := c.Object(object{"Deployment", obj.Namespace, obj.Name[:i]}); o != nil {
				labels = o.GetLabels()
			}
		}
	}
	if labels != nil && labels[LabelManagedBy] == ManagedBy {
		for _, s := range ns.Services {
			if s.Name == labels[LabelService] {
				return string(ns.EnvID), string(s.ID), true
			}
		}
	}
	return string(ns.EnvID), "", true
}

// eventsReady says whether the newest desired state and the cache are
// there to attribute events with.
func (a *Agent) eventsReady() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cache != nil && a.state != nil
}

// eventAttribution is attributeEvent on the newest desired state and the
// cache, when both are there.
func (a *Agent) eventAttribution(ev *corev1.Event) (string, string, bool) {
	a.mu.Lock()
	c, d := a.cache, a.state
	a.mu.Unlock()
	if c == nil || d == nil {
		return "", "", false
	}
	return attributeEvent(&d.State, c, ev)
}

// reportDrift tells the control plane (drift.v1) of an object found
// changed outside NebulaCtrl, before the agent applies it again; the
// same drift of an object (its fields and managers) is told once in
// driftQuiet.
func (a *Agent) reportDrift(o object, live metaObject, fields, managers []string) {
	// The applier may call this with the agent's lock held: tell it on a
	// goroutine of its own.
	go a.tellDrift(o, live.GetLabels()[LabelService], fields, managers)
}

func (a *Agent) tellDrift(o object, service string, fields, managers []string) {
	a.mu.Lock()
	c, d, conn, caps := a.cache, a.state, a.conn, a.sessionCaps
	key := o.kind + " " + o.namespace + "/" + o.name + " " + strings.Join(fields, ",") + " " + strings.Join(managers, ",")
	if a.drifts == nil {
		a.drifts = map[string]time.Time{}
	}
	if at, ok := a.drifts[key]; ok && time.Since(at) < driftQuiet {
		a.mu.Unlock()
		return
	}
	a.drifts[key] = time.Now()
	a.mu.Unlock()
	if conn == nil || d == nil || c == nil || !slices.Contains(caps, protocol.CapDrift) {
		return
	}
	var env, svc string
	for _, ns := range d.State.Namespaces {
		if ns.Name != o.namespace && !(o.kind == "Namespace" && ns.Name == o.name) {
			continue
		}
		env = string(ns.EnvID)
		for _, s := range ns.Services {
			if s.Name == service {
				svc = string(s.ID)
			}
		}
	}
	if env == "" {
		return
	}
	if len(fields) > 50 {
		fields = fields[:50]
	}
	if len(managers) > 20 {
		managers = managers[:20]
	}
	a.log.Info("drift: an object was changed outside NebulaCtrl; applying it again", "object", key)
	if err := conn.send(protocol.TypeDrift, protocol.Drift{Kind: o.kind, Namespace: o.namespace, Name: o.name, Fields: fields,
		Managers: managers, Environment: env, Service: svc, At: time.Now().UTC()}); err != nil {
		a.log.Warn("reporting a drift", "error", err)
	}
}

// driftQuiet is how long the same drift of an object is not told again
// (another controller that keeps changing it would otherwise be told of
// at every pass).
const driftQuiet = 10 * time.Minute
