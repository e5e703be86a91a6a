package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Releases carry their configuration: a release freezes its variables
// (model.Release.Variables), a secret by the version of its sealed value
// (model.SecretVersion). The round trips are in tables.go; here are the
// reads and writes that freeze the releases made before, keep the secrets'
// versions, the project's rows the freezing reads, and the versions
// LoadTenantRows reads with the current releases.

// newFrozenRelease is newRelease frozen with vars; with none, frozen with
// none (Variables empty, not nil).
func newFrozenRelease(t testing.TB, s *store.Store, svc *model.Service, env *model.Environment, number int,
	vars ...model.ReleaseVariable) *model.Release {
	t.Helper()
	return mustInsert(t, s, store.Releases, &model.Release{
		ID: model.ReleaseID(newID()), TenantID: svc.TenantID, ProjectID: svc.ProjectID, ServiceID: svc.ID,
		EnvironmentID: env.ID, Number: number, Image: svc.Image, ImageDigest: "sha256:" + fmt.Sprintf("%064d", number),
		ServiceConfig: svc.ServiceConfig, Variables: append([]model.ReleaseVariable{}, vars...), CreatedAt: store.Now(),
	})
}

// frozenSecret is a secret variable as a release freezes it: by the
// version of the value it holds now.
func frozenSecret(v *model.Variable) model.ReleaseVariable {
	return model.ReleaseVariable{Name: v.Name, Scope: v.Kind(), Secret: true, Version: v.Version()}
}

// frozenPlain is a plain variable as a release freezes it.
func frozenPlain(v *model.Variable) model.ReleaseVariable {
	return model.ReleaseVariable{Name: v.Name, Scope: v.Kind(), Value: v.Value}
}

func releaseID(r *model.Release) model.ReleaseID                   { return r.ID }
func serviceID(v *model.Service) model.ServiceID                   { return v.ID }
func secretVersionID(v *model.SecretVersion) model.SecretVersionID { return v.ID }

