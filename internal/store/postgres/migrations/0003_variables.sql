-- Variables at project, environment and service scope. A secret's value is
-- sealed (internal/seal) and bound to its row id; a plain one is stored as
-- is. scope_key makes "one name per scope" a plain unique constraint.
CREATE TABLE variables (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    project_id      TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment_id  TEXT REFERENCES environments (id) ON DELETE CASCADE,
    service_id      TEXT REFERENCES services (id) ON DELETE CASCADE,
    scope_key       TEXT NOT NULL,
    name            TEXT NOT NULL,
    secret          BOOLEAN NOT NULL,
    value           TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    CONSTRAINT variables_scope_name_key UNIQUE (project_id, scope_key, name)
);
CREATE INDEX variables_tenant_idx ON variables (tenant_id);
