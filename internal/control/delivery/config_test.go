package delivery_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// running is what the cluster's newest desired revision runs for the shop's
// service: its release number, its variables (a secret by its version),
// its domains, and the revision.
type running struct {
	release  int
	env      map[string]string
	domains  []string
	revision int64
}

func runs(t *testing.T, s *controltest.Shop) running {
	t.Helper()
	st, err := s.P.DesiredState(s.Admin, s.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	out := running{env: map[string]string{}, revision: st["revision"].(int64)}
	for _, ns := range st["namespaces"].([]any) {
		for _, sv := range ns.(map[string]any)["services"].([]any) {
			svc := sv.(map[string]any)
			if svc["name"] != s.Svc.Name {
				continue
			}
			out.release = int(svc["release"].(float64))
			for _, e := range svc["env"].([]any) {
				ev := e.(map[string]any)
				v, _ := ev["value"].(string)
				if ev["secret"] == true {
					v = "version " + ev["version"].(string)
				}
				out.env[ev["name"].(string)] = v
			}
			for _, d := range svc["domains"].([]any) {
				out.domains = append(out.domains, d.(map[string]any)["host"].(string))
			}
		}
	}
	return out
}

func setVar(t *testing.T, ctx context.Context, s *controltest.Shop, name, value string, secret bool) *model.Variable {
	t.Helper()
	svc := s.Svc.ID
	v, err := s.P.Delivery.SetVariable(ctx, delivery.SetVariableInput{Project: s.Project.ID, Service: &svc,
		VariableInput: delivery.VariableInput{Name: name, Value: value, Secret: secret}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A variable change reaches the cluster as a release of the service with
// the new configuration, deployed like any release; the same value makes
// none; in a protected environment it waits for another person's
// approval and the cluster keeps running what it ran.
func TestConfigChangesMakeReleases(t *testing.T) {
	s := controltest.New(t)
	s.Deploy(t, 1)
	before := runs(t, s)
	if before.release != 1 || len(before.env) != 0 {
		t.Fatalf("after the first deploy the cluster runs %+v, want release 1 without variables", before)
	}

	setVar(t, s.Admin, s, "FEATURE_FLAG", "on", false)
	after := runs(t, s)
	if after.release != 2 || after.env["FEATURE_FLAG"] != "on" || after.revision <= before.revision {
		t.Fatalf("after setting FEATURE_FLAG the cluster runs %+v, want release 2 with FEATURE_FLAG=on in a new revision", after)
	}
	rels, err := s.P.Delivery.Releases(s.Admin, s.Svc, &s.Env.ID, store.PageArgs{First: 10})
	if err != nil {
		t.Fatal(err)
	}
	rel := rels.Items[0]
	if rel.Number != 2 || len(rel.Variables) != 1 ||
		rel.Variables[0] != (model.ReleaseVariable{Name: "FEATURE_FLAG", Scope: model.VariableService, Value: "on"}) {
		t.Fatalf("the newest release is %+v, want release 2 freezing FEATURE_FLAG=on at service scope", rel)
	}
	d := newest(t, s)
	evs, err := s.P.Delivery.DeploymentEvents(s.Admin, d, store.PageArgs{First: 1})
	if err != nil || d.ReleaseID != rel.ID || len(evs.Items) != 1 || !strings.Contains(evs.Items[0].Message, "release 2: variable FEATURE_FLAG set by") {
		t.Fatalf("the change's deployment: %+v, first event %+v (%v), want release 2's, saying what changed", d, evs, err)
	}

	setVar(t, s.Admin, s, "FEATURE_FLAG", "on", false)
	if n := releases(t, s); n != 2 {
		t.Fatalf("setting the same value made a release: %d releases, want 2", n)
	}

	// Protected: a direct change is refused as one that needs an approval
	// (the API makes it a change set of one: package changesets), and
	// nothing changes, the variable's row included.
	prot := true
	if _, err := s.P.Delivery.UpdateEnvironment(s.Admin, s.Env.ID, delivery.EnvironmentInput{Protected: &prot}); err != nil {
		t.Fatal(err)
	}
	editor := s.Person(t, "dev@acme.test", model.TenantMember, model.ProjectEditor)
	svc := s.Svc.ID
	_, err = s.P.Delivery.SetVariable(editor, delivery.SetVariableInput{Project: s.Project.ID, Service: &svc,
		VariableInput: delivery.VariableInput{Name: "FEATURE_FLAG", Value: "on-in-prod"}})
	if n, ok := core.AsNeedsApproval(err); !ok || len(n.Environments) != 1 || n.Environments[0] != s.Env.Name {
		t.Fatalf("a direct change to a protected environment: %v, want NeedsApproval naming %s", err, s.Env.Name)
	}
	held := runs(t, s)
	if held.revision != after.revision || held.env["FEATURE_FLAG"] != "on" || releases(t, s) != 2 {
		t.Fatalf("an unapproved change reached the cluster: %+v, want revision %d with FEATURE_FLAG=on", held, after.revision)
	}
	vars, err := s.P.Delivery.Variables(s.Admin, s.Svc.Scope(), nil, &svc)
	if err != nil || len(vars) != 1 || vars[0].Value != "on" {
		t.Fatalf("the refused change wrote the variable: %+v (%v)", vars, err)
	}
	pm := s.Person(t, "pm@acme.test", model.TenantMember, model.ProjectManager)

	// Rollback to release 1 runs release 1's configuration: no flag.
	if _, err := s.P.Delivery.Rollback(pm, s.Svc.ID, s.Env.ID, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.P.Delivery.Decide(s.Admin, newest(t, s).ID, model.Approved, ""); err != nil {
		t.Fatal(err)
	}
	if got := runs(t, s); got.release != 1 || len(got.env) != 0 {
		t.Fatalf("after rolling back to release 1 the cluster runs %+v, want release 1 without variables", got)
	}
}

// A secret is frozen by its version: rolling back to a release runs the
// value it froze, though the variable changed since.
func TestRollbackRunsTheSecretItFroze(t *testing.T) {
	s := controltest.Sealed(t)
	s.Deploy(t, 1)
	first := setVar(t, s.Admin, s, "TOKEN", "first-value", true)
	second := setVar(t, s.Admin, s, "TOKEN", "second-value", true)
	if got := runs(t, s); got.release != 3 || got.env["TOKEN"] != "version "+string(second.Version()) {
		t.Fatalf("after two secret values the cluster runs %+v, want release 3 with the second version", got)
	}
	if _, err := s.P.Delivery.Rollback(s.Admin, s.Svc.ID, s.Env.ID, 2); err != nil {
		t.Fatal(err)
	}
	if got := runs(t, s); got.release != 2 || got.env["TOKEN"] != "version "+string(first.Version()) {
		t.Fatalf("after rolling back to release 2 the cluster runs %+v, want the first version %s", got, first.Version())
	}
}

// newest is the newest deployment of the shop's service in its
// environment.
func newest(t *testing.T, s *controltest.Shop) *model.Deployment {
	t.Helper()
	open, err := store.OpenDeployments(s.Admin, s.St.Q(), s.Svc.ID, s.Env.ID)
	if err != nil || len(open) == 0 {
		t.Fatalf("no deployment under way (%v)", err)
	}
	return open[len(open)-1]
}
