-- Deployment progress: every stage a deployment passes is an event with a
-- sequence number per deployment (the subscription cursor); approvals and
-- rejections of deployments to protected environments.
ALTER TABLE deployments ADD COLUMN message TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN last_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN approval_expires_at TIMESTAMPTZ;

CREATE TABLE deployment_events (
    deployment_id  TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    seq            BIGINT NOT NULL,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id),
    stage          TEXT NOT NULL,
    blocker        TEXT,
    message        TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (deployment_id, seq)
);

CREATE TABLE approvals (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id),
    deployment_id  TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    user_id        TEXT,
    decision       TEXT NOT NULL,
    comment        TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX approvals_deployment_idx ON approvals (deployment_id, created_at);
CREATE INDEX deployments_open_idx ON deployments (tenant_id, stage);

-- Before stages, a deployment stayed QUEUED and its release ran at once:
-- such deployments are being delivered.
UPDATE deployments SET stage = 'DELIVERING' WHERE stage = 'QUEUED';
