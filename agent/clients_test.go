package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nebulactrl/nebula/internal/protocol"
)

// A write goes out at once while the log budget is spent: a log stream
// past it waits (for its token, a thousand seconds away) and the write does
// not wait behind it, nor does a heartbeat's read of the nodes. With one
// client for both, the same write would wait behind the stream: its
// context ends first.
func TestWritesDoNotWaitForReads(t *testing.T) {
	srv := newAPIServer(t)
	srv.logs = serveLines(map[string][]protocol.LogLine{"p": linesAt(time.Now(), "hello")})
	cl, err := NewClients(srv.config(), Limits{QPS: 100, Burst: 10}, Limits{QPS: 100, Burst: 10}, Limits{QPS: 0.001, Burst: 1}, NewMetrics())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read := func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoreV1().Pods("shop-prod").GetLogs("p", &corev1.PodLogOptions{Container: "app"}).DoRaw(ctx)
		return err
	}
	write := func(ctx context.Context, c kubernetes.Interface) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := c.CoreV1().ConfigMaps("shop-prod").Apply(ctx, corev1ac.ConfigMap("state", "shop-prod").
			WithData(map[string]string{"k": "v"}), metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		return err
	}
	if err := read(ctx, cl.Logs); err != nil {
		t.Fatalf("the stream within the budget: %v", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	blocked := make(chan error, 1)
	go func() { blocked <- read(rctx, cl.Logs) }()

	if err := write(ctx, cl.Write); err != nil {
		t.Fatalf("the write while the log budget is spent: %v", err)
	}
	if n := srv.writeCount(); n != 1 {
		t.Fatalf("the server saw %d writes, want 1", n)
	}
	nctx, ncancel := context.WithTimeout(ctx, 30*time.Second)
	defer ncancel()
	if nodes, err := cl.Read.CoreV1().Nodes().List(nctx, metav1.ListOptions{}); err != nil || len(nodes.Items) != 1 {
		t.Errorf("a heartbeat's read of the nodes while the log budget is spent: %v", err)
	}
	// The stream past the budget is still waiting for its token: it
	// cannot come for a thousand seconds.
	select {
	case err := <-blocked:
		t.Fatalf("the stream past its budget ended (%v): the budget is not what the test set", err)
	default:
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("the server saw %d log requests, want 1", n)
	}
	cancel()
	<-blocked

	// One client for logs and writes: the write waits behind the spent
	// log budget, and ends with its context.
	err = write(ctx, cl.Logs)
	if err == nil || !strings.Contains(err.Error(), "rate limiter") {
		t.Errorf("a write through the spent read budget = %v, want a rate limiter wait past its deadline", err)
	}
	if n := srv.writeCount(); n != 1 {
		t.Errorf("the server saw %d writes, want still 1", n)
	}
}

// Limits that are not positive are refused with what is wrong.
func TestNewClientsRefusesBadLimits(t *testing.T) {
	srv := newAPIServer(t)
	if _, err := NewClients(srv.config(), Limits{QPS: 0, Burst: 1}, DefaultReadLimits, DefaultLogsLimits, nil); err == nil ||
		!strings.Contains(err.Error(), "write client") {
		t.Errorf("a write rate of 0: %v", err)
	}
	if _, err := NewClients(srv.config(), DefaultWriteLimits, Limits{QPS: 5, Burst: 0}, DefaultLogsLimits, nil); err == nil ||
		!strings.Contains(err.Error(), "read client") {
		t.Errorf("a read burst of 0: %v", err)
	}
	if _, err := NewClients(srv.config(), DefaultWriteLimits, DefaultReadLimits, Limits{QPS: -1, Burst: 5}, nil); err == nil ||
		!strings.Contains(err.Error(), "logs client") {
		t.Errorf("a log rate below 0: %v", err)
	}
}
