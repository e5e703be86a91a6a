package agent

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Cache is what the agent knows of the objects it manages, kept current by
// watching them (client-go informers on everything labelled
// managed-by=nebulactrl, the pods of its Deployments included). Reads never
// go to the API server: a resync of an unchanged cluster costs no request,
// and rollouts follow Deployments and pods as they change instead of
// polling. The agent's own writes are taken in at once (Observe), so that
// the next pass does not write them again while the watch catches up.
type Cache struct {
	factory informers.SharedInformerFactory
	deps    cache.SharedIndexInformer
	svcs    cache.SharedIndexInformer
	secrets cache.SharedIndexInformer
	ings    cache.SharedIndexInformer
	nss     cache.SharedIndexInformer
	pods    cache.SharedIndexInformer

	mu sync.Mutex
	// written holds what the agent wrote last, per object, until the
	// watch shows that version or a newer one; deleted the version of
	// each object it deleted, until the watch shows it gone (or back).
	written map[object]metaObject
	deleted map[object]string
	// changed is told the namespace and service of every object that
	// changed in the cluster (by anyone).
	changed func(namespace, service string)
}

// metaObject is a typed object with its metadata.
type metaObject interface {
	v1.Object
}

// NewCache watches the managed objects through client. changed, when not
// nil, is called (from the informers' goroutines: it must not block) with
// the namespace and service label of each object that changed.
func NewCache(client kubernetes.Interface, changed func(namespace, service string)) *Cache {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *v1.ListOptions) { o.LabelSelector = LabelManagedBy + "=" + ManagedBy }))
	c := &Cache{factory: f, written: map[object]metaObject{}, deleted: map[object]string{}, changed: changed,
		deps: f.Apps().V1().Deployments().Informer(), svcs: f.Core().V1().Services().Informer(),
		secrets: f.Core().V1().Secrets().Informer(), ings: f.Networking().V1().Ingresses().Informer(),
		nss: f.Core().V1().Namespaces().Informer(), pods: f.Core().V1().Pods().Informer()}
	// The pods are read for their labels, template annotations, images
	// and status, never for who set which field: without their managed
	// fields, the 1,500 pods of a large cluster take a third less memory.
	_ = c.pods.SetTransform(func(o any) (any, error) {
		if p, ok := o.(*corev1.Pod); ok {
			p.ManagedFields = nil
		}
		return o, nil
	})
	for _, inf := range []cache.SharedIndexInformer{c.deps, c.svcs, c.secrets, c.ings, c.pods} {
		// A service's objects are read together (every reconcile of it):
		// an index keeps that from scanning every object of the cluster.
		_ = inf.AddIndexers(cache.Indexers{byService: func(o any) ([]string, error) {
			m, ok := o.(v1.Object)
			if !ok {
				return nil, nil
			}
			return []string{m.GetNamespace() + "/" + m.GetLabels()[LabelService]}, nil
		}})
	}
	for kind, inf := range map[string]cache.SharedIndexInformer{"Deployment": c.deps, "Service": c.svcs,
		"Secret": c.secrets, "Ingress": c.ings, "Pod": c.pods, "Namespace": c.nss} {
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { c.notify(kind, o, false) },
			UpdateFunc: func(_, o any) { c.notify(kind, o, false) },
			DeleteFunc: func(o any) { c.notify(kind, o, true) },
		})
	}
	return c
}

func (c *Cache) notify(kind string, o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, ok := o.(v1.Object)
	if !ok {
		return
	}
	if deleted { // whatever the agent wrote of it is gone too
		c.Forget(object{kind, m.GetNamespace(), m.GetName()})
	}
	if c.changed != nil && kind != "Namespace" {
		c.changed(m.GetNamespace(), m.GetLabels()[LabelService])
	}
}

// Start runs the informers until ctx ends and waits until they have
// listed everything once.
func (c *Cache) Start(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	for typ, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("watching %v did not start", typ)
		}
	}
	return nil
}

// Shutdown waits for the informers' goroutines after ctx ended.
func (c *Cache) Shutdown() { c.factory.Shutdown() }

// Observe takes in an object the agent just wrote (what the API server
// answered): reads see it until the watch brings it or something newer.
func (c *Cache) Observe(o object, obj metaObject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[o] = obj
	delete(c.deleted, o)
}

// Forget drops what Observe or Deleted kept of an object: the watch saw
// it go.
func (c *Cache) Forget(o object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.written, o)
	delete(c.deleted, o)
}

// Deleted records that the agent deleted the object at version rv: reads
// do not see that version any more, while the watch catches up.
func (c *Cache) Deleted(o object, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.written, o)
	c.deleted[o] = rv
}

// newer tells whether resource version a is later than b. Versions are
// opaque in general but etcd revisions in practice; when one cannot be
// read, neither is newer, and the watch's version wins.
func newer(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return x > y
}

