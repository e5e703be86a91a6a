package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
)

// previewQuery runs n aliased previewDeploy fields on the input $i, each
// selecting only __typename so that 1,000 fit the parser's token limit.
func previewQuery(n int) string {
	var b strings.Builder
	b.WriteString("query($i: DeployInput!) {")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " p%d: previewDeploy(input: $i) { __typename }", i)
	}
	b.WriteString(" }")
	return b.String()
}

// gqlClient posts GraphQL requests with one token over its own keep-alive
// connection.
type gqlClient struct {
	url, token string
	http       *http.Client
}

func newGQLClient(url, token string) *gqlClient {
	return &gqlClient{url: url, token: token,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}}
}

// do posts a request and decodes its answer; trace, if given, follows it.
func (c *gqlClient) do(query string, vars map[string]any, trace *httptrace.ClientTrace) (map[string]json.RawMessage, []gqlError, error) {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if trace != nil {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	var out struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []gqlError                 `json:"errors"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, fmt.Errorf("HTTP %d: %v: %s", resp.StatusCode, err, clip(string(raw), 300))
	}
	return out.Data, out.Errors, nil
}

// must is do for setup steps: any error or userError stops the benchmark.
func (c *gqlClient) must(tb testing.TB, query string, vars map[string]any) map[string]json.RawMessage {
	tb.Helper()
	data, errs, err := c.do(query, vars, nil)
	if err != nil || len(errs) > 0 {
		tb.Fatalf("%s: %v %+v", clip(query, 80), err, errs)
	}
	for _, v := range data {
		if bytes.Contains(v, []byte(`"userErrors":[{`)) {
			tb.Fatalf("%s: %s", clip(query, 80), v)
		}
	}
	return data
}

// str digs a string out of a response by a dotted path.
func str(tb testing.TB, data map[string]json.RawMessage, path string) string {
	tb.Helper()
	parts := strings.Split(path, ".")
	raw := data[parts[0]]
	for _, p := range parts[1:] {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		raw = m[p]
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		tb.Fatalf("%s: %v in %s", path, err, raw)
	}
	return s
}

// otherTenant makes a second, small tenant through the API, as its own
// admin would: one cluster, one project with an environment and a deployed
// service. Its admin's mutation is what BenchmarkPreviewLoad times.
func otherTenant(tb testing.TB, f *fixture) (*gqlClient, string) {
	tb.Helper()
	boss := newGQLClient(f.graphQL, f.seed.Secret)
	d := boss.must(tb, `mutation { createTenant(input: {name: "other"}) { secret userErrors { code message } } }`, nil)
	c := newGQLClient(f.graphQL, str(tb, d, "createTenant.secret"))
	d = c.must(tb, `{ viewer { tenants { nodes { id } } } }`, nil)
	var v struct {
		Tenants struct{ Nodes []struct{ ID string } } `json:"tenants"`
	}
	if err := json.Unmarshal(d["viewer"], &v); err != nil || len(v.Tenants.Nodes) != 1 {
		tb.Fatalf("the other tenant's viewer: %v %s", err, d["viewer"])
	}
	tenant := v.Tenants.Nodes[0].ID
	c.must(tb, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "other-1", labels: [{key: "env", value: "prod"}]}) { userErrors { code message } } }`,
		map[string]any{"t": tenant})
	d = c.must(tb, `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "shop"}) { project { id } userErrors { code message } } }`,
		map[string]any{"t": tenant})
	project := str(tb, d, "createProject.project.id")
	d = c.must(tb, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "prod", clusterSelector: [{key: "env", value: "prod"}]}) { environment { id } userErrors { code message } } }`,
		map[string]any{"p": project})
	env := str(tb, d, "createEnvironment.environment.id")
	d = c.must(tb, `mutation($p: ID!) { createService(input: {projectId: $p, name: "api", image: "registry.example.com/other/api",
		processes: [{name: "web", command: ["/app/web"], replicas: 2, port: 8080}]}) { service { id } userErrors { code message } } }`,
		map[string]any{"p": project})
	svc := str(tb, d, "createService.service.id")
	c.must(tb, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { userErrors { code message } } }`,
		map[string]any{"s": svc, "e": env, "d": Digest("other")})
	return c, project
}

