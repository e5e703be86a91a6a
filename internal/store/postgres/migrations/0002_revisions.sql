-- Desired-state revisions: every committed change that alters a cluster's
-- compiled state gives it the next revision, in the same transaction.
ALTER TABLE clusters ADD COLUMN desired_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE clusters ADD COLUMN desired_hash TEXT NOT NULL DEFAULT '';

-- The state is stored redacted (no secret values): it is for showing and
-- previews; agents get a fresh compilation with secrets opened.
CREATE TABLE cluster_revisions (
    cluster_id  TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    revision    BIGINT NOT NULL,
    hash        TEXT NOT NULL,
    state       TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (cluster_id, revision)
);
