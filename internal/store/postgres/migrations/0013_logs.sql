-- 0013: what runs, seen from the API: the lines containers print and the
-- Kubernetes events of managed objects, kept for a retention (7 days by
-- default). log_lines and kube_events are partitioned by day on their
-- time: the background job creates partitions ahead and drops whole
-- partitions past the retention (store.EnsureLogPartitions, ExpireLogs).
-- Rows carry their attribution without foreign keys: a deleted service's
-- lines age out with their partitions.

-- A service's lines in an environment are numbered from 1 in the order
-- they are stored, under its position's row lock: a reader's cursor, with
-- no gap and no duplicate on resume.
CREATE TABLE log_positions (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    environment_id TEXT NOT NULL,
    service_id     TEXT NOT NULL,
    tenant_id      TEXT NOT NULL,
    project_id     TEXT NOT NULL,
    last_seq       BIGINT NOT NULL,
    UNIQUE (environment_id, service_id)
);

-- What printed a line: a container of a pod of a release, and the stream
-- (0 the control plane's markers, 1 stdout, 2 stderr). A line names its
-- source by id instead of repeating it (a line takes about a third of the
-- bytes, docs/benchmarks.md); last_at lets retention forget sources.
CREATE TABLE log_sources (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    position_id BIGINT NOT NULL,
    release_id  TEXT NOT NULL,
    cluster_id  TEXT NOT NULL,
    process     TEXT NOT NULL,
    pod         TEXT NOT NULL,
    container   TEXT NOT NULL,
    stream      SMALLINT NOT NULL,
    last_at     TIMESTAMPTZ NOT NULL,
    UNIQUE (position_id, pod, container, stream, release_id, cluster_id, process)
);

CREATE TABLE log_lines (
    position_id BIGINT NOT NULL,
    seq         BIGINT NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    source_id   BIGINT NOT NULL,
    line        TEXT NOT NULL,
    PRIMARY KEY (position_id, seq, at)
) PARTITION BY RANGE (at);
CREATE INDEX log_lines_at_idx ON log_lines (position_id, at);

CREATE SEQUENCE kube_events_id_seq;
CREATE TABLE kube_events (
    id             BIGINT NOT NULL DEFAULT nextval('kube_events_id_seq'),
    at             TIMESTAMPTZ NOT NULL,
    first_at       TIMESTAMPTZ NOT NULL,
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
    source         TEXT NOT NULL,
    PRIMARY KEY (id, at)
) PARTITION BY RANGE (at);
CREATE INDEX kube_events_cluster_idx ON kube_events (cluster_id, id);
CREATE INDEX kube_events_service_idx ON kube_events (service_id, environment_id, id);
CREATE INDEX kube_events_uid_idx ON kube_events (cluster_id, uid, count);