// get returns the newest version of an object known: the watch's, or what
// the agent wrote if the watch has not caught up.
func (c *Cache) get(inf cache.SharedIndexInformer, o object) metaObject {
	key := o.name
	if o.namespace != "" {
		key = o.namespace + "/" + o.name
	}
	var seen metaObject
	if v, ok, err := inf.GetStore().GetByKey(key); err == nil && ok {
		seen, _ = v.(metaObject)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rv, gone := c.deleted[o]; gone {
		if seen == nil || rv == "" || !newer(seen.GetResourceVersion(), rv) {
			return nil // deleted by the agent; the watch has not said so yet
		}
		delete(c.deleted, o) // made again since
	}
	w, ok := c.written[o]
	switch {
	case !ok:
		return seen
	case seen != nil && !newer(w.GetResourceVersion(), seen.GetResourceVersion()):
		delete(c.written, o) // the watch caught up
		return seen
	}
	return w
}

// Object returns the live object o names, or nil.
func (c *Cache) Object(o object) metaObject {
	var inf cache.SharedIndexInformer
	switch o.kind {
	case "Deployment":
		inf = c.deps
	case "Service":
		inf = c.svcs
	case "Secret":
		inf = c.secrets
	case "Ingress":
		inf = c.ings
	case "Namespace":
		inf = c.nss
	case "Pod":
		inf = c.pods
	default:
		return nil
	}
	v := c.get(inf, o)
	if v == nil {
		return nil
	}
	return v
}

// byService indexes objects by namespace and service label.
const byService = "service"

// list returns the managed objects of an informer matching sel, in any
// namespace when ns is empty. It reads an index where one applies (a
// service's objects, a namespace's), not every object of the cluster: the
// log follower lists each namespace's pods every 2 s.
func list[T any](inf cache.SharedIndexInformer, ns string, sel labels.Selector) []T {
	var out []T
	var items []any
	var err error
	svc, bySvc := sel.RequiresExactMatch(LabelService)
	switch {
	case ns != "" && bySvc:
		items, err = inf.GetIndexer().ByIndex(byService, ns+"/"+svc)
	case ns != "":
		items, err = inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	default:
		items = inf.GetStore().List()
	}
	if err != nil { // no such index: every object
		items = inf.GetStore().List()
	}
	for _, v := range items {
		m, ok := v.(v1.Object)
		if !ok || ns != "" && m.GetNamespace() != ns || !sel.Matches(labels.Set(m.GetLabels())) ||
			m.GetLabels()[LabelManagedBy] != ManagedBy {
			continue
		}
		if t, ok := v.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// Deployments lists the managed Deployments matching sel (in ns, or all
// namespaces when empty), the agent's own latest writes included.
func (c *Cache) Deployments(ns string, sel labels.Selector) []*appsv1.Deployment {
	return withWritten(c, list[*appsv1.Deployment](c.deps, ns, sel), "Deployment", ns, sel)
}

// Services lists the managed Services matching sel.
func (c *Cache) Services(ns string, sel labels.Selector) []*corev1.Service {
	return withWritten(c, list[*corev1.Service](c.svcs, ns, sel), "Service", ns, sel)
}

// Secrets lists the managed Secrets matching sel.
func (c *Cache) Secrets(ns string, sel labels.Selector) []*corev1.Secret {
	return withWritten(c, list[*corev1.Secret](c.secrets, ns, sel), "Secret", ns, sel)
}

// Ingresses lists the managed Ingresses matching sel.
func (c *Cache) Ingresses(ns string, sel labels.Selector) []*networkingv1.Ingress {
	return withWritten(c, list[*networkingv1.Ingress](c.ings, ns, sel), "Ingress", ns, sel)
}

// Pods lists the pods in ns matching sel.
func (c *Cache) Pods(ns string, sel labels.Selector) []*corev1.Pod {
	return list[*corev1.Pod](c.pods, ns, sel)
}

// withWritten replaces listed objects by the agent's newer writes and adds
// the written ones the watch has not shown yet.
func withWritten[T metaObject](c *Cache, items []T, kind, ns string, sel labels.Selector) []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.written) == 0 && len(c.deleted) == 0 {
		return items
	}
	if len(c.deleted) > 0 {
		items = slices.DeleteFunc(items, func(it T) bool {
			rv, gone := c.deleted[object{kind, it.GetNamespace(), it.GetName()}]
			return gone && (rv == "" || !newer(it.GetResourceVersion(), rv))
		})
	}
	seen := map[object]int{}
	for i, it := range items {
		seen[object{kind, it.GetNamespace(), it.GetName()}] = i
	}
	for o, w := range c.written {
		t, ok := w.(T)
		if !ok || o.kind != kind || ns != "" && o.namespace != ns || !sel.Matches(labels.Set(w.GetLabels())) {
			continue
		}
		if i, ok := seen[o]; ok {
			if newer(w.GetResourceVersion(), items[i].GetResourceVersion()) {
				items[i] = t
			}
			continue
		}
		items = append(items, t)
	}
	return items
}
