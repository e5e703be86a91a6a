-- 0018: the CLI's sign-in through the browser (nebula login --web), a
-- device authorization as RFC 8628 has it. The CLI starts one and keeps
-- its secret (only the hash is stored); a person signed in to the console
-- confirms the short code it shows, which makes a personal API token for
-- them, sealed here until the CLI picks it up once (the row goes then).
CREATE TABLE cli_logins (
    id              TEXT PRIMARY KEY,
    code            TEXT NOT NULL,
    secret_hash     BYTEA NOT NULL,
    client_address  TEXT NOT NULL,
    user_agent      TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL,
    tenant_id       TEXT,
    user_id         TEXT,
    token_id        TEXT,
    sealed_token    TEXT NOT NULL,
    approved_at     TIMESTAMPTZ,
    CONSTRAINT cli_logins_code_key UNIQUE (code),
    CONSTRAINT cli_logins_secret_key UNIQUE (secret_hash)
);
CREATE INDEX cli_logins_expires_idx ON cli_logins (expires_at);
