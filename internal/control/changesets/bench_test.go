package changesets_test

import (
	"fmt"
	"testing"

	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/model"
)

// changeSetServices is how many services the project of
// BenchmarkChangeSetApply100 runs, and how many changes its set holds.
const changeSetServices = 100

// BenchmarkChangeSetApply100 applies a change set of 100 changes, one
// service-scoped variable of each of 100 services deployed in one
// unprotected environment, on the embedded store (controltest): every
// change's variable row, then in the same transaction a release and a
// deployment of each service, delivered, and the recompile of the cluster.
// Only ChangeSets.ApplySet is timed; the shop is built once per run, and
// each iteration opens a fresh set and adds its 100 changes with the timer
// stopped. Each iteration gives the variables a new value, so every apply
// makes 100 releases. It reports the statements and transactions that
// reached the database per apply (stmts/op, txs/op) and per service
// (stmts/service), and fails unless an apply is one transaction and one
// desired revision of the cluster.
func BenchmarkChangeSetApply100(b *testing.B) {
	s := controltest.New(b)
	if _, err := s.P.People.SetTenantPlan(s.Admin, s.Boot.Tenant.ID, model.PlanEnterprise); err != nil {
		b.Fatal(err)
	}
	if _, err := s.P.People.SetTenantPlan(s.Admin, s.Boot.Tenant.ID, model.PlanEnterprise); err != nil {
		b.Fatal(err)
	}
	image := "registry.example.com/shop/app"
	services := []*model.Service{s.Svc}
	for i := 1; i < changeSetServices; i++ {
		svc, err := s.P.Delivery.CreateService(s.Admin, s.Project.ID, delivery.ServiceInput{Name: fmt.Sprintf("s%03d", i), Image: &image,
			Processes: []model.Process{{Name: "web", Command: []string{"/app"}, Replicas: 1}}})
		if err != nil {
			b.Fatal(err)
		}
		services = append(services, svc)
	}
	for i, svc := range services {
		if _, _, err := s.P.Delivery.Deploy(s.Admin, svc.ID, s.Env.ID, controltest.Digest(i)); err != nil {
			b.Fatal(err)
		}
	}
	revision := func() int64 {
		st, err := s.P.DesiredState(s.Admin, s.Cluster)
		if err != nil {
			b.Fatal(err)
		}
		return st["revision"].(int64)
	}
	// open is a fresh set of one variable change per service, the value
	// new at each iteration n.
	open := func(n int) model.ChangeSetID {
		set, err := s.P.ChangeSets.OpenSet(s.Admin, s.Project.ID, fmt.Sprint("flags, round ", n))
		if err != nil {
			b.Fatal(err)
		}
		for i, svc := range services {
			if _, err := s.P.ChangeSets.AddChange(s.Admin, set.ID, model.Change{Kind: model.ChangeSetVariable,
				ServiceID: &svc.ID, Name: fmt.Sprintf("FLAG_%d", i), Value: fmt.Sprint("on-", n)}); err != nil {
				b.Fatal(err)
			}
		}
		return set.ID
	}
	// check fails unless apply n moved the cluster's desired revision
	// from before by exactly one and made a deployment of every service.
	check := func(n int, before int64, set *model.ChangeSet) int64 {
		after := revision()
		if after != before+1 {
			b.Fatalf("apply %d moved the cluster's desired revision %d → %d, want one revision", n, before, after)
		}
		if set.State != model.ChangeSetApplied || len(set.Deployments) != changeSetServices {
			b.Fatalf("apply %d: the set is %s with %d deployments, want APPLIED with %d", n, set.State, len(set.Deployments), changeSetServices)
		}
		return after
	}

	b.ReportAllocs()
	before := revision()
	var stmts, txs int64
	var applied *model.ChangeSet
	n := 0
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if applied != nil {
			before = check(n-1, before, applied)
		}
		id := open(n)
		n0, t0 := s.Statements.N(), s.Statements.Txs()
		b.StartTimer()
		set, err := s.P.ChangeSets.ApplySet(s.Admin, id)
		n1, t1 := s.Statements.N(), s.Statements.Txs()
		if err != nil {
			b.Fatalf("apply %d: %v", n, err)
		}
		if t1-t0 != 1 {
			b.Fatalf("apply %d ran %d transactions, want 1", n, t1-t0)
		}
		stmts += (n1 - n0) - (t1 - t0)
		txs += t1 - t0
		applied = set
		n++
	}
	b.StopTimer()
	check(n-1, before, applied)
	b.ReportMetric(float64(stmts)/float64(n), "stmts/op")
	b.ReportMetric(float64(stmts)/float64(n*changeSetServices), "stmts/service")
	b.ReportMetric(float64(txs)/float64(n), "txs/op")
}