// testReleaseConfig: UnfrozenReleases lists the releases whose config has
// no variables (nil, or made before releases froze them: no "variables"
// at all), oldest first, at most limit, of every tenant; FreezeRelease
// freezes one once. The store is the case's own: the lists are exact.
func testReleaseConfig(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s) // its release is unfrozen
	secret := newVariable(t, s, g.project, nil, nil, "API_KEY", true, "v1:k:sealed-api-key")
	plain := newVariable(t, s, g.project, &g.env.ID, nil, "LOG_LEVEL", false, "debug")
	vars := []model.ReleaseVariable{frozenSecret(secret), frozenPlain(plain)}

	unfrozen := newRelease(t, s, g.service, g.env, 2)
	none := newFrozenRelease(t, s, g.service, g.env, 3)
	frozen := newFrozenRelease(t, s, g.service, g.env, 4, vars...)
	// Made before releases froze their variables: its config has no
	// "variables" at all, as every release stored before 0023.
	old := newRelease(t, s, g.service, g.env, 5)
	cfg, err := json.Marshal(old.ServiceConfig)
	wantNoErr(t, "encoding an old config", err)
	n, err := s.Q().Exec(ctx, `UPDATE releases SET config = $2 WHERE id = $1`, string(old.ID), string(cfg))
	wantNoErr(t, "storing an old config", err)
	if n != 1 {
		t.Fatalf("storing an old config: updated %d rows, want 1", n)
	}
	// Its own configuration mentions variables (in a command, so escaped
	// in the column): still unfrozen.
	mentions := mustInsert(t, s, store.Releases, &model.Release{ID: model.ReleaseID(newID()), TenantID: g.tenant.ID,
		ProjectID: g.project.ID, ServiceID: g.service.ID, EnvironmentID: g.env.ID, Number: 6, Image: "nginx",
		ImageDigest: "sha256:06", ServiceConfig: model.ServiceConfig{Processes: []model.Process{
			{Name: "web", Command: []string{`{"variables":[]}`, `"variables":[`}, Replicas: 1},
		}}, CreatedAt: store.Now()})
	// Another tenant's: the freezing goes over every tenant.
	elsewhere := newGraph(t, s).release

	unfrozenReleases := func(t *testing.T, limit int) []*model.Release {
		t.Helper()
		got, err := store.UnfrozenReleases(ctx, s.Q(), limit)
		wantNoErr(t, "listing unfrozen releases", err)
		return got
	}

	t.Run("read back", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			r      *model.Release
			frozen bool
		}{
			{"unfrozen", unfrozen, false},
			{"made before releases froze them", old, false},
			{"frozen with none", none, true},
			{"frozen", frozen, true},
		} {
			got := mustGet(t, s, store.Releases, tc.r.ID)
			assertEqual(t, tc.name, got, tc.r)
			if got.Frozen() != tc.frozen {
				t.Errorf("%s: Frozen() = %v, want %v", tc.name, got.Frozen(), tc.frozen)
			}
		}
	})

	t.Run("UnfrozenReleases", func(t *testing.T) {
		want := sortedIDs([]*model.Release{g.release, unfrozen, old, mentions, elsewhere}, releaseID)
		got := unfrozenReleases(t, 100)
		assertEqual(t, "unfrozen releases", got, want)
		for _, r := range got {
			if r.Frozen() || r.Variables != nil {
				t.Errorf("unfrozen release %s read back with variables %#v", r.ID, r.Variables)
			}
		}
		for _, limit := range []int{1, 2, len(want)} {
			wantIDs(t, fmt.Sprintf("at most %d", limit), unfrozenReleases(t, limit), want[:limit], releaseID)
		}
	})

	t.Run("FreezeRelease", func(t *testing.T) {
		freeze := func(r model.Release, vars []model.ReleaseVariable) bool {
			t.Helper()
			r.Variables = vars
			ok, err := store.FreezeRelease(ctx, s.Q(), &r)
			wantNoErr(t, "freezing", err)
			return ok
		}
		want := *unfrozen
		want.Variables = vars
		if !freeze(*unfrozen, vars) {
			t.Error("freezing an unfrozen release: got false, want true")
		}
		assertEqual(t, "frozen release", mustGet(t, s, store.Releases, unfrozen.ID), &want)
		// Once: a second freeze leaves the first.
		if freeze(*unfrozen, []model.ReleaseVariable{{Name: "OTHER", Scope: model.VariableProject, Value: "x"}}) {
			t.Error("freezing a release again: got true, want false")
		}
		if freeze(*unfrozen, []model.ReleaseVariable{}) {
			t.Error("freezing a release again with none: got true, want false")
		}
		assertEqual(t, "release frozen twice", mustGet(t, s, store.Releases, unfrozen.ID), &want)
		// Frozen with none is frozen.
		if freeze(*none, vars) {
			t.Error("freezing a release frozen with none: got true, want false")
		}
		assertEqual(t, "release frozen with none", mustGet(t, s, store.Releases, none.ID), none)
		if freeze(*frozen, nil) {
			t.Error("freezing a frozen release: got true, want false")
		}
		assertEqual(t, "frozen release", mustGet(t, s, store.Releases, frozen.ID), frozen)
		// One made before releases froze their variables, with none.
		wantOld := *old
		wantOld.Variables = []model.ReleaseVariable{}
		if !freeze(*old, []model.ReleaseVariable{}) {
			t.Error("freezing a release made before releases froze them: got false, want true")
		}
		got := mustGet(t, s, store.Releases, old.ID)
		assertEqual(t, "old release frozen with none", got, &wantOld)
		if !got.Frozen() {
			t.Error("an old release frozen with none: Frozen() = false, want true")
		}
		missing := *g.release
		missing.ID = model.ReleaseID(newID())
		if freeze(missing, vars) {
			t.Error("freezing a missing release: got true, want false")
		}
		// A frozen release is no longer listed; the others are, untouched.
		assertEqual(t, "unfrozen releases after freezing",
			unfrozenReleases(t, 100), sortedIDs([]*model.Release{g.release, mentions, elsewhere}, releaseID))
	})
}

