-- 0015: revision history. Each revision names the audited change that
-- caused it; each agent's outcome of applying it is kept; and the cluster
-- keeps what the agent's last heartbeat said it runs (revision and hash),
-- so that the active revision is confirmed, not assumed.
ALTER TABLE cluster_revisions ADD COLUMN audit_seq BIGINT;

CREATE TABLE revision_outcomes (
    cluster_id  TEXT NOT NULL,
    revision    BIGINT NOT NULL,
    -- The agent instance (its pod's name) that reported the outcome.
    agent       TEXT NOT NULL,
    -- applied or failed; a revision one agent failed and then applied has both.
    result      TEXT NOT NULL,
    -- The object errors of a failure (JSON), empty otherwise.
    errors      TEXT NOT NULL,
    reported_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (cluster_id, revision, agent, result),
    FOREIGN KEY (cluster_id, revision) REFERENCES cluster_revisions (cluster_id, revision) ON DELETE CASCADE
);

ALTER TABLE clusters ADD COLUMN reported_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE clusters ADD COLUMN reported_hash TEXT NOT NULL DEFAULT '';
