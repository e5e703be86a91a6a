package desired

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func port(p int) *int { return &p }

func labels(kv ...string) model.Labels {
	var ls []model.Label
	for i := 0; i < len(kv); i += 2 {
		ls = append(ls, model.Label{Key: kv[i], Value: kv[i+1]})
	}
	return model.NewLabels(ls)
}

var (
	prod    = model.Cluster{ID: "c-prod", TenantID: "t", Name: "prod-eu", Labels: labels("env", "prod", "region", "eu")}
	staging = model.Cluster{ID: "c-stg", TenantID: "t", Name: "staging", Labels: labels("env", "staging")}
	prod2   = model.Cluster{ID: "c-prod2", TenantID: "t", Name: "prod-us", Labels: labels("env", "prod", "region", "us")}
)

func service(id, name string, procs ...model.Process) model.Service {
	return model.Service{ID: model.ServiceID(id), TenantID: "t", ProjectID: "p", Name: name, Image: "registry.example.com/shop/" + name,
		ServiceConfig: model.ServiceConfig{Processes: procs}}
}

func release(svc model.Service, env model.EnvironmentID, n int) *model.Release {
	return &model.Release{ID: model.ReleaseID(string(svc.ID) + "-r" + string(rune('0'+n))), ServiceID: svc.ID, EnvironmentID: env,
		Number: n, Image: svc.Image, ImageDigest: "sha256:" + strings.Repeat(string(rune('a'+n)), 64), ServiceConfig: svc.ServiceConfig, CreatedAt: t0}
}

func web(p int) model.Process {
	path := "/healthz"
	return model.Process{Name: "web", Command: []string{"./server"}, Replicas: 2, Port: port(p),
		ReadinessProbe: &model.Probe{Path: &path, Port: p, PeriodSeconds: 10}}
}

func env(id, name string, sel model.Labels) model.Environment {
	return model.Environment{ID: model.EnvironmentID(id), TenantID: "t", ProjectID: "p", Name: name, ClusterSelector: sel}
}

// shop is a project with an api (web + worker), a frontend referencing it,
// and domains.
func shop() Project {
	api := service("s-api", "api", web(8080), model.Process{Name: "worker", Command: []string{"./worker", "--queue=jobs"}, Replicas: 1})
	api.Domains = []model.Domain{{Host: "api.shop.example.com", Process: "web"}}
	front := service("s-front", "frontend", web(3000))
	front.Domains = []model.Domain{{Host: "shop.example.com", Process: "web"}, {Host: "www.shop.example.com", Process: "web"}}
	prodEnv := env("e-prod", "production", labels("env", "prod", "region", "eu"))
	return Project{
		Project:      model.Project{ID: "p", TenantID: "t", Name: "shop"},
		Environments: []model.Environment{prodEnv},
		Services:     []model.Service{api, front},
		Variables: []Variable{
			{Scope: ScopeProject, Name: "LOG_LEVEL", Value: "info"},
			{Scope: ScopeEnvironment, Environment: "e-prod", Name: "LOG_LEVEL", Value: "warn"},
			{Scope: ScopeService, Service: "s-api", Name: "LOG_LEVEL", Value: "debug"},
			{Scope: ScopeService, Service: "s-front", Name: "API_URL", Value: "${{ services.api.url }}/v1"},
			{Scope: ScopeService, Service: "s-front", Name: "API_PORT", Value: "${{services.api.port}}"},
		},
		Current: map[model.EnvironmentID]map[model.ServiceID]*model.Release{
			"e-prod": {"s-api": release(api, "e-prod", 3), "s-front": release(front, "e-prod", 1)},
		},
	}
}

