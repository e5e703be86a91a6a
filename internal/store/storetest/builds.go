package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// testBuildQueries covers the build side: a service's Git source, hooks,
// their deliveries and the builds.
func testBuildQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	other := newEnvironment(t, s, g.project, true)
	now := store.Now()

	t.Run("a service's Git source round-trips and updates", func(t *testing.T) {
		svc := newService(t, s, g.project)
		if svc.Git != nil || svc.GitCredential != "" {
			t.Fatalf("a new image service has a Git source: %+v", svc.Git)
		}
		want := *svc
		want.Git = &model.GitSource{Repository: "https://github.com/acme/shop.git", Branch: "main", ContextDir: "api",
			Dockerfile: "build/Dockerfile", DeployOnPush: []model.EnvironmentID{g.env.ID, other.ID}}
		want.GitCredential = "v1:key:sealed-bytes"
		want.UpdatedAt = now.Add(time.Second)
		wantNoErr(t, "updating", store.UpdateService(ctx, s.Q(), &want))
		assertEqual(t, "service", mustGet(t, s, store.Services, svc.ID), &want)
		got, err := store.GitServicesOfProject(ctx, s.Q(), g.project.ID)
		wantNoErr(t, "listing Git services", err)
		if len(got) != 1 || got[0].ID != svc.ID {
			t.Errorf("GitServicesOfProject = %v, want only %s", ids(got, func(v *model.Service) model.ServiceID { return v.ID }), svc.ID)
		}
		// Back to an image service.
		want.Git, want.GitCredential = nil, ""
		wantNoErr(t, "updating", store.UpdateService(ctx, s.Q(), &want))
		assertEqual(t, "service", mustGet(t, s, store.Services, svc.ID), &want)
		got, err = store.GitServicesOfProject(ctx, s.Q(), g.project.ID)
		wantNoErr(t, "listing Git services", err)
		if len(got) != 0 {
			t.Errorf("GitServicesOfProject after the source was removed: %d services", len(got))
		}
	})

	svcHook := mustInsert(t, s, store.Webhooks, &model.Webhook{ID: model.WebhookID(newID()), TenantID: g.tenant.ID,
		ProjectID: g.project.ID, ServiceID: &g.service.ID, Secret: "v1:k:one", CreatedBy: &g.user.ID, CreatedAt: now, RotatedAt: now})
	projHook := mustInsert(t, s, store.Webhooks, &model.Webhook{ID: model.WebhookID(newID()), TenantID: g.tenant.ID,
		ProjectID: g.project.ID, Secret: "v1:k:two", CreatedAt: at, RotatedAt: at})

	t.Run("webhooks", func(t *testing.T) {
		assertEqual(t, "service hook", mustGet(t, s, store.Webhooks, svcHook.ID), svcHook)
		assertEqual(t, "project hook", mustGet(t, s, store.Webhooks, projHook.ID), projHook)
		got, err := store.WebhookOfService(ctx, s.Q(), g.service.ID)
		wantNoErr(t, "the service's hook", err)
		assertEqual(t, "service hook", got, svcHook)
		_, err = store.WebhookOfService(ctx, s.Q(), model.ServiceID(newID()))
		wantErr(t, "a service without a hook", err, store.ErrNotFound)
		all, err := store.WebhooksOfProject(ctx, s.Q(), g.project.ID)
		wantNoErr(t, "the project's hooks", err)
		if len(all) != 2 {
			t.Errorf("WebhooksOfProject = %d hooks, want 2", len(all))
		}
		// One hook per service.
		err = store.Webhooks.Insert(ctx, s.Q(), &model.Webhook{ID: model.WebhookID(newID()), TenantID: g.tenant.ID,
			ProjectID: g.project.ID, ServiceID: &g.service.ID, Secret: "x", CreatedAt: now, RotatedAt: now})
		wantErr(t, "a second hook of the service", err, store.ErrConflict)

		rotated := *svcHook
		rotated.Secret, rotated.RotatedAt = "v1:k:three", now.Add(time.Minute)
		wantNoErr(t, "rotating", store.RotateWebhookSecret(ctx, s.Q(), &rotated))
		assertEqual(t, "rotated hook", mustGet(t, s, store.Webhooks, svcHook.ID), &rotated)
		wantErr(t, "rotating a missing hook", store.RotateWebhookSecret(ctx, s.Q(), &model.Webhook{ID: "nope"}), store.ErrNotFound)
	})

	build := func(env *model.Environment, commit string, status model.BuildStatus, created time.Time) *model.Build {
		return mustInsert(t, s, store.Builds, &model.Build{ID: model.BuildID(newID()), TenantID: g.tenant.ID,
			ProjectID: g.project.ID, ServiceID: g.service.ID, EnvironmentID: env.ID, Repository: "https://github.com/acme/shop.git",
			Branch: "main", Commit: commit, Status: status, CreatedAt: created})
	}
	const c1, c2 = "9f2c4b7e1a3d5c8e0b6f4a2d9c7e5b3a1f8d6c4e", "3b8e1d4f6a2c9e7b5d0f1a3c8e6b4d2f9a7c5e1b"

	t.Run("builds", func(t *testing.T) {
		full := mustInsert(t, s, store.Builds, &model.Build{ID: model.BuildID(newID()), TenantID: g.tenant.ID,
			ProjectID: g.project.ID, ServiceID: g.service.ID, EnvironmentID: g.env.ID, ClusterID: &g.cluster.ID,
			Repository: "git@github.com:acme/shop.git", Branch: "main", Commit: c2, Status: model.BuildSucceeded,
			Message: "pushed", ImageDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", CreatedBy: &g.user.ID,
			CreatedAt: at, StartedAt: ptr(at.Add(time.Second)), FinishedAt: ptr(at.Add(time.Minute))})
		assertEqual(t, "build", mustGet(t, s, store.Builds, full.ID), full)

		failed := build(g.env, c1, model.BuildFailed, now)
		_, err := store.BuildOfCommit(ctx, s.Q(), g.service.ID, g.env.ID, c1)
		wantErr(t, "only a failed build of the commit", err, store.ErrNotFound)
		queued := build(g.env, c1, model.BuildQueued, now.Add(time.Second))
		got, err := store.BuildOfCommit(ctx, s.Q(), g.service.ID, g.env.ID, c1)
		wantNoErr(t, "the commit's build", err)
		assertEqual(t, "the commit's build", got, queued)
		_, err = store.BuildOfCommit(ctx, s.Q(), g.service.ID, other.ID, c1)
		wantErr(t, "another environment", err, store.ErrNotFound)
		got, err = store.BuildOfCommit(ctx, s.Q(), g.service.ID, g.env.ID, c2)
		wantNoErr(t, "a succeeded build", err)
		assertEqual(t, "a succeeded build", got, full)
		inOther := build(other, c1, model.BuildRunning, now.Add(2*time.Second))

		page, err := store.BuildsOf(ctx, s.Q(), g.service.ID, nil, store.PageArgs{First: 10})
		wantNoErr(t, "the service's builds", err)
		if got, want := ids(page.Items, func(b *model.Build) model.BuildID { return b.ID }),
			[]string{string(inOther.ID), string(queued.ID), string(failed.ID), string(full.ID)}; !slices.Equal(got, want) {
			t.Errorf("BuildsOf = %v, want %v (newest first)", got, want)
		}
		page, err = store.BuildsOf(ctx, s.Q(), g.service.ID, &other.ID, store.PageArgs{First: 10})
		wantNoErr(t, "the service's builds in one environment", err)
		if len(page.Items) != 1 || page.Items[0].ID != inOther.ID {
			t.Errorf("BuildsOf(other environment) = %d builds", len(page.Items))
		}
	})

	t.Run("running builds and their logs", func(t *testing.T) {
		svc := newService(t, s, g.project)
		b := mustInsert(t, s, store.Builds, &model.Build{ID: model.BuildID(newID()), TenantID: g.tenant.ID,
			ProjectID: g.project.ID, ServiceID: svc.ID, EnvironmentID: g.env.ID, Repository: "r", Branch: "main",
			Commit: c1, Status: model.BuildQueued, DeploymentID: &g.deployment.ID, ReleaseID: &g.release.ID, CreatedAt: now})
		got, err := store.BuildOfDeployment(ctx, s.Q(), g.deployment.ID)
		wantNoErr(t, "the deployment's build", err)
		assertEqual(t, "the deployment's build", got, b)
		_, err = store.BuildOfDeployment(ctx, s.Q(), model.DeploymentID(newID()))
		wantErr(t, "a deployment without a build", err, store.ErrNotFound)

		queued, err := store.BuildsWithStatus(ctx, s.Q(), model.BuildQueued, 1000)
		wantNoErr(t, "queued builds", err)
		if !slices.ContainsFunc(queued, func(x *model.Build) bool { return x.ID == b.ID }) {
			t.Errorf("BuildsWithStatus(QUEUED) misses %s", b.ID)
		}
		one, err := store.BuildsWithStatus(ctx, s.Q(), model.BuildQueued, 1)
		wantNoErr(t, "one queued build", err)
		if len(one) != 1 {
			t.Errorf("BuildsWithStatus(limit 1) = %d builds", len(one))
		}

		running := *b
		running.Status, running.ClusterID, running.Message = model.BuildRunning, &g.cluster.ID, "cloning"
		running.Attempts, running.HeartbeatAt, running.StartedAt = 1, ptr(now.Add(time.Second)), ptr(now.Add(time.Second))
		running.LogLines, running.LogBytes, running.LogTruncated = 3, 120, true
		wantNoErr(t, "updating", store.UpdateBuild(ctx, s.Q(), &running))
		assertEqual(t, "running build", mustGet(t, s, store.Builds, b.ID), &running)
		wantErr(t, "updating a missing build", store.UpdateBuild(ctx, s.Q(), &model.Build{ID: "nope", Status: model.BuildFailed}), store.ErrNotFound)
		on, err := store.RunningBuildsOn(ctx, s.Q(), g.cluster.ID)
		wantNoErr(t, "running on the cluster", err)
		if len(on) != 1 || on[0].ID != b.ID {
			t.Errorf("RunningBuildsOn = %d builds", len(on))
		}
		queued, err = store.BuildsWithStatus(ctx, s.Q(), model.BuildQueued, 1000)
		wantNoErr(t, "queued builds", err)
		if slices.ContainsFunc(queued, func(x *model.Build) bool { return x.ID == b.ID }) {
			t.Errorf("a running build is still queued")
		}

		lines := []model.BuildLogLine{
			{BuildID: b.ID, Seq: 1, TenantID: g.tenant.ID, At: at, Line: "#1 [internal] load build definition"},
			{BuildID: b.ID, Seq: 2, TenantID: g.tenant.ID, At: now, Line: "naïve “quotes” and \t tabs"},
			{BuildID: b.ID, Seq: 3, TenantID: g.tenant.ID, At: now.Add(time.Second), Line: ""},
		}
		wantNoErr(t, "appending", store.AppendBuildLog(ctx, s.Q(), lines))
		err = store.AppendBuildLog(ctx, s.Q(), lines[2:])
		wantErr(t, "a line number twice", err, store.ErrConflict)
		read, err := store.BuildLogAfter(ctx, s.Q(), b.ID, 0, 10)
		wantNoErr(t, "reading", err)
		assertEqual(t, "the log", read, lines)
		read, err = store.BuildLogAfter(ctx, s.Q(), b.ID, 1, 1)
		wantNoErr(t, "reading after 1", err)
		assertEqual(t, "the log after line 1", read, lines[1:2])
		// Paged by line number both ways, and between two.
		ptrsOf := func(ls []model.BuildLogLine) []*model.BuildLogLine {
			out := make([]*model.BuildLogLine, len(ls))
			for i := range ls {
				out[i] = &ls[i]
			}
			return out
		}
		for _, tc := range []struct {
			name string
			pg   store.PageArgs
			want store.Page[model.BuildLogLine]
		}{
			{"the first", store.PageArgs{First: 1}, store.Page[model.BuildLogLine]{Items: ptrsOf(lines[:1]), HasNext: true}},
			{"after 1", store.PageArgs{First: 10, After: "1"}, store.Page[model.BuildLogLine]{Items: ptrsOf(lines[1:])}},
			{"the last two", store.PageArgs{First: 2, FromEnd: true}, store.Page[model.BuildLogLine]{Items: ptrsOf(lines[1:]), HasPrevious: true}},
			{"the one before 3", store.PageArgs{First: 1, Before: "3", FromEnd: true}, store.Page[model.BuildLogLine]{Items: ptrsOf(lines[1:2]), HasPrevious: true}},
			{"between 1 and 3", store.PageArgs{First: 10, After: "1", Before: "3"}, store.Page[model.BuildLogLine]{Items: ptrsOf(lines[1:2])}},
			{"between 1 and 3, from the end", store.PageArgs{First: 10, After: "1", Before: "3", FromEnd: true}, store.Page[model.BuildLogLine]{Items: ptrsOf(lines[1:2])}},
		} {
			got, err := store.BuildLogPage(ctx, s.Q(), b.ID, tc.pg)
			wantNoErr(t, tc.name, err)
			assertEqual(t, tc.name, got, tc.want)
		}
		if _, err := store.BuildLogPage(ctx, s.Q(), b.ID, store.PageArgs{First: 1, Before: "x"}); err == nil {
			t.Error("a cursor that is not a line number: no error")
		}
		n, err := store.DeleteBuildLogsBefore(ctx, s.Q(), now)
		wantNoErr(t, "deleting old lines", err)
		if n < 1 {
			t.Errorf("deleted %d old lines, want at least 1", n)
		}
		read, err = store.BuildLogAfter(ctx, s.Q(), b.ID, 0, 10)
		wantNoErr(t, "reading", err)
		assertEqual(t, "the log after the retention", read, lines[1:])
	})

	t.Run("a long log goes in several statements", func(t *testing.T) {
		b := mustInsert(t, s, store.Builds, &model.Build{ID: model.BuildID(newID()), TenantID: g.tenant.ID,
			ProjectID: g.project.ID, ServiceID: g.service.ID, EnvironmentID: g.env.ID, Repository: "r", Branch: "main",
			Commit: c2, Status: model.BuildRunning, CreatedAt: now})
		var lines []model.BuildLogLine
		for i := int64(1); i <= 1234; i++ {
			lines = append(lines, model.BuildLogLine{BuildID: b.ID, Seq: i, TenantID: g.tenant.ID, At: now, Line: fmt.Sprint("line ", i)})
		}
		wantNoErr(t, "appending 1,234 lines", store.AppendBuildLog(ctx, s.Q(), lines))
		read, err := store.BuildLogAfter(ctx, s.Q(), b.ID, 1200, 100)
		wantNoErr(t, "reading the end", err)
		assertEqual(t, "the log's end", read, lines[1200:])
	})

	t.Run("a release gets its build's image once", func(t *testing.T) {
		rel := newRelease(t, s, g.service, other, 77)
		waiting := *rel
		waiting.ID, waiting.Number, waiting.ImageDigest = model.ReleaseID(newID()), 78, ""
		mustInsert(t, s, store.Releases, &waiting)
		const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		wantNoErr(t, "setting the image", store.SetReleaseDigest(ctx, s.Q(), waiting.ID, digest))
		if got := mustGet(t, s, store.Releases, waiting.ID).ImageDigest; got != digest {
			t.Errorf("image digest = %q", got)
		}
		err := store.SetReleaseDigest(ctx, s.Q(), waiting.ID, "sha256:2222222222222222222222222222222222222222222222222222222222222222")
		wantErr(t, "a second image", err, store.ErrNotFound)
		err = store.SetReleaseDigest(ctx, s.Q(), rel.ID, digest)
		wantErr(t, "a release made with an image", err, store.ErrNotFound)
	})

	t.Run("deliveries", func(t *testing.T) {
		delivery := func(id string, outcome model.DeliveryOutcome, body []byte, of *model.WebhookDeliveryID, received time.Time) *model.WebhookDelivery {
			return &model.WebhookDelivery{ID: model.WebhookDeliveryID(newID()), TenantID: g.tenant.ID, ProjectID: g.project.ID,
				WebhookID: svcHook.ID, Provider: "GITHUB", DeliveryID: id, Event: "push", Ref: "refs/heads/main", Commit: c1,
				Outcome: outcome, Reason: "why", Body: body, RedeliveryOf: of, ReceivedAt: received}
		}
		queued := delivery("d-1", model.DeliveryBuildQueued, []byte(`{"ref":"refs/heads/main"}`), nil, now)
		queued.Builds = []model.BuildID{"b-1", "b-2"}
		mustInsert(t, s, store.WebhookDeliveries, queued)
		assertEqual(t, "delivery", mustGet(t, s, store.WebhookDeliveries, queued.ID), queued)
		refused := mustInsert(t, s, store.WebhookDeliveries, delivery("d-1", model.DeliveryRefused, nil, nil, now.Add(time.Second)))
		got := mustGet(t, s, store.WebhookDeliveries, refused.ID)
		if got.Body != nil || got.Builds == nil || len(got.Builds) != 0 {
			t.Errorf("a refused delivery read back with body %q and builds %v, want none and []", got.Body, got.Builds)
		}
		err := store.WebhookDeliveries.Insert(ctx, s.Q(), delivery("d-1", model.DeliveryIgnored, []byte("{}"), nil, now))
		wantErr(t, "a delivery id accepted twice", err, store.ErrConflict)
		again := mustInsert(t, s, store.WebhookDeliveries, delivery("d-1", model.DeliveryDuplicate, []byte("{}"), &queued.ID, now.Add(2*time.Second)))

		acc, err := store.AcceptedDelivery(ctx, s.Q(), svcHook.ID, "d-1")
		wantNoErr(t, "the accepted delivery", err)
		assertEqual(t, "the accepted delivery", acc, queued)
		_, err = store.AcceptedDelivery(ctx, s.Q(), svcHook.ID, "d-2")
		wantErr(t, "an unknown delivery id", err, store.ErrNotFound)
		_, err = store.AcceptedDelivery(ctx, s.Q(), projHook.ID, "d-1")
		wantErr(t, "another hook's delivery id", err, store.ErrNotFound)

		// A push is found by what its signature covers, whatever its
		// delivery id; a refused one or a redelivery is not the push.
		acc, err = store.AcceptedPush(ctx, s.Q(), svcHook.ID, "GITHUB", "refs/heads/main", c1)
		wantNoErr(t, "the accepted push", err)
		assertEqual(t, "the accepted push", acc, queued)
		for _, c := range []struct{ provider, ref, commit string }{{"GITLAB", "refs/heads/main", c1},
			{"GITHUB", "refs/heads/feature", c1}, {"GITHUB", "refs/heads/main", strings.Repeat("9", 40)}} {
			if _, err := store.AcceptedPush(ctx, s.Q(), svcHook.ID, c.provider, c.ref, c.commit); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("AcceptedPush(%v) = %v, want ErrNotFound", c, err)
			}
		}
		if _, err := store.AcceptedPush(ctx, s.Q(), projHook.ID, "GITHUB", "refs/heads/main", c1); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another hook's push: %v", err)
		}

		page, err := store.DeliveriesOf(ctx, s.Q(), svcHook.ID, store.PageArgs{First: 2})
		wantNoErr(t, "the hook's deliveries", err)
		if got, want := ids(page.Items, func(d *model.WebhookDelivery) model.WebhookDeliveryID { return d.ID }),
			[]string{string(again.ID), string(refused.ID)}; !slices.Equal(got, want) || !page.HasNext {
			t.Errorf("DeliveriesOf = %v (more: %t), want %v and more (newest first)", got, page.HasNext, want)
		}
	})
}
