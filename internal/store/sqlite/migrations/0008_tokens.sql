-- 0008: the tokens-and-leaks hardening. (One migration for the whole
-- change, hence its name; API tokens themselves need no new column: the
-- cap on live tokens counts existing rows.)

-- The name and kind a tenant gave a user when it added them, and since
-- when it knows them. Users are global (one email, one user), but what one
-- tenant said about a user is never shown to another: each tenant sees its
-- own profile. It outlives the membership, so that the audit history keeps
-- naming a former member as the tenant knew them. A user without a profile
-- in a tenant (the founder of a tenant) is shown as the user is.
CREATE TABLE member_profiles (
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    user_id     TEXT NOT NULL REFERENCES users (id),
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
INSERT INTO member_profiles (tenant_id, user_id, name, kind, created_at)
    SELECT m.tenant_id, m.user_id, u.name, u.kind, u.created_at FROM members m JOIN users u ON u.id = m.user_id;

-- The project a command acts in (a restart of one of its services), so
-- that only those who may read the project see it. Kept as text, like the
-- audit history's references. Restarts queued before this migration have
-- none and are shown to tenant admins only.
ALTER TABLE cluster_commands ADD COLUMN project_id TEXT;
