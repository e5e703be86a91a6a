package desired

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/model"
)

// mutation is one change a mutation of the API could make to a tenant's
// rows, applied the way rows arrive: new values, never the old ones
// written over.
type mutation struct {
	name  string
	apply func(in *Input, rng *rand.Rand)
}

func pick[T any](rng *rand.Rand, xs []T) int { return rng.IntN(len(xs)) }

// project returns a copy of one project of in, to be changed and put back.
func project(in *Input, rng *rand.Rand) (int, *Project) {
	i := pick(rng, in.Projects)
	p := in.Projects[i]
	return i, &p
}

func withVariables(p *Project, change func(vs []Variable) []Variable) {
	p.Variables = change(slices.Clone(p.Variables))
}

var mutations = []mutation{
	{"new release", func(in *Input, rng *rand.Rand) {
		_, p := project(in, rng)
		env := p.Environments[pick(rng, p.Environments)]
		svc := p.Services[pick(rng, p.Services)]
		rel := model.Release{Number: 1}
		if old := p.Current[env.ID][svc.ID]; old != nil {
			rel = *old
		}
		rel.Number++
		rel.ID = model.ReleaseID(fmt.Sprintf("%s-%s-r%d-%d", env.ID, svc.ID, rel.Number, rng.Int()))
		rel.Image, rel.ImageDigest = svc.Image, fmt.Sprintf("sha256:%064x", rng.Uint64())
		rel.ServiceConfig = svc.ServiceConfig
		if rng.IntN(3) == 0 { // a release that changes the web port
			rel.Processes = []model.Process{{Name: "web", Replicas: 2, Port: port(9000 + rng.IntN(10))}}
		}
		p.Current[env.ID][svc.ID] = &rel
	}},
	{"digest resolved on the same release", func(in *Input, rng *rand.Rand) {
		_, p := project(in, rng)
		env := p.Environments[pick(rng, p.Environments)]
		for _, svc := range p.Services {
			if old := p.Current[env.ID][svc.ID]; old != nil {
				rel := *old
				rel.ImageDigest = fmt.Sprintf("sha256:%064x", rng.Uint64())
				p.Current[env.ID][svc.ID] = &rel
				return
			}
		}
	}},
	{"release removed", func(in *Input, rng *rand.Rand) {
		_, p := project(in, rng)
		env := p.Environments[pick(rng, p.Environments)]
		delete(p.Current[env.ID], p.Services[pick(rng, p.Services)].ID)
	}},
	{"deployment", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		env := p.Environments[pick(rng, p.Environments)]
		deps := map[model.EnvironmentID]map[model.ServiceID]model.DeploymentID{}
		for e, m := range p.Deployments {
			deps[e] = m
		}
		m := map[model.ServiceID]model.DeploymentID{}
		for s, d := range deps[env.ID] {
			m[s] = d
		}
		m[p.Services[pick(rng, p.Services)].ID] = model.DeploymentID(fmt.Sprintf("d-%d", rng.Int()))
		deps[env.ID] = m
		p.Deployments = deps
		in.Projects[i] = *p
	}},
	{"variable value", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		withVariables(p, func(vs []Variable) []Variable {
			v := &vs[pick(rng, vs)]
			if v.Secret {
				v.Version = fmt.Sprintf("v%d", rng.Int())
			}
			v.Value = fmt.Sprintf("value-%d", rng.IntN(4))
			return vs
		})
		in.Projects[i] = *p
	}},
	{"reference added", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		from, to := p.Services[pick(rng, p.Services)], p.Services[pick(rng, p.Services)]
		ref := []string{"${{ services.%s.url }}", "${{ services.%s.host }}:${{ services.%s.port }}", "${{ services.%s.variables.QUEUE }}", "${{ services.%s.variables.SERVICE_TOKEN }}"}[rng.IntN(4)]
		val := strings.ReplaceAll(ref, "%s", to.Name)
		withVariables(p, func(vs []Variable) []Variable {
			return append(vs, Variable{Scope: ScopeService, Service: from.ID, Name: fmt.Sprintf("REF_%d", rng.IntN(3)), Value: val})
		})
		in.Projects[i] = *p
	}},
	{"variable removed", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		withVariables(p, func(vs []Variable) []Variable {
			k := pick(rng, vs)
			return slices.Delete(vs, k, k+1)
		})
		in.Projects[i] = *p
	}},
	{"secret unreadable", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		withVariables(p, func(vs []Variable) []Variable {
			for range 20 {
				if v := &vs[pick(rng, vs)]; v.Secret {
					v.Unreadable = []string{"", "the master key does not open it"}[rng.IntN(2)]
					break
				}
			}
			return vs
		})
		in.Projects[i] = *p
	}},
	{"service renamed", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		p.Services = slices.Clone(p.Services)
		s := &p.Services[pick(rng, p.Services)]
		if strings.HasSuffix(s.Name, "-x") {
			s.Name = strings.TrimSuffix(s.Name, "-x")
		} else {
			s.Name += "-x"
		}
		in.Projects[i] = *p
	}},
	{"domain", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		p.Services = slices.Clone(p.Services)
		s := &p.Services[pick(rng, p.Services)]
		s.Domains = append(slices.Clone(s.Domains), model.Domain{Host: fmt.Sprintf("d%d.example.com", rng.IntN(100)), Process: "web"})
		in.Projects[i] = *p
	}},
	{"cycle", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		a, b := p.Services[pick(rng, p.Services)], p.Services[pick(rng, p.Services)]
		withVariables(p, func(vs []Variable) []Variable {
			return append(vs,
				Variable{Scope: ScopeService, Service: a.ID, Name: "LOOP", Value: "${{ services." + b.Name + ".variables.LOOP }}"},
				Variable{Scope: ScopeService, Service: b.ID, Name: "LOOP", Value: "${{ services." + a.Name + ".variables.LOOP }}"})
		})
		in.Projects[i] = *p
	}},
	{"cycle broken", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		withVariables(p, func(vs []Variable) []Variable {
			return slices.DeleteFunc(vs, func(v Variable) bool { return v.Name == "LOOP" })
		})
		in.Projects[i] = *p
	}},
	{"namespace target renamed", func(in *Input, rng *rand.Rand) {
		in.Targets = slices.Clone(in.Targets)
		tg := &in.Targets[pick(rng, in.Targets)]
		if strings.HasSuffix(tg.Namespace, "-2") {
			tg.Namespace = strings.TrimSuffix(tg.Namespace, "-2")
		} else {
			tg.Namespace += "-2"
		}
	}},
	{"environment renamed", func(in *Input, rng *rand.Rand) {
		i, p := project(in, rng)
		p.Environments = slices.Clone(p.Environments)
		e := &p.Environments[pick(rng, p.Environments)]
		e.Name = []string{"production", "prod", "main"}[rng.IntN(3)] + "-" + string(e.ID[len(e.ID)-1])
		in.Projects[i] = *p
	}},
}

