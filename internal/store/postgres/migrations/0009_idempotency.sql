-- Idempotency keys: a mutation sent with an Idempotency-Key header claims
-- its key here (state running), marks it committed inside the mutation's
-- own transaction, and keeps its response afterwards (done), so that a
-- retry is answered from here and never runs the mutation twice. A key
-- belongs to its user in the tenant its token acts in; the key and the
-- request are stored as SHA-256 hashes only, never as text.
CREATE TABLE idempotency_keys (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key_hash         BYTEA NOT NULL,
    request_hash     BYTEA NOT NULL,
    operation        TEXT NOT NULL,
    -- running, committed, done or withheld (committed, response not kept).
    state            TEXT NOT NULL,
    -- The request holding the key, and until when; NULL once it let go.
    owner            TEXT NOT NULL,
    lease_until      TIMESTAMPTZ,
    -- What the committed change was: its audit action and target.
    action           TEXT NOT NULL DEFAULT '',
    target_type      TEXT NOT NULL DEFAULT '',
    target_id        TEXT NOT NULL DEFAULT '',
    response_status  INTEGER NOT NULL DEFAULT 0,
    response_type    TEXT NOT NULL DEFAULT '',
    response_body    BYTEA,
    created_at       TIMESTAMPTZ NOT NULL,
    expires_at       TIMESTAMPTZ NOT NULL,
    CONSTRAINT idempotency_keys_key UNIQUE (tenant_id, user_id, key_hash)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);
