-- 0022: CLI sign-ins waiting for a code count against their address's
-- limit by the same key as sign-ins (issue 30): an IPv4 address, or an
-- IPv6 address's /64, which one host holds whole. Rows written before
-- (expiring within 10 minutes) count by their address.
ALTER TABLE cli_logins ADD COLUMN address_key TEXT NOT NULL DEFAULT '';
UPDATE cli_logins SET address_key = client_address;
CREATE INDEX cli_logins_address_key_idx ON cli_logins (address_key, expires_at);
