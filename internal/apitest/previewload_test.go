package apitest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/pgtest"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

// aliasedPreviews is a query running n previewDeploy fields, aliased, on
// the input $i.
func aliasedPreviews(n int) string {
	var b strings.Builder
	b.WriteString(`query($i: DeployInput!) {`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " p%d: previewDeploy(input: $i) { clusters { added { name } } }", i)
	}
	b.WriteString(" }")
	return b.String()
}

// One request runs at most NEBULA_MAX_PREVIEWS_PER_REQUEST previews; one
// asking for more is refused before any of them runs.
func TestPreviewsPerRequest(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		vars := map[string]any{"i": map[string]any{"serviceId": f.ServiceID, "environmentId": f.EnvironmentID, "imageDigest": Digest(5150)}}
		rev, audit := f.revision(t), f.AuditCount(t)

		for _, n := range []int{config.DefaultMaxPreviews + 1, 500} {
			r := env.Do(t, f.Owner.Token, aliasedPreviews(n), vars)
			if codes := r.ErrorCodes(); len(codes) != 1 || codes[0] != "BAD_USER_INPUT" ||
				!strings.Contains(r.Errors[0].Message, fmt.Sprintf("at most %d", config.DefaultMaxPreviews)) {
				t.Errorf("%d previews: got errors %s, want one BAD_USER_INPUT naming the limit", n, r.errorList())
			}
			if strings.Contains(string(r.Body), `"data"`) {
				t.Errorf("%d previews: the refused request has data: %s", n, r.Body)
			}
		}

		r := f.MustDo(t, aliasedPreviews(config.DefaultMaxPreviews), vars)
		for i := 0; i < config.DefaultMaxPreviews; i++ {
			body := fmt.Sprint(r.Get(fmt.Sprintf("p%d.clusters", i)))
			if !strings.Contains(body, "api-web-r2") {
				t.Errorf("preview p%d: %s, want release 2's Deployment added", i, body)
			}
		}
		if got := f.revision(t); got != rev {
			t.Errorf("previews moved the revision from %d to %d", rev, got)
		}
		if got := f.AuditCount(t); got != audit {
			t.Errorf("previews wrote %d audit events", got-audit)
		}
	})
}

// A preview takes no write lock on its tenant's row in PostgreSQL: it runs
// while another transaction holds the share lock a running preview holds,
// so that previews of one tenant never wait for each other. (With the write
// lock it would wait, here until lock_timeout fails it.)
func TestPreviewTakesNoWriteLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// Every connection opened from now on gives up waiting for a lock
	// after 5 s, so that a preview that waits fails instead of hanging.
	var db string
	if err := admin.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET lock_timeout = '5s'`); err != nil {
		t.Fatal(err)
	}
	pg, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(pg)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	env := NewEnv(t, st)
	f := env.NewFixture(t)
	tenant, err := gid.Decode[model.TenantID](gid.Tenant, f.TenantID)
	if err != nil {
		t.Fatal(err)
	}

	// Another preview of the tenant, as far as locks go.
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM tenants WHERE id = $1 FOR KEY SHARE`, string(tenant)); err != nil {
		t.Fatal(err)
	}

	for name, q := range map[string]string{
		"deploy": `query($s: ID!, $e: ID!) { previewDeploy(input: {serviceId: $s, environmentId: $e, imageDigest: "` + Digest(77) + `"}) {
			clusters { added { name } } userErrors { code message } } }`,
		"set variable": `query($p: ID!, $s: ID!) { previewSetVariable(input: {projectId: $p, serviceId: $s, name: "LEVEL", value: "debug"}) {
			clusters { changed { kind name } } userErrors { code message } } }`,
	} {
		r := env.Do(t, f.Owner.Token, q, map[string]any{"p": f.ProjectID, "s": f.ServiceID, "e": f.EnvironmentID})
		if len(r.Errors) > 0 {
			t.Errorf("%s preview while another preview holds its locks: %s", name, r.errorList())
			continue
		}
		for field := range r.Data {
			if ue := r.UserErrors(field); len(ue) > 0 {
				t.Errorf("%s preview: userErrors %+v", name, ue)
			}
			if len(r.List(field+".clusters")) != 1 {
				t.Errorf("%s preview: %s, want one cluster changed", name, r.Body)
			}
		}
	}
}
