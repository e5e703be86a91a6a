package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// sample is one line of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	metricLine  = regexp.MustCompile(`^(\w+)(?:\{([^}]*)\})? (\S+)`)
	metricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// parseMetrics reads the samples of a Prometheus text exposition; a value
// that is not a number (none are, in what these processes serve) is left
// out.
func parseMetrics(raw string) []sample {
	var out []sample
	for _, line := range strings.Split(raw, "\n") {
		m := metricLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		s := sample{name: m[1], labels: map[string]string{}, value: v}
		for _, l := range metricLabel.FindAllStringSubmatch(m[2], -1) {
			s.labels[l[1]] = l[2]
		}
		out = append(out, s)
	}
	return out
}

// sum adds the samples of a metric whose labels hold every pair given
// (name, value, name, value…).
func sum(samples []sample, name string, pairs ...string) float64 {
	total := 0.0
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for i := 0; i+1 < len(pairs); i += 2 {
			if s.labels[pairs[i]] != pairs[i+1] {
				continue next
			}
		}
		total += s.value
	}
	return total
}

// apiserverMetrics reads the simulated cluster's kube-apiserver /metrics.
func apiserverMetrics(t *testing.T, cs *kubernetes.Clientset) []sample {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading the apiserver's /metrics: %v", err)
	}
	return parseMetrics(string(raw))
}

// scrape reads the metrics a process serves at url.
func scrape(t *testing.T, url string) []sample {
	t.Helper()
	m, err := scrapeIf(url)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// scrapeIf reads the metrics a process serves at url, if it does (a
// process being killed does not).
func scrapeIf(url string) ([]sample, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading %s: %v %s", url, err, resp.Status)
	}
	return parseMetrics(string(raw)), nil
}