// testSecretVersions: KeepSecretVersion keeps the value a secret holds now
// once, SecretsWithoutVersion lists the secrets with none kept,
// AllSecretVersions every version, ReplaceSealedVersion reseals one. The
// store is the case's own: the lists, of every tenant, are exact.
func testSecretVersions(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g, other := newGraph(t, s), newGraph(t, s)
	newVariable(t, s, g.project, nil, nil, "LOG_LEVEL", false, "info") // plain: never has a version
	unkept := newVariable(t, s, g.project, nil, nil, "API_KEY", true, "v1:k:sealed-api-key")
	envSecret := newVariable(t, s, g.project, &g.env.ID, nil, "DB_PASSWORD", true, "v1:k:sealed-db")
	svcSecret := newVariable(t, s, g.project, nil, &g.service.ID, "TOKEN", true, "v1:k:sealed-token")
	foreign := newVariable(t, s, other.project, nil, nil, "API_KEY", true, "v1:k:sealed-elsewhere")

	keep := func(t *testing.T, v *model.Variable) {
		t.Helper()
		wantNoErr(t, "keeping a version", store.KeepSecretVersion(ctx, s.Q(), v))
	}
	without := func(t *testing.T, limit int) []*model.Variable {
		t.Helper()
		got, err := store.SecretsWithoutVersion(ctx, s.Q(), limit)
		wantNoErr(t, "listing secrets without a version", err)
		return got
	}
	versions := func(t *testing.T) []*model.SecretVersion {
		t.Helper()
		got, err := store.AllSecretVersions(ctx, s.Q())
		wantNoErr(t, "listing secret versions", err)
		return got
	}
	versionsOf := func(t *testing.T, v *model.Variable) int {
		t.Helper()
		return mustCount(t, s, "secret_versions", "variable_id = $1", string(v.ID))
	}

	t.Run("SecretsWithoutVersion before any", func(t *testing.T) {
		want := sortedIDs([]*model.Variable{unkept, envSecret, svcSecret, foreign}, variableID)
		assertEqual(t, "secrets without a version", without(t, 100), want)
		for _, limit := range []int{1, 3} {
			wantIDs(t, fmt.Sprintf("at most %d", limit), without(t, limit), want[:limit], variableID)
		}
		if got := versions(t); len(got) != 0 {
			t.Errorf("versions before any was kept: got %d, want none", len(got))
		}
	})

	var updated model.Variable
	t.Run("KeepSecretVersion", func(t *testing.T) {
		keep(t, envSecret)
		assertEqual(t, "kept version", mustGet(t, s, store.SecretVersions, envSecret.Version()), envSecret.SecretVersion())
		// Again, and again with another sealed value under the same
		// version (its key's reseal racing it): the first stays, once.
		keep(t, envSecret)
		racing := *envSecret
		racing.Value = "v2:k2:sealed-db"
		keep(t, &racing)
		assertEqual(t, "version kept thrice", mustGet(t, s, store.SecretVersions, envSecret.Version()), envSecret.SecretVersion())
		if n := versionsOf(t, envSecret); n != 1 {
			t.Errorf("versions of a secret kept thrice: got %d, want 1", n)
		}
		// A new value is a new version, beside the old one.
		keep(t, svcSecret)
		updated = *svcSecret
		updated.Value, updated.UpdatedAt = "v1:k:sealed-token-2", svcSecret.UpdatedAt.Add(time.Second)
		wantNoErr(t, "setting the secret again", store.UpdateVariable(ctx, s.Q(), &updated))
		keep(t, &updated)
		if updated.Version() == svcSecret.Version() {
			t.Fatalf("a new value kept the version %s", updated.Version())
		}
		if n := versionsOf(t, svcSecret); n != 2 {
			t.Errorf("versions of a secret set twice: got %d, want 2", n)
		}
		assertEqual(t, "the first value's version", mustGet(t, s, store.SecretVersions, svcSecret.Version()), svcSecret.SecretVersion())
		assertEqual(t, "the second value's version", mustGet(t, s, store.SecretVersions, updated.Version()), updated.SecretVersion())
	})

	t.Run("SecretsWithoutVersion after keeping", func(t *testing.T) {
		// A secret with a version of an earlier value has one: the
		// variables set since keep theirs as they are set.
		want := sortedIDs([]*model.Variable{unkept, foreign}, variableID)
		assertEqual(t, "secrets without a version", without(t, 100), want)
		wantIDs(t, "at most 1", without(t, 1), want[:1], variableID)
		keep(t, foreign)
		assertEqual(t, "secrets without a version after keeping another tenant's", without(t, 100), []*model.Variable{unkept})
	})

	t.Run("AllSecretVersions", func(t *testing.T) {
		want := sortedIDs([]*model.SecretVersion{envSecret.SecretVersion(), svcSecret.SecretVersion(),
			updated.SecretVersion(), foreign.SecretVersion()}, secretVersionID)
		assertEqual(t, "every version", versions(t), want)
		// A version outlives its variable: a release may still run it.
		wantNoErr(t, "deleting a secret", store.Variables.Delete(ctx, s.Q(), svcSecret.ID))
		assertEqual(t, "every version after a secret is deleted", versions(t), want)
	})

	t.Run("ReplaceSealedVersion", func(t *testing.T) {
		swap := func(id model.SecretVersionID, old, sealed string) bool {
			t.Helper()
			ok, err := store.ReplaceSealedVersion(ctx, s.Q(), id, old, sealed)
			wantNoErr(t, "resealing", err)
			return ok
		}
		v := envSecret.SecretVersion()
		if swap(v.ID, "v1:k:something else", "v2:k2:x") {
			t.Error("resealing a value that changed meanwhile: got true, want false")
		}
		assertEqual(t, "version after a refused reseal", mustGet(t, s, store.SecretVersions, v.ID), v)
		if !swap(v.ID, v.Sealed, "v2:k2:sealed-db") {
			t.Error("resealing: got false, want true")
		}
		want := *v
		want.Sealed = "v2:k2:sealed-db" // and the rest stays
		assertEqual(t, "resealed version", mustGet(t, s, store.SecretVersions, v.ID), &want)
		if swap(v.ID, v.Sealed, "v3:k3:x") {
			t.Error("resealing from the value replaced: got true, want false")
		}
		// The other versions, of the same secret's and others', stay.
		assertEqual(t, "the older version of another secret", mustGet(t, s, store.SecretVersions, svcSecret.Version()), svcSecret.SecretVersion())
		assertEqual(t, "the newer version of another secret", mustGet(t, s, store.SecretVersions, updated.Version()), updated.SecretVersion())
		assertEqual(t, "the secret itself", mustGet(t, s, store.Variables, envSecret.ID), envSecret)
		if swap(model.SecretVersionID(newID()), "a", "b") {
			t.Error("resealing a missing version: got true, want false")
		}
	})

	t.Run("a deleted project takes its versions along", func(t *testing.T) {
		wantNoErr(t, "deleting the other project", store.Projects.Delete(ctx, s.Q(), other.project.ID))
		wantIDs(t, "versions after deleting the other project", versions(t),
			sortedIDs([]*model.SecretVersion{envSecret.SecretVersion(), svcSecret.SecretVersion(), updated.SecretVersion()}, secretVersionID),
			secretVersionID)
	})
}

