package desired

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/model"
)

// The fixture of issue 3: one cluster holding 50 environments × 20 services.
const (
	benchProjects     = 10
	benchEnvsPerProj  = 5
	benchSvcsPerProj  = 20 // the last one is held
	benchNamespaces   = benchProjects * benchEnvsPerProj
	benchServices     = benchNamespaces * (benchSvcsPerProj - 1)
	benchHeld         = benchNamespaces
	benchTargetedEnvs = 2 // the last two environments of each project use a namespace selector
)

var (
	benchEnvNames = [benchEnvsPerProj]string{"production", "staging", "qa", "demo", "preview"}
	// benchSvcNames are the services of every project; "cart", which
	// legacy-report refers to, is missing on purpose.
	benchSvcNames = [benchSvcsPerProj]string{"api", "auth", "billing", "catalog", "checkout", "search", "inventory",
		"orders", "payments", "shipping", "notify", "profile", "reviews", "media", "pricing", "promo", "ledger",
		"gateway", "frontend", "legacy-report"}
)

// benchParent is the service whose address and QUEUE variable service i
// refers to: a binary tree rooted at api, so a service's variables pull in
// those of up to four ancestors (frontend → payments → catalog → auth → api).
func benchParent(i int) int { return (i - 1) / 2 }

// benchInput builds the fixture. The tenant has two more clusters that the
// environments' selectors do not pick, and namespace targets with the same
// labels on one of them, so placement has something to filter out.
func benchInput() Input {
	prodEU := model.Cluster{ID: "c-prod-eu", TenantID: "t", Name: "prod-eu", Labels: labels("env", "prod", "region", "eu")}
	prodUS := model.Cluster{ID: "c-prod-us", TenantID: "t", Name: "prod-us", Labels: labels("env", "prod", "region", "us")}
	stg := model.Cluster{ID: "c-stg", TenantID: "t", Name: "staging", Labels: labels("env", "staging")}
	in := Input{Cluster: prodEU, Clusters: []model.Cluster{prodUS, stg, prodEU}}
	for p := range benchProjects {
		in.Projects = append(in.Projects, benchProject(p, &in))
	}
	return in
}

