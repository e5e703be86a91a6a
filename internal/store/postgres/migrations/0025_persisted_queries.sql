-- 0025: persisted queries. The GraphQL documents clients sent with their
-- SHA-256 (automatic persisted queries), so that a later request may send
-- the hash alone to any replica. Bounded: the least recently used beyond
-- the limit are deleted when one is added.
CREATE TABLE persisted_queries (
    hash        TEXT PRIMARY KEY,
    document    TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    used_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX persisted_queries_used_idx ON persisted_queries (used_at);
