-- 0014: objects the agent found changed outside NebulaCtrl (drift), as it
-- reported them before applying them again. No foreign keys: they stay
-- readable after what they name is gone.
CREATE TABLE drifts (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    cluster_id     TEXT NOT NULL,
    project_id     TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    service_id     TEXT NOT NULL,
    kind           TEXT NOT NULL,
    namespace      TEXT NOT NULL,
    name           TEXT NOT NULL,
    fields         TEXT NOT NULL,
    managers       TEXT NOT NULL,
    detected_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX drifts_cluster_idx ON drifts (cluster_id, id);
CREATE INDEX drifts_service_idx ON drifts (service_id, environment_id, id);
