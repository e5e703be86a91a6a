-- 0017: outbound webhooks. An endpoint is told a tenant's (or one
-- project's) events of the kinds it asked for. Each event becomes a
-- message per endpoint, written in the transaction of the change it
-- reports (the outbox) and delivered after it committed, in the order of
-- the endpoint's seq, once, by whichever replica leases it; every attempt
-- is kept. Clusters remember the status last told (connected or
-- disconnected) so that each change is told once.
CREATE TABLE webhook_endpoints (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id       TEXT REFERENCES projects (id) ON DELETE CASCADE,
    url              TEXT NOT NULL,
    description      TEXT NOT NULL,
    -- the event kinds, a JSON list
    events           TEXT NOT NULL,
    secret           TEXT NOT NULL,
    old_secret       TEXT NOT NULL,
    old_secret_until TIMESTAMPTZ,
    rotated_at       TIMESTAMPTZ NOT NULL,
    enabled          BOOLEAN NOT NULL,
    disabled_reason  TEXT NOT NULL,
    disabled_at      TIMESTAMPTZ,
    last_seq         BIGINT NOT NULL,
    created_by       TEXT,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX webhook_endpoints_tenant_idx ON webhook_endpoints (tenant_id);

CREATE TABLE webhook_messages (
    id              TEXT PRIMARY KEY,
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    tenant_id       TEXT NOT NULL,
    project_id      TEXT,
    kind            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    lease_until     TIMESTAMPTZ,
    delivered_at    TIMESTAMPTZ,
    redelivery      BOOLEAN NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    CONSTRAINT webhook_messages_seq_key UNIQUE (endpoint_id, seq)
);
CREATE INDEX webhook_messages_due_idx ON webhook_messages (status, next_attempt_at);
CREATE INDEX webhook_messages_created_idx ON webhook_messages (created_at);

CREATE TABLE webhook_attempts (
    id           TEXT PRIMARY KEY,
    message_id   TEXT NOT NULL REFERENCES webhook_messages (id) ON DELETE CASCADE,
    endpoint_id  TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    at           TIMESTAMPTZ NOT NULL,
    status_code  INTEGER NOT NULL,
    latency_ms   INTEGER NOT NULL,
    response     TEXT NOT NULL,
    error        TEXT NOT NULL,
    redelivery   BOOLEAN NOT NULL
);
CREATE INDEX webhook_attempts_message_idx ON webhook_attempts (message_id, at);

ALTER TABLE clusters ADD COLUMN told_status TEXT NOT NULL DEFAULT '';