func benchProject(p int, in *Input) Project {
	pid := model.ProjectID(fmt.Sprintf("p%02d", p))
	name := fmt.Sprintf("shop%02d", p)
	out := Project{
		Project: model.Project{ID: pid, TenantID: "t", Name: name},
		Current: map[model.EnvironmentID]map[model.ServiceID]*model.Release{},
		Variables: []Variable{
			{Scope: ScopeProject, Name: "LOG_LEVEL", Value: "info"},
			{Scope: ScopeProject, Name: "REGION", Value: "eu-west-1"},
			{Scope: ScopeProject, Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability:4317"},
			{Scope: ScopeProject, Name: "FEATURE_FLAGS", Value: "checkout-v2,search-suggest"},
			benchSecret(string(pid)+"-db-url", ScopeProject, "", "", "DATABASE_URL", "postgres://app@db."+name+".internal:5432/app"),
			benchSecret(string(pid)+"-sentry", ScopeProject, "", "", "SENTRY_DSN", "https://key@sentry.example.com/"+name),
		},
	}
	for i, sn := range benchSvcNames {
		sid := model.ServiceID(fmt.Sprintf("%s-s%02d", pid, i))
		svc := model.Service{ID: sid, TenantID: "t", ProjectID: pid, Name: sn, Image: "registry.example.com/" + name + "/" + sn,
			ServiceConfig: model.ServiceConfig{Processes: []model.Process{benchWeb(), {Name: "worker", Command: []string{"./worker", "--queue=" + sn}, Replicas: 1}}}}
		svc.Domains = []model.Domain{{Host: sn + "." + name + ".example.com", Process: "web"}}
		if sn == "frontend" {
			svc.Domains = append(svc.Domains, model.Domain{Host: "www." + name + ".example.com", Process: "web"})
		}
		out.Services = append(out.Services, svc)
		out.Variables = append(out.Variables, Variable{Scope: ScopeService, Service: sid, Name: "QUEUE", Value: "jobs-" + sn})
		switch {
		case sn == "legacy-report":
			out.Variables = append(out.Variables, Variable{Scope: ScopeService, Service: sid, Name: "CART_URL", Value: "${{ services.cart.url }}/export"})
		case i > 0:
			parent := benchSvcNames[benchParent(i)]
			out.Variables = append(out.Variables,
				Variable{Scope: ScopeService, Service: sid, Name: "UPSTREAM_URL", Value: "${{ services." + parent + ".url }}/internal"},
				Variable{Scope: ScopeService, Service: sid, Name: "UPSTREAM_QUEUE", Value: "${{ services." + parent + ".variables.QUEUE }}"})
		}
		if i%3 == 0 {
			out.Variables = append(out.Variables, Variable{Scope: ScopeService, Service: sid, Name: "LOG_LEVEL", Value: "debug"})
		}
		if i%4 == 0 {
			out.Variables = append(out.Variables, benchSecret(string(sid)+"-token", ScopeService, "", sid, "SERVICE_TOKEN", "tok-"+string(sid)))
		}
	}
	for e, en := range benchEnvNames {
		eid := model.EnvironmentID(fmt.Sprintf("%s-e%d", pid, e))
		env := model.Environment{ID: eid, TenantID: "t", ProjectID: pid, Name: en, ClusterSelector: labels("region", "eu")}
		if e >= benchEnvsPerProj-benchTargetedEnvs {
			env.NamespaceSelector = labels("team", name, "stage", en)
			for _, c := range []model.ClusterID{"c-prod-us", "c-prod-eu"} {
				in.Targets = append(in.Targets, model.NamespaceTarget{ID: model.NamespaceTargetID(fmt.Sprintf("n-%s-%s", eid, c)), TenantID: "t",
					ClusterID: c, Namespace: benchTargetNamespace(name, en), Labels: labels("team", name, "stage", en)})
			}
		}
		out.Environments = append(out.Environments, env)
		level := "debug"
		if en == "production" {
			level = "warn"
		}
		out.Variables = append(out.Variables,
			Variable{Scope: ScopeEnvironment, Environment: eid, Name: "LOG_LEVEL", Value: level},
			Variable{Scope: ScopeEnvironment, Environment: eid, Name: "ENVIRONMENT", Value: en},
			benchSecret(string(eid)+"-db-password", ScopeEnvironment, eid, "", "DB_PASSWORD", "pw-"+string(eid)))
		current := map[model.ServiceID]*model.Release{}
		for i, svc := range out.Services {
			n := 1 + (e+i)%7
			sum := sha256.Sum256([]byte(string(eid) + string(svc.ID)))
			current[svc.ID] = &model.Release{ID: model.ReleaseID(fmt.Sprintf("%s-%s-r%d", eid, svc.ID, n)), TenantID: "t", ProjectID: pid,
				ServiceID: svc.ID, EnvironmentID: eid, Number: n, Image: svc.Image, ImageDigest: fmt.Sprintf("sha256:%x", sum),
				ServiceConfig: svc.ServiceConfig, CreatedAt: t0}
		}
		out.Current[eid] = current
	}
	return out
}

func benchTargetNamespace(project, env string) string { return "team-" + project + "-" + env }

func benchWeb() model.Process {
	path := "/healthz"
	return model.Process{Name: "web", Command: []string{"./server", "--listen=:8080"}, Replicas: 3, Port: port(8080),
		ReadinessProbe: &model.Probe{Path: &path, Port: 8080, PeriodSeconds: 10}}
}

// benchSecret is an opened secret, shaped as control.compileVariable
// leaves it.
func benchSecret(id string, s Scope, env model.EnvironmentID, svc model.ServiceID, name, value string) Variable {
	return Variable{Scope: s, Environment: env, Service: svc, Name: name, Value: value, Secret: true,
		Version: fmt.Sprintf("%s@%d", id, t0.UnixMicro())}
}

// TestBenchFixture checks that BenchmarkCompile measures what it claims:
// every environment placed, references resolved, one held service per
// namespace.
func TestBenchFixture(t *testing.T) {
	in := benchInput()
	st := Compile(in)
	if len(st.Unplaced) != 0 {
		t.Fatalf("got unplaced %+v, want none", st.Unplaced)
	}
	if len(st.Namespaces) != benchNamespaces {
		t.Fatalf("got %d namespaces, want %d", len(st.Namespaces), benchNamespaces)
	}
	var services, held, targeted, secrets int
	for _, ns := range st.Namespaces {
		services += len(ns.Services)
		held += len(ns.Held)
		if ns.Name == benchTargetNamespace(ns.Project, ns.Environment) {
			targeted++
		}
		if len(ns.Held) != 1 || ns.Held[0].Name != "legacy-report" || !strings.Contains(ns.Held[0].Reason, "service cart, which does not exist") {
			t.Errorf("namespace %s: got held %+v, want legacy-report held for the missing cart", ns.Name, ns.Held)
		}
		for _, svc := range ns.Services {
			if len(svc.Processes) != 2 || len(svc.Domains) == 0 {
				t.Errorf("%s/%s: got %d processes and %d domains, want 2 and at least 1", ns.Name, svc.Name, len(svc.Processes), len(svc.Domains))
			}
			for _, v := range svc.Env {
				if strings.Contains(v.Value, "${{") {
					t.Errorf("%s/%s: %s = %q still holds a reference", ns.Name, svc.Name, v.Name, v.Value)
				}
				if v.Secret {
					secrets++
					if v.Version == "" || v.Value == "" || v.Value == Redacted {
						t.Errorf("%s/%s: secret %s has value %q, version %q; want both", ns.Name, svc.Name, v.Name, v.Value, v.Version)
					}
				}
			}
		}
	}
	if services != benchServices || held != benchHeld {
		t.Errorf("got %d services and %d held, want %d and %d", services, held, benchServices, benchHeld)
	}
	if want := benchProjects * benchTargetedEnvs; targeted != want {
		t.Errorf("got %d namespaces from namespace targets, want %d", targeted, want)
	}
	if secrets == 0 {
		t.Error("no secret reached the compiled state")
	}

	// One reference chain, spelled out: frontend (18) → payments (8) → catalog (3) → auth (1) → api.
	ns := st.Namespaces[0]
	for _, svc := range ns.Services {
		if svc.Name != "frontend" {
			continue
		}
		got := map[string]string{}
		for _, v := range svc.Env {
			got[v.Name] = v.Value
		}
		want := map[string]string{
			"UPSTREAM_URL":   "http://payments-web." + ns.Name + ".svc.cluster.local:8080/internal",
			"UPSTREAM_QUEUE": "jobs-payments",
			"LOG_LEVEL":      "debug", // service scope beats environment scope
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s/frontend: got %s = %q, want %q", ns.Name, k, got[k], v)
			}
		}
	}
}

