-- 0012: a build belongs to the deployment it makes (created at BUILDING,
-- with the release whose digest the build fills in), and its log is kept
-- line by line.
ALTER TABLE builds ADD COLUMN deployment_id TEXT REFERENCES deployments (id) ON DELETE CASCADE;
ALTER TABLE builds ADD COLUMN release_id TEXT REFERENCES releases (id) ON DELETE CASCADE;
ALTER TABLE builds ADD COLUMN log_lines BIGINT NOT NULL DEFAULT 0;
ALTER TABLE builds ADD COLUMN log_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE builds ADD COLUMN log_truncated BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE builds ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE builds ADD COLUMN heartbeat_at TIMESTAMPTZ;
CREATE INDEX builds_status_idx ON builds (status, cluster_id);

-- Lines are numbered from 1 per build, in the order the agent read them.
CREATE TABLE build_log_lines (
    build_id    TEXT NOT NULL REFERENCES builds (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    tenant_id   TEXT NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    line        TEXT NOT NULL,
    PRIMARY KEY (build_id, seq)
);
CREATE INDEX build_log_lines_at_idx ON build_log_lines (at);
