-- 0023: releases carry their configuration. A release freezes the
-- variables in force for its service in its environment (in its config
-- column, beside its processes and domains), a secret by the version of its
-- sealed value: every value a secret variable takes is kept here, sealed
-- as it was and bound to its variable, so that a release runs the value it
-- froze though the variable changed or was deleted since. The versions of
-- the secrets set before this migration, and the variables of the releases
-- made before it, are filled in by the control plane at its first start
-- (from the rows in force then; nothing running changes).
CREATE TABLE secret_versions (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    project_id      TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    variable_id     TEXT NOT NULL,
    sealed          TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL
);
CREATE INDEX secret_versions_tenant_idx ON secret_versions (tenant_id);
CREATE INDEX secret_versions_variable_idx ON secret_versions (variable_id);