// BenchmarkCompile compiles one cluster of the issue 3 fixture (50
// environments × 20 services). The sub-benchmarks add what the control
// plane does with the state: control.recompile hashes every cluster of
// the tenant on every change, and for a cluster whose hash changed also
// redacts and marshals the state it stores as the new revision.
func BenchmarkCompile(b *testing.B) {
	in := benchInput()
	st := Compile(in)
	perOp := 0
	for _, ns := range st.Namespaces {
		perOp += len(ns.Services) + len(ns.Held)
	}
	warm := NewCompiler()
	warm.Compile(in)
	// toggle swaps a service's release in the first environment of the
	// first project between its own and a new one.
	p := in.Projects[0]
	env := p.Environments[0].ID
	toggle := func(name string) {
		for _, svc := range p.Services {
			if svc.Name != name {
				continue
			}
			rel := *p.Current[env][svc.ID]
			if strings.HasSuffix(string(rel.ID), "-next") {
				rel.ID, rel.Number = model.ReleaseID(strings.TrimSuffix(string(rel.ID), "-next")), rel.Number-1
			} else {
				rel.ID, rel.Number = rel.ID+"-next", rel.Number+1
			}
			p.Current[env][svc.ID] = &rel
		}
	}
	steps := []struct {
		name string
		run  func(b *testing.B)
	}{
		{"compile", func(*testing.B) { Compile(in) }},
		{"compile+hash", func(*testing.B) { Compile(in).Hash() }},
		{"compile+redact+json", func(b *testing.B) {
			if _, err := json.Marshal(Compile(in).Redact()); err != nil {
				b.Fatal(err)
			}
		}},
		// What control.recompile does for every cluster of a tenant on
		// every change: the stored bytes and their hash.
		{"revision", func(*testing.B) { Compile(in).Shown() }},
		// The same through a Compiler that keeps what it compiled: first
		// from nothing, then with nothing changed, then with one service
		// of one environment released anew on each call (gateway, which
		// nothing refers to; auth, which eleven services' values lead to).
		{"incremental/first", func(*testing.B) { NewCompiler().Compile(in).Shown() }},
		{"incremental/unchanged", func(*testing.B) { warm.Compile(in).Shown() }},
		{"incremental/one-leaf-service", func(*testing.B) { toggle("gateway"); warm.Compile(in).Shown() }},
		{"incremental/one-shared-service", func(*testing.B) { toggle("auth"); warm.Compile(in).Shown() }},
	}
	for _, s := range steps {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.run(b)
			}
			b.ReportMetric(float64(perOp), "services/op")
		})
	}
}
