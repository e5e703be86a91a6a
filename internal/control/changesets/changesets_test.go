package changesets_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// board is the shop with a second service (worker) and a second
// environment (staging), both services deployed to both environments, and
// prod protected: the editor proposes, the project manager decides.
type board struct {
	*controltest.Shop
	worker  *model.Service
	staging *model.Environment
	editor  context.Context
	pm      context.Context
}

func newBoard(t *testing.T, opts ...core.Option) *board {
	t.Helper()
	b := &board{Shop: controltest.Sealed(t, opts...)}
	image, name := "registry.example.com/shop/worker", "staging"
	var err error
	if b.worker, err = b.P.Delivery.CreateService(b.Admin, b.Project.ID, delivery.ServiceInput{Name: "worker", Image: &image,
		// A port: what a change of processes is made against is compared
		// by value, not by the pointers a process holds.
		Processes: []model.Process{{Name: "run", Command: []string{"/worker"}, Replicas: 1, Port: ptr(9000)}}}); err != nil {
		t.Fatal(err)
	}
	if b.staging, err = b.P.Delivery.CreateEnvironment(b.Admin, b.Project.ID, delivery.EnvironmentInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []model.ServiceID{b.Svc.ID, b.worker.ID} {
		for _, env := range []model.EnvironmentID{b.Env.ID, b.staging.ID} {
			if _, _, err := b.P.Delivery.Deploy(b.Admin, svc, env, controltest.Digest(1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	prot := true
	if _, err := b.P.Delivery.UpdateEnvironment(b.Admin, b.Env.ID, delivery.EnvironmentInput{Protected: &prot}); err != nil {
		t.Fatal(err)
	}
	b.editor = b.Person(t, "dev@acme.test", model.TenantMember, model.ProjectEditor)
	b.pm = b.Person(t, "pm@acme.test", model.TenantMember, model.ProjectManager)
	return b
}

// state is the cluster's newest revision and, per service and
// environment's namespace, the release it runs and its variables.
type state struct {
	revision int64
	release  map[string]int
	env      map[string]map[string]string
	replicas map[string]int
}

func (b *board) state(t *testing.T) state {
	t.Helper()
	st, err := b.P.DesiredState(b.Admin, b.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	out := state{revision: st["revision"].(int64), release: map[string]int{}, env: map[string]map[string]string{}, replicas: map[string]int{}}
	for _, n := range st["namespaces"].([]any) {
		ns := n.(map[string]any)
		for _, sv := range ns["services"].([]any) {
			svc := sv.(map[string]any)
			k := fmt.Sprintf("%s/%s", ns["name"], svc["name"])
			out.release[k] = int(svc["release"].(float64))
			out.env[k] = map[string]string{}
			for _, e := range svc["env"].([]any) {
				ev := e.(map[string]any)
				v, _ := ev["value"].(string)
				if ev["secret"] == true {
					v = "secret"
				}
				out.env[k][ev["name"].(string)] = v
			}
			for _, p := range svc["processes"].([]any) {
				out.replicas[k] += int(p.(map[string]any)["replicas"].(float64))
			}
		}
	}
	return out
}

func (b *board) key(env *model.Environment, svc *model.Service) string {
	return fmt.Sprintf("%s-%s/%s", b.Project.Name, env.Name, svc.Name)
}

func ptr[T any](v T) *T { return &v }

func mustCode(t *testing.T, err error, code core.Code, says string) {
	t.Helper()
	ps, ok := core.AsProblems(err)
	if !ok || ps[0].Code != code || !strings.Contains(ps[0].Message, says) {
		t.Fatalf("got %v, want a %s saying %q", err, code, says)
	}
}

// Five changes over two services and two environments, one of them
// protected: refused before the approval, decided on by another project
// manager only, then applied as one revision of the cluster.
func TestChangeSetAppliesAsOneRevision(t *testing.T) {
	b := newBoard(t)
	set, err := b.P.ChangeSets.OpenSet(b.editor, b.Project.ID, "turn the flag on everywhere")
	if err != nil {
		t.Fatal(err)
	}
	changes := []model.Change{
		{Kind: model.ChangeSetVariable, ServiceID: &b.Svc.ID, Name: "FEATURE_FLAG", Value: "on"},
		{Kind: model.ChangeSetVariable, ServiceID: &b.worker.ID, Name: "API_TOKEN", Value: "s3cret-value-42", Secret: true},
		{Kind: model.ChangeSetVariable, EnvironmentID: &b.staging.ID, Name: "LOG_LEVEL", Value: "debug"},
		{Kind: model.ChangeUpdateService, ServiceID: &b.worker.ID, Processes: []model.Process{{Name: "run", Command: []string{"/worker"}, Replicas: 3, Port: ptr(9000)}}},
		{Kind: model.ChangeDeploy, ServiceID: &b.Svc.ID, EnvironmentID: &b.staging.ID, ImageDigest: controltest.Digest(2)},
	}
	for _, ch := range changes {
		// An environment's variable is a project manager's to change:
		// the tenant admin adds it, and is an author too.
		by := b.editor
		if ch.EnvironmentID != nil && ch.Kind != model.ChangeDeploy {
			by = b.Admin
		}
		if set, err = b.P.ChangeSets.AddChange(by, set.ID, ch); err != nil {
			t.Fatal(err)
		}
	}
	if len(set.Changes) != 5 || set.Changes[4].Seq != 5 {
		t.Fatalf("the set holds %+v, want 5 changes numbered 1 to 5", set.Changes)
	}
	before := b.state(t)

	clusters, applied, err := b.P.ChangeSets.PreviewSet(b.editor, set.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(clusters) != 1 || len(clusters[0].Releases) != 4 || len(applied.Releases) != 4 {
		t.Fatalf("the preview: %d clusters, %d releases, want 1 cluster changed and 4 releases", len(clusters), len(applied.Releases))
	}
	// It shows the set as once approved: the protected environment's new
	// objects too.
	prodNS := b.Project.Name + "-" + b.Env.Name
	if !slices.ContainsFunc(clusters[0].Added, func(o desired.Object) bool { return o.Namespace == prodNS }) {
		t.Fatalf("the preview adds %v, nothing in the protected environment's namespace %s", clusters[0].Added, prodNS)
	}
	if _, err := b.P.ChangeSets.ApplySet(b.editor, set.ID); err == nil {
		t.Fatal("a set changing a protected environment applied without an approval")
	} else {
		mustCode(t, err, core.CodeConflict, "protected environment(s) prod")
	}
	if got := b.state(t); got.revision != before.revision {
		t.Fatalf("a refused apply moved the revision %d → %d", before.revision, got.revision)
	}

	if _, err := b.P.ChangeSets.DecideSet(b.pm, set.ID, model.Approved, "lgtm"); err == nil {
		t.Fatal("an OPEN set was decided on")
	}
	if _, err := b.P.ChangeSets.SubmitSet(b.editor, set.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.P.ChangeSets.DecideSet(b.Admin, set.ID, model.Approved, "me"); err == nil {
		t.Fatal("an author (the tenant admin made a change) approved the set")
	} else {
		mustCode(t, err, core.CodeForbidden, "another project manager")
	}
	if _, err := b.P.ChangeSets.DecideSet(b.editor, set.ID, model.Approved, ""); !errors.Is(err, authz.ErrForbidden) {
		t.Fatalf("an editor deciding: %v, want forbidden", err)
	}
	if set, err = b.P.ChangeSets.DecideSet(b.pm, set.ID, model.Approved, "lgtm"); err != nil || set.State != model.ChangeSetApproved {
		t.Fatalf("the project manager's approval: %+v, %v", set, err)
	}
	if got := b.state(t); got.revision != before.revision {
		t.Fatalf("approving moved the revision %d → %d before the set was applied", before.revision, got.revision)
	}
	if set, err = b.P.ChangeSets.ApplySet(b.editor, set.ID); err != nil {
		t.Fatal(err)
	}
	after := b.state(t)
	if after.revision != before.revision+1 {
		t.Fatalf("applying moved the revision %d → %d, want one revision", before.revision, after.revision)
	}
	if set.State != model.ChangeSetApplied || len(set.Deployments) != 4 {
		t.Fatalf("the applied set: %s with %d deployments, want APPLIED with 4", set.State, len(set.Deployments))
	}
	api, worker := b.key(b.Env, b.Svc), b.key(b.Env, b.worker)
	sApi, sWorker := b.key(b.staging, b.Svc), b.key(b.staging, b.worker)
	switch {
	case after.env[api]["FEATURE_FLAG"] != "on" || after.env[sApi]["FEATURE_FLAG"] != "on":
		t.Fatalf("api runs %v in prod, %v in staging, want FEATURE_FLAG=on in both", after.env[api], after.env[sApi])
	case after.env[worker]["API_TOKEN"] != "secret" || after.replicas[worker] != 3 || after.replicas[sWorker] != 3:
		t.Fatalf("worker runs %v with %d replicas, want the secret and 3 replicas", after.env[worker], after.replicas[worker])
	case after.env[sWorker]["LOG_LEVEL"] != "debug" || after.env[worker]["LOG_LEVEL"] != "":
		t.Fatalf("LOG_LEVEL: staging %v, prod %v, want it in staging only", after.env[sWorker], after.env[worker])
	}
	// The deployments in prod were approved by the set: none waits.
	for _, id := range set.Deployments {
		d, err := b.P.Delivery.Deployment(b.Admin, id)
		if err != nil || d.Stage == model.StageAwaitingApproval {
			t.Fatalf("deployment %s: %+v (%v), want it delivering", id, d, err)
		}
	}
	if _, err := b.P.ChangeSets.ApplySet(b.editor, set.ID); err == nil {
		t.Fatal("a set applied twice")
	}
}

// A change made against what moved since is refused, naming it, and
// nothing changes; rebased, the set applies.
func TestConflictingChangeIsRefused(t *testing.T) {
	b := newBoard(t)
	set, err := b.P.ChangeSets.OpenSet(b.editor, b.Project.ID, "flag in staging")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.P.ChangeSets.AddChange(b.editor, set.ID, model.Change{Kind: model.ChangeSetVariable,
		ServiceID: &b.worker.ID, Name: "FEATURE_FLAG", Value: "on"}); err != nil {
		t.Fatal(err)
	}
	// Meanwhile someone sets the same variable directly (in prod, which
	// is protected, through its own change set of one).
	direct, err := b.P.ChangeSets.DirectSet(b.editor, b.Project.ID, model.Change{Kind: model.ChangeSetVariable,
		ServiceID: &b.worker.ID, Name: "FEATURE_FLAG", Value: "off"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.P.ChangeSets.DecideSet(b.pm, direct.ID, model.Approved, ""); err != nil {
		t.Fatal(err)
	}
	before := b.state(t)
	_, err = b.P.ChangeSets.ApplySet(b.editor, set.ID)
	mustCode(t, err, core.CodeConflict, "change 1 (variable FEATURE_FLAG of service worker set)")
	if got := b.state(t); got.revision != before.revision {
		t.Fatal("a refused apply moved the revision")
	}
	if _, err := b.P.ChangeSets.RebaseSet(b.editor, set.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.P.ChangeSets.SubmitSet(b.editor, set.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.P.ChangeSets.DecideSet(b.pm, set.ID, model.Approved, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.P.ChangeSets.ApplySet(b.editor, set.ID); err != nil {
		t.Fatal(err)
	}
	if got := b.state(t); got.env[b.key(b.staging, b.worker)]["FEATURE_FLAG"] != "on" || got.revision != before.revision+1 {
		t.Fatalf("after the rebase the cluster runs %+v", got)
	}
}

// A rejected set and an expired one change nothing, and cannot be
// applied.
func TestRejectedAndExpiredSetsChangeNothing(t *testing.T) {
	clock := &controltest.Clock{At: time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)}
	b := newBoard(t, core.WithClock(clock.Now))
	before := b.state(t)
	open := func(title string) *model.ChangeSet {
		set, err := b.P.ChangeSets.OpenSet(b.editor, b.Project.ID, title)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.P.ChangeSets.AddChange(b.editor, set.ID, model.Change{Kind: model.ChangeSetVariable,
			ServiceID: &b.Svc.ID, Name: "FEATURE_FLAG", Value: title}); err != nil {
			t.Fatal(err)
		}
		if set, err = b.P.ChangeSets.SubmitSet(b.editor, set.ID); err != nil {
			t.Fatal(err)
		}
		return set
	}
	rejected := open("rejected")
	if _, err := b.P.ChangeSets.DecideSet(b.pm, rejected.ID, model.Rejected, "not now"); err != nil {
		t.Fatal(err)
	}
	expired := open("expired")
	clock.Advance(core.DefaultApprovalTTL + time.Minute)
	if _, err := b.P.ChangeSets.DecideSet(b.pm, expired.ID, model.Approved, ""); err == nil {
		t.Fatal("a lapsed submission was approved")
	}
	rep, err := b.P.RunJobsOnce(context.Background())
	if err != nil || rep.ChangeSets != 1 {
		t.Fatalf("the jobs expired %d change sets (%v), want 1", rep.ChangeSets, err)
	}
	for _, set := range []*model.ChangeSet{rejected, expired} {
		if _, err := b.P.ChangeSets.ApplySet(b.editor, set.ID); err == nil {
			t.Fatalf("set %q applied", set.Title)
		}
	}
	got, err := b.P.ChangeSets.ChangeSet(b.Admin, expired.ID)
	if err != nil || got.State != model.ChangeSetExpired {
		t.Fatalf("the lapsed set: %+v (%v), want EXPIRED", got, err)
	}
	if after := b.state(t); after.revision != before.revision {
		t.Fatalf("rejected and expired sets moved the revision %d → %d", before.revision, after.revision)
	}
	vars, err := store.VariablesOfProject(b.Admin, b.St.Q(), b.Project.ID)
	if err != nil || len(vars) != 0 {
		t.Fatalf("rejected and expired sets wrote variables: %+v (%v)", vars, err)
	}
}

// A direct change that reaches a protected environment is a change set of
// one: submitted at once, applied when another project manager approves.
func TestDirectChangeIsASetOfOne(t *testing.T) {
	b := newBoard(t)
	before := b.state(t)
	ch := model.Change{Kind: model.ChangeSetVariable, ServiceID: &b.Svc.ID, Name: "FEATURE_FLAG", Value: "on-in-prod"}
	set, err := b.P.ChangeSets.DirectSet(b.editor, b.Project.ID, ch)
	if err != nil {
		t.Fatal(err)
	}
	if !set.Direct || set.State != model.ChangeSetSubmitted || set.Title != "variable FEATURE_FLAG of service api set" {
		t.Fatalf("the direct change's set: %+v", set)
	}
	if _, err := b.P.ChangeSets.AddChange(b.editor, set.ID, ch); err == nil {
		t.Fatal("a change was added to a direct change's set")
	}
	if _, err := b.P.ChangeSets.DecideSet(b.editor, set.ID, model.Approved, ""); err == nil {
		t.Fatal("the author decided on their direct change")
	}
	if set, err = b.P.ChangeSets.DecideSet(b.pm, set.ID, model.Approved, "ok"); err != nil || set.State != model.ChangeSetApplied {
		t.Fatalf("approving the direct change: %+v (%v), want it APPLIED", set, err)
	}
	after := b.state(t)
	if after.revision != before.revision+1 || after.env[b.key(b.Env, b.Svc)]["FEATURE_FLAG"] != "on-in-prod" {
		t.Fatalf("after the approval the cluster runs %+v", after)
	}
}

// What only readers, other tenants and concurrent writers may do; a
// secret's value is stored sealed, in no encoding in the clear.
func TestChangeSetsAttacked(t *testing.T) {
	b := newBoard(t)
	set, err := b.P.ChangeSets.OpenSet(b.editor, b.Project.ID, "attacked")
	if err != nil {
		t.Fatal(err)
	}
	viewer := b.Person(t, "viewer@acme.test", model.TenantMember, model.ProjectViewer)
	if _, err := b.P.ChangeSets.OpenSet(viewer, b.Project.ID, "mine"); !errors.Is(err, authz.ErrForbidden) {
		t.Fatalf("a viewer opened a set: %v", err)
	}
	if _, err := b.P.ChangeSets.ChangeSet(viewer, set.ID); err != nil {
		t.Fatalf("a viewer cannot read a set: %v", err)
	}
	other := b.OtherAdmin(t)
	if _, err := b.P.ChangeSets.ChangeSet(other, set.ID); !core.IsNotFound(err) {
		t.Fatalf("another tenant read the set: %v", err)
	}
	if _, err := b.P.ChangeSets.AddChange(other, set.ID, model.Change{Kind: model.ChangeSetVariable, Name: "X", Value: "1"}); !core.IsNotFound(err) {
		t.Fatalf("another tenant added to the set: %v", err)
	}
	// An editor may not propose what its direct mutation would refuse
	// them: an environment's variable is the project managers'.
	if _, err := b.P.ChangeSets.AddChange(b.editor, set.ID, model.Change{Kind: model.ChangeSetVariable,
		EnvironmentID: &b.Env.ID, Name: "X", Value: "1"}); !errors.Is(err, authz.ErrForbidden) {
		t.Fatalf("an editor proposed an environment's variable: %v", err)
	}
	if _, err := b.P.ChangeSets.AddChange(b.editor, set.ID, model.Change{Kind: model.ChangeSetVariable,
		ServiceID: &b.Svc.ID, Name: "1BAD", Value: "1"}); err == nil {
		t.Fatal("a bad variable name was added")
	}
	if _, err := b.P.ChangeSets.AddChange(b.editor, set.ID, model.Change{Kind: model.ChangeDeploy,
		ServiceID: &b.Svc.ID, EnvironmentID: &b.Env.ID, ImageDigest: "latest"}); err == nil {
		t.Fatal("a deploy of a tag was added")
	}

	// 60 editors' adds at once: each lands, numbered once.
	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for i := range 60 {
		wg.Go(func() {
			_, err := b.P.ChangeSets.AddChange(b.editor, set.ID, model.Change{Kind: model.ChangeSetVariable,
				ServiceID: &b.Svc.ID, Name: fmt.Sprintf("V%d", i), Value: "x"})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	const secret = "hunter2-very-secret-value"
	if _, err := b.P.ChangeSets.AddChange(b.editor, set.ID, model.Change{Kind: model.ChangeSetVariable,
		ServiceID: &b.Svc.ID, Name: "TOKEN", Value: secret, Secret: true}); err != nil {
		t.Fatal(err)
	}
	got, err := b.P.ChangeSets.ChangeSet(b.editor, set.ID)
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[int]bool{}
	for _, c := range got.Changes {
		seqs[c.Seq] = true
	}
	if len(got.Changes) != 61 || len(seqs) != 61 {
		t.Fatalf("after 61 adds the set holds %d changes with %d numbers", len(got.Changes), len(seqs))
	}
	rows, err := b.St.Q().Query(context.Background(), "SELECT changes || comments FROM change_sets")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		for _, enc := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), hex.EncodeToString([]byte(secret))} {
			if strings.Contains(raw, enc) {
				t.Fatalf("the secret is stored in the clear (%q)", enc)
			}
		}
	}
}
