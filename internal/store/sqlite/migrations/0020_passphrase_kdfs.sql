-- 0020: one passphrase key derivation per person (issue 30). A sign-in
-- derives one key from the passphrase with the person's argon2id salt,
-- whatever the number of tenants they have a passphrase in; each tenant's
-- passphrases row keeps an HMAC of that key and the tenant's id (rows
-- written before keep their own argon2id hash until the person next signs
-- in there).
CREATE TABLE passphrase_kdfs (
    user_id  TEXT PRIMARY KEY REFERENCES users (id),
    -- the argon2id parameters and salt, in the PHC string format without a key
    params   TEXT NOT NULL
);
