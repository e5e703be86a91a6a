-- 0016: people sign in. An invitation is a one-time link (only its hash is
-- stored) through which a member sets a passphrase for one tenant; a
-- passphrase is per user and tenant, so that one tenant's admin can never
-- set what opens another tenant's door. A session is a browser's sign-in:
-- its secret is the cookie (only the hash is stored) and it acts in the
-- tenants its sign-in proved.
CREATE TABLE invitations (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id),
    user_id      TEXT NOT NULL REFERENCES users (id),
    email        TEXT NOT NULL,
    hash         BLOB NOT NULL,
    invited_by   TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    accepted_at  TIMESTAMP,
    revoked_at   TIMESTAMP,
    CONSTRAINT invitations_hash_key UNIQUE (hash)
);
CREATE INDEX invitations_tenant_idx ON invitations (tenant_id, created_at);

CREATE TABLE passphrases (
    user_id     TEXT NOT NULL REFERENCES users (id),
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    -- argon2id, in the PHC string format
    hash        TEXT NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (user_id, tenant_id)
);

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id),
    -- the tenants the session acts in (JSON list of ids)
    tenants       TEXT NOT NULL,
    method        TEXT NOT NULL,
    prefix        TEXT NOT NULL,
    hash          BLOB NOT NULL,
    address       TEXT NOT NULL,
    user_agent    TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    last_seen_at  TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP NOT NULL,
    revoked_at    TIMESTAMP,
    CONSTRAINT sessions_hash_key UNIQUE (hash)
);
CREATE INDEX sessions_user_idx ON sessions (user_id, created_at);

-- Failed sign-ins, per subject ("address:…" or "account:…"), for the rate
-- limits; rows older than the window are deleted as new ones come.
CREATE TABLE signin_failures (
    subject  TEXT NOT NULL,
    at       TIMESTAMP NOT NULL
);
CREATE INDEX signin_failures_idx ON signin_failures (subject, at);
