-- 0013: what runs, seen from the API: the lines containers print and the
-- Kubernetes events of managed objects, kept for a retention (7 days by
-- default). PostgreSQL partitions log_lines and kube_events by day; here
-- the background job deletes old rows in batches. Rows carry their
-- attribution without foreign keys: a deleted service's lines age out.

-- A service's lines in an environment are numbered from 1 in the order
-- they are stored: a reader's cursor.
CREATE TABLE log_positions (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id TEXT NOT NULL,
    service_id     TEXT NOT NULL,
    tenant_id      TEXT NOT NULL,
    project_id     TEXT NOT NULL,
    last_seq       INTEGER NOT NULL,
    UNIQUE (environment_id, service_id)
);

-- What printed a line: a container of a pod of a release, and the stream.
CREATE TABLE log_sources (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    position_id INTEGER NOT NULL,
    release_id  TEXT NOT NULL,
    cluster_id  TEXT NOT NULL,
    process     TEXT NOT NULL,
    pod         TEXT NOT NULL,
    container   TEXT NOT NULL,
    stream      INTEGER NOT NULL,
    last_at     TIMESTAMP NOT NULL,
    UNIQUE (position_id, pod, container, stream, release_id, cluster_id, process)
);

CREATE TABLE log_lines (
    position_id INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    at          TIMESTAMP NOT NULL,
    source_id   INTEGER NOT NULL,
    line        TEXT NOT NULL,
    PRIMARY KEY (position_id, seq)
);
CREATE INDEX log_lines_at_idx ON log_lines (at);
CREATE INDEX log_lines_position_at_idx ON log_lines (position_id, at);

CREATE TABLE kube_events (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    at             TIMESTAMP NOT NULL,
    first_at       TIMESTAMP NOT NULL,
    tenant_id      TEXT NOT NULL,
    cluster_id     TEXT NOT NULL,
    project_id     TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    service_id     TEXT NOT NULL,
    uid            TEXT NOT NULL,
    count          INTEGER NOT NULL,
    type           TEXT NOT NULL,
    reason         TEXT NOT NULL,
    message        TEXT NOT NULL,
    namespace      TEXT NOT NULL,
    object_kind    TEXT NOT NULL,
    object_name    TEXT NOT NULL,
    source         TEXT NOT NULL
);
CREATE INDEX kube_events_at_idx ON kube_events (at);
CREATE INDEX kube_events_cluster_idx ON kube_events (cluster_id, id);
CREATE INDEX kube_events_service_idx ON kube_events (service_id, environment_id, id);
CREATE UNIQUE INDEX kube_events_uid_idx ON kube_events (cluster_id, uid, count);