func TestCompileGolden(t *testing.T) {
	cases := map[string]func() Input{
		"multi-process-and-domains": func() Input {
			return Input{Cluster: prod, Clusters: []model.Cluster{prod, staging}, Projects: []Project{shop()}}
		},
		"references": func() Input {
			p := shop()
			p.Variables = append(p.Variables, Variable{Scope: ScopeService, Service: "s-front", Name: "API_TOKEN", Value: "${{ services.api.variables.TOKEN }}"},
				Variable{Scope: ScopeService, Service: "s-api", Name: "TOKEN", Value: "tok-123"})
			return Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}}
		},
		"held-service": func() Input {
			p := shop()
			p.Variables = append(p.Variables, Variable{Scope: ScopeService, Service: "s-front", Name: "CART_URL", Value: "${{ services.cart.url }}"})
			return Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}}
		},
		"secrets": func() Input {
			p := shop()
			p.Variables = append(p.Variables,
				Variable{Scope: ScopeEnvironment, Environment: "e-prod", Name: "DB_PASSWORD", Value: "hunter2", Secret: true},
				Variable{Scope: ScopeService, Service: "s-front", Name: "STRIPE_KEY", Secret: true, Unreadable: "sealed with a master key this control plane does not have"})
			return Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}}
		},
		"two-projects-one-cluster": func() Input {
			a := shop()
			b := shop()
			b.Project = model.Project{ID: "p2", TenantID: "t", Name: "blog"}
			b.Environments = []model.Environment{{ID: "e-blog", ProjectID: "p2", Name: "live", ClusterSelector: labels("region", "eu"),
				NamespaceSelector: labels("team", "content")}}
			b.Current = map[model.EnvironmentID]map[model.ServiceID]*model.Release{"e-blog": {"s-api": release(b.Services[0], "e-blog", 1)}}
			return Input{Cluster: prod, Clusters: []model.Cluster{prod, staging},
				Targets:  []model.NamespaceTarget{{ID: "n1", ClusterID: "c-prod", Namespace: "content-live", Labels: labels("team", "content")}},
				Projects: []Project{a, b}}
		},
		"selectors-match-nothing": func() Input {
			p := shop()
			p.Environments = append(p.Environments,
				env("e-none", "qa", labels("env", "qa")),
				model.Environment{ID: "e-ns", ProjectID: "p", Name: "canary", ClusterSelector: labels("region", "eu"), NamespaceSelector: labels("team", "nobody")},
				env("e-two", "global", labels("env", "prod")))
			return Input{Cluster: prod, Clusters: []model.Cluster{prod, prod2}, Projects: []Project{p}}
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			st := Compile(build())
			got, err := json.MarshalIndent(struct {
				State State  `json:"state"`
				Hash  string `json:"hash"`
			}{st.Redact(), st.Hash()}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading golden file (run go test ./internal/desired -update): %v", err)
			}
			if string(want) != string(got)+"\n" {
				t.Errorf("compiled state differs from %s (rerun with -update if intended):\n%s", path, got)
			}
			// Deterministic: compiling again, with inputs in another order,
			// gives the same hash.
			in := build()
			for i, j := 0, len(in.Projects)-1; i < j; i, j = i+1, j-1 {
				in.Projects[i], in.Projects[j] = in.Projects[j], in.Projects[i]
			}
			if h := Compile(in).Hash(); h != st.Hash() {
				t.Errorf("hash changed with input order: %s vs %s", h, st.Hash())
			}
			// The agent hashes the state it received (JSON, secrets open)
			// for its heartbeat: it must be the hash the control plane
			// stored, or the active revision is never confirmed.
			wire, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			var received State
			if err := json.Unmarshal(wire, &received); err != nil {
				t.Fatal(err)
			}
			if h := received.Hash(); h != st.Hash() {
				t.Errorf("the state as an agent receives it hashes to %s, the control plane's hash is %s", h, st.Hash())
			}
		})
	}
}

func TestSecretsOnlyInDelivery(t *testing.T) {
	p := shop()
	p.Variables = append(p.Variables, Variable{Scope: ScopeProject, Name: "DB_PASSWORD", Value: "hunter2", Secret: true})
	st := Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}})
	full, _ := json.Marshal(st)
	shown, _ := json.Marshal(st.Redact())
	if !strings.Contains(string(full), "hunter2") {
		t.Error("the delivered state lacks the opened secret")
	}
	if strings.Contains(string(shown), "hunter2") {
		t.Error("the redacted state shows the secret")
	}
	if st.Hash() == Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{shop()}}).Hash() {
		t.Error("adding a variable did not change the hash")
	}
}

