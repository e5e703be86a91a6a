package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// The watcher sends each occurrence of an event of a managed object once:
// a new event, then the same event counted again; an update that does not
// count again and an event of an object the agent does not manage are
// not sent.
func TestEventWatcher(t *testing.T) {
	cs := fake.NewClientset()
	var mu sync.Mutex
	var got []protocol.Event
	w := newEventWatcher(cs, slog.New(slog.NewTextHandler(io.Discard, nil)),
		func(ev *corev1.Event) (string, string, bool) {
			if ev.InvolvedObject.Namespace != "shop-prod" {
				return "", "", false
			}
			return "env-1", "svc-1", true
		},
		func(m protocol.Events) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, m.Events...)
			return nil
		})
	w.batchEvery = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.run(ctx, func() bool { return true })
	at := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "api-web-1.1", Namespace: "shop-prod", UID: "u-1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop-prod", Name: "api-web-1"},
		Type:           "Warning", Reason: "BackOff", Message: "Back-off restarting failed container", Count: 1,
		FirstTimestamp: at, LastTimestamp: at, Source: corev1.EventSource{Component: "kubelet"}}
	other := ev.DeepCopy()
	other.Name, other.Namespace, other.UID, other.InvolvedObject.Namespace = "x.1", "kube-system", "u-2", "kube-system"
	for _, e := range []*corev1.Event{ev, other} {
		if _, err := cs.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list := func() string {
		mu.Lock()
		defer mu.Unlock()
		s := ""
		for _, e := range got {
			s += fmt.Sprintf("%s/%d %s %s %s/%s %s|", e.UID, e.Count, e.Type, e.Reason, e.Environment, e.Service, e.Source)
		}
		return s
	}
	want := "u-1/1 Warning BackOff env-1/svc-1 kubelet|"
	testutil.Eventually(t, 5*time.Second, "the event is sent", func() (bool, string) { return list() == want, list() })
	// Counted again: a new occurrence. A change without a new count: none.
	ev.Count, ev.LastTimestamp = 2, metav1.NewTime(at.Add(30*time.Second))
	if _, err := cs.CoreV1().Events("shop-prod").Update(ctx, ev, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want += "u-1/2 Warning BackOff env-1/svc-1 kubelet|"
	testutil.Eventually(t, 5*time.Second, "the second occurrence is sent", func() (bool, string) { return list() == want, list() })
	ev.Message = "edited"
	if _, err := cs.CoreV1().Events("shop-prod").Update(ctx, ev, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A later occurrence proves the edit was seen: the watch delivers in
	// order, so had the edit been sent it would stand before this one.
	ev.Count, ev.LastTimestamp = 3, metav1.NewTime(at.Add(time.Minute))
	if _, err := cs.CoreV1().Events("shop-prod").Update(ctx, ev, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want += "u-1/3 Warning BackOff env-1/svc-1 kubelet|"
	testutil.Eventually(t, 5*time.Second, "the third occurrence is sent, and nothing for the edit before it",
		func() (bool, string) { return len(list()) >= len(want), list() })
	if list() != want {
		t.Errorf("an update without a new count was sent: %s", list())
	}
}

// A drift names the fields that no longer hold what was applied (named
// list items by name) and the managers that own them.
func TestDriftFields(t *testing.T) {
	want := map[string]any{"spec": map[string]any{"replicas": float64(2), "template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "web", "image": "a@sha256:1"}, map[string]any{"name": "proxy", "image": "p"}}}}},
		"metadata": map[string]any{"labels": map[string]any{"app": "api"}}}
	have := map[string]any{"spec": map[string]any{"replicas": float64(5), "template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "proxy", "image": "p"}, map[string]any{"name": "web", "image": "b@sha256:2"}}}}},
		"metadata": map[string]any{"labels": map[string]any{"app": "api", "extra": "x"}}}
	got := changedFields(want, have, "", nil)
	if strings.Join(got, ",") != "spec.replicas,spec.template.spec.containers[web].image" {
		t.Errorf("changed fields %v", got)
	}
	live := &corev1.Service{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: FieldManager, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		{Manager: "kubectl-edit", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		{Manager: "kube-controller-manager", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:replicas":{}}}`)}},
		{Manager: "image-bot", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`)}},
	}}}
	if m := otherManagers(live, got); strings.Join(m, ",") != "kubectl-edit,image-bot" {
		t.Errorf("managers %v, want those that own spec.replicas and the web container's image (not status.replicas's)", m)
	}
	if m := otherManagers(live, []string{"spec.selector"}); strings.Join(m, ",") != "kubectl-edit,kube-controller-manager,image-bot" {
		t.Errorf("managers of a field none owns: %v, want every other manager", m)
	}
}
