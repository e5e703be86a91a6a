-- Agents: connect tokens bound to one cluster, and what agents report.
CREATE TABLE connect_tokens (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants (id),
    cluster_id    TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    prefix        TEXT NOT NULL,
    hash          BLOB NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    -- Set when a newer token replaced this one: valid until then (the grace window).
    expires_at    TIMESTAMP,
    revoked_at    TIMESTAMP,
    last_used_at  TIMESTAMP,
    CONSTRAINT connect_tokens_hash_key UNIQUE (hash)
);
CREATE INDEX connect_tokens_cluster_idx ON connect_tokens (cluster_id);

ALTER TABLE clusters ADD COLUMN applied_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE clusters ADD COLUMN inventory TEXT NOT NULL DEFAULT '{}';
ALTER TABLE clusters ADD COLUMN apply_errors TEXT NOT NULL DEFAULT '[]';