// percentile of sorted samples, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// BenchmarkPreviewLoad times one tenant's mutation (setVariable, which
// recompiles its cluster) while another tenant's admin sends previews, and,
// interleaved in the same run, without them: the ops go in phases of
// phaseOps mutations, alternately alone (base-…) and under the load
// (load-…). The loads: three clients each sending requests of 10 aliased
// previewDeploy (the default per-request limit) back to back, or one client
// sending requests of 1,000. The previewing tenant is mainSize (100
// environments, 300 deployments); ns/op mixes both phases and means little.
// See docs/benchmarks.md, "Previews and other tenants' writes".
func BenchmarkPreviewLoad(b *testing.B) {
	f := newFixture(b, mainSize)
	other, project := otherTenant(b, f)
	var svc model.ServiceID
	var env model.EnvironmentID
	for e, d := range f.seed.Latest {
		svc, env = d.Deployment.ServiceID, e
		break
	}
	input := map[string]any{"i": map[string]any{
		"serviceId":     gid.Encode(gid.Service, svc),
		"environmentId": gid.Encode(gid.Environment, env),
		"imageDigest":   Digest("preview"),
	}}
	// A preview must work before its load means anything.
	if data, errs, err := newGQLClient(f.graphQL, f.seed.Secret).do(previewQuery(2), input, nil); err != nil || len(errs) > 0 || len(data) != 2 {
		b.Fatalf("a preview request: %v %+v %v", err, errs, data)
	}
	const mutation = `mutation($i: SetVariableInput!) { setVariable(input: $i) { variable { id } userErrors { code message } } }`
	const phaseOps = 25

	for _, load := range []struct {
		name             string
		clients, aliases int
	}{
		{"previews-3x10", 3, 10},
		{"previews-1x1000", 1, 1000},
		{"small-queries-3", 3, 0},
	} {
		b.Run(load.name, func(b *testing.B) {
			query := previewQuery(load.aliases)
			if load.aliases == 0 {
				// The reference: as many clients sending a small query.
				query = `{ viewer { user { email } } }`
			}
			var previewsRun, requests, refused atomic.Int64
			var loaded time.Duration
			// startLoad starts the clients and returns once each has sent
			// its first request; the function it returns stops them after
			// their requests in flight are answered.
			startLoad := func() (stop func()) {
				quit := make(chan struct{})
				var wg sync.WaitGroup
				started := make(chan struct{}, load.clients)
				for range load.clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c := newGQLClient(f.graphQL, f.seed.Secret)
						var once sync.Once
						first := func() { once.Do(func() { started <- struct{}{} }) }
						trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { first() }}
						defer first()
						for {
							select {
							case <-quit:
								return
							default:
							}
							data, errs, err := c.do(query, input, trace)
							if err != nil {
								b.Error(err)
								return
							}
							requests.Add(1)
							if data == nil && len(errs) > 0 {
								refused.Add(1)
							}
							for _, v := range data {
								if string(v) != "null" {
									previewsRun.Add(1)
								}
							}
						}
					}()
				}
				for range load.clients {
					<-started
				}
				t0 := time.Now()
				return func() {
					close(quit)
					wg.Wait()
					loaded += time.Since(t0)
				}
			}

			var base, under []time.Duration
			stop := func() {}
			i := 0
			for b.Loop() {
				inLoad := (i/phaseOps)%2 == 1
				switch {
				case i%phaseOps == 0 && inLoad:
					stop = startLoad()
				case i%phaseOps == 0 && i > 0:
					stop()
					stop = func() {}
				}
				i++
				t0 := time.Now()
				data, errs, err := other.do(mutation, map[string]any{"i": map[string]any{
					"projectId": project, "name": "LEVEL", "value": fmt.Sprint("v", i)}}, nil)
				took := time.Since(t0)
				if err != nil || len(errs) > 0 || bytes.Contains(data["setVariable"], []byte(`"userErrors":[{`)) {
					b.Fatalf("the other tenant's mutation: %v %+v %s", err, errs, data["setVariable"])
				}
				if inLoad {
					under = append(under, took)
				} else {
					base = append(base, took)
				}
			}
			stop()

			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			slices.Sort(base)
			slices.Sort(under)
			b.ReportMetric(ms(percentile(base, 0.50)), "base-p50-ms")
			b.ReportMetric(ms(percentile(base, 0.99)), "base-p99-ms")
			b.ReportMetric(ms(percentile(under, 0.50)), "load-p50-ms")
			b.ReportMetric(ms(percentile(under, 0.99)), "load-p99-ms")
			if len(base) > 0 && len(under) > 0 {
				b.ReportMetric(float64(percentile(under, 0.99))/float64(percentile(base, 0.99)), "p99-ratio")
			}
			if loaded > 0 {
				b.ReportMetric(float64(requests.Load())/loaded.Seconds(), "load-req/s")
				b.ReportMetric(float64(refused.Load())/float64(max(requests.Load(), 1)), "refused/req")
				if load.aliases > 0 {
					b.ReportMetric(float64(previewsRun.Load())/loaded.Seconds(), "previews/s")
				}
			}
		})
	}
}
