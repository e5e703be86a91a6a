-- Commands: authorized operations queued per cluster, delivered to its
-- agent when connected (again after a reconnect until acknowledged).
CREATE TABLE cluster_commands (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants (id),
    cluster_id    TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,
    args          TEXT NOT NULL,
    status        TEXT NOT NULL,
    result        TEXT NOT NULL,
    requested_by  TEXT,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL
);
CREATE INDEX cluster_commands_cluster_idx ON cluster_commands (cluster_id, id);