// TestCompilerMatchesCompile changes the 50 × 20 fixture at random, change
// after change, and holds the Compiler, which keeps what it compiled, to
// what Compile gives from nothing: the same stored bytes (so the same
// hash) and the same state with secrets opened, as delivered.
func TestCompilerMatchesCompile(t *testing.T) {
	in := benchInput()
	rng := rand.New(rand.NewPCG(16, 2026))
	c := NewCompiler()
	rounds := 250
	if testing.Short() {
		rounds = 60
	}
	var fresh, total int64
	for round := range rounds {
		m := mutations[rng.IntN(len(mutations))]
		for range 1 + rng.IntN(3) {
			m.apply(&in, rng)
		}
		want, got := Compile(in), c.Compile(in)
		wantShown, wantHash := want.Shown()
		gotShown, gotHash := got.Shown()
		if gotShown != wantShown || gotHash != wantHash || got.Hash() != wantHash {
			t.Fatalf("round %d (%s): the Compiler's state differs from Compile's:\n%s", round, m.name, firstDifference([]byte(gotShown), []byte(wantShown)))
		}
		if a, b := appendState(nil, &got, false, nil), appendState(nil, &want, false, nil); !bytes.Equal(a, b) {
			t.Fatalf("round %d (%s): with secrets opened, the Compiler's state differs from Compile's:\n%s", round, m.name, firstDifference(a, b))
		}
		fresh += c.fresh.Swap(0)
		for _, ns := range got.Namespaces {
			total += int64(len(ns.Services))
		}
	}
	// A few services change a round: most of what is compiled is reused.
	if fresh*4 > total {
		t.Errorf("compiled %d services afresh of %d over %d rounds; want most reused", fresh, total, rounds)
	}
	t.Logf("%d rounds: %d services compiled afresh of %d", rounds, fresh, total)
}

