-- The core: tenants, people, tokens, projects, environments, clusters,
-- services, releases, deployments and the audit history.
-- SQLite: TIMESTAMP columns hold Unix microseconds (the driver converts).
CREATE TABLE tenants (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    plan        TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL
);

CREATE TABLE users (
    id          TEXT PRIMARY KEY,
    email       TEXT NOT NULL,
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    CONSTRAINT users_email_key UNIQUE (email)
);

CREATE TABLE members (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    user_id     TEXT NOT NULL REFERENCES users (id),
    role        TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    CONSTRAINT members_tenant_user_key UNIQUE (tenant_id, user_id)
);
CREATE INDEX members_user_idx ON members (user_id);

CREATE TABLE api_tokens (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants (id),
    user_id       TEXT NOT NULL REFERENCES users (id),
    name          TEXT NOT NULL,
    prefix        TEXT NOT NULL,
    hash          BLOB NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    last_used_at  TIMESTAMP,
    expires_at    TIMESTAMP,
    revoked_at    TIMESTAMP,
    CONSTRAINT api_tokens_hash_key UNIQUE (hash)
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, tenant_id);

CREATE TABLE projects (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id),
    name         TEXT NOT NULL,
    description  TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    CONSTRAINT projects_tenant_name_key UNIQUE (tenant_id, name)
);

CREATE TABLE project_members (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL REFERENCES users (id),
    role        TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    CONSTRAINT project_members_project_user_key UNIQUE (project_id, user_id)
);
CREATE INDEX project_members_user_idx ON project_members (user_id);

CREATE TABLE environments (
    id                  TEXT PRIMARY KEY,
    tenant_id           TEXT NOT NULL REFERENCES tenants (id),
    project_id          TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    protected           INTEGER NOT NULL,
    cluster_selector    TEXT NOT NULL,
    namespace_selector  TEXT NOT NULL,
    created_at          TIMESTAMP NOT NULL,
    CONSTRAINT environments_project_name_key UNIQUE (project_id, name)
);
CREATE INDEX environments_project_idx ON environments (project_id, id);

CREATE TABLE clusters (
    id                 TEXT PRIMARY KEY,
    tenant_id          TEXT NOT NULL REFERENCES tenants (id),
    name               TEXT NOT NULL,
    labels             TEXT NOT NULL,
    last_heartbeat_at  TIMESTAMP,
    created_at         TIMESTAMP NOT NULL,
    CONSTRAINT clusters_tenant_name_key UNIQUE (tenant_id, name)
);

CREATE TABLE namespace_targets (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    cluster_id  TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    namespace   TEXT NOT NULL,
    labels      TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    CONSTRAINT namespace_targets_cluster_namespace_key UNIQUE (cluster_id, namespace)
);

CREATE TABLE services (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    image       TEXT NOT NULL,
    config      TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    CONSTRAINT services_project_name_key UNIQUE (project_id, name)
);
CREATE INDEX services_project_idx ON services (project_id, id);

CREATE TABLE releases (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    project_id      TEXT NOT NULL,
    service_id      TEXT NOT NULL REFERENCES services (id) ON DELETE CASCADE,
    environment_id  TEXT NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    number          INTEGER NOT NULL,
    image           TEXT NOT NULL,
    image_digest    TEXT NOT NULL,
    config          TEXT NOT NULL,
    created_by      TEXT,
    created_at      TIMESTAMP NOT NULL,
    CONSTRAINT releases_service_environment_number_key UNIQUE (service_id, environment_id, number)
);
CREATE INDEX releases_service_idx ON releases (service_id, id);

CREATE TABLE deployments (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    project_id      TEXT NOT NULL,
    service_id      TEXT NOT NULL REFERENCES services (id) ON DELETE CASCADE,
    environment_id  TEXT NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    release_id      TEXT NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    cluster_id      TEXT NOT NULL REFERENCES clusters (id),
    stage           TEXT NOT NULL,
    blocker         TEXT,
    requested_by    TEXT,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE INDEX deployments_environment_idx ON deployments (environment_id, id);
CREATE INDEX deployments_cluster_idx ON deployments (cluster_id);

-- Append-only. References are kept as text so that history outlives rows.
CREATE TABLE audit_events (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    actor_id        TEXT,
    token_id        TEXT,
    action          TEXT NOT NULL,
    target_type     TEXT NOT NULL,
    target_id       TEXT,
    client_address  TEXT NOT NULL,
    details         TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL
);
CREATE INDEX audit_events_tenant_idx ON audit_events (tenant_id, seq DESC);
