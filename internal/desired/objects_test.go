package desired

import (
	"slices"
	"testing"

	"github.com/nebulactrl/nebula/internal/model"
)

func TestCompare(t *testing.T) {
	base := Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{shop()}}
	from := Compile(base)
	if d := Compare(from, Compile(base)); !d.Empty() {
		t.Errorf("a state compared with itself: %+v, want no difference", d)
	}

	// A new release of the api: its deployments and its variables' Secret
	// are replaced (a release carries its configuration down to its pods),
	// its service and ingress stay.
	p := shop()
	p.Current["e-prod"]["s-api"] = release(p.Services[0], "e-prod", 4)
	d := Compare(from, Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}}))
	wantAdded := []Object{{"Deployment", "shop-production", "api-web-r4"}, {"Deployment", "shop-production", "api-worker-r4"},
		{"Secret", "shop-production", "api-env-r4"}}
	wantRemoved := []Object{{"Deployment", "shop-production", "api-web-r3"}, {"Deployment", "shop-production", "api-worker-r3"},
		{"Secret", "shop-production", "api-env-r3"}}
	if !slices.Equal(d.Added, wantAdded) || !slices.Equal(d.Removed, wantRemoved) {
		t.Errorf("release diff: added %v removed %v, want %v and %v", d.Added, d.Removed, wantAdded, wantRemoved)
	}
	// The service object names the release it routes to: it changes too.
	if !slices.Contains(d.Changed, Object{"Service", "shop-production", "api-web"}) {
		t.Errorf("changed %v, want the api-web Service", d.Changed)
	}

	// A reference to a missing service holds the frontend; its objects are
	// no longer asked for, and undoing it releases it.
	p = shop()
	p.Variables = append(p.Variables, Variable{Scope: ScopeService, Service: "s-front", Name: "X", Value: "${{ services.gone.url }}"})
	heldState := Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}})
	d = Compare(from, heldState)
	if len(d.NowHeld) != 1 || d.NowHeld[0].Service != "frontend" || d.NowHeld[0].Reason == "" {
		t.Errorf("now held: %+v, want frontend with a reason", d.NowHeld)
	}
	if len(d.Removed) != 0 {
		t.Errorf("removed %v, want nothing: a held service's objects stay as they run", d.Removed)
	}
	if back := Compare(heldState, from); len(back.Released) != 1 || back.Released[0].Service != "frontend" {
		t.Errorf("released: %+v, want frontend", back.Released)
	}

	// A secret's new value changes its Secret object but shows no value.
	p = shop()
	p.Variables = append(p.Variables, Variable{Scope: ScopeProject, Name: "PW", Value: "a", Secret: true, Version: "v1"})
	s1 := Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}})
	p.Variables[len(p.Variables)-1] = Variable{Scope: ScopeProject, Name: "PW", Value: "b", Secret: true, Version: "v2"}
	d = Compare(s1, Compile(Input{Cluster: prod, Clusters: []model.Cluster{prod}, Projects: []Project{p}}))
	if !slices.Contains(d.Changed, Object{"Secret", "shop-production", "api-env-r3"}) {
		t.Errorf("changed %v, want the api's Secret", d.Changed)
	}
}
