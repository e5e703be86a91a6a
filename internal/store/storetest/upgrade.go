package storetest

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// UpTo wraps a driver so that it offers only the migrations up to version
// (inclusive): a store on it migrates a database to the schema of an older
// release, to test what a later migration does to its rows.
func UpTo(t testing.TB, drv store.Driver, version int) store.Driver {
	t.Helper()
	all, err := store.Migrations(drv.Migrations())
	if err != nil {
		t.Fatalf("listing migrations: %v", err)
	}
	files := fstest.MapFS{}
	for _, m := range all {
		if m.Version <= version {
			files[m.Name+".sql"] = &fstest.MapFile{Data: []byte(m.SQL)}
		}
	}
	return limited{drv, files}
}

type limited struct {
	store.Driver
	files fs.FS
}

func (l limited) Migrations() fs.FS { return l.files }

// RunUpgrades checks what migrations do to the rows of a database made by
// an older release. open returns two stores on one fresh database: old,
// offering the migrations up to version, and current, offering all; both
// not yet migrated.
func RunUpgrades(t *testing.T, open func(t *testing.T, version int) (old, current *store.Store)) {
	t.Run("0021 local user ids", func(t *testing.T) {
		t.Parallel()
		upgrade0021(t, open)
	})
}

// upgrade0021: every member gets a profile with an id of the tenant's own,
// and the audit history's userId details name users by it.
func upgrade0021(t *testing.T, open func(t *testing.T, version int) (old, current *store.Store)) {
	ctx := t.Context()
	old, current := open(t, 20)
	if _, err := old.Migrate(ctx); err != nil {
		t.Fatalf("migrating to 0020: %v", err)
	}
	q := old.Q()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := q.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", strings.Fields(sql)[0]+" "+strings.Fields(sql)[2], err)
		}
	}
	now := store.Now().Add(-time.Hour)
	a, b := newID(), newID()
	founder, added, gone := newID(), newID(), newID()
	for _, tenant := range []string{a, b} {
		exec(`INSERT INTO tenants (id, name, plan, created_at) VALUES ($1, $2, 'FREE', $3)`, tenant, "tenant "+tenant, now)
	}
	for _, u := range []string{founder, added, gone} {
		exec(`INSERT INTO users (id, email, name, kind, created_at) VALUES ($1, $2, $3, 'HUMAN', $4)`, u, u+"@example.com", "User "+u, now)
	}
	// The founder of a has no profile (as before 0021); added is in both
	// tenants with a profile in a; gone left b, so b has neither a
	// member nor a profile, only an audit event naming them.
	exec(`INSERT INTO members (id, tenant_id, user_id, role, created_at) VALUES ($1, $2, $3, 'TENANT_ADMIN', $4)`, newID(), a, founder, now)
	exec(`INSERT INTO members (id, tenant_id, user_id, role, created_at) VALUES ($1, $2, $3, 'VIEWER', $4)`, newID(), a, added, now)
	exec(`INSERT INTO members (id, tenant_id, user_id, role, created_at) VALUES ($1, $2, $3, 'VIEWER', $4)`, newID(), b, added, now)
	exec(`INSERT INTO member_profiles (tenant_id, user_id, name, kind, created_at) VALUES ($1, $2, 'Named by A', 'HUMAN', $3)`, a, added, now)
	audit := func(tenant, details string) {
		exec(`INSERT INTO audit_events (tenant_id, action, target_type, client_address, details, created_at)
			VALUES ($1, 'member.add', 'Member', '', $2, $3)`, tenant, details, now)
	}
	audit(a, `{"userId":"`+added+`","role":"VIEWER"}`)
	audit(b, `{"userId":"`+added+`","role":"VIEWER"}`)
	audit(b, `{"userId":"`+gone+`","role":"VIEWER"}`)
	audit(a, `{"name":"no user"}`)

	if _, err := current.Migrate(ctx); err != nil {
		t.Fatalf("migrating to the current schema: %v", err)
	}
	q = current.Q()
	ids := map[string]model.LocalUserID{}
	for _, m := range []struct {
		tenant, user, name string
	}{{a, founder, "User " + founder}, {a, added, "Named by A"}, {b, added, "User " + added}} {
		u, err := store.UserAsKnownIn(ctx, q, model.TenantID(m.tenant), model.UserID(m.user))
		wantNoErr(t, "reading a member as their tenant knows them", err)
		if u.Name != m.name {
			t.Errorf("member %s of %s: named %q, want %q", m.user, m.tenant, u.Name, m.name)
		}
		parsed, err := uuid.Parse(string(u.LocalID))
		if err != nil || parsed.Version() != 4 || string(u.LocalID) == m.user {
			t.Errorf("member %s of %s: id %q, want a version 4 UUID of its own (%v)", m.user, m.tenant, u.LocalID, err)
		}
		if prev, ok := ids[string(u.LocalID)]; ok {
			t.Errorf("id %s given twice (%s)", u.LocalID, prev)
		}
		ids[string(u.LocalID)] = u.LocalID
		back, err := store.UserOfLocalID(ctx, q, model.TenantID(m.tenant), u.LocalID)
		wantNoErr(t, "reading the user of the id", err)
		if string(back) != m.user {
			t.Errorf("id %s names %s, want %s", u.LocalID, back, m.user)
		}
	}
	for _, tenant := range []string{a, b} {
		pg, err := store.ListAudit(ctx, q, model.TenantID(tenant), store.AuditFilter{}, store.PageArgs{First: 10})
		wantNoErr(t, "listing the audit history", err)
		for _, ev := range pg.Items {
			id, ok := ev.Details["userId"].(string)
			if !ok {
				continue
			}
			if id == added || id == gone || id == founder {
				t.Errorf("tenant %s: audit event %s still names a user by their own id: %v", tenant, ev.ID, ev.Details)
			}
			if _, err := store.UserOfLocalID(ctx, q, model.TenantID(tenant), model.LocalUserID(id)); err != nil {
				t.Errorf("tenant %s: audit event %s names %s, which the tenant knows nobody by: %v", tenant, ev.ID, id, err)
			}
		}
		want := map[string]int{a: 2, b: 2}[tenant]
		if len(pg.Items) != want {
			t.Errorf("tenant %s: %d audit events after the upgrade, want %d", tenant, len(pg.Items), want)
		}
	}
	pg, err := store.ListAudit(ctx, q, model.TenantID(b), store.AuditFilter{}, store.PageArgs{First: 10})
	wantNoErr(t, "listing b's history", err)
	var named, unnamed int
	for _, ev := range pg.Items {
		if _, ok := ev.Details["userId"]; ok {
			named++
		} else if ev.Details["role"] == "VIEWER" {
			unnamed++
		}
	}
	if named != 1 || unnamed != 1 {
		t.Errorf("b's history: %d events name a user, %d lost the id of one b has no profile of; want 1 and 1", named, unnamed)
	}
}