// everyStage is every deployment stage, in the order of a deployment's way.
var everyStage = []model.DeploymentStage{
	model.StageQueued, model.StageBuilding, model.StageAwaitingApproval, model.StageDelivering, model.StageStarting,
	model.StageProbing, model.StageSwitchingTraffic, model.StageRetiring, model.StageSucceeded, model.StageFailed,
	model.StageRolledBack, model.StageSuperseded, model.StageCancelled,
}

// testProjectReads: the rows of one project the freezing reads —
// LiveOfProject, WaitingOfProject, ServicesOfProject, VariablesOfProject —
// are that project's only, never another project's of the tenant or
// another tenant's. Each read has a graph of its own.
func testProjectReads(t *testing.T, s *store.Store) {
	ctx := t.Context()
	// otherProject is another project of tenant, with a service and an
	// environment.
	otherProject := func(tenant *model.Tenant) (*model.Project, *model.Service, *model.Environment) {
		p := newProject(t, s, tenant)
		return p, newService(t, s, p), newEnvironment(t, s, p, false)
	}

	t.Run("LiveOfProject", func(t *testing.T) {
		g := newGraph(t, s) // its deployment is queued: not live
		env2 := newEnvironment(t, s, g.project, true)
		svc2 := newService(t, s, g.project)
		dep := func(r *model.Release, stage model.DeploymentStage, delivered bool) *model.Deployment {
			return newDeploymentWith(t, s, r, g.cluster, func(d *model.Deployment) {
				d.Stage = stage
				if delivered {
					d.DeliveredAt = ptr(store.Now())
				}
			})
		}
		// Service 1 in environment 1: the newest live deployment wins; a
		// newer failed one does not count.
		r2 := newRelease(t, s, g.service, g.env, 2)
		dep(g.release, model.StageSucceeded, true)
		newest := dep(r2, model.StageSucceeded, true)
		dep(g.release, model.StageFailed, true)
		// Service 1 in environment 2: delivering counts, a newer queued one
		// does not.
		delivering := dep(newRelease(t, s, g.service, env2, 1), model.StageDelivering, true)
		dep(newRelease(t, s, g.service, env2, 2), model.StageQueued, false)
		// Service 2 in environment 1: superseded after delivery still
		// counts; superseded before delivery, cancelled and rolled back do
		// not.
		superseded := dep(newRelease(t, s, svc2, g.env, 1), model.StageSuperseded, true)
		dep(newRelease(t, s, svc2, g.env, 2), model.StageSuperseded, false)
		dep(newRelease(t, s, svc2, g.env, 3), model.StageCancelled, false)
		dep(newRelease(t, s, svc2, g.env, 4), model.StageRolledBack, true)
		// Service 2 in environment 2: awaiting approval only, nothing runs.
		dep(newRelease(t, s, svc2, env2, 1), model.StageAwaitingApproval, false)

		// Another project of the tenant, newer than all of the above, and
		// another tenant: their live deployments are theirs.
		_, svc, env := otherProject(g.tenant)
		theirs := dep(newRelease(t, s, svc, env, 1), model.StageSucceeded, true)
		b := newGraph(t, s)
		newDeploymentWith(t, s, b.release, b.cluster, inStage(model.StageSucceeded))

		live := func(p model.ProjectID) []*model.Deployment {
			t.Helper()
			got, err := store.LiveOfProject(ctx, s.Q(), p)
			wantNoErr(t, "reading live deployments", err)
			return got
		}
		mine := live(g.project.ID)
		assertEqual(t, "the project's live deployments", mine, []*model.Deployment{newest, delivering, superseded})
		assertEqual(t, "the other project's", live(svc.ProjectID), []*model.Deployment{theirs})
		wantIDs(t, "an unknown project's", live(model.ProjectID(newID())), nil, deploymentID)
		// The tenant's projects' together are what LoadTenantRows reads.
		rows, err := store.LoadTenantRows(ctx, s.Q(), g.tenant.ID, nil)
		wantNoErr(t, "loading the tenant's rows", err)
		assertEqual(t, "the tenant's live deployments", rows.Live,
			sortedIDs([]*model.Deployment{newest, delivering, superseded, theirs}, deploymentID))
	})

	t.Run("WaitingOfProject", func(t *testing.T) {
		g := newGraph(t, s) // its deployment is queued: waiting
		want := []*model.Deployment{g.deployment}
		env2 := newEnvironment(t, s, g.project, false)
		r := newRelease(t, s, g.service, env2, 1)
		for _, stage := range everyStage {
			d := newDeploymentWith(t, s, r, g.cluster, func(d *model.Deployment) {
				d.Stage = stage
				if stage == model.StageAwaitingApproval {
					d.Blocker, d.ApprovalExpiresAt = ptr(model.BlockerApproval), ptr(store.Now().Add(time.Hour))
				}
			})
			if stage == model.StageQueued || stage == model.StageAwaitingApproval {
				want = append(want, d)
			}
		}
		// Another project of the tenant, and another tenant, with
		// waiting deployments of their own.
		_, svc, env := otherProject(g.tenant)
		theirs := newDeploymentWith(t, s, newRelease(t, s, svc, env, 1), g.cluster, inStage(model.StageAwaitingApproval))
		newGraph(t, s) // its deployment is queued

		waiting := func(p model.ProjectID) []*model.Deployment {
			t.Helper()
			got, err := store.WaitingOfProject(ctx, s.Q(), p)
			wantNoErr(t, "reading waiting deployments", err)
			return got
		}
		assertEqual(t, "the project's waiting deployments", waiting(g.project.ID), want)
		assertEqual(t, "the other project's", waiting(svc.ProjectID), []*model.Deployment{theirs})
		wantIDs(t, "an unknown project's", waiting(model.ProjectID(newID())), nil, deploymentID)
	})

	t.Run("ServicesOfProject", func(t *testing.T) {
		g := newGraph(t, s)
		svc2, svc3 := newService(t, s, g.project), newService(t, s, g.project)
		_, theirs, _ := otherProject(g.tenant)
		newGraph(t, s) // another tenant's service
		services := func(p model.ProjectID) []*model.Service {
			t.Helper()
			got, err := store.ServicesOfProject(ctx, s.Q(), p)
			wantNoErr(t, "reading services", err)
			return got
		}
		assertEqual(t, "the project's services", services(g.project.ID), []*model.Service{g.service, svc2, svc3})
		assertEqual(t, "the other project's", services(theirs.ProjectID), []*model.Service{theirs})
		wantIDs(t, "a project without services", services(newProject(t, s, g.tenant).ID), nil, serviceID)
	})

	t.Run("VariablesOfProject", func(t *testing.T) {
		g := newGraph(t, s)
		env2 := newEnvironment(t, s, g.project, true)
		svc2 := newService(t, s, g.project)
		// Every scope, plain and secret, the same name at several.
		mine := []*model.Variable{
			newVariable(t, s, g.project, nil, nil, "LOG_LEVEL", false, "info"),
			newVariable(t, s, g.project, nil, nil, "API_KEY", true, "v1:k:sealed-api-key"),
			newVariable(t, s, g.project, &g.env.ID, nil, "LOG_LEVEL", false, "debug"),
			newVariable(t, s, g.project, &env2.ID, nil, "DB_PASSWORD", true, "v1:k:sealed-db"),
			newVariable(t, s, g.project, nil, &g.service.ID, "LOG_LEVEL", false, "warn"),
			newVariable(t, s, g.project, nil, &svc2.ID, "TOKEN", true, "v1:k:sealed-token"),
		}
		p2, theirSvc, theirEnv := otherProject(g.tenant)
		theirs := []*model.Variable{
			newVariable(t, s, p2, nil, nil, "LOG_LEVEL", false, "error"),
			newVariable(t, s, p2, &theirEnv.ID, nil, "API_KEY", true, "v1:k:theirs"),
			newVariable(t, s, p2, nil, &theirSvc.ID, "PORT", false, "8080"),
		}
		b := newGraph(t, s)
		newVariable(t, s, b.project, nil, nil, "LOG_LEVEL", false, "another tenant's")
		variables := func(p model.ProjectID) []*model.Variable {
			t.Helper()
			got, err := store.VariablesOfProject(ctx, s.Q(), p)
			wantNoErr(t, "reading variables", err)
			return got
		}
		assertEqual(t, "the project's variables", variables(g.project.ID), sortedIDs(mine, variableID))
		assertEqual(t, "the other project's", variables(p2.ID), sortedIDs(theirs, variableID))
		wantIDs(t, "a project without variables", variables(newProject(t, s, g.tenant).ID), nil, variableID)
	})
}

