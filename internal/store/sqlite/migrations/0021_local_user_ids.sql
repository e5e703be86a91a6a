-- 0021: each tenant knows a user by its own id (issue 30). Users are
-- global, but the id the API shows for one is the member profile's
-- local_id: random (no time in it), different in every tenant, so that an
-- id tells a tenant nothing of the user's other tenants and correlates
-- nobody across them. Every member gets a profile (founders had none), the
-- audit history's userId details are rewritten to the tenant's id, and
-- details naming a user the tenant has no profile of lose the id.
ALTER TABLE member_profiles ADD COLUMN local_id TEXT;
INSERT INTO member_profiles (tenant_id, user_id, name, kind, created_at)
    SELECT m.tenant_id, m.user_id, u.name, u.kind, m.created_at FROM members m JOIN users u ON u.id = m.user_id
    WHERE NOT EXISTS (SELECT 1 FROM member_profiles p WHERE p.tenant_id = m.tenant_id AND p.user_id = m.user_id);
-- A version 4 UUID, as the control plane makes them.
UPDATE member_profiles SET local_id = lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'
    || substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + abs(random()) % 4, 1)
    || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)));
CREATE UNIQUE INDEX member_profiles_local_id ON member_profiles (local_id);

UPDATE audit_events SET details = json_set(details, '$.userId', (SELECT p.local_id FROM member_profiles p
        WHERE p.tenant_id = audit_events.tenant_id AND p.user_id = json_extract(audit_events.details, '$.userId')))
    WHERE json_extract(details, '$.userId') IS NOT NULL AND EXISTS (SELECT 1 FROM member_profiles p
        WHERE p.tenant_id = audit_events.tenant_id AND p.user_id = json_extract(audit_events.details, '$.userId'));
UPDATE audit_events SET details = json_remove(details, '$.userId')
    WHERE json_extract(details, '$.userId') IS NOT NULL AND NOT EXISTS (SELECT 1 FROM member_profiles p
        WHERE p.tenant_id = audit_events.tenant_id AND p.local_id = json_extract(audit_events.details, '$.userId'));
