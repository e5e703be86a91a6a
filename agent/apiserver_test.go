package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// apiServer stands for the Kubernetes API server over HTTP on loopback
// (a process boundary, where a fake is allowed), for what client-go's fake
// clientset cannot show: rate limits, streams held open, status codes,
// query parameters. It serves pods/log through logs, a list of one node,
// and answers any write by echoing its body.
type apiServer struct {
	srv *httptest.Server
	// logs answers one pods/log request; unset, 400 as a kubelet answers
	// for a container without a log.
	logs func(w http.ResponseWriter, r *http.Request, l logRequest)

	mu     sync.Mutex
	asked  []logRequest // every pods/log request, in order
	open   int          // pods/log requests being answered now
	most   int          // the most ever answered at once
	writes int
}

// logRequest is one pods/log request as the server saw it.
type logRequest struct {
	namespace, pod, container string
	since                     time.Time // sinceTime, zero when absent
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// config is a client configuration for the server.
func (s *apiServer) config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, QPS: -1}
}

func (s *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/namespaces/<ns>/pods/<pod>/log
	if r.Method == http.MethodGet && len(parts) == 7 && parts[4] == "pods" && parts[6] == "log" {
		l := logRequest{namespace: parts[3], pod: parts[5], container: r.URL.Query().Get("container")}
		if v := r.URL.Query().Get("sinceTime"); v != "" {
			l.since, _ = time.Parse(time.RFC3339, v)
		}
		s.mu.Lock()
		s.asked = append(s.asked, l)
		s.open++
		s.most = max(s.most, s.open)
		answer := s.logs
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.open--
			s.mu.Unlock()
		}()
		if answer == nil {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"container is not available","reason":"BadRequest","code":400}`,
				http.StatusBadRequest)
			return
		}
		answer(w, r, l)
		return
	}
	if r.Method == http.MethodPatch || r.Method == http.MethodPost || r.Method == http.MethodPut {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.writes++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes" { // a heartbeat's inventory
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"node-1"}}]}`)
		return
	}
	http.NotFound(w, r)
}

// requests returns the pods/log requests so far.
func (s *apiServer) requests() []logRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]logRequest(nil), s.asked...)
}

// requestsOf counts the pods/log requests for one pod.
func (s *apiServer) requestsOf(pod string) int {
	n := 0
	for _, l := range s.requests() {
		if l.pod == pod {
			n++
		}
	}
	return n
}

func (s *apiServer) writeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

func (s *apiServer) mostOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}