func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	return fmt.Sprintf("got  …%s\nwant …%s", a[from:min(len(a), i+200)], b[from:min(len(b), i+200)])
}

// TestCompilerRecompilesWhatAChangeFeeds counts what compiles again after
// one change to the fixture: only the services the changed rows feed.
func TestCompilerRecompilesWhatAChangeFeeds(t *testing.T) {
	in := benchInput()
	c := NewCompiler()
	c.Compile(in)
	c.fresh.Store(0)
	p := &in.Projects[0]
	env := p.Environments[0].ID
	byName := map[string]model.Service{}
	for _, s := range p.Services {
		byName[s.Name] = s
	}
	newRelease := func(name string) {
		old := p.Current[env][byName[name].ID]
		rel := *old
		rel.ID, rel.Number = old.ID+"-next", old.Number+1
		p.Current[env][rel.ServiceID] = &rel
	}
	// feeds counts a service and those whose references lead to it
	// (benchParent's tree; legacy-report refers only to the missing cart).
	feeds := func(name string) int {
		n := 0
		for i, sn := range benchSvcNames {
			if sn == "legacy-report" {
				continue
			}
			for j := i; ; j = benchParent(j) {
				if benchSvcNames[j] == name {
					n++
					break
				}
				if j == 0 {
					break
				}
			}
		}
		return n
	}

	steps := []struct {
		name   string
		change func()
		want   int
	}{
		{"nothing", func() {}, 0},
		{"a release of gateway, which nothing refers to, in one environment", func() { newRelease("gateway") }, 1},
		{"a release of auth in one environment", func() { newRelease("auth") }, feeds("auth")},
		{"the QUEUE of gateway, in every environment of its project", func() {
			withVariables(p, func(vs []Variable) []Variable {
				for i := range vs {
					if vs[i].Service == byName["gateway"].ID && vs[i].Name == "QUEUE" {
						vs[i].Value = "jobs-gateway-2"
					}
				}
				return vs
			})
		}, benchEnvsPerProj},
		{"a project variable", func() {
			withVariables(p, func(vs []Variable) []Variable {
				for i := range vs {
					if vs[i].Scope == ScopeProject && vs[i].Name == "REGION" {
						vs[i].Value = "eu-central-1"
					}
				}
				return vs
			})
		}, benchEnvsPerProj * (benchSvcsPerProj - 1)},
	}
	if got := feeds("auth"); got != 11 {
		t.Fatalf("the fixture changed: auth feeds %d services, want 11", got)
	}
	for _, s := range steps {
		s.change()
		want, got := Compile(in).Hash(), c.Compile(in).Hash()
		if got != want {
			t.Fatalf("%s: hash %s, want %s", s.name, got, want)
		}
		if n := c.fresh.Swap(0); n != int64(s.want) {
			t.Errorf("%s: compiled %d services afresh, want %d", s.name, n, s.want)
		}
	}
}