// testLoadTenantRowsVersions: LoadTenantRows reads the sealed versions the
// current releases froze, each once, and no other: not those of releases
// that do not run (failed, awaiting approval), not an older one of the
// same secret, not another tenant's; through a release cache too.
func testLoadTenantRowsVersions(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s) // its deployment is queued: not live
	env2 := newEnvironment(t, s, g.project, true)
	svc2 := newService(t, s, g.project)
	plain := newVariable(t, s, g.project, nil, nil, "LOG_LEVEL", false, "info")
	apiKey := newVariable(t, s, g.project, nil, nil, "API_KEY", true, "v1:k:sealed-api-key")
	dbPassword := newVariable(t, s, g.project, &g.env.ID, nil, "DB_PASSWORD", true, "v1:k:sealed-db")
	token := newVariable(t, s, g.project, nil, &g.service.ID, "TOKEN", true, "v1:k:sealed-token")
	for _, v := range []*model.Variable{apiKey, dbPassword, token} {
		wantNoErr(t, "keeping a version", store.KeepSecretVersion(ctx, s.Q(), v))
	}
	// The API key set again since: its newer version is kept too.
	newKey := *apiKey
	newKey.Value, newKey.UpdatedAt = "v1:k:sealed-api-key-2", apiKey.UpdatedAt.Add(time.Second)
	wantNoErr(t, "setting the API key again", store.UpdateVariable(ctx, s.Q(), &newKey))
	wantNoErr(t, "keeping its version", store.KeepSecretVersion(ctx, s.Q(), &newKey))

	dep := func(r *model.Release, stage model.DeploymentStage) *model.Deployment {
		return newDeploymentWith(t, s, r, g.cluster, func(d *model.Deployment) {
			d.Stage, d.DeliveredAt = stage, ptr(store.Now())
		})
	}
	// Current: service 1 in both environments, froze the API key's first
	// version (both: it is read once) and the password; service 2 in
	// environment 1 is unfrozen.
	dep(newFrozenRelease(t, s, g.service, g.env, 2, frozenPlain(plain), frozenSecret(apiKey), frozenSecret(dbPassword)),
		model.StageSucceeded)
	dep(newFrozenRelease(t, s, g.service, env2, 1, frozenSecret(apiKey)), model.StageDelivering)
	dep(newRelease(t, s, svc2, g.env, 1), model.StageSucceeded)
	// Not current: a newer release of service 1 in environment 1 that
	// failed, with the API key's newer version and the token; one of
	// service 2 in environment 2 that awaits approval, with the token.
	failed := newFrozenRelease(t, s, g.service, g.env, 3, frozenSecret(&newKey), frozenSecret(token))
	newDeploymentWith(t, s, failed, g.cluster, inStage(model.StageFailed))
	newDeploymentWith(t, s, newFrozenRelease(t, s, svc2, env2, 1, frozenSecret(token)), g.cluster,
		inStage(model.StageAwaitingApproval))

	// Another tenant's current release froze its own secret.
	b := newGraph(t, s)
	theirs := newVariable(t, s, b.project, nil, nil, "API_KEY", true, "v1:k:theirs")
	wantNoErr(t, "keeping their version", store.KeepSecretVersion(ctx, s.Q(), theirs))
	newDeploymentWith(t, s, newFrozenRelease(t, s, b.service, b.env, 2, frozenSecret(theirs)), b.cluster,
		inStage(model.StageSucceeded))

	want := map[model.SecretVersionID]*model.SecretVersion{
		apiKey.Version():     apiKey.SecretVersion(),
		dbPassword.Version(): dbPassword.SecretVersion(),
	}
	cache := store.NewReleaseCache(10)
	for i, c := range []*store.ReleaseCache{nil, cache, cache} {
		rows, err := store.LoadTenantRows(ctx, s.Q(), g.tenant.ID, c)
		wantNoErr(t, "loading", err)
		if len(rows.Current) != 3 {
			t.Errorf("load %d: got %d current releases, want 3", i, len(rows.Current))
		}
		assertEqual(t, fmt.Sprintf("load %d: versions", i), rows.Versions, want)
	}
	rows, err := store.LoadTenantRows(ctx, s.Q(), b.tenant.ID, nil)
	wantNoErr(t, "loading b", err)
	assertEqual(t, "b's versions", rows.Versions, map[model.SecretVersionID]*model.SecretVersion{theirs.Version(): theirs.SecretVersion()})
	// A tenant whose current releases froze no secret reads none.
	c := newGraph(t, s)
	newDeploymentWith(t, s, newFrozenRelease(t, s, c.service, c.env, 2, frozenPlain(plain)), c.cluster,
		inStage(model.StageSucceeded))
	rows, err = store.LoadTenantRows(ctx, s.Q(), c.tenant.ID, nil)
	wantNoErr(t, "loading c", err)
	if len(rows.Current) != 1 || len(rows.Versions) != 0 {
		t.Errorf("a tenant whose current release froze no secret: got %d current releases and versions %v, want 1 and none",
			len(rows.Current), rows.Versions)
	}
}
