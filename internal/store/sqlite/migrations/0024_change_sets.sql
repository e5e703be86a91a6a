-- 0024: change sets. Several changes to one project, grouped into one
-- reviewable unit: opened, submitted, decided on by another project
-- manager, applied in one transaction. Its changes (the inputs of their
-- direct mutations, a secret's value sealed to the set), its comments and
-- the deployments applying it started are JSON lists in its row: they are
-- read and written with the set, under the tenant's lock.
CREATE TABLE change_sets (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    project_id      TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    number          INTEGER NOT NULL,
    title           TEXT NOT NULL,
    state           TEXT NOT NULL,
    direct          INTEGER NOT NULL,
    created_by      TEXT,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    submitted_at    TIMESTAMP,
    expires_at      TIMESTAMP,
    decided_by      TEXT,
    decided_at      TIMESTAMP,
    applied_by      TEXT,
    applied_at      TIMESTAMP,
    changes         TEXT NOT NULL,
    comments        TEXT NOT NULL,
    deployments     TEXT NOT NULL,
    UNIQUE (project_id, number)
);
CREATE INDEX change_sets_tenant_idx ON change_sets (tenant_id);
CREATE INDEX change_sets_lapse_idx ON change_sets (expires_at);