func TestReferenceCycleHolds(t *testing.T) {
	p := shop()
	p.Variables = append(p.Variables,
		Variable{Scope: ScopeService, Service: "s-api", Name: "A", Value: "${{ services.frontend.variables.B }}"},
		Variable{Scope: ScopeService, Service: "s-front", Name: "B", Value: "${{ services.api.variables.A }}"})
	st := Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}})
	if len(st.Namespaces) != 1 || len(st.Namespaces[0].Held) != 2 {
		t.Fatalf("got %+v, want both services held", st.Namespaces)
	}
	for _, h := range st.Namespaces[0].Held {
		if !strings.Contains(h.Reason, "cycle") {
			t.Errorf("held %s for %q, want a cycle", h.Name, h.Reason)
		}
	}
}

func TestDefaultNamespaceFitsALabel(t *testing.T) {
	ns := DefaultNamespace(strings.Repeat("a", 63), strings.Repeat("b", 63))
	if len(ns) > 63 {
		t.Errorf("namespace %q is %d characters, want at most 63", ns, len(ns))
	}
	if DefaultNamespace("shop", "prod") != "shop-prod" {
		t.Errorf("got %q", DefaultNamespace("shop", "prod"))
	}
}

// A plain variable that takes in a secret by reference is redacted too.
func TestReferenceToASecretIsSecret(t *testing.T) {
	p := shop()
	p.Variables = append(p.Variables,
		Variable{Scope: ScopeService, Service: "s-api", Name: "DB_PASSWORD", Value: "hunter2", Secret: true, Version: "v7"},
		Variable{Scope: ScopeService, Service: "s-front", Name: "DSN", Value: "postgres://app:${{ services.api.variables.DB_PASSWORD }}@db/shop"})
	st := Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}})
	shown, _ := json.Marshal(st.Redact())
	if strings.Contains(string(shown), "hunter2") {
		t.Errorf("the redacted state shows the referenced secret: %s", shown)
	}
	full, _ := json.Marshal(st)
	if !strings.Contains(string(full), "postgres://app:hunter2@db/shop") {
		t.Error("the delivered state lacks the expanded value")
	}
	before := st.Hash()
	p.Variables[len(p.Variables)-2].Value, p.Variables[len(p.Variables)-2].Version = "other", "v8"
	if Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}}).Hash() == before {
		t.Error("a new secret value taken in by reference did not change the hash")
	}
	// So does a new template around the same secret.
	p = shop()
	p.Variables = append(p.Variables,
		Variable{Scope: ScopeService, Service: "s-api", Name: "TOKEN", Value: "t0k", Secret: true, Version: "v1"},
		Variable{Scope: ScopeService, Service: "s-front", Name: "AUTH", Value: "Bearer ${{ services.api.variables.TOKEN }}"})
	h1 := Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}}).Hash()
	p.Variables[len(p.Variables)-1].Value = "Token ${{ services.api.variables.TOKEN }}"
	if Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}}).Hash() == h1 {
		t.Error("a new template around a secret did not change the hash")
	}
}

// The address of a service is its "web" process's port, else that of the
// first process by name that has one.
func TestServingPort(t *testing.T) {
	proc := func(name string, p *int) model.Process { return model.Process{Name: name, Port: p} }
	cases := []struct {
		procs     []model.Process
		port      int
		name      string
		reachable bool
	}{
		{[]model.Process{proc("worker", port(9000)), proc("web", port(8080)), proc("admin", port(7000))}, 8080, "web", true},
		{[]model.Process{proc("worker", port(9000)), proc("web", nil), proc("beta", port(7000)), proc("admin", nil)}, 7000, "beta", true},
		{[]model.Process{proc("zeta", port(1)), proc("alpha", port(2))}, 2, "alpha", true},
		{[]model.Process{proc("web", nil), proc("worker", nil)}, 0, "", false},
		{nil, 0, "", false},
	}
	for i, c := range cases {
		p, name, ok := servingPort(&model.Release{ServiceConfig: model.ServiceConfig{Processes: c.procs}})
		if p != c.port || name != c.name || ok != c.reachable {
			t.Errorf("case %d: got %d %q %v, want %d %q %v", i, p, name, ok, c.port, c.name, c.reachable)
		}
	}
}
