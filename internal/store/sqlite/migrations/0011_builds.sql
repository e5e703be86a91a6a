-- 0011: builds from Git (issue 12). A service may be built from a Git
-- repository; webhooks receive the pushes, every delivery is recorded, and
-- a push to the tracked branch queues a build per environment it deploys
-- to.

-- The service's Git source (JSON, '' for an image service) and the sealed
-- read credential of a private repository ('' for none).
ALTER TABLE services ADD COLUMN git TEXT NOT NULL DEFAULT '';
ALTER TABLE services ADD COLUMN git_credential TEXT NOT NULL DEFAULT '';

-- A hook for one service, or (service_id NULL) for a project, routing each
-- push by its repository. The secret is sealed: HMAC needs the key itself.
CREATE TABLE webhooks (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    service_id  TEXT REFERENCES services (id) ON DELETE CASCADE,
    secret      TEXT NOT NULL,
    created_by  TEXT,
    created_at  TIMESTAMP NOT NULL,
    rotated_at  TIMESTAMP NOT NULL
);
CREATE INDEX webhooks_project_idx ON webhooks (project_id, id);
CREATE UNIQUE INDEX webhooks_service_key ON webhooks (service_id) WHERE service_id IS NOT NULL;

-- Every request a hook received. A provider's delivery id is accepted once
-- per hook (a second is a replay); refused requests are recorded without
-- their body, and so are redeliveries, which name the delivery they repeat.
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    project_id      TEXT NOT NULL,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    provider        TEXT NOT NULL,
    delivery_id     TEXT NOT NULL,
    event           TEXT NOT NULL,
    ref             TEXT NOT NULL,
    commit_sha      TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    reason          TEXT NOT NULL,
    builds          TEXT NOT NULL,
    body            BLOB,
    redelivery_of   TEXT,
    redelivered_by  TEXT,
    received_at     TIMESTAMP NOT NULL
);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (webhook_id, delivery_id)
    WHERE outcome <> 'REFUSED' AND redelivery_of IS NULL;

CREATE TABLE builds (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    project_id      TEXT NOT NULL,
    service_id      TEXT NOT NULL REFERENCES services (id) ON DELETE CASCADE,
    environment_id  TEXT NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    cluster_id      TEXT REFERENCES clusters (id) ON DELETE SET NULL,
    repository      TEXT NOT NULL,
    branch          TEXT NOT NULL,
    commit_sha      TEXT NOT NULL,
    status          TEXT NOT NULL,
    message         TEXT NOT NULL,
    image_digest    TEXT NOT NULL,
    delivery_id     TEXT,
    created_by      TEXT,
    created_at      TIMESTAMP NOT NULL,
    started_at      TIMESTAMP,
    finished_at     TIMESTAMP
);
CREATE INDEX builds_service_idx ON builds (service_id, id);
CREATE INDEX builds_commit_idx ON builds (service_id, environment_id, commit_sha);
